// The metric table of the tracepoint collector (collectors/vmscan.cpp) and
// the pure mapping TraceSnapshot -> samples, testable without root.
//
// Series come from a TraceSnapshot (aggregator.h): counters since the tracer
// started, in base units (pages are counted as pages, times in seconds).
// Cardinality: a cgroup is emitted only for the counters that moved (a zero
// counter of an idle cgroup is not written) and only if the scrape's
// selection holds it (cgroup_selection.h: the cgroups discovery selected, as
// for every other collector); at most AggregatorOptions::max_cgroups cgroups
// have series, the rest are summed into cgroup="_overflow"; tasks whose
// cgroup could not be read (exited before the first /proc lookup) are summed
// into cgroup="_unknown". Those two are exported only while the selection
// holds the root "/". The `cgroup` label is the path relative to the memory
// hierarchy's root ("/", "/a/b"), the same as discovery's label.
//
// reclaim_stat (the fields of the never-merged async-reclaim patches'
// memory.reclaim_stat, synthesised from tracepoints):
//   context=limit  <- memcg limit reclaim by the charging task (kind=memcg)
//   context=soft   <- v1 soft-limit reclaim (kind=softlimit)
//   context=margin <- background reclaim by our controller (kind=proactive)
//   scanned_pages  = sum of mm_vmscan_lru_shrink_inactive nr_scanned while the
//                    task was inside that reclaim (the kernel's sc->nr_scanned
//                    is only ever advanced there, so this is the same figure);
//   freed_pages    = sum of the end events' nr_reclaimed (sc->nr_reclaimed,
//                    slab included, as in the patch);
//   elapsed        = sum of begin -> end stalls of the paired reclaims.
// The recent scan success ratio is not exported: it is a rate, computed in
// PromQL as rate(freed) / rate(scanned) over any window.
#pragma once

#include <vector>

#include "metrics/metric.h"
#include "tracing/aggregator.h"
#include "tracing/cgroup_selection.h"

namespace memcg::tracing {

/// Every Desc renderTraceSnapshot() can write (for docs and describe()).
std::vector<const metrics::Desc*> traceMetricDescs();

/// Writes the snapshot's samples into `sink`: the node-wide ones, and the
/// per-cgroup ones of the cgroups `selection` selects (null: every series).
/// Label values that are not literals (cgroup paths) are kept by the sink.
/// memcg_trace_up is 1 iff s.running.
void renderTraceSnapshot(const TraceSnapshot& s, metrics::Sink& sink,
                         const CgroupSelection* selection = nullptr);

/// Writes only memcg_trace_up 0: the tracer could not start.
void renderTraceDown(metrics::Sink& sink);

}  // namespace memcg::tracing
