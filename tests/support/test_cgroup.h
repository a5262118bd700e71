// Real-kernel test helpers (root): a cgroup v1 memcg and a streaming workload,
// both removed when the test ends, also when it fails.
//
// Everything they create is named memcg_exporter_test_* so leftovers are easy
// to spot. Use skipReason() in a test's SetUp/body: GTEST_SKIP with it when it
// is not empty.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace memcg::test {

inline constexpr const char* kV1MemoryRoot = "/sys/fs/cgroup/memory";

/// Empty when live v1 memcg tests can run here; otherwise why not.
std::string v1SkipReason();

class TestCgroupV1 {
 public:
  /// Creates /sys/fs/cgroup/memory/memcg_exporter_test_<name>_<pid>.
  explicit TestCgroupV1(const std::string& name);
  ~TestCgroupV1();
  TestCgroupV1(const TestCgroupV1&) = delete;
  TestCgroupV1& operator=(const TestCgroupV1&) = delete;

  const std::string& path() const { return path_; }    ///< filesystem path
  const std::string& label() const { return label_; }  ///< "/memcg_exporter_test_..."
  void write(const std::string& file, const std::string& value) const;
  std::string read(const std::string& file) const;
  uint64_t readU64(const std::string& file) const;
  /// Value of one memory.stat key.
  uint64_t stat(const std::string& key) const;

  /// Runs `cat`-like streaming of `file` in a child inside this cgroup and
  /// waits for it. Returns the child's exit status.
  int streamFile(const std::string& file) const;
  /// Same, but the child stays alive (paused) after streaming, so its
  /// per-task figures can be read; returns its pid once it has streamed.
  /// The destructor kills it.
  pid_t streamFileAndStay(const std::string& file) const;

 private:
  std::string path_, label_;
};

/// A file of `bytes` on a real filesystem (page cache reads of tmpfs files
/// cause no reclaim), removed on destruction. Its page cache is dropped
/// after writing, so a reader has to fault it in again.
class WorkloadFile {
 public:
  explicit WorkloadFile(uint64_t bytes);
  ~WorkloadFile();
  const std::string& path() const { return path_; }
  void dropCache() const;

 private:
  std::string path_;
};

}  // namespace memcg::test
