// One cgroup directory, opened once and read relative to its fd (as oomd's
// CgroupContext and below's openat::Dir do).
//
// Files are opened lazily with openat() and kept open across scrapes (within
// the descriptor budget of their owner, an FdBudget; Discovery's for the
// exporter's cgroups), then re-read with pread() at offset 0:
// kernfs regenerates a seq_file's content whenever it is read from offset 0,
// and a cgroupfs file comes whole in one read (common/file.h).
// A file that does not exist in a live cgroup (the root's memory.current, no
// swap accounting, an unpatched kernel's memory.reclaim_stat) is remembered as
// absent and not probed again.
//
// A cgroup that is removed reads as "gone": ENOENT from openat() after rmdir,
// ENODEV from a read of a file opened before. A cgroup recreated under the
// same name has a new inode and gets a new CgroupDir (see discovery.h), so the
// old descriptors never read the new cgroup.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cgroupfs/file_names.h"
#include "common/fd.h"
#include "common/result.h"

namespace memcg::cgroupfs {

/// The outcome of reading one file of a cgroup.
enum class ReadStatus {
  kOk,      ///< content is valid
  kAbsent,  ///< the file does not exist in this (live) cgroup
  kGone,    ///< the cgroup was removed
  kError,   ///< any other failure; see the Error
};

/// Upper bound on descriptors kept open by the CgroupDirs made with it (their
/// directories and their files); past it, a file is opened, read and closed
/// on every read (the first time this happens is logged once per budget,
/// with the advice to raise LimitNOFILE). Directories are always kept (they
/// count against the budget, so files get what they leave). Shared by the
/// CgroupDirs it counts, which may outlive their Discovery. Thread-safe.
class FdBudget {
 public:
  explicit FdBudget(long budget = 0) : budget_(budget) {}
  FdBudget(const FdBudget&) = delete;
  FdBudget& operator=(const FdBudget&) = delete;

  long budget() const { return budget_.load(std::memory_order_relaxed); }
  /// Set at start-up (and by tests); a lower budget closes nothing already kept.
  void setBudget(long budget) { budget_.store(budget, std::memory_order_relaxed); }
  /// Descriptors kept open now (directories and files).
  long kept() const { return kept_.load(std::memory_order_relaxed); }
  /// Reads that opened and closed their file because the budget was spent.
  uint64_t uncachedReads() const { return uncached_.load(std::memory_order_relaxed); }

 private:
  friend class CgroupDir;
  bool tryKeep();  // one more file kept, if the budget allows
  void keepDirectory() { kept_.fetch_add(1, std::memory_order_relaxed); }
  void release() { kept_.fetch_sub(1, std::memory_order_relaxed); }
  void spent();  // a read found no room

  std::atomic<long> budget_;
  std::atomic<long> kept_{0};
  std::atomic<uint64_t> uncached_{0};
  std::atomic<bool> logged_{false};
};

class CgroupDir {
 public:
  /// Takes ownership of an O_DIRECTORY fd. `path` is used in errors only.
  /// `budget` counts its descriptors; null: no budget (no file kept open).
  CgroupDir(Fd dir, std::string path, ino_t inode, std::shared_ptr<FdBudget> budget = {});
  ~CgroupDir();
  CgroupDir(const CgroupDir&) = delete;
  CgroupDir& operator=(const CgroupDir&) = delete;

  /// Opens `path` as a cgroup directory, its descriptors counted by `budget`.
  static Result<std::shared_ptr<CgroupDir>> open(const std::string& path,
                                                 std::shared_ptr<FdBudget> budget = {});
  /// Opens `name` below the directory `parent`.
  static Result<std::shared_ptr<CgroupDir>> openAt(int parent, std::string_view name,
                                                   std::string path,
                                                   std::shared_ptr<FdBudget> budget = {});

  /// Reads a whole file into `buf` (reused, grown as needed); on kOk `out`
  /// views the content. On kError, `err` (if given) says why.
  ReadStatus read(FileId id, std::string& buf, std::string_view& out,
                  Error* err = nullptr) const;

  /// True while the cgroup exists (cgroup.procs is still reachable).
  bool alive() const;

  int fd() const { return dir_.get(); }
  ino_t inode() const { return inode_; }
  const std::string& path() const { return path_; }

 private:
  static constexpr int kUnknown = -1;
  static constexpr int kMissing = -2;

  Fd dir_;
  std::string path_;
  ino_t inode_;
  std::shared_ptr<FdBudget> budget_;
  mutable std::array<std::atomic<int>, kFileCount> fds_;
};

/// Reads a whole file by path (for /proc files and the like), with the same
/// buffer discipline. ENOENT is reported as kAbsent.
ReadStatus readFile(const std::string& path, std::string& buf, std::string_view& out,
                    Error* err = nullptr);

/// Raises RLIMIT_NOFILE's soft limit to the hard limit and returns the new
/// soft limit.
long raiseFdLimit();

/// v1 swap accounting (swapaccount=1, CONFIG_MEMCG_SWAP) is on when the
/// memory root has memory.memsw.usage_in_bytes: the one probe of it (a boot
/// parameter; callers probe once). Without it no memsw file is read.
bool v1SwapAccounting(const std::string& memoryRoot);

/// The default descriptor budget under a soft limit of `fdLimit`: what is
/// left after `connections` sockets and 256 for everything else (tracefs
/// per-CPU buffers, netlink, files, logs), at least 0.
long defaultFdBudget(long fdLimit, long connections);

}  // namespace memcg::cgroupfs
