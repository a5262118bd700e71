// memory.reclaim_stat: only on kernels carrying the memcg async-reclaim
// patches (2011, never merged). Flat keyed:
//   recent_scan_success_ratio 44        percent of recently scanned pages freed
//   {limit,soft,margin}_scan_pages N    pages scanned by limit, soft-limit and
//   {limit,soft,margin}_freed_pages N   margin (background) reclaim, and the
//   {limit,soft,margin}_elapsed_ns N    time they took
// On every other kernel the file is absent and nothing is exported; the
// tracepoint collectors synthesise the same figures from vmscan events.
// Unknown keys are ignored.
#include "cgroupfs/readers.h"
#include "collectors/collector.h"

namespace memcg {
namespace {

using cgroupfs::FileId;
using cgroupfs::ReadStatus;

const metrics::Desc kScanned = cgroupCounter(
    "memcg_reclaim_stat_scanned_pages_total",
    "memory.reclaim_stat *_scan_pages: pages scanned, by reclaim context (limit, soft, margin).",
    {"context"});
const metrics::Desc kFreed = cgroupCounter(
    "memcg_reclaim_stat_freed_pages_total",
    "memory.reclaim_stat *_freed_pages: pages freed, by reclaim context (limit, soft, margin).",
    {"context"});
const metrics::Desc kElapsed = cgroupCounter(
    "memcg_reclaim_stat_elapsed_seconds_total",
    "memory.reclaim_stat *_elapsed_ns: time spent reclaiming, by reclaim context.", {"context"});
const metrics::Desc kRatio = cgroupGauge(
    "memcg_reclaim_stat_recent_scan_success_ratio",
    "memory.reclaim_stat recent_scan_success_ratio: share of recently scanned pages freed (0-1).");

class ReclaimStatCollector : public Collector {
 public:
  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    thread_local std::vector<std::tuple<const metrics::Desc*, std::string_view, double>> pending;
    for (const Cgroup& cg : ctx.tree.cgroups) {
      std::string_view content;
      if (ctx.read(*cg.dir, FileId::kMemoryReclaimStat, content) != ReadStatus::kOk) continue;
      pending.clear();
      Status st = cgroupfs::parseFlatKeyed(
          content, cg.dir->path() + "/memory.reclaim_stat", [&](std::string_view k, uint64_t v) {
            if (k == "recent_scan_success_ratio") {
              pending.emplace_back(&kRatio, std::string_view{}, static_cast<double>(v) / 100.0);
              return;
            }
            for (std::string_view c : {"limit", "soft", "margin"}) {
              if (!k.starts_with(c) || k.size() <= c.size() || k[c.size()] != '_') continue;
              std::string_view field = k.substr(c.size() + 1);
              if (field == "scan_pages") pending.emplace_back(&kScanned, c, static_cast<double>(v));
              if (field == "freed_pages") pending.emplace_back(&kFreed, c, static_cast<double>(v));
              if (field == "elapsed_ns") pending.emplace_back(&kElapsed, c, static_cast<double>(v) / 1e9);
            }
          });
      if (!st.ok()) {
        ctx.fail(st.error());
        continue;
      }
      for (auto& [d, context, v] : pending) sink.add(*d, {cg.path, context}, v);
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    return {&kScanned, &kFreed, &kElapsed, &kRatio};
  }
};

}  // namespace

std::unique_ptr<Collector> makeReclaimStatCollector() {
  return std::make_unique<ReclaimStatCollector>();
}

}  // namespace memcg
