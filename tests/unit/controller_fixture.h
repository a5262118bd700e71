// Fixture cgroupfs trees for the controller tests, built under mkdtemp and
// removed in the destructor (oomd's util/Fixture.h pattern).
#pragma once

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace memcg::controller::testing {

class TempTree {
 public:
  TempTree() {
    char tmpl[] = "/tmp/memcg_ctl_fixture_XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    root_ = d ? d : "";
  }
  ~TempTree() {
    if (!root_.empty()) {
      ::nftw(root_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) {
        return ::remove(p);
      }, 16, FTW_DEPTH | FTW_PHYS);
    }
  }
  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }
  void mkdir(const std::string& rel) const { ::mkdir(path(rel).c_str(), 0755); }
  void write(const std::string& rel, const std::string& content) const {
    std::ofstream f(path(rel), std::ios::trunc);
    f << content;
  }
  std::string read(const std::string& rel) const {
    std::ifstream f(path(rel));
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  std::string root_;
};

inline constexpr uint64_t MiB = 1ull << 20;

/// A v1 tree: <root>/memory (the hierarchy root) with one child `name`.
inline void makeV1(const TempTree& t, const std::string& name, uint64_t limit, uint64_t usage,
                   uint64_t cache) {
  t.mkdir("memory");
  t.write("memory/cgroup.procs", "");
  t.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  t.write("memory/memory.usage_in_bytes", "0\n");
  t.mkdir("memory/" + name);
  std::string d = "memory/" + name + "/";
  t.write(d + "cgroup.procs", "");
  t.write(d + "memory.limit_in_bytes", std::to_string(limit) + "\n");
  t.write(d + "memory.usage_in_bytes", std::to_string(usage) + "\n");
  t.write(d + "memory.stat", "cache " + std::to_string(cache) + "\nrss 0\ntotal_inactive_file " +
                                 std::to_string(cache / 2) + "\ntotal_active_file " +
                                 std::to_string(cache - cache / 2) + "\ntotal_inactive_anon 0\n");
  t.write(d + "cgroup.event_control", "");
}

/// A v2 tree: <root> is the hierarchy root with one child `name`.
inline void makeV2(const TempTree& t, const std::string& name, uint64_t max, uint64_t current) {
  t.write("cgroup.controllers", "cpu io memory pids\n");
  t.write("cgroup.procs", "");
  t.mkdir(name);
  t.write(name + "/cgroup.procs", "");
  t.write(name + "/memory.max", max ? std::to_string(max) + "\n" : "max\n");
  t.write(name + "/memory.high", "max\n");
  t.write(name + "/memory.current", std::to_string(current) + "\n");
  t.write(name + "/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  t.write(name + "/memory.reclaim", "");
  t.write(name + "/memory.stat", "file " + std::to_string(current) + "\nanon 0\n");
}

}  // namespace memcg::controller::testing
