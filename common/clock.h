// The one clock helper. Two clocks, never mixed:
//  - steady (monotonic): intervals, timeouts, ages, deadlines. It never jumps
//    when the wall clock is set, so a timeout cannot fire early or never.
//  - system (wall): timestamps others read (samples, alerts, journal
//    entries, API times), in ms since the Unix epoch.
#pragma once

#include <chrono>
#include <cstdint>

namespace memcg::clock {

/// Monotonic milliseconds (arbitrary origin): for intervals only.
inline int64_t steadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Monotonic microseconds: deadlines where a ms clock's truncation shows
/// (a 200 ms timeout must not end after 199 ms).
inline int64_t steadyUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Wall-clock milliseconds since the Unix epoch: for timestamps.
inline int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace memcg::clock
