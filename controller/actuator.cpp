#include "controller/actuator.h"
#include "common/clock.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <cstring>

#include "common/log.h"
#include "common/parse.h"
#include "controller/write_names.h"

namespace memcg::controller {
namespace {

using cgroupfs::CgroupDir;
using cgroupfs::FileId;
using cgroupfs::Limit;
using cgroupfs::ReadStatus;
using Clock = std::chrono::steady_clock;

uint64_t pageSize() {
  static const uint64_t p = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

uint64_t roundUpPage(uint64_t v) {
  uint64_t p = pageSize();
  return (v + p - 1) / p * p;
}

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Reads one file and parses it with `parse` (parseSingle or parseLimit);
/// kGone/kAbsent/kError become an Error.
template <typename Parse>
auto readParsed(const CgroupDir& dir, FileId id, std::string& buf, Parse parse)
    -> decltype(parse(std::string_view{}, std::string_view{})) {
  std::string_view out;
  Error err;
  ReadStatus st = dir.read(id, buf, out, &err);
  if (st == ReadStatus::kGone) return makeError(ENOENT, dir.path(), "cgroup gone");
  if (st == ReadStatus::kAbsent)
    return makeError(ENOENT, dir.path() + "/" + std::string(cgroupfs::fileName(id)));
  if (st != ReadStatus::kOk) return err;
  return parse(out, cgroupfs::fileName(id));
}

Result<uint64_t> readSingle(const CgroupDir& dir, FileId id, std::string& buf) {
  return readParsed(dir, id, buf, cgroupfs::parseSingle);
}

Result<Limit> readLimit(const CgroupDir& dir, FileId id, std::string& buf) {
  return readParsed(dir, id, buf, cgroupfs::parseLimit);
}

/// What a v1 cgroup can give back without swap: its page cache
/// (memory.stat total_inactive_file + total_active_file, hierarchical).
/// Anon is counted only when the host has swap (then total_*_anon too).
std::optional<uint64_t> v1Reclaimable(const CgroupDir& dir, std::string& buf, bool withAnon) {
  std::string_view out;
  if (dir.read(FileId::kMemoryStat, buf, out) != ReadStatus::kOk) return std::nullopt;
  uint64_t sum = 0;
  auto st = cgroupfs::parseFlatKeyed(out, "memory.stat", [&](std::string_view k, uint64_t v) {
    if (k == "total_inactive_file" || k == "total_active_file") sum += v;
    if (withAnon && (k == "total_inactive_anon" || k == "total_active_anon")) sum += v;
  });
  if (!st) return std::nullopt;
  return sum;
}

bool hostHasSwap() {
  static const bool has = [] {
    std::string buf;
    std::string_view out;
    if (cgroupfs::readFile("/proc/swaps", buf, out) != ReadStatus::kOk) return false;
    std::string_view rest = out, line;
    int lines = 0;
    while (nextLine(rest, line)) {
      if (!line.empty()) ++lines;
    }
    return lines > 1;  // the header line only = no swap
  }();
  return has;
}

Outcome goneOr(const Error& e, Outcome other) { return e.gone() ? Outcome::kGone : other; }

}  // namespace

std::string_view actuatorName(ActuatorKind k) {
  return k == ActuatorKind::kV1LimitNudge ? "v1_limit_nudge" : "v2_memory_reclaim";
}

std::string_view outcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kPartial: return "partial";
    case Outcome::kBusy: return "busy";
    case Outcome::kConflict: return "conflict";
    case Outcome::kNothing: return "nothing";
    case Outcome::kDenied: return "denied";
    case Outcome::kGone: return "gone";
    case Outcome::kError: return "error";
  }
  return "error";
}

SchedOtherScope::SchedOtherScope() {
  int p = ::sched_getscheduler(0);
  if (p >= 0 && (p & ~SCHED_RESET_ON_FORK) != SCHED_OTHER) {
    struct sched_param sp {};
    if (::sched_setscheduler(0, SCHED_OTHER, &sp) == 0) oldPolicy_ = p & ~SCHED_RESET_ON_FORK;
  }
}

SchedOtherScope::~SchedOtherScope() {
  if (oldPolicy_ < 0) return;
  struct sched_param sp {};
  ::sched_setscheduler(0, oldPolicy_, &sp);
}

bool setThreadPolicy(std::string_view policy) {
  int p;
  if (policy == "other") {
    p = SCHED_OTHER;
  } else if (policy == "batch") {
    p = SCHED_BATCH;
  } else if (policy == "idle") {
    p = SCHED_IDLE;
  } else {
    return false;
  }
  struct sched_param sp {};
  return ::sched_setscheduler(0, p, &sp) == 0;  // 0 = the calling thread
}

Actuator::Actuator(ActuatorOptions opts, Journal* journal)
    : opts_(std::move(opts)), journal_(journal) {}

bool Actuator::allowed(std::string_view cgroup) const {
  if (cgroup.empty() || cgroup == "/") return false;
  return opts_.allowed && opts_.allowed(cgroup);
}

/// Writes `text` at offset 0 of an open cgroup file: 0 or an errno. EINTR is
/// retried. A regular file (a fixture tree) is truncated first so a shorter
/// value does not leave a tail; cgroupfs files take each write whole.
int Actuator::writeText(int fd, bool regular, std::string_view file,
                        std::string_view text) const {
  for (;;) {
    if (opts_.faultInjector) {
      int e = opts_.faultInjector(file, text);
      if (e == EINTR) continue;
      if (e != 0) return e;
    }
    if (regular && ::ftruncate(fd, 0) != 0) return errno;
    ssize_t n = ::pwrite(fd, text.data(), text.size(), 0);
    if (n >= 0) return 0;
    if (errno == EINTR) continue;
    return errno;
  }
}

namespace {

struct WriteFd {
  Fd fd;
  bool regular = false;  ///< not on cgroupfs: a fixture tree
};

Result<WriteFd> openForWrite(const CgroupDir& dir, std::string_view name,
                             int flags = O_WRONLY) {
  std::string n(name);
  WriteFd w;
  w.fd.reset(::openat(dir.fd(), n.c_str(), flags | O_CLOEXEC));
  if (!w.fd.valid()) return makeError(errno, dir.path() + "/" + n);
  // kernfs files are S_IFREG too: tell a fixture tree by its filesystem.
  struct statfs sf {};
  if (::fstatfs(w.fd.get(), &sf) == 0) {
    w.regular = sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC;
  }
  return w;
}

}  // namespace

ReclaimResult Actuator::v1Nudge(const CgroupDir& dir, const ReclaimRequest& req) {
  ReclaimResult r;
  r.actuator = ActuatorKind::kV1LimitNudge;
  if (!allowed(req.cgroup)) {
    r.outcome = Outcome::kDenied;
    r.detail = "cgroup is the root or not in --controller.allow";
    return r;
  }
  if (journal_ == nullptr) {
    r.detail = "no journal: a v1 limit nudge is never done unjournaled";
    return r;
  }
  std::string buf;
  auto limit = readLimit(dir, FileId::kV1Limit, buf);
  if (!limit) {
    r.outcome = goneOr(limit.error(), Outcome::kError);
    r.detail = limit.error().message();
    return r;
  }
  auto usage = readSingle(dir, FileId::kV1Usage, buf);
  if (!usage) {
    r.outcome = goneOr(usage.error(), Outcome::kError);
    r.detail = usage.error().message();
    return r;
  }
  r.original = *limit;
  r.usageBefore = r.usageAfter = *usage;
  const uint64_t u = *usage;

  uint64_t want = std::min(req.bytes, req.maxStepBytes);
  // Never lower below what the cgroup can give back in one step.
  if (auto give = v1Reclaimable(dir, buf, hostHasSwap())) want = std::min(want, *give);
  uint64_t target = u > want ? u - want : 0;
  target = std::max(target, req.floorBytes);
  if (!limit->unlimited && target >= limit->bytes) {
    target = limit->bytes > pageSize() ? limit->bytes - pageSize() : 0;
  }
  target = roundUpPage(target);
  if (target == 0 || target + pageSize() > u) {
    r.outcome = Outcome::kNothing;
    r.detail = "at the floor or nothing reclaimable";
    return r;
  }
  r.requested = u - target;
  r.lowered = target;

  auto wfd = openForWrite(dir, wfile::kV1Limit);
  if (!wfd) {
    r.outcome = goneOr(wfd.error(), Outcome::kError);
    r.detail = wfd.error().message();
    return r;
  }

  JournalEntry je;
  je.cgroup = req.cgroup;
  je.dir = dir.path();
  je.inode = dir.inode();
  je.originalUnlimited = limit->unlimited;
  je.original = limit->bytes;
  je.lowered = target;
  je.tsMs = clock::wallMs();
  std::optional<uint64_t> armed;
  if (opts_.keepArmed) {
    armed = journal_->findArmed(je.dir, je.inode, je.originalUnlimited, je.original, target);
    if (!armed) journal_->clearDir(je.dir);
  }
  Result<uint64_t> seq = armed ? Result<uint64_t>(*armed) : journal_->record(je);
  if (!seq) {
    r.detail = "journal: " + seq.error().message();
    return r;
  }

  const std::string lowText = std::to_string(target);
  const std::string origText = limit->unlimited ? "-1" : std::to_string(limit->bytes);
  Clock::time_point t0, tLowered, tRestored;
  int err;
  {
    // Keep the pair tight: SCHED_OTHER, no allocation, no logging in between.
    SchedOtherScope sched;
    t0 = Clock::now();
    err = writeText(wfd->fd.get(), wfd->regular, wfile::kV1Limit, lowText);
    tLowered = Clock::now();
    if (err == 0) {
      if (opts_.afterLower) opts_.afterLower();
      auto now = readLimit(dir, FileId::kV1Limit, buf);
      if (now && !now->unlimited && now->bytes == target) {
        int rerr = writeText(wfd->fd.get(), wfd->regular, wfile::kV1Limit, origText);
        for (int i = 0; rerr != 0 && rerr != ENOENT && rerr != ENODEV && i < 3; ++i) {
          rerr = writeText(wfd->fd.get(), wfd->regular, wfile::kV1Limit, origText);
        }
        tRestored = Clock::now();
        if (rerr != 0) {
          r.outcome = rerr == ENOENT || rerr == ENODEV ? Outcome::kGone : Outcome::kError;
          r.detail = std::string("restore failed: ") + std::strerror(rerr) +
                     "; the journal keeps the original for recovery";
          r.reclaimedAt = tLowered;
          r.writeSeconds = secondsBetween(t0, tLowered);
          if (r.outcome == Outcome::kGone) (void)journal_->clear(*seq);
          return r;
        }
        r.outcome = Outcome::kOk;
      } else {
        tRestored = Clock::now();
        r.outcome = now ? Outcome::kConflict : goneOr(now.error(), Outcome::kError);
        r.detail = now ? "limit changed by someone else between lower and restore; left as is"
                       : now.error().message();
      }
    }
  }
  if (!(opts_.keepArmed && r.outcome == Outcome::kOk && err == 0)) (void)journal_->clear(*seq);
  r.writeSeconds = secondsBetween(t0, tLowered);
  if (err == EBUSY) {
    r.outcome = Outcome::kBusy;
    r.detail = "EBUSY: target unreachable, limit unchanged";
  } else if (err != 0) {
    r.outcome = err == ENOENT || err == ENODEV ? Outcome::kGone : Outcome::kError;
    r.detail = std::string("lowering the limit: ") + std::strerror(err);
  } else {
    r.reclaimedAt = tLowered;
    r.pairSeconds = secondsBetween(tLowered, tRestored);
    r.reclaimed = u - target;
  }
  if (auto after = readSingle(dir, FileId::kV1Usage, buf)) r.usageAfter = *after;
  return r;
}

ReclaimResult Actuator::v2Reclaim(const CgroupDir& dir, const ReclaimRequest& req) {
  ReclaimResult r;
  r.actuator = ActuatorKind::kV2MemoryReclaim;
  if (!allowed(req.cgroup)) {
    r.outcome = Outcome::kDenied;
    r.detail = "cgroup is the root or not in --controller.allow";
    return r;
  }
  std::string buf;
  auto usage = readSingle(dir, FileId::kV2Current, buf);
  if (!usage) {
    r.outcome = goneOr(usage.error(), Outcome::kError);
    r.detail = usage.error().message();
    return r;
  }
  r.usageBefore = r.usageAfter = *usage;
  uint64_t want = std::min(req.bytes, req.maxStepBytes);
  uint64_t room = *usage > req.floorBytes ? *usage - req.floorBytes : 0;
  want = std::min(want, room) / pageSize() * pageSize();
  if (want == 0) {
    r.outcome = Outcome::kNothing;
    r.detail = "at the floor";
    return r;
  }
  r.requested = want;
  auto wfd = openForWrite(dir, wfile::kV2Reclaim);
  if (!wfd) {
    bool unsupported = wfd.error().err == ENOENT && dir.alive();
    r.outcome = unsupported ? Outcome::kError : goneOr(wfd.error(), Outcome::kError);
    r.detail = unsupported ? "memory.reclaim not supported (kernel < 5.19)"
                           : wfd.error().message();
    return r;
  }
  std::string text = std::to_string(want);
  if (opts_.v2Swappiness >= 0) {
    if (swappinessProbe_.load() == 0) {
      // A zero-byte request reclaims nothing; it fails with EINVAL where
      // swappiness= is unknown (before 6.12).
      std::string probe = "0 swappiness=" + std::to_string(opts_.v2Swappiness);
      int e = writeText(wfd->fd.get(), wfd->regular, wfile::kV2Reclaim, probe);
      swappinessProbe_.store(e == 0 ? 1 : -1);
      log::info("controller: memory.reclaim swappiness= probe",
                std::string("supported=") + (e == 0 ? "true" : "false"));
    }
    if (swappinessProbe_.load() == 1) text += " swappiness=" + std::to_string(opts_.v2Swappiness);
  }
  int err;
  Clock::time_point t0, t1;
  {
    SchedOtherScope sched;
    t0 = Clock::now();
    err = writeText(wfd->fd.get(), wfd->regular, wfile::kV2Reclaim, text);
    t1 = Clock::now();
  }
  r.writeSeconds = secondsBetween(t0, t1);
  r.reclaimedAt = t1;
  if (auto after = readSingle(dir, FileId::kV2Current, buf)) r.usageAfter = *after;
  uint64_t progress = r.usageBefore > r.usageAfter ? r.usageBefore - r.usageAfter : 0;
  if (err == 0) {
    r.outcome = Outcome::kOk;
    // Success means the kernel reclaimed at least `want`; it often reclaims
    // more (whole batches: ~1.6x on 6.1, seen in the qemu lane), which the
    // usage drop across the write shows (a lower bound: charges go on).
    r.reclaimed = std::max(want, progress);
  } else if (err == EAGAIN) {
    r.reclaimed = std::min(progress, want);
    r.outcome = r.reclaimed > 0 ? Outcome::kPartial : Outcome::kBusy;
    r.detail = "EAGAIN: reclaimed less than asked";
  } else {
    r.outcome = err == ENOENT || err == ENODEV ? Outcome::kGone : Outcome::kError;
    r.reclaimed = std::min(progress, want);
    r.detail = std::string("memory.reclaim: ") + std::strerror(err);
  }
  return r;
}

Result<Fd> Actuator::armV1Threshold(const CgroupDir& dir, std::string_view cgroup,
                                    uint64_t thresholdBytes) {
  if (!allowed(cgroup)) return makeError(EPERM, dir.path(), "not allowed");
  Fd efd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!efd.valid()) return makeError(errno, "eventfd");
  std::string un(wfile::kV1Usage);
  Fd ufd(::openat(dir.fd(), un.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ufd.valid()) return makeError(errno, dir.path() + "/" + un);
  auto w = openForWrite(dir, wfile::kV1EventControl);
  if (!w) return w.error();
  std::string text = std::to_string(efd.get()) + " " + std::to_string(ufd.get()) + " " +
                     std::to_string(thresholdBytes);
  int e = writeText(w->fd.get(), w->regular, wfile::kV1EventControl, text);
  if (e != 0) {
    return makeError(e, dir.path() + "/" + std::string(wfile::kV1EventControl), text);
  }
  // A regular file (fixture) never signals; the caller's polling covers it.
  if (w->regular) return makeError(ENOTSUP, dir.path(), "not cgroupfs: polling only");
  return efd;
}

Result<Fd> Actuator::armV2PressureTrigger(const CgroupDir& dir, std::string_view cgroup,
                                          std::string_view trigger) {
  if (!allowed(cgroup)) return makeError(EPERM, dir.path(), "not allowed");
  auto w = openForWrite(dir, wfile::kV2Pressure, O_RDWR | O_NONBLOCK);
  if (!w) return w.error();
  // The kernel overwrites the last byte written with a NUL: send one.
  std::string text(trigger);
  text.push_back('\0');
  int e = writeText(w->fd.get(), w->regular, wfile::kV2Pressure, text);
  if (e != 0) {
    return makeError(e, dir.path() + "/" + std::string(wfile::kV2Pressure),
                     std::string(trigger));
  }
  if (w->regular) return makeError(ENOTSUP, dir.path(), "not cgroupfs: polling only");
  return std::move(w->fd);
}

void Actuator::releaseJournal(const CgroupDir& dir) {
  if (journal_) journal_->clearDir(dir.path());
}

Outcome Actuator::restoreFromJournal(const JournalEntry& e, std::string* detail) {
  auto set = [&](std::string s) {
    if (detail) *detail = std::move(s);
  };
  auto dir = CgroupDir::open(e.dir);
  if (!dir) {
    set(dir.error().message());
    return goneOr(dir.error(), Outcome::kError);
  }
  if ((*dir)->inode() != e.inode) {
    set("cgroup was recreated (inode differs); left alone");
    return Outcome::kConflict;
  }
  std::string buf;
  auto limit = readLimit(**dir, FileId::kV1Limit, buf);
  if (!limit) {
    set(limit.error().message());
    return goneOr(limit.error(), Outcome::kError);
  }
  Limit original{e.originalUnlimited, e.originalUnlimited ? 0 : e.original};
  if (*limit == original) {
    set("already at the original limit");
    return Outcome::kNothing;
  }
  if (limit->unlimited || limit->bytes != e.lowered) {
    set("limit changed since the nudge; left as is");
    return Outcome::kConflict;
  }
  auto w = openForWrite(**dir, wfile::kV1Limit);
  if (!w) {
    set(w.error().message());
    return goneOr(w.error(), Outcome::kError);
  }
  std::string text = e.originalUnlimited ? "-1" : std::to_string(e.original);
  int err = writeText(w->fd.get(), w->regular, wfile::kV1Limit, text);
  if (err != 0) {
    set(std::string("restore write: ") + std::strerror(err));
    return err == ENOENT || err == ENODEV ? Outcome::kGone : Outcome::kError;
  }
  set("restored " + text);
  return Outcome::kOk;
}

}  // namespace memcg::controller
