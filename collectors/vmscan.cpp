// vmscan tracepoints: per-cgroup reclaim counts, stall histograms, LRU scans,
// kswapd activity, cgroup migrations and a synthesised reclaim_stat.
//
// Source: the exporter's own tracefs instance (tracing/tracer.h), started by
// the App from this collector's options (startTracing below) and handed to
// the collector. The metric table and the snapshot -> samples mapping are in
// tracing/trace_metrics.h. Per-cgroup series are written for the cgroups
// of the scrape's tree only (tracing/cgroup_selection.h), the same cgroups
// every cgroupfs collector exports: --cgroup.include/exclude, max-depth and
// limit are decided once, by discovery.
//
// Down: without tracefs, permission (root/CAP_SYS_ADMIN + CAP_SYS_RESOURCE)
// or the memory controller the tracer does not start; the reason is logged
// once (warn) and handed to the collector: every scrape writes
// memcg_trace_up 0 and records the reason with ctx.fail(), so the collector's
// success metric stays 0 while tracing is down. If the reader thread stops
// later, the same happens. Everything else keeps working.
#include "collectors/vmscan.h"

#include <atomic>
#include <stdexcept>

#include "collectors/collector.h"
#include "common/log.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"
#include "tracing/tracefs_session.h"

namespace memcg {

FlagList vmscanFlags(VmscanOptions& o) {
  return {
      {"path.tracefs",
       "tracefs mount point (empty: /sys/kernel/tracing, then /sys/kernel/debug/tracing; "
       "if tracefs is not mounted: mounted at the given path, or without one privately, "
       "visible to no other process).",
       false, [&o](const std::string& v) { o.tracefsPath = v; }, ""},
      switchFlag("collector.vmscan.lru-detail",
                 "Also trace mm_vmscan_lru_isolate and mm_vmscan_lru_shrink_active (pages "
                 "isolated, active-list scans and deactivations; costs the reclaiming tasks "
                 "~0.4 us per LRU batch).",
                 o.lruDetail),
      switchFlag("collector.vmscan.shrink-slab",
                 "Also trace mm_shrink_slab_start/end (slab shrinker calls, objects freed, time; "
                 "one pair per shrinker call, the most frequent vmscan events).",
                 o.shrinkSlab),
      {"collector.vmscan.instance",
       "vmscan collector: name of its tracefs instance (must start with memcg_exporter). A "
       "stale instance of this name is removed at start: give a second exporter on the same "
       "host its own name.",
       false,
       [&o](const std::string& v) {
         if (!tracing::isValidInstanceName(v))
           throw std::invalid_argument(
               "--collector.vmscan.instance must start with memcg_exporter and contain no "
               "'/' or spaces, got \"" + v + "\"");
         o.instance = v;
       },
       "memcg_exporter"},
      switchFlag("collector.vmscan.locks",
                 "vmscan collector: also trace kernel lock contention (lock:contention_*), the "
                 "cgroup rstat flush lock and memcg stat flushes. Thousands of events per second "
                 "under reclaim; off: the events are not enabled at all.",
                 o.locks),
      switchFlag("collector.vmscan.lock-callers",
                 "vmscan collector: sample the kernel stacks of lock contentions (at most 64 a "
                 "second, a stacktrace trigger in the exporter's tracefs instance), shown in "
                 "/api/v1/locks. Implies --collector.vmscan.locks.",
                 o.lockCallers),
      switchFlag("collector.vmscan.lock-addresses",
                 "vmscan collector: show raw kernel addresses in /api/v1/locks (each lock's "
                 "\"addr\", hex for stack frames /proc/kallsyms cannot name). Off because the API "
                 "has no authentication and kernel addresses defeat KASLR; without it locks get "
                 "opaque ids.",
                 o.lockAddresses),
  };
}

tracing::TracerOptions tracerOptions(const VmscanOptions& v, const MountLayout& layout,
                                     const std::string& procfs) {
  tracing::TracerOptions o;
  o.session.tracefs_path = v.tracefsPath;
  o.session.instance_name = v.instance;
  o.procfs = procfs;
  o.lru_detail = v.lruDetail;
  o.shrink_slab = v.shrinkSlab;
  o.memory_root = layout.memoryRoot;
  // hybrid: memory is on the v1 hierarchy; only kV2 puts it on cgroup2.
  o.memory_v2 = layout.mode == CgroupMode::kV2;
  o.locks = v.locks || v.lockCallers;
  o.lock_callers = v.lockCallers;
  o.lock_addresses = v.lockAddresses;
  return o;
}

TracingService startTracing(const tracing::TracerOptions& o) {
  TracingService out;
  auto t = tracing::Tracer::start(o);
  if (!t.ok()) {
    out.down = t.error();
    log::warn("vmscan tracing unavailable; the vmscan collector reports down",
              "err=" + log::quote(out.down.message()));
    return out;
  }
  out.tracer = std::move(t.value());
  log::info("vmscan tracing started",
            "instance=" + log::quote(out.tracer->session().instanceDir()) +
                " events=" + std::to_string(out.tracer->enabledEvents().size()));
  return out;
}

namespace {

class VmscanCollector : public Collector {
 public:
  VmscanCollector(tracing::Tracer* tracer, Error down) : tracer_(tracer), down_(std::move(down)) {}

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    if (!tracer_) {
      tracing::renderTraceDown(sink);
      ctx.fail(down_);
      return;
    }
    tracing::TraceSnapshot s = tracer_->snapshot();
    // The cgroups of this scrape's tree, as every collector exports them.
    tracing::CgroupSelection selection;
    for (const Cgroup& c : ctx.tree.cgroups) selection.add(c.path, c.inode);
    tracing::renderTraceSnapshot(s, sink, &selection);
    // Reads failing in the reader's last round (the instance's files gone
    // bad): the trace figures are incomplete. The session logs the first.
    if (s.reads_failing) {
      ctx.fail(makeError(EIO, tracer_->session().instanceDir(),
                         "reads of trace_pipe_raw failing (" +
                             std::to_string(s.read_errors) + " so far)"));
    }
    if (!s.running) {
      if (!stopped_logged_.exchange(true)) log::warn("vmscan trace reader is not running");
      ctx.fail(makeError(EIO, tracer_->session().instanceDir(), "trace reader stopped"));
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    return tracing::traceMetricDescs();
  }

 private:
  tracing::Tracer* tracer_;  // owned by the App; null while down
  Error down_;
  std::atomic<bool> stopped_logged_{false};
};

}  // namespace

std::unique_ptr<Collector> makeVmscanCollector(tracing::Tracer* tracer, Error down) {
  return std::make_unique<VmscanCollector>(tracer, std::move(down));
}

}  // namespace memcg
