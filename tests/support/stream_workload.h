// A reclaim workload that also produces kernel lock contention, shared by the
// lock-probe live test and bench (tests/live/tracing_locks_live_test.cpp,
// bench/lock_probes_bench.cpp). Root only; no gtest dependency.
//
// LoopFs: an ext4 image in /var/tmp, loop-mounted at a directory beside it
// (mkfs.ext4, mount -o loop); unmounted and deleted by the destructor.
// StreamChild: a child that joins a v1 memcg, then, on a go byte, writes
// `mib` MiB in blocks of `block` bytes (1 MiB by default) at `offset_mib` of
// a file, syncs, drops its page cache and reads its part back. Two children on one file in one memcg
// contend on the file's i_rwsem while the holder reclaims inside write(), and
// on the mapping's and the lruvec's spinlocks while reclaiming; streaming
// reads of separate files alone contend almost never on the 2-CPU test VM.
// Everything is named by the caller (a memcg_exporter_test_* prefix).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace memcg::testing {

class LoopFs {
 public:
  LoopFs(const std::string& base, uint64_t mib) : image_(base + ".img"), dir_(base + "_mnt") {
    const std::string cmd = "truncate -s " + std::to_string(mib) + "M " + image_ +
                            " && mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 " + image_ + " && mkdir -p " + dir_ +
                            " && mount -o loop " + image_ + " " + dir_;
    ok_ = std::system(cmd.c_str()) == 0;
    mounted_ = ok_;
  }
  ~LoopFs() {
    if (mounted_) (void)!std::system(("umount " + dir_).c_str());
    ::rmdir(dir_.c_str());
    ::unlink(image_.c_str());
  }
  bool ok() const { return ok_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string image_, dir_;
  bool ok_ = false, mounted_ = false;
};

class StreamChild {
 public:
  StreamChild(const std::string& memcg_dir, const std::string& file, uint64_t mib,
              uint64_t offset_mib = 0, size_t block = 1 << 20) {
    if (block == 0 || block > (1u << 20)) block = 1 << 20;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[1]);
      int cg = ::open((memcg_dir + "/cgroup.procs").c_str(), O_WRONLY);
      std::string me = std::to_string(::getpid());
      if (cg < 0 || ::write(cg, me.data(), me.size()) != static_cast<ssize_t>(me.size()))
        ::_exit(4);
      ::close(cg);
      char c;
      if (::read(p[0], &c, 1) != 1) ::_exit(2);
      static char buf[1 << 20];
      int fd = ::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
      if (fd < 0) ::_exit(3);
      const off_t base = static_cast<off_t>(offset_mib) << 20;
      const uint64_t blocks = (mib << 20) / block;
      for (uint64_t i = 0; i < blocks; ++i) {
        if (::pwrite(fd, buf, block, base + static_cast<off_t>(i * block)) !=
            static_cast<ssize_t>(block))
          ::_exit(5);
      }
      ::fdatasync(fd);
      ::posix_fadvise(fd, base, static_cast<off_t>(mib << 20), POSIX_FADV_DONTNEED);
      for (uint64_t i = 0; i < mib; ++i) {
        if (::pread(fd, buf, sizeof buf, base + static_cast<off_t>(i << 20)) <= 0) break;
      }
      ::close(fd);
      ::_exit(0);
    }
    ::close(p[0]);
    go_ = p[1];
  }
  StreamChild(const StreamChild&) = delete;
  StreamChild& operator=(const StreamChild&) = delete;
  ~StreamChild() {
    if (go_ >= 0) ::close(go_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void start() {
    char c = 1;
    (void)!::write(go_, &c, 1);
    ::close(go_);
    go_ = -1;
  }
  /// Exit status (0 = ok) and the child's own CPU times.
  int wait(struct rusage* ru = nullptr) {
    int st = 0;
    struct rusage r {};
    if (pid_ > 0 && ::wait4(pid_, &st, 0, &r) == pid_) {
      pid_ = -1;
      if (ru) *ru = r;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
};

}  // namespace memcg::testing
