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
// Parts, each with its own state and lock, joined by narrow interfaces; the
// Controller only builds and wires them (controller.cpp: validation, journal
// replay, protect/unprotect; state.cpp: state JSON and metrics):
//   ProtectionTable  protection_table.h  which cgroups are protected; each
//                    protection's shared fields under its own lock (prot.h)
//   Waiter           waiter.h   epoll, threshold/PSI/events arming, queues
//                               short margins (its fds are its own)
//   EpisodeQueue     episode_queue.h  waiter -> worker
//   Worker           worker.h   episodes, token bucket, CPU budget
//   Actuator         actuator.h the only cgroupfs writer, seen by the waiter
//                               and the worker as WakeArming / Reclaimer
//                               (actuation.h)
//   Journal          journal.h  v1 nudges' crash record; recovery.h replays it
//   ControllerStats  state.h    counters and histograms for /metrics
//   AuditLog         audit_log.h
// protection.h holds the validation and margin maths.
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

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cgroupfs/discovery.h"
#include "cgroupfs/walk_scheduler.h"
#include "controller/actuator.h"
#include "controller/audit_log.h"
#include "controller/episode_queue.h"
#include "controller/journal.h"
#include "controller/margin_adapt.h"
#include "controller/options.h"
#include "controller/protection.h"
#include "controller/protection_table.h"
#include "controller/recovery.h"
#include "controller/state.h"
#include "controller/waiter.h"
#include "controller/worker.h"
#include "metrics/metric.h"
#include "tracing/attribution.h"

namespace memcg::controller {

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
  /// A protection ended (unprotect, or its cgroup vanished): release its
  /// journal entry unless an episode is under way (the worker does then).
  void ended(const Prot& p, bool idle, nlohmann::json audit);

  ControllerOptions opts_;
  WalkScheduler& walks_;
  Discovery& discovery_;
  bool v2_ = false;
  std::optional<std::regex> allow_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<AuditLog> audit_;
  std::unique_ptr<Actuator> actuator_;
  RecoveryReport recovery_;
  std::unique_ptr<ControllerStats> stats_;
  ProtectionTable table_;
  EpisodeQueue queue_;
  std::unique_ptr<Waiter> waiter_;
  std::unique_ptr<Worker> worker_;
  bool started_ = false;

  ControllerDescs descs_;
};

}  // namespace memcg::controller
