// Usage, peak and limits, one value per file.
//
// v1: memory.{usage,max_usage,limit,soft_limit}_in_bytes; the same for memsw
//     (memory+swap) only with --collector.memory_usage.memsw and where swap
//     accounting is on (the root has memory.memsw.usage_in_bytes; probed
//     once); kmem and kmem.tcp only with --collector.memory_usage.kmem
//     (deprecated files, 6 per cgroup).
// v2: memory.{current,peak,min,low,high,max}, memory.swap.{current,peak,high,max},
//     memory.zswap.{current,max}.
// Shared meanings share a name on both versions (usage, peak, limit), so one
// dashboard or alert serves both. Limits read "max" (v2) or PAGE_COUNTER_MAX
// (v1) when unset: exported as +Inf, never as a fake number. A file a cgroup
// does not have (the v2 root has no memory.current; no swap accounting) is
// simply not exported.
#include "collectors/memory_usage.h"

#include <unistd.h>


#include "cgroupfs/readers.h"
#include "collectors/collector.h"

namespace memcg {
namespace {

using cgroupfs::FileId;
using cgroupfs::ReadStatus;

struct UsageRow {
  FileId file;
  bool limit;  // value-or-max
  const metrics::Desc* desc;
  enum Group { kAlways, kMemsw, kKmem } group = kAlways;
};

class MemoryUsageCollector : public Collector {
 public:
  explicit MemoryUsageCollector(const MemoryUsageOptions& o) : kmem_(o.kmem), memsw_(o.memsw) {
    auto g = [this](std::string name, std::string help) {
      return &descs_.emplace_back(cgroupGauge(std::move(name), std::move(help)));
    };
    auto usage = g("memcg_memory_usage_bytes", "Memory charged to the cgroup (v1 memory.usage_in_bytes, v2 memory.current).");
    auto peak = g("memcg_memory_peak_bytes", "Highest memory usage recorded (v1 memory.max_usage_in_bytes, v2 memory.peak).");
    auto limit = g("memcg_memory_limit_bytes", "Hard memory limit (v1 memory.limit_in_bytes, v2 memory.max); +Inf when unlimited.");
    auto soft = g("memcg_memory_soft_limit_bytes", "Soft limit (v1 memory.soft_limit_in_bytes); +Inf when unset.");
    auto high = g("memcg_memory_high_bytes", "Throttling threshold (v2 memory.high); +Inf when unset.");
    auto low = g("memcg_memory_low_bytes", "Best-effort protection (v2 memory.low).");
    auto min = g("memcg_memory_min_bytes", "Hard protection (v2 memory.min).");
    auto swUsage = g("memcg_memsw_usage_bytes", "Memory+swap charged (v1 memory.memsw.usage_in_bytes).");
    auto swPeak = g("memcg_memsw_peak_bytes", "Highest memory+swap usage (v1 memory.memsw.max_usage_in_bytes).");
    auto swLimit = g("memcg_memsw_limit_bytes", "Memory+swap limit (v1 memory.memsw.limit_in_bytes); +Inf when unlimited.");
    auto kUsage = g("memcg_kmem_usage_bytes", "Kernel memory charged (v1 memory.kmem.usage_in_bytes).");
    auto kPeak = g("memcg_kmem_peak_bytes", "Highest kernel memory usage (v1 memory.kmem.max_usage_in_bytes).");
    auto kLimit = g("memcg_kmem_limit_bytes", "Kernel memory limit (v1 memory.kmem.limit_in_bytes); +Inf when unlimited.");
    auto tUsage = g("memcg_kmem_tcp_usage_bytes", "TCP buffer memory charged (v1 memory.kmem.tcp.usage_in_bytes).");
    auto tPeak = g("memcg_kmem_tcp_peak_bytes", "Highest TCP buffer memory usage (v1 memory.kmem.tcp.max_usage_in_bytes).");
    auto tLimit = g("memcg_kmem_tcp_limit_bytes", "TCP buffer memory limit (v1 memory.kmem.tcp.limit_in_bytes); +Inf when unlimited.");
    auto sUsage = g("memcg_swap_usage_bytes", "Swap used (v2 memory.swap.current).");
    auto sPeak = g("memcg_swap_peak_bytes", "Highest swap usage (v2 memory.swap.peak).");
    auto sHigh = g("memcg_swap_high_bytes", "Swap throttling threshold (v2 memory.swap.high); +Inf when unset.");
    auto sLimit = g("memcg_swap_limit_bytes", "Swap limit (v2 memory.swap.max); +Inf when unlimited.");
    auto zUsage = g("memcg_zswap_usage_bytes", "zswap pool memory (v2 memory.zswap.current).");
    auto zLimit = g("memcg_zswap_limit_bytes", "zswap limit (v2 memory.zswap.max); +Inf when unlimited.");
    constexpr auto kMemsw = UsageRow::kMemsw, kKmem = UsageRow::kKmem;
    v1_ = {{FileId::kV1Usage, false, usage},
           {FileId::kV1MaxUsage, false, peak},
           {FileId::kV1Limit, true, limit},
           {FileId::kV1SoftLimit, true, soft},
           {FileId::kV1MemswUsage, false, swUsage, kMemsw},
           {FileId::kV1MemswMaxUsage, false, swPeak, kMemsw},
           {FileId::kV1MemswLimit, true, swLimit, kMemsw},
           {FileId::kV1KmemUsage, false, kUsage, kKmem},
           {FileId::kV1KmemMaxUsage, false, kPeak, kKmem},
           {FileId::kV1KmemLimit, true, kLimit, kKmem},
           {FileId::kV1KmemTcpUsage, false, tUsage, kKmem},
           {FileId::kV1KmemTcpMaxUsage, false, tPeak, kKmem},
           {FileId::kV1KmemTcpLimit, true, tLimit, kKmem}};
    v2_ = {{FileId::kV2Current, false, usage},      {FileId::kV2Peak, false, peak},
           {FileId::kV2Max, true, limit},           {FileId::kV2High, true, high},
           {FileId::kV2Low, true, low},             {FileId::kV2Min, true, min},
           {FileId::kV2SwapCurrent, false, sUsage}, {FileId::kV2SwapPeak, false, sPeak},
           {FileId::kV2SwapHigh, true, sHigh},      {FileId::kV2SwapMax, true, sLimit},
           {FileId::kV2ZswapCurrent, false, zUsage}, {FileId::kV2ZswapMax, true, zLimit}};
  }

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    // The rows this scrape reads: a file a group is off for, or whose family
    // the scrape does not want (the history's filter), is never opened.
    thread_local std::vector<const UsageRow*> rows;
    rows.clear();
    if (ctx.tree.layout.mode == CgroupMode::kV2) {
      for (const UsageRow& r : v2_) {
        if (ctx.wants(*r.desc)) rows.push_back(&r);
      }
    } else {
      const bool memsw = memsw_ && ctx.tree.layout.v1SwapAccounting;
      for (const UsageRow& r : v1_) {
        if ((r.group == UsageRow::kMemsw && !memsw) || (r.group == UsageRow::kKmem && !kmem_)) continue;
        if (ctx.wants(*r.desc)) rows.push_back(&r);
      }
    }
    if (rows.empty()) return;
    std::vector<metrics::Family*> fams(rows.size(), nullptr);
    for (const Cgroup& cg : ctx.tree.cgroups) {
      for (size_t i = 0; i < rows.size(); ++i) {
        const UsageRow& r = *rows[i];
        std::string_view content;
        ReadStatus st = ctx.read(*cg.dir, r.file, content);
        if (st == ReadStatus::kGone) break;
        if (st != ReadStatus::kOk) continue;
        double v;
        if (r.limit) {
          auto l = cgroupfs::parseLimit(content, {});
          if (!l) {
            fail(ctx, cg, r.file, l.error());
            continue;
          }
          v = l->asDouble();
        } else {
          auto n = cgroupfs::parseSingle(content, {});
          if (!n) {
            fail(ctx, cg, r.file, n.error());
            continue;
          }
          v = static_cast<double>(*n);
        }
        if (!fams[i]) {
          fams[i] = &sink.family(*r.desc);
          fams[i]->samples.reserve(fams[i]->samples.size() + ctx.tree.cgroups.size());
        }
        fams[i]->add({cg.path}, v);
      }
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    std::vector<const metrics::Desc*> out;
    for (const auto& d : descs_) out.push_back(&d);
    return out;
  }

 private:
  static void fail(ScrapeContext& ctx, const Cgroup& cg, FileId f, Error e) {
    e.path = cg.dir->path() + "/" + std::string(cgroupfs::fileName(f));
    ctx.fail(std::move(e));
  }

  const bool kmem_;
  const bool memsw_;
  std::deque<metrics::Desc> descs_;
  std::vector<UsageRow> v1_, v2_;
};

}  // namespace

FlagList memoryUsageFlags(MemoryUsageOptions& o) {
  return {switchFlag("collector.memory_usage.kmem",
                     "Also read v1 memory.kmem.* and memory.kmem.tcp.* usage, peak and limit "
                     "(6 deprecated files per cgroup; their failcnt is read either way).",
                     o.kmem),
          switchFlag("collector.memory_usage.memsw",
                     "Also read v1 memory.memsw.{usage,max_usage,limit}_in_bytes where swap "
                     "accounting is on (3 files per cgroup; memory.memsw.failcnt is read either way).",
                     o.memsw)};
}

std::unique_ptr<Collector> makeMemoryUsageCollector(const MemoryUsageOptions& o) {
  return std::make_unique<MemoryUsageCollector>(o);
}

}  // namespace memcg
