#include "cgroupfs/cgroup_dir.h"

#include "common/file.h"
#include "common/log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace memcg::cgroupfs {

bool FdBudget::tryKeep() {
  if (kept_.fetch_add(1, std::memory_order_relaxed) < budget_.load(std::memory_order_relaxed)) {
    return true;
  }
  kept_.fetch_sub(1, std::memory_order_relaxed);
  return false;
}

void FdBudget::spent() {
  uncached_.fetch_add(1, std::memory_order_relaxed);
  if (!logged_.exchange(true, std::memory_order_relaxed)) {
    log::warn("cgroup file descriptor budget spent: files past it are opened, read and closed "
              "per scrape (costlier); raise LimitNOFILE or --cgroup.fd-budget",
              "budget=" + std::to_string(budget()) + " kept=" + std::to_string(kept()));
  }
}

CgroupDir::CgroupDir(Fd dir, std::string path, ino_t inode, std::shared_ptr<FdBudget> budget)
    : dir_(std::move(dir)), path_(std::move(path)), inode_(inode), budget_(std::move(budget)) {
  for (auto& f : fds_) f.store(kUnknown, std::memory_order_relaxed);
  if (budget_) budget_->keepDirectory();  // the directory itself
}

CgroupDir::~CgroupDir() {
  if (budget_) budget_->release();
  for (auto& f : fds_) {
    int fd = f.load(std::memory_order_relaxed);
    if (fd >= 0) {
      ::close(fd);
      if (budget_) budget_->release();
    }
  }
}

Result<std::shared_ptr<CgroupDir>> CgroupDir::open(const std::string& path,
                                                   std::shared_ptr<FdBudget> budget) {
  return openAt(AT_FDCWD, path, path, std::move(budget));
}

Result<std::shared_ptr<CgroupDir>> CgroupDir::openAt(int parent, std::string_view name,
                                                     std::string path,
                                                     std::shared_ptr<FdBudget> budget) {
  std::string n(name);
  Fd fd(::openat(parent, n.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return makeError(errno, path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return makeError(errno, path);
  return std::make_shared<CgroupDir>(std::move(fd), std::move(path), st.st_ino,
                                     std::move(budget));
}

bool CgroupDir::alive() const {
  return ::faccessat(dir_.get(), "cgroup.procs", F_OK, 0) == 0;
}

ReadStatus CgroupDir::read(FileId id, std::string& buf, std::string_view& out,
                           Error* err) const {
  auto& slot = fds_[static_cast<size_t>(id)];
  int fd = slot.load(std::memory_order_acquire);
  if (fd == kMissing) return ReadStatus::kAbsent;
  // kFileNames are string literals: data() is NUL-terminated (no string
  // built per read; the name goes into an error only).
  const std::string_view name = fileName(id);
  Fd transient;
  if (fd == kUnknown) {
    int nfd = ::openat(dir_.get(), name.data(), O_RDONLY | O_CLOEXEC);
    if (nfd < 0) {
      int e = errno;
      if (e == ENOENT || e == ENODEV) {
        // The same errno says "no such file" and "no such cgroup": ask the
        // directory whether it is still there.
        if (!alive()) return ReadStatus::kGone;
        int expected = kUnknown;
        slot.compare_exchange_strong(expected, kMissing);
        return ReadStatus::kAbsent;
      }
      if (err) *err = makeError(e, path_ + "/" + std::string(name));
      return ReadStatus::kError;
    }
    if (budget_ && budget_->tryKeep()) {
      int expected = kUnknown;
      if (slot.compare_exchange_strong(expected, nfd)) {
        fd = nfd;
      } else {  // another scrape cached it first
        budget_->release();
        transient.reset(nfd);
        fd = nfd;
      }
    } else {
      transient.reset(nfd);
      fd = nfd;
      if (budget_) budget_->spent();
    }
  }
  size_t len = 0;
  int e = multiRecord(id) ? preadAll(fd, buf, len) : preadSingleRecord(fd, buf, len);
  if (e == ENODEV || e == ENOENT) return ReadStatus::kGone;
  if (e != 0) {
    if (err) *err = makeError(e, path_ + "/" + std::string(name));
    return ReadStatus::kError;
  }
  out = std::string_view(buf.data(), len);
  return ReadStatus::kOk;
}

bool v1SwapAccounting(const std::string& memoryRoot) {
  const std::string f = memoryRoot + "/" + std::string(fileName(FileId::kV1MemswUsage));
  return ::access(f.c_str(), F_OK) == 0;
}

long defaultFdBudget(long fdLimit, long connections) {
  return std::max(0L, fdLimit - connections - 256);
}

ReadStatus readFile(const std::string& path, std::string& buf, std::string_view& out,
                    Error* err) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    // /proc/pressure/* answers EOPNOTSUPP when PSI is disabled at boot.
    if (errno == ENOENT || errno == EOPNOTSUPP) return ReadStatus::kAbsent;
    if (err) *err = makeError(errno, path);
    return ReadStatus::kError;
  }
  size_t len = 0;
  int e = preadAll(fd.get(), buf, len);
  if (e != 0) {
    // /proc/pressure/* answers EOPNOTSUPP when PSI is disabled at boot.
    if (e == EOPNOTSUPP) return ReadStatus::kAbsent;
    if (err) *err = makeError(e, path);
    return ReadStatus::kError;
  }
  out = std::string_view(buf.data(), len);
  return ReadStatus::kOk;
}

long raiseFdLimit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  // With CAP_SYS_RESOURCE the hard limit itself can go up (to fs.nr_open):
  // 1,000 cgroups keep ~20,000 descriptors open.
  constexpr rlim_t kWant = 1 << 20;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < kWant) {
    for (rlim_t want = kWant; want > rl.rlim_max; want /= 2) {
      struct rlimit up {want, want};
      if (::setrlimit(RLIMIT_NOFILE, &up) == 0) break;
    }
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur == RLIM_INFINITY ? 1 << 20 : static_cast<long>(rl.rlim_cur);
}

}  // namespace memcg::cgroupfs
