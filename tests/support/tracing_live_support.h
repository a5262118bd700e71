// Shared by the tracing live tests (tests/live/tracing_*_test.cpp): the
// environment check, RAII guards for what a test creates (memcg, tracefs
// instance, data file, child) and the independent reference count (a second
// private tracefs instance read as text).
//
// Everything created is named memcg_exporter_test_* and removed also when an
// assertion fails. Nothing global is touched: if tracefs is not mounted,
// LiveEnv mounts it in a private mount namespace.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/file.h"
#include "common/parse.h"
#include "tests/support/stream_workload.h"
#include "tracing/aggregator.h"
#include "tracing/tracer.h"

namespace memcg::tracing::live {

inline const std::string kMemcgRoot = "/sys/fs/cgroup/memory";
inline const std::string kTracefs = "/sys/kernel/tracing";
constexpr uint64_t kMiB = 1024 * 1024;

inline std::string skipReason;

inline bool isTracefs(const std::string& p) {
  struct statfs s {};
  return ::statfs(p.c_str(), &s) == 0 && s.f_type == 0x74726163;
}

inline bool writeStr(const std::string& path, const std::string& v) {
  return writeWholeFile(path, v).ok();
}

class LiveEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    if (::geteuid() != 0) {
      skipReason = "needs root (tracefs instances, cgroup creation)";
      return;
    }
    if (::access((kMemcgRoot + "/memory.limit_in_bytes").c_str(), F_OK) != 0) {
      skipReason = "needs the cgroup v1 memory controller at " + kMemcgRoot;
      return;
    }
    if (!isTracefs(kTracefs)) {
      // Mount tracefs in a private mount namespace so nothing outside sees it.
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("nodev", kTracefs.c_str(), "tracefs", 0, nullptr) != 0) {
        skipReason =
            std::string("tracefs not mounted and cannot mount it: ") + strerror(errno);
        return;
      }
    }
  }
};

// --- RAII guards ------------------------------------------------------------
struct Cgroup {
  std::string path;
  explicit Cgroup(std::string name) : path(kMemcgRoot + "/" + name) {
    ::rmdir(path.c_str());
    ok = ::mkdir(path.c_str(), 0755) == 0;
  }
  ~Cgroup() {
    // Our children are gone by now (Child guard); retry briefly while the
    // kernel finishes offlining.
    for (int i = 0; i < 50 && ::rmdir(path.c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  bool ok = false;
};

/// Events the tracefs instance at `dir` lost (overrun + dropped, all CPUs).
inline uint64_t instanceLost(const std::string& dir) {
  uint64_t n = 0;
  for (int cpu = 0; cpu < 1024; ++cpu) {
    auto s = readWholeFile(dir + "/per_cpu/cpu" + std::to_string(cpu) + "/stats");
    if (!s.ok()) break;
    std::string_view t = *s, line;
    while (nextLine(t, line)) {
      if (line.rfind("overrun:", 0) == 0 || line.rfind("commit overrun:", 0) == 0 ||
          line.rfind("dropped events:", 0) == 0) {
        std::string_view v = line.substr(line.find(':') + 1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        n += parseU64(trimRight(v)).value_or(0);
      }
    }
  }
  return n;
}

struct RefInstance {  // the independent counter: a private instance read as text
  std::string dir;
  explicit RefInstance(std::string name) : dir(kTracefs + "/instances/" + name) {
    ::rmdir(dir.c_str());
    ok = ::mkdir(dir.c_str(), 0755) == 0;
  }
  ~RefInstance() {
    writeStr(dir + "/tracing_on", "0");
    ::rmdir(dir.c_str());
  }
  bool enable(const char* sys, const char* ev) {
    return writeStr(dir + "/events/" + sys + "/" + ev + "/enable", "1");
  }
  uint64_t lost() const { return instanceLost(dir); }
  bool ok = false;
};

struct RefCount {
  uint64_t reclaims = 0;
  uint64_t pages = 0;
};

// The pid of a reference trace line "<comm>-<pid> [cpu] flags ts: <event>: ..."
// (a comm may itself hold '-'), or nothing for a line of another shape.
inline std::optional<int64_t> refLinePid(std::string_view line) {
  size_t br = line.find(" [");
  if (br == std::string_view::npos) return std::nullopt;
  std::string_view task = trimRight(line.substr(0, br));
  size_t dash = task.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return parseI64(task.substr(dash + 1));
}

// Parses "<comm>-<pid> [cpu] flags ts: mm_vmscan_memcg_reclaim_end: nr_reclaimed=N".
inline std::map<int, RefCount> parseRefTrace(std::string_view text) {
  std::map<int, RefCount> out;
  const std::string_view kTag = ": mm_vmscan_memcg_reclaim_end: nr_reclaimed=";
  std::string_view line;
  while (nextLine(text, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tag = line.find(kTag);
    if (tag == std::string_view::npos) continue;
    auto pid = refLinePid(line);
    std::string_view num = line.substr(tag + kTag.size());
    num = num.substr(0, num.find(' '));
    auto pages = parseU64(trimRight(num));
    if (!pid || !pages) continue;
    auto& r = out[static_cast<int>(*pid)];
    ++r.reclaims;
    r.pages += *pages;
  }
  return out;
}

struct DataFile {
  std::string path;
  DataFile(std::string p, uint64_t bytes) : path(std::move(p)) {
    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return;
    std::vector<char> buf(kMiB, 'x');
    uint64_t done = 0;
    while (done < bytes &&
           ::write(fd, buf.data(), buf.size()) == static_cast<ssize_t>(buf.size())) {
      done += buf.size();
    }
    ::fsync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    ok = done >= bytes;
  }
  ~DataFile() { ::unlink(path.c_str()); }
  bool ok = false;
};

struct ChildOptions {
  /// Names that do not exist looked up first: negative dentries charged to
  /// the child's memcg, for the slab shrinkers.
  int dentries = 0;
  /// After its work, write its status on the done pipe (waitDone(), run())
  /// and sleep until killed, so the child is alive while the test reads (a
  /// live task's report row).
  bool stay = false;
};

// Streams `file` with its page cache dropped first (after leaving
// `dentries` negative dentries): the live tests' reclaim workload.
inline int streamFile(const std::string& file, int dentries) {
  // No allocation per name: the child runs in a test's small memcg, and
  // under ASan freed heap is held in its quarantine, so 200,000 strings
  // (with the dentries' slab) got a child OOM-killed there.
  char name[4096];
  for (int i = 0; i < dentries; ++i) {
    struct stat st {};
    std::snprintf(name, sizeof name, "%s.absent.%d", file.c_str(), i);
    (void)::stat(name, &st);
  }
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return 3;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  static char buf[1 << 20];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
  ::close(fd);
  return 0;
}

// Faults in `bytes` of anonymous memory, one write per page, and frees it.
inline int touchAnon(size_t bytes) {
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 3;
  for (size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(m)[i] = 1;
  ::munmap(m, bytes);
  return 0;
}

// Maps 32 MiB of `file` (from 128 MiB on) and `anon_bytes` of anonymous
// memory, touches both, and pages both out with MADV_PAGEOUT.
inline int pageOut(const std::string& file, size_t anon_bytes = 0) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return 3;
  const size_t flen = 32 * kMiB;
  void* f = ::mmap(nullptr, flen, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(128 * kMiB));
  void* a = anon_bytes == 0 ? nullptr
                            : ::mmap(nullptr, anon_bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (f == MAP_FAILED || a == MAP_FAILED) return 4;
  unsigned sum = 0;
  for (size_t i = 0; i < flen; i += 4096) sum += static_cast<const volatile char*>(f)[i];
  for (size_t i = 0; i < anon_bytes; i += 4096) static_cast<volatile char*>(a)[i] = 1;
  if (sum == 1) (void)!::write(2, "", 0);  // keeps the reads
  int rc = ::madvise(f, flen, MADV_PAGEOUT) == 0 ? 0 : 5;
  if (a != nullptr && rc == 0 && ::madvise(a, anon_bytes, MADV_PAGEOUT) != 0) rc = 5;
  ::munmap(f, flen);
  if (a != nullptr) ::munmap(a, anon_bytes);
  ::close(fd);
  return rc;
}

// A child that waits for a go byte, then runs `fn` (by default: streamFile)
// and exits with its status (with `stay`: writes the status on the done pipe
// and sleeps until killed). Killed and reaped by the destructor at the latest.
struct Child {
  pid_t pid = -1;
  int go = -1;
  int done = -1;  ///< read end of the done pipe (stay only)
  explicit Child(const std::string& file, ChildOptions o = {})
      : Child([&file, d = o.dentries] { return streamFile(file, d); }, o) {}
  template <class Fn, class = std::enable_if_t<std::is_invocable_r_v<int, Fn>>>
  explicit Child(Fn fn, ChildOptions o = {}) {
    int p[2], d[2] = {-1, -1};
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    if (o.stay && ::pipe2(d, O_CLOEXEC) != 0) {
      ::close(p[0]);
      ::close(p[1]);
      return;
    }
    pid = ::fork();
    if (pid == 0) {
      char c;
      ::close(p[1]);
      if (d[0] >= 0) ::close(d[0]);
      if (::read(p[0], &c, 1) != 1) ::_exit(2);
      const int rc = fn();
      if (!o.stay) ::_exit(rc);
      c = static_cast<char>(rc);
      (void)!::write(d[1], &c, 1);
      for (;;) ::pause();
    }
    ::close(p[0]);
    if (d[1] >= 0) ::close(d[1]);
    go = p[1];
    done = d[0];
  }
  void start() {
    char c = 1;
    (void)!::write(go, &c, 1);
    ::close(go);
    go = -1;
  }
  /// Waits for the child to exit: its exit status (128 if killed, -1 if none).
  int wait() {
    int st = 0;
    if (pid > 0 && ::waitpid(pid, &st, 0) == pid) {
      pid = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    return -1;
  }
  /// With `stay`: waits until the child has done its work.
  bool waitDone() {
    char c;
    return done >= 0 && ::read(done, &c, 1) == 1;
  }
  /// With `stay`: starts the child and waits for its work's status (-1 if
  /// the child died first).
  int run() {
    start();
    char c;
    return done >= 0 && ::read(done, &c, 1) == 1 ? c : -1;
  }
  void kill() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Child() {
    if (go >= 0) ::close(go);
    if (done >= 0) ::close(done);
    kill();
  }
};

inline const CgroupTraceStats* findCgroup(const TraceSnapshot& s, const std::string& path) {
  for (const auto& c : s.cgroups) {
    if (!c.unknown && !c.overflow && c.path == path) return &c;
  }
  return nullptr;
}

inline std::string uniq(const char* what, int n) {
  return std::string("memcg_exporter_test_") + what + "_" + std::to_string(::getpid()) +
         "_" + std::to_string(n);
}

/// The lock workload (tests/support/stream_workload.h): in each of two
/// 64 MiB memcgs (uniq(tag, 0 and 1)) two children write, then read back,
/// the halves (`mib` MiB each) of one file in `dir`, a loop-mounted ext4:
/// the file's i_rwsem and reclaim's spinlocks contend. make()'s failures are
/// fatal (ASSERT_NO_FATAL_FAILURE); the children go before their cgroups.
struct LockWorkload {
  void make(const char* tag, const std::string& dir, uint64_t mib) {
    for (int i = 0; i < 2; ++i) {
      cgs.push_back(std::make_unique<Cgroup>(uniq(tag, i)));
      ASSERT_TRUE(cgs.back()->ok) << cgs.back()->path << ": " << strerror(errno);
      ASSERT_TRUE(writeStr(cgs.back()->path + "/memory.limit_in_bytes",
                           std::to_string(64ull << 20)));
      for (uint64_t j = 0; j < 2; ++j) {  // two writers per file: i_rwsem contention
        kids.push_back(std::make_unique<memcg::testing::StreamChild>(
            cgs.back()->path, dir + "/f" + std::to_string(i), mib, mib * j));
        ASSERT_GT(kids.back()->pid(), 0);
      }
    }
  }
  void start() {
    for (auto& k : kids) k->start();
  }
  /// Waits for every child; each must exit 0.
  void wait() {
    for (auto& k : kids) EXPECT_EQ(k->wait(), 0);
  }
  std::vector<std::unique_ptr<Cgroup>> cgs;
  std::vector<std::unique_ptr<memcg::testing::StreamChild>> kids;
};

/// Tracer options for the live tests: an instance of our own (uniq(what, n)),
/// 16 MiB per CPU so nothing is lost, a 100 ms poll, and the v1 memory
/// hierarchy LiveEnv checked (the exporter takes it from discovery; see
/// tracing_vmscan_live_test.cpp).
inline TracerOptions liveTracerOptions(const char* what, int n) {
  TracerOptions o;
  o.session.instance_name = uniq(what, n);
  o.session.buffer_kb_per_cpu = 16384;
  o.session.poll_interval = std::chrono::milliseconds(100);
  o.memory_root = kMemcgRoot;
  o.memory_v2 = false;
  return o;
}

/// The value of the exposition line starting with `series` + " ", or -1.
inline double sampleValue(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      return std::strtod(text.c_str() + pos + series.size() + 1, nullptr);
    }
    ++pos;
  }
  return -1;
}

}  // namespace memcg::tracing::live
