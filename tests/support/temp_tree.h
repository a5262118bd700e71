// A directory tree built in a temp dir for one test (oomd's Fixture), removed
// with everything in it when the test ends, also when it fails.
#pragma once

#include <string>

namespace memcg::test {

class TempTree {
 public:
  TempTree();
  ~TempTree();
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }
  /// Writes a file (creating parent directories).
  void write(const std::string& rel, const std::string& content) const;
  void mkdir(const std::string& rel) const;
  /// Removes a file or a directory tree.
  void remove(const std::string& rel) const;
  /// Copies a committed fixture tree (tests/fixtures/...) into rel.
  void copyFixture(const std::string& fixture, const std::string& rel) const;

 private:
  std::string root_;
};

/// tests/fixtures/<rel> in the source tree.
std::string fixturePath(const std::string& rel);

}  // namespace memcg::test
