// Real-kernel helpers for the controller's live tests and the seed-000 bench
// (cgroup v1 memory, root): a test memcg that is removed on scope exit (its
// processes killed first), a streaming file on a real filesystem, and a
// `cat`-like reader run inside a memcg.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/text_file.h"

namespace memcg::controller::live {

inline constexpr const char* kV1Root = "/sys/fs/cgroup/memory";

/// Why live tests cannot run here, or empty.
inline std::string skipReason() {
  if (::geteuid() != 0) return "needs root (writes cgroup v1 memory limits)";
  struct stat st {};
  if (::stat((std::string(kV1Root) + "/memory.limit_in_bytes").c_str(), &st) != 0)
    return "needs cgroup v1 memory at /sys/fs/cgroup/memory (the v2 path is covered by "
           "fixtures "
           "and the qemu lane)";
  return {};
}

using test::readText;
using test::writeText;

inline uint64_t readU64(const std::string& path) {
  std::string s = readText(path);
  return s.empty() ? 0 : std::stoull(s);
}

/// The calling thread's on-CPU time from /proc/thread-self/schedstat (ns).
inline double selfSchedSeconds() {
  std::string s = readText("/proc/thread-self/schedstat");
  return s.empty() ? 0
                   : static_cast<double>(std::stoull(s.substr(0, s.find(' ')))) * 1e-9;
}

/// A memcg named memcg_exporter_test_ctl_<pid>_<suffix>, removed (after
/// killing whatever runs in it) when the object goes away.
class TestCgroup {
 public:
  TestCgroup(const std::string& suffix, uint64_t limitBytes) {
    name_ = "memcg_exporter_test_ctl_" + std::to_string(::getpid()) + "_" + suffix;
    path_ = std::string(kV1Root) + "/" + name_;
    if (::mkdir(path_.c_str(), 0755) != 0 && errno != EEXIST) {
      path_.clear();
      return;
    }
    writeText(file("memory.limit_in_bytes"), std::to_string(limitBytes));
  }
  ~TestCgroup() {
    if (path_.empty()) return;
    for (int i = 0; i < 50; ++i) {
      std::string procs = readText(file("cgroup.procs"));
      std::istringstream is(procs);
      pid_t p;
      while (is >> p) ::kill(p, SIGKILL);
      if (::rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string label() const { return "/" + name_; }
  std::string file(const std::string& f) const { return path_ + "/" + f; }
  uint64_t u64(const std::string& f) const { return readU64(file(f)); }
  void resetCounters() const {
    writeText(file("memory.failcnt"), "0");
    writeText(file("memory.max_usage_in_bytes"), "0");
  }

 private:
  std::string name_;
  std::string path_;
};

/// Runs a shell command; true on exit status 0.
inline bool sh(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }

/// A fast filesystem for a fast reader (~3-8 GB/s here): an ext4 image in
/// /dev/shm on a loop device, mounted under /var/tmp; all named
/// memcg_exporter_test_<tag>_<pid>; unmounted, detached and removed on
/// destruction (also when a test fails: scope exit).
class FastFs {
 public:
  FastFs(const std::string& tag, uint64_t bytes) {
    std::string pid = std::to_string(::getpid());
    name_ = "memcg_exporter_test_" + tag + "_" + pid;
    image_ = "/dev/shm/" + name_ + ".img";
    mnt_ = "/var/tmp/" + name_ + "_mnt";
    if (!sh("truncate -s " + std::to_string(bytes) + " " + image_) ||
        !sh("mkfs.ext4 -q -F " + image_ + " >/dev/null 2>&1")) {
      std::fprintf(stderr, "fast fs: cannot make an ext4 image at %s\n", image_.c_str());
      return;
    }
    FILE* p = ::popen(("losetup --find --show " + image_).c_str(), "r");
    char line[256] = {};
    if (p) {
      if (!std::fgets(line, sizeof line, p)) line[0] = 0;
      ::pclose(p);
    }
    dev_ = line;
    while (!dev_.empty() && (dev_.back() == '\n' || dev_.back() == ' ')) dev_.pop_back();
    if (dev_.rfind("/dev/loop", 0) != 0) {
      std::fprintf(stderr, "fast fs: losetup failed for %s\n", image_.c_str());
      dev_.clear();
      return;
    }
    if (::mkdir(mnt_.c_str(), 0700) != 0 && errno != EEXIST) return;
    madeMnt_ = true;
    if (::mount(dev_.c_str(), mnt_.c_str(), "ext4", 0, nullptr) != 0) {
      std::fprintf(stderr, "fast fs: mount %s: %s\n", dev_.c_str(), std::strerror(errno));
      return;
    }
    mounted_ = true;
  }
  ~FastFs() {
    if (mounted_) ::umount2(mnt_.c_str(), 0);
    if (madeMnt_) ::rmdir(mnt_.c_str());
    if (!dev_.empty()) sh("losetup -d " + dev_);
    if (!image_.empty()) ::unlink(image_.c_str());
  }
  FastFs(const FastFs&) = delete;
  FastFs& operator=(const FastFs&) = delete;
  bool ok() const { return mounted_; }
  std::string file() const { return mnt_ + "/" + name_ + ".dat"; }
  const std::string& device() const { return dev_; }

 private:
  std::string name_, image_, mnt_, dev_;
  bool madeMnt_ = false, mounted_ = false;
};

/// Creates `path` with `bytes` of non-zero data unless it already has that size.
inline bool ensureFile(const std::string& path, uint64_t bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) == bytes)
    return true;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  std::vector<char> buf(1 << 20);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>('a' + i % 26);
  for (uint64_t done = 0; done < bytes; done += buf.size()) {
    if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) {
      ::close(fd);
      return false;
    }
  }
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return true;
}

/// Drops the file's page cache (clean pages) so the next read comes from disk.
inline void dropCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

struct ReaderResult {
  bool ok = false;
  double wallSeconds = 0;
  uint64_t bytes = 0;
  double p99ReadMs = 0;
  double maxReadMs = 0;
  double slowReadsMs = 0;  ///< total time in reads slower than 1 ms
  double sysSeconds = 0;   ///< the reader's system CPU
  double userSeconds = 0;
  double cpuSeconds = 0;  ///< the reader's on-CPU time (schedstat, precise)
  // Filled by the caller's in-child hook, if any (e.g. taskstats RECLAIM delay).
  bool reclaimDelayKnown = false;
  uint64_t reclaimDelayCount = 0;
  uint64_t reclaimDelayNs = 0;
};

/// Runs in the reader process after the last read, before it exits (it may
/// fill the reclaimDelay* fields). Must not throw.
using ReaderHook = std::function<void(ReaderResult&)>;

/// Forks a reader that joins `cgroupPath` and streams `file` in 128 KiB reads
/// (as cat does; `readBytes` for larger), timing each read(). Waits for it.
inline ReaderResult runReader(const std::string& cgroupPath, const std::string& file,
                              const ReaderHook& inChild = {},
                              size_t readBytes = 128 << 10) {
  int p[2];
  ReaderResult res;
  if (::pipe2(p, O_CLOEXEC) != 0) return res;
  pid_t pid = ::fork();
  if (pid < 0) return res;
  if (pid == 0) {
    ::close(p[0]);
    if (!writeText(cgroupPath + "/cgroup.procs", std::to_string(::getpid()))) _exit(2);
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) _exit(3);
    std::vector<char> buf(readBytes);
    std::vector<float> lat;
    lat.reserve(1 << 14);
    uint64_t total = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      auto a = std::chrono::steady_clock::now();
      ssize_t n = ::read(fd, buf.data(), buf.size());
      auto b = std::chrono::steady_clock::now();
      if (n <= 0) break;
      total += static_cast<uint64_t>(n);
      lat.push_back(std::chrono::duration<float, std::milli>(b - a).count());
    }
    double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ReaderResult r;
    r.cpuSeconds = selfSchedSeconds();
    r.ok = true;
    r.wallSeconds = wall;
    r.bytes = total;
    for (float l : lat) {
      if (l > 1.0f) r.slowReadsMs += l;
    }
    if (!lat.empty()) {
      std::sort(lat.begin(), lat.end());
      r.maxReadMs = lat.back();
      r.p99ReadMs = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
    }
    if (inChild) inChild(r);
    (void)!::write(p[1], &r, sizeof r);
    _exit(0);
  }
  ::close(p[1]);
  ReaderResult got;
  ssize_t n = ::read(p[0], &got, sizeof got);
  ::close(p[0]);
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  if (n != sizeof got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return res;
  got.sysSeconds = static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec * 1e-6;
  got.userSeconds = static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6;
  return got;
}

/// CPU hogs, one per core, outside any test memcg; killed on scope exit.
class CpuHogs {
 public:
  explicit CpuHogs(int n) {
    for (int i = 0; i < n; ++i) {
      pid_t p = ::fork();
      if (p == 0) {
        volatile uint64_t x = 0;
        for (;;) x = x + 1;
      }
      if (p > 0) pids_.push_back(p);
    }
  }
  ~CpuHogs() {
    for (pid_t p : pids_) ::kill(p, SIGKILL);
    for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
  }

 private:
  std::vector<pid_t> pids_;
};

/// This process's CPU time, all threads (scheduler runtime: precise, unlike
/// rusage, which is tick-sampled on this kernel).
inline double processCpuSeconds() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace memcg::controller::live
