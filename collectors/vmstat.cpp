// Node-wide reclaim counters from /proc/vmstat ("key value" lines, counts).
//
// Splits that sum sensibly become one counter with a label:
//   pgscan_{kswapd,direct,khugepaged,proactive}  -> ..._pgscan_total{reclaimer}
//   pgsteal_{kswapd,direct,khugepaged,proactive} -> ..._pgsteal_total{reclaimer}
//   pgscan_{anon,file} / pgsteal_{anon,file}     -> ..._pgscan_lru_total{lru} ...
//   allocstall_{dma,dma32,normal,movable,device} -> ..._allocstall_total{zone}
//   workingset_{refault,activate,restore}_{anon,file} -> ...{lru}
// pgsteal is split two ways by the kernel (by reclaimer and by LRU): the two
// splits are separate metrics, so summing one never double counts the other.
// Keys not in the table are ignored. Kernel >= 5.9 for the anon/file split.
#include <unordered_map>

#include "cgroupfs/readers.h"
#include "collectors/collector.h"

namespace memcg {
namespace {

using cgroupfs::ReadStatus;

struct VmstatRow {
  std::string_view key;
  const metrics::Desc* desc;
  std::string_view label;  // value of the desc's single label, if any
};

// The table is built once per process (rows(), below): the descriptors and
// the split keys it makes live as long as the process.
std::deque<metrics::Desc> gDescs;
std::deque<std::string> gKeys;

const metrics::Desc& counter(std::string_view base, std::string_view help,
                             std::string_view label = {}) {
  auto& descs = gDescs;
  std::string name = "memcg_node_vmstat_" + std::string(base) + "_total";
  for (const auto& d : descs) {
    if (d.name == name) return d;
  }
  std::vector<std::string> labels;
  if (!label.empty()) labels.emplace_back(label);
  return descs.emplace_back(nodeCounter(name, "/proc/vmstat: " + std::string(help) + ".", labels));
}

std::vector<VmstatRow> buildRows() {
  std::vector<VmstatRow> rows;
  auto split = [&](std::string_view base, std::string_view help, std::string_view label,
                   std::initializer_list<std::string_view> values) {
    const auto& d = counter(base, help, label);
    for (auto v : values) {
      const std::string& key = gKeys.emplace_back(std::string(base) + "_" + std::string(v));
      rows.push_back({key, &d, v});
    }
  };
  auto one = [&](std::string_view key, std::string_view help) {
    rows.push_back({key, &counter(key, help), {}});
  };
  split("pgscan", "pages scanned by reclaim, by reclaimer", "reclaimer",
        {"kswapd", "direct", "khugepaged", "proactive"});
  split("pgsteal", "pages reclaimed, by reclaimer", "reclaimer",
        {"kswapd", "direct", "khugepaged", "proactive"});
  split("pgdemote", "pages demoted to a slower memory tier, by reclaimer", "reclaimer",
        {"kswapd", "direct", "khugepaged", "proactive"});
  {
    const auto& scanLru = counter("pgscan_lru", "pages scanned by reclaim, by LRU (pgscan_anon, pgscan_file)", "lru");
    const auto& stealLru = counter("pgsteal_lru", "pages reclaimed, by LRU (pgsteal_anon, pgsteal_file)", "lru");
    rows.push_back({"pgscan_anon", &scanLru, "anon"});
    rows.push_back({"pgscan_file", &scanLru, "file"});
    rows.push_back({"pgsteal_anon", &stealLru, "anon"});
    rows.push_back({"pgsteal_file", &stealLru, "file"});
  }
  split("allocstall", "direct reclaim entries, by zone", "zone",
        {"dma", "dma32", "normal", "movable", "device"});
  split("workingset_refault", "refaults of evicted pages, by LRU", "lru", {"anon", "file"});
  split("workingset_activate", "refaulted pages activated at once, by LRU", "lru", {"anon", "file"});
  split("workingset_restore", "restored pages that were active before eviction, by LRU", "lru",
        {"anon", "file"});
  one("workingset_nodereclaim", "shadow nodes reclaimed");
  one("pgscan_direct_throttle", "direct reclaimers throttled");
  one("pgrefill", "pages scanned on the active LRU");
  one("pageoutrun", "kswapd reclaim passes");
  one("slabs_scanned", "slab objects scanned");
  one("kswapd_inodesteal", "pages reclaimed by kswapd via inode freeing");
  one("kswapd_low_wmark_hit_quickly", "times kswapd reached the low watermark quickly");
  one("kswapd_high_wmark_hit_quickly", "times kswapd reached the high watermark quickly");
  one("oom_kill", "processes killed by the OOM killer");
  one("compact_stall", "direct compaction entries");
  one("compact_fail", "direct compactions that failed");
  one("compact_success", "direct compactions that succeeded");
  return rows;
}

const std::vector<VmstatRow>& rows() {
  static const std::vector<VmstatRow> kRows = buildRows();
  return kRows;
}

class VmstatCollector : public Collector {
 public:
  explicit VmstatCollector(const std::string& procfs)
      : path_(procfs + "/" + std::string(cgroupfs::kProcVmstat)), rows_(rows()) {
    for (const auto& r : rows_) byKey_.emplace(r.key, &r);
  }

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    std::string_view content;
    Error err;
    ReadStatus st = cgroupfs::readFile(path_, ctx.buf, content, &err);
    if (st == ReadStatus::kError) ctx.fail(err);
    if (st != ReadStatus::kOk) return;
    std::vector<std::pair<const VmstatRow*, double>> pending;
    Status ps = cgroupfs::parseFlatKeyed(content, path_, [&](std::string_view k, uint64_t v) {
      auto it = byKey_.find(k);
      if (it != byKey_.end()) pending.emplace_back(it->second, static_cast<double>(v));
    });
    if (!ps.ok()) {
      ctx.fail(ps.error());
      return;
    }
    for (auto& [row, v] : pending) {
      if (row->label.empty()) sink.add(*row->desc, {}, v);
      else sink.add(*row->desc, {row->label}, v);
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    std::vector<const metrics::Desc*> out;
    for (const auto& r : rows_) {
      if (std::find(out.begin(), out.end(), r.desc) == out.end()) out.push_back(r.desc);
    }
    return out;
  }

 private:
  std::string path_;
  const std::vector<VmstatRow>& rows_;
  std::unordered_map<std::string_view, const VmstatRow*> byKey_;
};

}  // namespace

std::unique_ptr<Collector> makeVmstatCollector(const std::string& procfs) {
  return std::make_unique<VmstatCollector>(procfs);
}

}  // namespace memcg
