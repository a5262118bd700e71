// The waiter's vocabulary (the loop itself is Controller::waiterLoop/check in
// waiter.cpp): what can wake it, how its epoll keys are made, and the PSI
// trigger it writes.
//
//   v1: a usage-threshold eventfd armed at limit - start margin
//       (cgroup.event_control), re-armed when the limit changes, never while
//       a nudge may be in flight;
//   v2: memory.events (POLLPRI) and a PSI trigger on memory.pressure (POLLPRI;
//       a kernel or cgroup without PSI keeps the others);
//   both: a poll every poll-interval that reads usage and limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace memcg::controller {

// Wake sources (the "trigger" label and audit field).
inline constexpr const char* kSrcThreshold = "threshold";
inline constexpr const char* kSrcEvents = "memory.events";
inline constexpr const char* kSrcPsi = "psi";
inline constexpr const char* kSrcPoll = "poll";

/// epoll data of the waiter's own wake-up eventfd.
inline constexpr uint64_t kWakeId = 0;
/// epoll data of a protection's fds: id * 2 + 1 for its PSI trigger, id * 2
/// for the other (v1 threshold eventfd / v2 memory.events); ids start at 1.
constexpr uint64_t epollKey(uint64_t id, bool psi) { return id * 2 + (psi ? 1 : 0); }
constexpr uint64_t epollKeyId(uint64_t key) { return key / 2; }
constexpr bool epollKeyIsPsi(uint64_t key) { return key % 2 == 1; }

/// What wakes a protection now, for GET state: "threshold+poll",
/// "memory.events+psi+poll", "poll", ...
std::string wakeName(bool v2, bool eventArmed, bool psiArmed);

/// A PSI trigger spec, "some|full <stall us> <window us>" (the kernel's
/// limits: 500 ms <= window <= 10 s, 0 < stall <= window).
struct PsiTrigger {
  bool full = false;
  uint64_t stallUs = 0;
  uint64_t windowUs = 0;
};
Result<PsiTrigger> parsePsiTrigger(std::string_view text);

}  // namespace memcg::controller
