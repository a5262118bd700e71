// The lock probes' metric table and JSON report (lock_stats.h), testable
// without root.
//
// Metrics (only when the probes are on; `kind` is lockKindName(), a fixed set
// of 12; `cgroup` as in trace_metrics.h, capped with the aggregator's
// overflow series; a series is written only once it has moved):
//   memcg_node_lock_contentions_total{kind}, memcg_node_lock_contention_wait_seconds{kind}
//       contentions outside reclaim (lock:contention_begin -> end);
//   memcg_lock_contentions_total{cgroup,kind}, memcg_lock_contention_wait_seconds{cgroup,kind}
//       contentions that began while a task of the cgroup was in reclaim;
//   memcg_cgroup_rstat_lock_contended_total{cgroup}, memcg_cgroup_rstat_lock_wait_seconds{cgroup},
//   memcg_cgroup_rstat_lock_hold_seconds{cgroup}: the rstat flush lock, by flushed cgroup;
//   memcg_stats_flushes_total{cgroup,outcome="flushed"|"skipped"}: memcg_flush_stats;
//   memcg_lock_contention_unpaired_total, memcg_lock_caller_samples_total.
// Lock addresses and caller stacks are NOT labels (unbounded, and kernel
// addresses): they are in the JSON report only (GET /api/v1/locks), top
// kTopLocks / kTopStacks plus an "other" row, symbolised with /proc/kallsyms
// when it shows addresses (lock_symbols.h: static locks need
// CONFIG_KALLSYMS_ALL), hex otherwise. Kernel addresses defeat KASLR for
// whoever can read the API: expose it only where /proc/kallsyms could be read.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "metrics/metric.h"
#include "tracing/lock_stats.h"
#include "tracing/lock_symbols.h"

namespace memcg::tracing {

std::vector<const metrics::Desc*> lockMetricDescs();

/// Writes the lock samples of `s` (nothing if !s.enabled).
void renderLockSnapshot(const LockSnapshot& s, metrics::Sink& sink);

/// The JSON report: {"enabled", "callers", "node": {kind: {...}},
/// "cgroups": [{"cgroup", "rstat": {...}, "contention": {kind: {...}}}],
/// "top_locks": [{"addr", "symbol", "kind", "count", "wait_seconds"}],
/// "other_locks": {...}, "callers": [{"count", "kind", "frames": [...]}],
/// "callers_sampled", "callers_other", "unpaired_ends", "nested_begins"}.
/// `syms` may be null or unusable: addresses are then hex only. Frames of the
/// tracing machinery itself (trace_event_raw_*, __traceiter_*, __trace_*) are
/// dropped from the top of each stack when symbols are known.
nlohmann::json lockReport(const LockSnapshot& s, const Kallsyms* syms);

/// /proc/kallsyms of `procfs`, read once per process on first use (callers'
/// thread); nullptr if it cannot be read.
const Kallsyms* processKallsyms(const std::string& procfs);

}  // namespace memcg::tracing
