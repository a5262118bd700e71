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
// CONFIG_KALLSYMS_ALL). The API has no authentication and raw kernel
// addresses defeat KASLR, so by default the report holds none: a lock is
// named by its symbol ("name+0xoff": the offset is relative) and an opaque
// LockIds id, and a frame that cannot be symbolised is "?". Raw hex ("addr"
// on each lock row, hex frames) only with --collector.vmscan.lock-addresses
// (for looking a heap lock up with drgn/crash).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "metrics/metric.h"
#include "tracing/cgroup_selection.h"
#include "tracing/lock_stats.h"
#include "tracing/lock_symbols.h"

namespace memcg::tracing {

std::vector<const metrics::Desc*> lockMetricDescs();

/// Writes the lock samples of `s` (nothing if !s.enabled); per-cgroup ones
/// only of the cgroups `selection` selects (null: all; cgroup_selection.h).
void renderLockSnapshot(const LockSnapshot& s, metrics::Sink& sink,
                        const CgroupSelection* selection = nullptr);

/// Opaque ids for lock addresses: "lock-1", "lock-2", ... in order of first
/// sight, never reused, so a dashboard can follow one lock across reports
/// without learning its address. The same address keeps its id while it is
/// among the `capacity` most recently looked-up addresses; beyond that the
/// least recently looked-up address is forgotten (a later sighting gets a
/// new id). Thread-safe.
class LockIds {
 public:
  static constexpr size_t kCapacity = 4096;
  explicit LockIds(size_t capacity = kCapacity) : capacity_(capacity ? capacity : 1) {}
  std::string id(uint64_t addr);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  uint64_t next_ = 1;
  std::list<std::pair<uint64_t, uint64_t>> lru_;  // (addr, id), most recent first
  std::unordered_map<uint64_t, std::list<std::pair<uint64_t, uint64_t>>::iterator> index_;
};

/// The JSON report: {"enabled", "callers_enabled", "symbols", "node": {kind: {...}},
/// "cgroups": [{"cgroup", "rstat": {...}, "contention": {kind: {...}}}],
/// "top_locks": [{"id", "symbol", "kind", "count", "wait_seconds"}],
/// "other_locks": {...}, "callers": [{"count", "kind", "frames": [...]}],
/// "callers_sampled", "callers_other", "unpaired_ends", "nested_begins"}.
/// `id` comes from `ids`; `symbol` is null when unknown. Frames that cannot
/// be named are "?". With `addresses` each lock row also has "addr" (hex) and
/// unnamed frames are hex. `syms` may be null or unusable: nothing is named
/// then. Frames of the tracing machinery itself (trace_event_raw_*,
/// __traceiter_*, __trace_*; the bpf backend's bpf_prog_* and
/// bpf_trace_run*) are dropped from the top of each stack when symbols are
/// known.
nlohmann::json lockReport(const LockSnapshot& s, const Kallsyms* syms, LockIds& ids,
                          bool addresses = false);

struct TraceSnapshot;  // tracing/aggregator.h

/// What the lock API (/api/v1/locks) reads: a backend's lock snapshot and
/// the report's naming state (the tracefs Tracer, the bpf backend's
/// BpfTracer). Thread-safe.
class LockReportSource {
 public:
  virtual ~LockReportSource() = default;
  /// The snapshot whose `locks` the report renders.
  virtual TraceSnapshot snapshot() const = 0;
  /// Kernel symbols (<procfs>/kallsyms, read on first use); nullptr if unreadable.
  virtual const Kallsyms* kallsyms() = 0;
  /// Opaque lock ids, stable for the backend's life.
  virtual LockIds& lockIds() = 0;
  /// Whether the report may show raw kernel addresses.
  virtual bool lockAddresses() const = 0;
};

}  // namespace memcg::tracing
