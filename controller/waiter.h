// The waiter: a thread that wakes when a protected cgroup may be short of
// its margin, reads usage and limit, and queues the protections whose margin
// is short for the worker (worker.h). Its vocabulary: what can wake it, how
// its epoll keys are made, and the PSI trigger it writes.
//
//   v1: a usage-threshold eventfd armed at limit - start margin
//       (cgroup.event_control), re-armed when the limit changes, never while
//       a nudge may be in flight;
//   v2: memory.events (POLLPRI) and a PSI trigger on memory.pressure (POLLPRI;
//       a kernel or cgroup without PSI keeps the others);
//   both: a poll every poll-interval that reads usage and limit.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/fd.h"
#include "common/result.h"
#include "controller/actuation.h"
#include "controller/episode_queue.h"
#include "controller/options.h"

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

struct Prot;
class ProtectionTable;
/// The waiter thread and what only it touches: the epoll set, the wake-up
/// eventfd and, per protection, the fds it armed (no lock: one thread). What
/// it shares it reaches through its constructor's arguments: the queue to
/// the worker and the CPU counter (`parts`), the protections (their own
/// locks), the arming writes; `onGone` is told of a protection whose cgroup vanished (after the
/// table dropped it) to release and audit it.
class Waiter {
 public:
  Waiter(ThreadParts parts, ProtectionTable& table, WakeArming& arming,
         std::function<void(const Prot&)> onGone);
  ~Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  /// Starts the thread (std::runtime_error if epoll or the eventfd fail).
  void start();
  /// Stops and joins it; its fds are closed (the v1 thresholds and PSI
  /// triggers go with them).
  void stop();
  /// Wakes the thread now (a protection was added or removed); no-op when
  /// not started.
  void wake();
  /// What wakes `p` now, for GET state.
  std::string wakeName(const Prot& p) const;

 private:
  /// Per protection, the waiter's own state.
  struct Arm {
    Fd eventFd;                     // v1 threshold eventfd, or v2 memory.events fd
    uint64_t armedFor = 0;          // the limit the threshold was armed for
    uint64_t armedThreshold = 0;    // v1: the usage threshold armed (limit - effective start)
    bool armFailed = false;         // polling only (fixture, no event_control)
    Fd psiFd;                       // v2 PSI trigger on memory.pressure
    bool psiFailed = false;         // no PSI for this cgroup: the other sources only
    const char* firedBy = nullptr;  // this wake's source, if an fd fired
  };
  using Clock = std::chrono::steady_clock;

  void loop();
  void check(const std::shared_ptr<Prot>& p, Arm& a, Clock::time_point now, std::string& buf,
             bool& retrySoon);
  void rearm(const Prot& p, Arm& a, uint64_t limit, uint64_t threshold);
  void armPsi(Prot& p, Arm& a);
  void drop(Arm& a);

  const ThreadParts parts_;
  const ControllerOptions& opts_;  // parts_.opts
  ProtectionTable& table_;
  WakeArming& arming_;
  std::function<void(const Prot&)> onGone_;

  std::map<uint64_t, Arm> arms_;  // by protection id; the thread's own
  std::atomic<bool> stop_{false};
  bool started_ = false;
  Fd epoll_;
  Fd wake_;
  std::thread thread_;
};

}  // namespace memcg::controller
