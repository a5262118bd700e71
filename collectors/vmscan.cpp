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
#include "metrics/descriptors.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"
#include "tracing/tracefs_session.h"

namespace memcg {

FlagList vmscanFlags(VmscanOptions& o) {
  return {
      {"collector.vmscan.backend",
       "vmscan collector: where reclaim and lock events are aggregated: tracefs (the "
       "exporter's tracefs instance, read in user space), bpf (in the kernel by a BPF program: "
       "needs kernel BTF and CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN) or auto (bpf where "
       "possible, else tracefs; the choice is logged and shown in memcg_trace_backend_info).",
       false,
       [&o](const std::string& v) {
         if (v == "tracefs") {
           o.backend = VmscanBackendChoice::kTracefs;
         } else if (v == "bpf") {
           o.backend = VmscanBackendChoice::kBpf;
         } else if (v == "auto") {
           o.backend = VmscanBackendChoice::kAuto;
         } else {
           throw std::invalid_argument(
               "--collector.vmscan.backend must be tracefs, bpf or auto, got \"" + v + "\"");
         }
       },
       "tracefs"},
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
                 "second: a stacktrace trigger in the exporter's tracefs instance, or with the "
                 "bpf backend its contention_begin program), shown in /api/v1/locks. Implies "
                 "--collector.vmscan.locks.",
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

tracing::bpf::BpfTracerOptions bpfTracerOptions(const VmscanOptions& v,
                                                const MountLayout& layout,
                                                const std::string& procfs) {
  const tracing::TracerOptions t = tracerOptions(v, layout, procfs);
  tracing::bpf::BpfTracerOptions o;
  o.procfs = procfs;
  o.memory_root = t.memory_root;
  o.memory_v2 = t.memory_v2;
  o.locks = t.locks;
  o.lock_addresses = t.lock_addresses;
  o.lock_callers = t.lock_callers;
  o.lock_caller_samples = t.lock_caller_samples;
  o.lock_caller_interval = t.lock_caller_interval;
  o.lru_detail = t.lru_detail;
  o.shrink_slab = t.shrink_slab;
  o.write_folio = t.write_folio;
  o.throttled = t.throttled;
  o.reclaim_pages = t.reclaim_pages;
  o.max_cgroups = t.aggregator.max_cgroups;
  o.max_pids = t.aggregator.max_pids;
  o.max_processes = t.aggregator.max_processes;
  o.max_exited_processes = t.aggregator.max_exited_processes;
  return o;
}

TracingService startVmscanBackend(const VmscanOptions& o, const MountLayout& layout,
                                  const std::string& procfs, bool exitCgroups) {
  tracing::bpf::BpfTracerOptions b = bpfTracerOptions(o, layout, procfs);
  b.exit_cgroups = exitCgroups;
  return startVmscanBackend(o.backend, tracerOptions(o, layout, procfs), b);
}

TracingService startVmscanBackend(VmscanBackendChoice choice,
                                  const tracing::TracerOptions& tracefs,
                                  const tracing::bpf::BpfTracerOptions& bpf) {
  if (choice == VmscanBackendChoice::kTracefs) return startTracing(tracefs);
  std::string why;
  if (choice == VmscanBackendChoice::kAuto) {
    const tracing::bpf::Availability a = tracing::bpf::probe(bpf);
    if (!a.ok) why = a.reason;
  }
  if (why.empty()) {
    auto t = tracing::bpf::BpfTracer::start(bpf);
    if (t.ok()) {
      TracingService out;
      out.bpf = std::move(t.value());
      out.backend = "bpf";
      if (choice == VmscanBackendChoice::kAuto) out.reason = "bpf available";
      log::info("vmscan backend bpf started", "reason=" + log::quote(out.reason.empty()
                                                                         ? "asked for"
                                                                         : out.reason));
      return out;
    }
    if (choice == VmscanBackendChoice::kBpf) {
      TracingService out;
      out.backend = "bpf";
      out.down = t.error();
      out.reason = t.error().message();
      log::warn("vmscan bpf backend unavailable; the vmscan collector reports down",
                "err=" + log::quote(out.down.message()));
      return out;
    }
    why = t.error().message();
  }
  log::info("vmscan backend auto: using tracefs, bpf not possible",
            "reason=" + log::quote(why));
  TracingService out = startTracing(tracefs);
  out.reason = why;
  return out;
}

namespace {

const metrics::Desc kBackendInfo = metrics::nodeGauge(
    "memcg_trace_backend_info",
    "Where the vmscan collector's events are aggregated (backend: tracefs or bpf) and, when it "
    "was chosen by --collector.vmscan.backend=auto or failed, why (reason); always 1.",
    {"backend", "reason"});
const metrics::Desc kBpfMapEntries = metrics::nodeGauge(
    "memcg_trace_bpf_map_entries",
    "bpf backend: entries in use in each bounded BPF map (cgroups, tasks, exited, lock_waits, "
    "lock_addrs, rstat, details, exit_cgroups).",
    {"map"});
const metrics::Desc kBpfMapMax = metrics::nodeGauge(
    "memcg_trace_bpf_map_max_entries",
    "bpf backend: capacity of each bounded BPF map; a full cgroups map charges new cgroups to "
    "cgroup=\"_overflow\".",
    {"map"});

const metrics::Desc kBpfMapFull = metrics::nodeCounter(
    "memcg_trace_bpf_map_full_total",
    "bpf backend: what a full BPF map could not take: cgroups (and details), events charged "
    "to cgroup=\"_overflow\"; tasks, task state not kept (its ends count as unpaired); "
    "exited, exited tasks' reclaim report rows summed into its \"other\" row; lock_waits, "
    "lock and rstat events not counted; lock_addrs, contentions counted in the lock "
    "report's other_locks; exit_cgroups, exited processes' memory cgroups evicted (LRU) for "
    "newer exits.",
    {"map"});

class VmscanCollector : public Collector {
 public:
  VmscanCollector(tracing::Tracer* tracer, Error down, VmscanBackend backend)
      : tracer_(tracer), down_(std::move(down)), backend_(std::move(backend)) {}

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    sink.add(kBackendInfo, {backend_.name, sink.keep(backend_.reason)}, 1);
    if (backend_.bpf) {
      collectBpf(ctx, sink);
      return;
    }
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
    auto d = tracing::traceMetricDescs();
    d.push_back(&kBackendInfo);
    d.push_back(&kBpfMapEntries);
    d.push_back(&kBpfMapMax);
    d.push_back(&kBpfMapFull);
    return d;
  }

 private:
  // The bpf backend: its maps are read now, into the tracefs backend's
  // snapshot shape, rendered by the same code.
  void collectBpf(ScrapeContext& ctx, metrics::Sink& sink) {
    tracing::TraceSnapshot s = backend_.bpf->snapshot();
    tracing::CgroupSelection selection;
    for (const Cgroup& c : ctx.tree.cgroups) selection.add(c.path, c.inode);
    tracing::renderTraceSnapshot(s, sink, &selection);
    for (const auto& m : backend_.bpf->mapSizes()) {
      std::string_view name = sink.keep(m.map);
      sink.add(kBpfMapEntries, {name}, static_cast<double>(m.entries));
      sink.add(kBpfMapMax, {name}, static_cast<double>(m.max_entries));
      if (m.map != "rstat" && m.map != "details") sink.add(kBpfMapFull, {name}, static_cast<double>(m.full));
    }
  }

  tracing::Tracer* tracer_;  // owned by the App; null while down
  Error down_;
  VmscanBackend backend_;
  std::atomic<bool> stopped_logged_{false};
};

}  // namespace

std::unique_ptr<Collector> makeVmscanCollector(tracing::Tracer* tracer, Error down,
                                               VmscanBackend backend) {
  return std::make_unique<VmscanCollector>(tracer, std::move(down), std::move(backend));
}

}  // namespace memcg
