// One protected cgroup as the controller's parts see it (internal to
// controller/*.cpp). Its fields are grouped by who may touch them:
//   fixed   set by Controller::protect() before the protection is published
//           in the ProtectionTable, then read-only;
//   armed   atomics the waiter sets and state() reads;
//   locked  guarded by the protection's own `mu` (queueing, the episode's
//           trigger, the margin adaptation, the last reading and the counts
//           state() shows): the waiter, the worker and the readers of state
//           share them, one protection at a time.
// The waiter's fds and arming state are the waiter's own (waiter.h), not here.
// Lock order: ProtectionTable's lock, then a Prot's `mu`, then ControllerStats'.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "cgroupfs/cgroup_dir.h"
#include "cgroupfs/usage_limit.h"
#include "common/clock.h"
#include "common/log.h"
#include "controller/margin_adapt.h"
#include "controller/protection.h"

namespace memcg::controller {

using Clock = std::chrono::steady_clock;

struct Prot {
  // Fixed.
  uint64_t id = 0;  ///< given by ProtectionTable::add (1, 2, ...)
  Protection p;
  std::shared_ptr<const cgroupfs::CgroupDir> dir;
  int64_t sinceMs = 0;

  // Set by the waiter, read by state().
  std::atomic<bool> armed{false};  // the threshold eventfd / memory.events fd is registered
  std::atomic<bool> psiArmed{false};

  mutable std::mutex mu;  // guards `locked`
  struct Locked {
    bool queued = false;
    bool busy = false;
    bool removed = false;
    Clock::time_point triggerAt{};
    std::string triggerSource;
    // The first wake that found the margin short but could not queue
    // (cooldown): the episode's trigger, so the latency counts the wait.
    Clock::time_point pendingAt{};
    const char* pendingSource = nullptr;
    Clock::time_point cooldownUntil{};
    MarginAdapt adapt;  // the widening of the margins in force (margin_adapt.h)
    // A check found the margin at or above the start margin, or an episode
    // ended, since protect: only then is a short margin at wake an overshoot
    // (the margin short at protect time is the workload's state, not lateness).
    bool adaptPrimed = false;
    uint64_t lastUsage = 0;
    uint64_t lastLimit = 0;
    bool lastUnlimited = true;
    uint64_t episodes = 0;
    uint64_t actions = 0;
    uint64_t reclaimed = 0;
    std::string lastOutcome;
    std::string lastDetail;
    int64_t lastActionMs = 0;
  } locked;

  /// The margins in force at this limit (`mu` held).
  Margins marginsLocked(uint64_t limit, double maxFraction) const {
    return effectiveMargins(p, limit, locked.adapt.extra, maxFraction);
  }
};

/// One read of a protected cgroup's usage and limit.
struct Reading {
  bool ok = false;
  bool gone = false;
  uint64_t usage = 0;
  bool unlimited = true;
  uint64_t limit = 0;
};
inline Reading readUsage(const Prot& p, bool v2, std::string& buf) {
  Reading r;
  auto ul = cgroupfs::readUsageLimit(*p.dir, v2, buf);
  if (!ul.ok()) {
    r.gone = ul.error().gone();
    return r;
  }
  r.usage = ul->usage;
  r.unlimited = ul->limit.unlimited;
  r.limit = ul->limit.bytes;
  r.ok = true;
  return r;
}

/// Wall-clock ms for journal and audit timestamps (common/clock.h).
inline int64_t unixMs() { return clock::wallMs(); }

inline std::string kv(std::string_view k, std::string_view v) {
  return std::string(k) + "=" + log::quote(v);
}

}  // namespace memcg::controller
