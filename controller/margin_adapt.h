// The adaptive start margin: a protection's start and target margins widen
// while the controller's wakes come late (the workload charges faster than
// the waiter reacts), and narrow back when it is calm. Pure functions of their
// arguments (the time is passed in); the waiter calls them, state() shows the
// result.
//
// Why: the v1 threshold eventfd (and v2 memory.events / PSI, and the poll)
// fire when the margin is already short; by the time the waiter has read
// usage, a reader at ~8 GB/s has charged another 24-41 MiB. With a 64 MiB
// start margin that is most of the margin: the workload reaches its limit
// before the episode's first reclaim, and reclaims itself. No single
// configured margin fits every reader, so the margin in force follows the
// overshoot seen at wake.
//
// The rule, per protection (start/target = the configured margins in bytes
// at the current limit; extra = the widening, 0 at protect time):
//   start_effective  = start + extra,  target_effective = target + extra
//                      (the hysteresis, target - start, is kept);
//   overshoot        = start_effective - (limit - usage) at a wake that
//                      queues an episode (how far past the threshold it came);
//   widen            when overshoot >= kWidenAt (1/2) of start_effective:
//                      start_effective += 2 x overshoot (so the same overshoot
//                      is then at most a third of the margin);
//   hold             when overshoot >= kHoldAt (1/4) of start_effective: the
//                      wake counts as pressure (no narrowing for a calm period);
//   narrow           when no pressure for kCalmPeriod (2 s): extra halves
//                      (under 1 MiB it drops to 0), one step per calm period.
// Bounds: start_effective is never below the configured start margin and
// never above max(start, maxFraction x limit) (maxFraction: the
// controller option marginMaxFraction, 0.5 by default); target_effective is
// never above max(target, (1 + maxFraction) / 2 x limit). A limit that
// changes re-applies the bounds at the next check.
#pragma once

#include <chrono>
#include <cstdint>

#include "controller/protection.h"

namespace memcg::controller {

inline constexpr double kWidenAt = 0.5;
inline constexpr double kHoldAt = 0.25;
inline constexpr std::chrono::milliseconds kCalmPeriod{2000};
inline constexpr uint64_t kNarrowToZeroBelow = 1ull << 20;

/// The margins in force (bytes).
struct Margins {
  uint64_t start = 0;
  uint64_t target = 0;
};

/// The adaptation state of one protection.
struct MarginAdapt {
  using Clock = std::chrono::steady_clock;
  uint64_t extra = 0;  ///< bytes added to both margins
  Clock::time_point lastPressure{};
  uint64_t lastOvershoot = 0;  ///< at the last wake that queued an episode
  uint64_t maxOvershoot = 0;   ///< since protect
  uint64_t widenings = 0;
  uint64_t narrowings = 0;
};

/// The largest start_effective at this limit: max(start, maxFraction x limit).
uint64_t startCeiling(const Protection& p, uint64_t limit, double maxFraction);

/// The margins in force for a widening `extra` (clamped to the bounds).
Margins effectiveMargins(const Protection& p, uint64_t limit, uint64_t extra,
                         double maxFraction);

/// A wake that found limit - usage short of the effective start margin and
/// queues an episode: records the overshoot, widens or holds.
void observeShortWake(MarginAdapt& a, const Protection& p, uint64_t usage, uint64_t limit,
                      double maxFraction, MarginAdapt::Clock::time_point now);

/// Any check: narrows one step after a calm period. True if it narrowed.
bool narrowIfCalm(MarginAdapt& a, const Protection& p, uint64_t limit, double maxFraction,
                  MarginAdapt::Clock::time_point now);

/// marginShort / reclaimNeed / v1Threshold on the margins in force.
bool marginShort(const Margins& m, uint64_t usage, uint64_t limit);
uint64_t reclaimNeed(const Margins& m, uint64_t usage, uint64_t limit);
uint64_t v1Threshold(const Margins& m, uint64_t limit);

}  // namespace memcg::controller
