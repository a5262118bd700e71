// Options of the embedded controller, filled from --controller.* flags.
//
// Nothing is ever written to cgroupfs unless `enable` is set, the cgroup label
// matches `allow` (whole match) and is not the root, and a protection was asked
// for through the API.
#pragma once

#include <cstdint>
#include <string>

#include "common/flag_spec.h"

namespace memcg::controller {

struct ControllerOptions {
  bool enable = false;          ///< --controller.enable
  bool dryRun = false;          ///< --controller.dry-run: log and count, never write
  std::string allow;            ///< --controller.allow: regex on the cgroup label; empty = none
  std::string tokenFile;        ///< --controller.token-file: bearer token for mutating endpoints
  std::string journal = "/var/lib/memcg_exporter/controller.journal";  ///< --controller.journal
  std::string auditLog;         ///< --controller.audit-log: JSON lines; empty = log only

  // Tunables (defaults fit a reader streaming a file through its limit). The safety budgets each have a flag.
  uint64_t floorBytes = 16ull << 20;  ///< never reclaim a cgroup below this usage
  uint64_t maxStepBytes = 256ull << 20;  ///< --controller.max-step-bytes: at most this much per nudge
  int cooldownMs = 5;           ///< --controller.cooldown: quiet time after an episode for a cgroup
  int pollIntervalMs = 50;      ///< --controller.poll-interval: fallback polling period
                                ///< (the v1 eventfd / v2 memory.events and PSI are the fast path)
  /// --controller.v2-wake: v2 wake sources besides the poll. memory.events
  /// (POLLPRI when a key such as "max" or "high" changes) and a PSI trigger
  /// on memory.pressure (POLLPRI when the cgroup's tasks stalled on memory
  /// for psiTrigger's stall within its window). A kernel or cgroup without
  /// PSI (no memory.pressure, or the trigger write refused) keeps the others.
  bool v2WakeEvents = true;
  bool v2WakePsi = true;
  /// --controller.psi-trigger: "some|full <stall us> <window us>", written to
  /// memory.pressure (Documentation/accounting/psi.rst; the kernel takes
  /// windows of 500 ms to 10 s and fires at most once per window).
  std::string psiTrigger = "some 1000 500000";
  /// --controller.margin-max-fraction: the adaptive start margin
  /// (margin_adapt.h) widens up to this fraction of the limit; 0 = no
  /// adaptation (the configured margins only). 0 <= f <= 0.75.
  double marginMaxFraction = 0.5;
  /// --controller.max-nudges-per-episode: actuations per trigger at most.
  int maxNudgesPerEpisode = 8;
  /// --controller.cpu-budget: the worker thread's CPU, fraction of one CPU
  /// per 1 s window (0 < f <= 1).
  double cpuBudget = 0.5;
  /// --controller.max-bytes-per-second: reclaim rate cap (token bucket, 1 s
  /// burst; at least 1 MiB, the smallest actuation).
  uint64_t maxBytesPerSecond = 8ull << 30;
  /// Scheduling policy of the waiter/worker threads: "other", "batch" or
  /// "idle". Whatever it is, each lower-and-restore pair (v1) and each
  /// memory.reclaim write (v2) runs under SCHED_OTHER: measured here, SCHED_IDLE
  /// starves on a busy host (one nudge took 235 ms wall for 2 ms CPU).
  std::string schedPolicy = "other";
  int v2Swappiness = -1;
  /// Keep a v1 nudge's journal entry armed while {original, lowered} stay the
  /// same (one fdatasync per protection instead of per nudge; journal.h).
  bool journalKeepArmed = true;        ///< memory.reclaim swappiness=; -1 = kernel default
};

/// The --controller.* flags (controller/options.cpp).
FlagList controllerFlags(ControllerOptions& o);

/// Why the budgets and limits in `o` are out of range (empty: they are not):
/// the flags and the Controller's constructor both check with it.
std::string checkBudgets(const ControllerOptions& o);

}  // namespace memcg::controller
