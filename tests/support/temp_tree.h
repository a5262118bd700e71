// The one temp-tree helper of the tests (unit, live, fuzz, benches): a
// directory tree built under $TMPDIR (default /tmp) as
// memcg_exporter_test_XXXXXX for one test (oomd's Fixture), removed with
// everything in it when the test ends, also when it fails.
#pragma once

#include <string>
#include <string_view>

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
  void write(const std::string& rel, std::string_view content) const;
  /// A file's content; empty if it cannot be read.
  std::string read(const std::string& rel) const;
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
