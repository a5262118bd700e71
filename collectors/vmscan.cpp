// vmscan tracepoints: per-cgroup reclaim counts, stall histograms, LRU scans,
// kswapd activity, cgroup migrations and a synthesised reclaim_stat (issue 3).
//
// Source: the exporter's own tracefs instance (tracing/tracer.h), started when
// the collector is built and stopped when it is destroyed. The metric table
// and the snapshot -> samples mapping are in tracing/trace_metrics.h.
//
// Down: without tracefs, permission (root/CAP_SYS_ADMIN + CAP_SYS_RESOURCE)
// or the memory controller the collector does not throw. It logs the reason
// once at start (warn), and every scrape writes memcg_trace_up 0 and records
// the reason with ctx.fail(), so the collector's success metric stays 0 while
// tracing is down. If the reader thread stops later, the same happens.
// Everything else keeps working.
#include <atomic>

#include "collectors/collector.h"
#include "common/log.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"
#include "tracing/tracer.h"

namespace memcg {
namespace {

class VmscanCollector : public Collector {
 public:
  explicit VmscanCollector(const CollectorConfig& cfg) {
    tracing::TracerOptions o;
    o.session.tracefs_path = cfg.tracefsPath;
    o.session.instance_name = cfg.vmscanInstance;
    o.procfs = cfg.procfsRoot;
    o.lru_detail = cfg.vmscanLruDetail;
    o.shrink_slab = cfg.vmscanShrinkSlab;
    o.memory_root = cfg.layout.memoryRoot;
    // hybrid: memory is on the v1 hierarchy; only kV2 puts it on cgroup2.
    o.memory_v2 = cfg.layout.mode == CgroupMode::kV2;
    o.locks = cfg.vmscanLocks || cfg.vmscanLockCallers;
    o.lock_callers = cfg.vmscanLockCallers;
    o.lock_addresses = cfg.vmscanLockAddresses;
    auto t = tracing::Tracer::start(o);
    if (!t.ok()) {
      down_ = t.error();
      log::warn("vmscan tracing unavailable; the vmscan collector reports down",
                "err=" + log::quote(down_.message()));
      return;
    }
    tracer_ = std::shared_ptr<tracing::Tracer>(std::move(t.value()));
    tracing::setActiveTracer(tracer_);
    log::info("vmscan tracing started",
              "instance=" + log::quote(tracer_->session().instanceDir()) +
                  " events=" + std::to_string(tracer_->enabledEvents().size()));
  }

  ~VmscanCollector() override {
    if (tracer_ && tracing::activeTracer() == tracer_) tracing::setActiveTracer(nullptr);
  }

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    if (!tracer_) {
      tracing::renderTraceDown(sink);
      ctx.fail(down_);
      return;
    }
    tracing::TraceSnapshot s = tracer_->snapshot();
    tracing::renderTraceSnapshot(s, sink);
    tracer_->reportHistory().maybeRecord(std::chrono::steady_clock::now(), s);
    if (!s.running) {
      if (!stopped_logged_.exchange(true)) log::warn("vmscan trace reader is not running");
      ctx.fail(makeError(EIO, tracer_->session().instanceDir(), "trace reader stopped"));
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    return tracing::traceMetricDescs();
  }

 private:
  std::shared_ptr<tracing::Tracer> tracer_;  // also published as activeTracer()
  Error down_;
  std::atomic<bool> stopped_logged_{false};
};

}  // namespace

std::unique_ptr<Collector> makeVmscanCollector(const CollectorConfig& cfg) {
  return std::make_unique<VmscanCollector>(cfg);
}

}  // namespace memcg
