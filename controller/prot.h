// One protected cgroup as the controller's threads see it (internal to
// controller/*.cpp). Its fields are grouped by who may touch them:
//   fixed   set by protect() before the protection is published, then read-only;
//   waiter  the waiter thread only (its fds and arming state);
//   armed   atomics the waiter sets and state() reads;
//   locked  guarded by Controller::mu_ (queueing, the episode's trigger,
//           the last reading and the counts state() shows).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cgroupfs/cgroup_dir.h"
#include "common/clock.h"
#include "common/fd.h"
#include "common/log.h"
#include "controller/controller.h"
#include "controller/margin_adapt.h"

namespace memcg::controller {

struct Controller::Prot {
  // Fixed.
  uint64_t id = 0;
  Protection p;
  std::shared_ptr<const cgroupfs::CgroupDir> dir;
  int64_t sinceMs = 0;

  struct WaiterOwned {
    Fd eventFd;                     // v1 threshold eventfd, or v2 memory.events fd
    uint64_t armedFor = 0;          // the limit the threshold was armed for
    uint64_t armedThreshold = 0;    // v1: the usage threshold armed (limit - effective start)
    bool armFailed = false;         // polling only (fixture, no event_control)
    Fd psiFd;                       // v2 PSI trigger on memory.pressure
    bool psiFailed = false;         // no PSI for this cgroup: the other sources only
    const char* firedBy = nullptr;  // this wake's source, if an fd fired
  } waiter;

  // Set by the waiter, read by state().
  std::atomic<bool> armed{false};  // waiter.eventFd is registered
  std::atomic<bool> psiArmed{false};

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
};

/// Wall-clock ms for journal and audit timestamps (common/clock.h).
inline int64_t unixMs() { return clock::wallMs(); }

inline std::string kv(std::string_view k, std::string_view v) {
  return std::string(k) + "=" + log::quote(v);
}

}  // namespace memcg::controller
