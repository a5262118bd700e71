// The embedded controller: keeps a free margin below a protected cgroup's
// limit by reclaiming in the background, off the workload's own path (the
// per-memcg background reclaim of 2011's async-reclaim threads, from user space).
//
// Protection {cgroup, start margin, target margin, floor}: when limit - usage
// falls below the start margin, reclaim until it is back at the target margin
// (the low/high watermarks of 2011's async reclaim), never taking usage below the floor.
// "limit" is memory.limit_in_bytes (v1) or memory.max, else memory.high (v2);
// a cgroup without one cannot be protected (409). Each margin is given either
// in bytes or in percent of the limit (0 < p < 100, fractions allowed); a
// percent margin is resolved against the limit read at each check (bytes =
// floor(limit * p / 100)), so it follows a limit that changes later. Checked at
// protect time against the current limit: start > 0, target > start, target <
// limit (400 otherwise).
//
// Files by concern: protection.h (validation, margin maths), waiter.h/.cpp
// (epoll, threshold/PSI/events arming), worker.h/.cpp (episodes, token
// bucket, CPU budget), state.h/.cpp (audit of actions, state JSON, metrics),
// prot.h (a protection's fields by owner), controller.cpp (lifecycle,
// protect/unprotect, journal replay).
//
// Threads: a waiter and an actuation worker; nothing runs inside a scrape.
//   waiter   epoll on, per protection, a v1 usage-threshold eventfd armed at
//            limit - start margin (re-armed when the limit changes, never
//            while a nudge may be in flight), or on v2 memory.events (POLLPRI)
//            and a PSI trigger on memory.pressure (POLLPRI; psiTrigger, e.g.
//            "some 1000 500000"; a kernel or cgroup without PSI keeps the
//            others); plus a polling fallback every poll-interval (50 ms) that
//            reads usage and limit. A short margin queues the cgroup once (one
//            protection at a time per cgroup).
//   worker   runs an episode: up to max-nudges actuations (actuator.h) until
//            the target margin is reached, bounded by a bytes-per-second
//            token bucket and a CPU budget over 1 s windows; then a cooldown.
// Trigger-to-reclaim latency = the waiter's wake that first found the margin
// short (eventfd, memory.events, PSI or poll; a wake during the cooldown
// counts from then) -> return of the reclaiming write of the episode's first
// actuation; a histogram per wake source (label trigger).
//
// Safety: nothing is written unless enabled; dry-run logs, audits and counts
// what it would do (usage thresholds are still registered: that changes no
// limit); the root and labels not whole-matching --controller.allow are never
// written (checked here and again in the actuator); every action goes to the
// audit log and to metrics; v1 nudges are journaled and a crash is undone at
// the next start (also when the controller is disabled: recoverJournal()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cgroupfs/discovery.h"
#include "cgroupfs/walk_scheduler.h"
#include "common/fd.h"
#include "controller/actuator.h"
#include "controller/audit_log.h"
#include "controller/journal.h"
#include "controller/margin_adapt.h"
#include "controller/options.h"
#include "controller/protection.h"
#include "controller/state.h"
#include "controller/waiter.h"
#include "controller/worker.h"
#include "metrics/metric.h"
#include "tracing/attribution.h"

namespace memcg::controller {

/// What a journal replay did.
struct RecoveryReport {
  size_t pending = 0;
  size_t restored = 0;
  size_t conflicts = 0;  ///< limit changed since, or cgroup recreated: left alone
  size_t failed = 0;     ///< kept in the journal for the next start
};

/// Replays the journal at `opts.journal` if it exists (restoring every limit
/// a crash left lowered) and compacts it. For start-up when the controller is
/// disabled; the Controller does the same itself. Never throws.
RecoveryReport recoverJournal(const ControllerOptions& opts);

class Controller {
 public:
  /// Start-up: validates the options (std::invalid_argument), opens the
  /// journal and the audit log (std::runtime_error), and replays the
  /// journal. `seams` is for tests (fault injection, hooks); its `allowed`
  /// is replaced by the allow-list. `attribution` (may be null: tracing is
  /// down or off) is told which thread reclaims on purpose and for which
  /// cgroup, so the vmscan metrics charge that reclaim as proactive.
  /// `budgetClock` is for tests: the clocks the bytes-per-second and CPU
  /// budgets read (worker.h); default the real ones.
  /// `walks` finds the cgroups it is asked about (walking once more for a new one).
  Controller(ControllerOptions opts, WalkScheduler& walks, ActuatorOptions seams = {},
             tracing::ReclaimAttribution* attribution = nullptr,
             BudgetClock budgetClock = {});
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  /// Starts the waiter and the worker. Idempotent.
  void start();
  /// Stops and joins them. Idempotent; also done by the destructor.
  void stop();

  std::optional<OpError> protect(const Protection& p);
  std::optional<OpError> unprotect(const std::string& cgroup);
  /// A protection of `cgroup` exists (by whoever made it).
  bool isProtected(const std::string& cgroup) const;

  /// JSON for GET /api/v1/controller/state.
  nlohmann::json state() const;

  /// Self-metrics (see describe()); cheap, never blocks on cgroupfs.
  void collect(metrics::Sink& sink) const;
  std::vector<const metrics::Desc*> describe() const;

  /// Root and outside the allow-list: false.
  bool allowed(std::string_view cgroup) const;
  const ControllerOptions& options() const { return opts_; }
  const RecoveryReport& startupRecovery() const { return recovery_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Prot;  // prot.h

  struct Reading {
    bool ok = false;
    bool gone = false;
    uint64_t usage = 0;
    bool unlimited = true;
    uint64_t limit = 0;
  };
  Reading readUsage(const Prot& p, std::string& buf) const;

  void waiterLoop();
  void workerLoop();
  void check(const std::shared_ptr<Prot>& p, Clock::time_point now, const char* firedBy,
             std::string& buf, bool& retrySoon);
  void armPsi(const std::shared_ptr<Prot>& p);
  std::string wakeName(const Prot& p) const;
  void rearm(const std::shared_ptr<Prot>& p, uint64_t limit, uint64_t threshold);
  /// The margins in force for p at this limit (mu_ held).
  Margins marginsLocked(const Prot& p, uint64_t limit) const;
  void episode(const std::shared_ptr<Prot>& p);
  void record(const Prot& p, const ReclaimResult& r, bool first);
  void wakeWaiter();
  std::shared_ptr<const cgroupfs::CgroupDir> resolve(const std::string& cgroup);

  ControllerOptions opts_;
  WalkScheduler& walks_;
  Discovery& discovery_;
  tracing::ReclaimAttribution* attribution_;  // not owned; null without tracing
  bool v2_ = false;
  std::optional<std::regex> allow_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<Actuator> actuator_;
  RecoveryReport recovery_;

  mutable std::mutex mu_;  // guards everything below
  std::map<std::string, std::shared_ptr<Prot>> prots_;
  std::map<uint64_t, std::shared_ptr<Prot>> byId_;
  uint64_t nextId_ = 1;
  std::deque<std::shared_ptr<Prot>> queue_;
  std::condition_variable cv_;

  // Budgets (worker only; worker.h).
  BudgetClock budgetClock_;
  TokenBucket tokens_;
  CpuBudget cpu_;

  /// The counters: a part of their own (state.h), with their own lock.
  std::unique_ptr<ControllerStats> stats_;
  std::atomic<bool> stop_{false};
  bool started_ = false;
  Fd epoll_;
  Fd wake_;
  std::thread waiter_;
  std::thread worker_;

  ControllerDescs descs_;
};

}  // namespace memcg::controller
