// memory.stat (cgroup v1 and v2), flat keyed: "key value\n".
//
// Units: v1 and v2 print sizes in bytes and events as counts. v1 prints each
// key twice: local ("cache") and, prefixed "total_", including descendants
// (exported as memcg_memory_stat_hierarchical_*). v2 keys already include
// descendants. A v1 limit of "unlimited" (PAGE_COUNTER_MAX) becomes +Inf.
//
// Every key can be exported; --collector.memory_stat.fields (a regex on the
// kernel key, whole match) picks which. Keys this table does not know (newer
// kernels) are exported by a naming rule: event-like prefixes (pg*, pswp*,
// swp*, zswp*, thp_*, numa_*, workingset_*) as counters "_total", the rest as
// sizes "_bytes" (v2 documents every other memory.stat value as bytes).
//
// The per-reclaimer split pgscan_{kswapd,direct,khugepaged,proactive} (and
// pgsteal_*, pgdemote_*) is one counter with a `reclaimer` label; the kernel's
// pre-summed pgscan and pgsteal are not exported (they would double count).
// Minimum kernel: any with memcg; keys vary by version.
#include "collectors/memory_stat.h"

#include <mutex>
#include <regex>
#include <unordered_map>

#include "cgroupfs/readers.h"
#include "collectors/collector.h"

namespace memcg {
namespace {

using cgroupfs::FileId;
using cgroupfs::ReadStatus;

enum class Kind { kBytes, kEvents, kLimit, kSkip };

struct StatRow {
  std::string_view key;
  Kind kind;
  std::string_view help;
  std::string_view foldBase = {};   // metric base name when folded into a label
  std::string_view foldLabel = {};  // e.g. "reclaimer"
  std::string_view foldValue = {};  // e.g. "kswapd"
};

constexpr StatRow kRows[] = {
    // Sizes.
    {"cache", Kind::kBytes, "page cache (v1)"},
    {"rss", Kind::kBytes, "anonymous and swap cache memory (v1)"},
    {"rss_huge", Kind::kBytes, "anonymous transparent hugepages (v1)"},
    {"shmem", Kind::kBytes, "shared memory and tmpfs"},
    {"mapped_file", Kind::kBytes, "memory-mapped page cache (v1)"},
    {"dirty", Kind::kBytes, "page cache waiting to be written back (v1)"},
    {"writeback", Kind::kBytes, "page cache being written back (v1)"},
    {"swap", Kind::kBytes, "swap used (v1)"},
    {"swapcached", Kind::kBytes, "memory cached in swap"},
    {"inactive_anon", Kind::kBytes, "anonymous memory on the inactive LRU"},
    {"active_anon", Kind::kBytes, "anonymous memory on the active LRU"},
    {"inactive_file", Kind::kBytes, "page cache on the inactive LRU"},
    {"active_file", Kind::kBytes, "page cache on the active LRU"},
    {"unevictable", Kind::kBytes, "memory that cannot be reclaimed"},
    {"anon", Kind::kBytes, "anonymous memory (v2)"},
    {"file", Kind::kBytes, "page cache (v2)"},
    {"kernel", Kind::kBytes, "kernel memory (v2)"},
    {"kernel_stack", Kind::kBytes, "kernel stacks (v2)"},
    {"pagetables", Kind::kBytes, "page tables (v2)"},
    {"sec_pagetables", Kind::kBytes, "secondary page tables (v2)"},
    {"percpu", Kind::kBytes, "per-CPU kernel data (v2)"},
    {"sock", Kind::kBytes, "network transmission buffers (v2)"},
    {"vmalloc", Kind::kBytes, "vmap-backed memory (v2)"},
    {"zswap", Kind::kBytes, "memory used by zswap's compressed pool (v2)"},
    {"zswapped", Kind::kBytes, "memory swapped out to zswap (v2)"},
    {"file_mapped", Kind::kBytes, "memory-mapped page cache (v2)"},
    {"file_dirty", Kind::kBytes, "page cache waiting to be written back (v2)"},
    {"file_writeback", Kind::kBytes, "page cache being written back (v2)"},
    {"anon_thp", Kind::kBytes, "anonymous transparent hugepages (v2)"},
    {"file_thp", Kind::kBytes, "page cache transparent hugepages (v2)"},
    {"shmem_thp", Kind::kBytes, "shmem transparent hugepages (v2)"},
    {"slab_reclaimable", Kind::kBytes, "reclaimable slab (v2)"},
    {"slab_unreclaimable", Kind::kBytes, "unreclaimable slab (v2)"},
    {"slab", Kind::kBytes, "slab (v2)"},
    {"hugetlb", Kind::kBytes, "hugetlb pages (v2)"},
    // Limits (v1): "unlimited" is +Inf.
    {"hierarchical_memory_limit", Kind::kLimit, "smallest memory limit of the cgroup and its ancestors (v1)"},
    {"hierarchical_memsw_limit", Kind::kLimit, "smallest memory+swap limit of the cgroup and its ancestors (v1)"},
    // Events.
    {"pgpgin", Kind::kEvents, "pages charged (v1)"},
    {"pgpgout", Kind::kEvents, "pages uncharged (v1)"},
    {"pgfault", Kind::kEvents, "page faults"},
    {"pgmajfault", Kind::kEvents, "major page faults"},
    {"workingset_refault_anon", Kind::kEvents, "refaults of previously evicted anonymous pages"},
    {"workingset_refault_file", Kind::kEvents, "refaults of previously evicted file pages"},
    {"workingset_activate_anon", Kind::kEvents, "refaulted anonymous pages activated at once"},
    {"workingset_activate_file", Kind::kEvents, "refaulted file pages activated at once"},
    {"workingset_restore_anon", Kind::kEvents, "restored anonymous pages that were active before eviction"},
    {"workingset_restore_file", Kind::kEvents, "restored file pages that were active before eviction"},
    {"workingset_nodereclaim", Kind::kEvents, "shadow nodes reclaimed"},
    {"pswpin", Kind::kEvents, "pages swapped in (v2)"},
    {"pswpout", Kind::kEvents, "pages swapped out (v2)"},
    {"pgrefill", Kind::kEvents, "pages scanned on the active LRU (v2)"},
    {"pgactivate", Kind::kEvents, "pages moved to the active LRU (v2)"},
    {"pgdeactivate", Kind::kEvents, "pages moved to the inactive LRU (v2)"},
    {"pglazyfree", Kind::kEvents, "pages postponed to be freed under pressure (v2)"},
    {"pglazyfreed", Kind::kEvents, "lazy-free pages reclaimed (v2)"},
    {"swpin_zero", Kind::kEvents, "zero pages swapped in without I/O (v2)"},
    {"swpout_zero", Kind::kEvents, "zero pages swapped out without I/O (v2)"},
    {"zswpin", Kind::kEvents, "pages moved in from zswap (v2)"},
    {"zswpout", Kind::kEvents, "pages moved out to zswap (v2)"},
    {"zswpwb", Kind::kEvents, "pages written back from zswap to swap (v2)"},
    {"thp_fault_alloc", Kind::kEvents, "transparent hugepages allocated at fault (v2)"},
    {"thp_collapse_alloc", Kind::kEvents, "transparent hugepages allocated to collapse (v2)"},
    {"thp_swpout", Kind::kEvents, "transparent hugepages swapped out whole (v2)"},
    {"thp_swpout_fallback", Kind::kEvents, "transparent hugepages split before swap-out (v2)"},
    {"numa_pages_migrated", Kind::kEvents, "pages migrated by NUMA balancing (v2)"},
    {"numa_pte_updates", Kind::kEvents, "PTEs marked for NUMA hinting faults (v2)"},
    {"numa_hint_faults", Kind::kEvents, "NUMA hinting faults (v2)"},
    {"pgpromote_success", Kind::kEvents, "pages promoted to a faster memory tier (v2)"},
    // Reclaim by reclaimer: one counter, a `reclaimer` label.
    {"pgscan_kswapd", Kind::kEvents, "pages scanned by reclaim", "pgscan", "reclaimer", "kswapd"},
    {"pgscan_direct", Kind::kEvents, "pages scanned by reclaim", "pgscan", "reclaimer", "direct"},
    {"pgscan_khugepaged", Kind::kEvents, "pages scanned by reclaim", "pgscan", "reclaimer", "khugepaged"},
    {"pgscan_proactive", Kind::kEvents, "pages scanned by reclaim", "pgscan", "reclaimer", "proactive"},
    {"pgsteal_kswapd", Kind::kEvents, "pages reclaimed", "pgsteal", "reclaimer", "kswapd"},
    {"pgsteal_direct", Kind::kEvents, "pages reclaimed", "pgsteal", "reclaimer", "direct"},
    {"pgsteal_khugepaged", Kind::kEvents, "pages reclaimed", "pgsteal", "reclaimer", "khugepaged"},
    {"pgsteal_proactive", Kind::kEvents, "pages reclaimed", "pgsteal", "reclaimer", "proactive"},
    {"pgdemote_kswapd", Kind::kEvents, "pages demoted to a slower memory tier", "pgdemote", "reclaimer", "kswapd"},
    {"pgdemote_direct", Kind::kEvents, "pages demoted to a slower memory tier", "pgdemote", "reclaimer", "direct"},
    {"pgdemote_khugepaged", Kind::kEvents, "pages demoted to a slower memory tier", "pgdemote", "reclaimer", "khugepaged"},
    {"pgdemote_proactive", Kind::kEvents, "pages demoted to a slower memory tier", "pgdemote", "reclaimer", "proactive"},
    // Sums of the split above: not exported, they would double count.
    {"pgscan", Kind::kSkip, ""},
    {"pgsteal", Kind::kSkip, ""},
};

constexpr std::string_view kPrefix = "memcg_memory_stat_";
constexpr std::string_view kV1Hier = "total_";

}  // namespace

/// The default field sets, chosen for reclaim analysis: LRU sizes, page cache
/// state, faults, refaults and (v2) the reclaim split. On v1 the hierarchical
/// (total_*) keys, which mean what v2's keys mean.
const char kDefaultMemoryStatFieldsV1[] =
    "total_(cache|rss|rss_huge|shmem|mapped_file|dirty|writeback|swap|pgfault|pgmajfault|"
    "inactive_anon|active_anon|inactive_file|active_file|unevictable|"
    "workingset_refault_(anon|file))";
const char kDefaultMemoryStatFieldsV2[] =
    "anon|file|kernel|sock|shmem|file_mapped|file_dirty|file_writeback|swapcached|"
    "inactive_anon|active_anon|inactive_file|active_file|unevictable|"
    "slab_reclaimable|slab_unreclaimable|workingset_(refault|activate|restore)_(anon|file)|"
    "workingset_nodereclaim|pgscan_.*|pgsteal_.*|pgrefill|pgfault|pgmajfault|pswpin|pswpout";

namespace {

class MemoryStatCollector : public Collector {
 public:
  explicit MemoryStatCollector(const MemoryStatOptions& cfg) {
    constexpr auto kFlags = std::regex::ECMAScript | std::regex::optimize;
    if (cfg.fields.empty()) {
      fields_[0] = std::regex(kDefaultMemoryStatFieldsV1, kFlags);
      fields_[1] = std::regex(kDefaultMemoryStatFieldsV2, kFlags);
    } else {
      fields_[0] = fields_[1] = std::regex(cfg.fields, kFlags);
    }
    // Local rows, then the v1 hierarchical ("total_") twin of each.
    for (const StatRow& r : kRows) addRow(r, false);
    for (const StatRow& r : kRows) {
      if (r.kind != Kind::kLimit && r.kind != Kind::kSkip) addRow(r, true);
    }
  }

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    thread_local std::vector<std::pair<metrics::Family*, metrics::Sample>> pending;
    // Families resolved once per scrape (on first use, so the exposition
    // keeps the order of first appearance), not looked up by name per sample.
    thread_local std::vector<metrics::Family*> fams;
    fams.assign(descs_.size(), nullptr);
    const int set = ctx.tree.layout.mode == CgroupMode::kV2 ? 1 : 0;
    for (const Cgroup& cg : ctx.tree.cgroups) {
      std::string_view content;
      if (ctx.read(*cg.dir, FileId::kMemoryStat, content) != ReadStatus::kOk) continue;
      pending.clear();
      // The path only goes into an error (no string built per cgroup).
      Status st = cgroupfs::parseFlatKeyed(content, {}, [&](std::string_view key, uint64_t v) {
        emit(set, sink, cg, key, v, ctx.tree.cgroups.size(), fams, pending);
      });
      if (!st.ok()) {
        Error e = st.error();
        e.path = cg.dir->path() + "/memory.stat";
        ctx.fail(std::move(e));  // nothing of a malformed file is exported
        continue;
      }
      for (auto& [fam, sample] : pending) fam->samples.push_back(sample);
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    std::vector<const metrics::Desc*> out;
    for (const auto& d : descs_) out.push_back(&d);
    return out;
  }

 private:
  struct Compiled {
    const metrics::Desc* desc;
    size_t slot;  // index of desc in descs_ (the per-scrape family cache)
    Kind kind;
    std::string_view foldValue;
    bool enabled[2];  // under the v1 (hybrid) and the v2 field set
  };

  void addRow(const StatRow& r, bool hierarchical) {
    std::string key = hierarchical ? std::string(kV1Hier) + std::string(r.key) : std::string(r.key);
    bool v1 = r.kind != Kind::kSkip && std::regex_match(key, fields_[0]);
    bool v2 = r.kind != Kind::kSkip && std::regex_match(key, fields_[1]);
    const metrics::Desc* desc = nullptr;
    size_t slot = 0;
    if (r.kind != Kind::kSkip) {
      std::string base(r.foldBase.empty() ? r.key : r.foldBase);
      if (hierarchical) base = "hierarchical_" + base;
      std::string name = std::string(kPrefix) + base +
                         (r.kind == Kind::kEvents ? "_total" : "_bytes");
      std::string help = "memory.stat ";
      help += r.foldBase.empty() ? key : (hierarchical ? "total_" : "") + std::string(r.foldBase) + "_*";
      help += ": ";
      help += r.help;
      if (hierarchical) help += ", including descendants (v1)";
      help += r.kind == Kind::kEvents ? "." : r.kind == Kind::kLimit ? " in bytes (+Inf: unlimited)." : " in bytes.";
      slot = findOrAdd(r.kind == Kind::kEvents
                           ? cgroupCounter(name, help, r.foldLabel.empty()
                                                           ? std::vector<std::string>{}
                                                           : std::vector<std::string>{std::string(r.foldLabel)})
                           : cgroupGauge(name, help));
      desc = &descs_[slot];
    }
    keys_.push_back(std::move(key));
    rows_.emplace(keys_.back(), Compiled{desc, slot, r.kind, r.foldValue, {v1, v2}});
  }

  size_t findOrAdd(metrics::Desc d) {
    for (size_t i = 0; i < descs_.size(); ++i) {
      if (descs_[i].name == d.name) return i;
    }
    descs_.push_back(std::move(d));
    return descs_.size() - 1;
  }

  void emit(int set, metrics::Sink& sink, const Cgroup& cg, std::string_view key, uint64_t v,
            size_t cgroups, std::vector<metrics::Family*>& fams,
            std::vector<std::pair<metrics::Family*, metrics::Sample>>& pending) {
    auto it = rows_.find(key);
    if (it != rows_.end()) {
      const Compiled& c = it->second;
      if (!c.enabled[set]) return;
      double value = static_cast<double>(v);
      if (c.kind == Kind::kLimit && v >= cgroupfs::v1UnlimitedBytes()) value = cgroupfs::Limit{}.asDouble();
      metrics::Sample s;
      s.values[0] = cg.path;
      s.values[1] = c.foldValue;
      s.value = value;
      metrics::Family*& fam = fams[c.slot];
      if (!fam) {
        fam = &sink.family(*c.desc);
        // One sample per cgroup (two for a folded key's family per value):
        // reserved once, not grown by doubling.
        fam->samples.reserve(fam->samples.size() + cgroups);
      }
      pending.emplace_back(fam, s);
      return;
    }
    if (!unknownEnabled(set, key)) return;
    // A key from a newer kernel: name it by rule (see the file comment).
    bool hier = key.starts_with(kV1Hier);
    std::string_view bare = hier ? key.substr(kV1Hier.size()) : key;
    bool events = false;
    for (std::string_view p : {"pg", "pswp", "swp", "zswp", "thp_", "numa_", "workingset_"}) {
      if (bare.starts_with(p)) events = true;
    }
    std::string name = std::string(kPrefix) + (hier ? "hierarchical_" : "") + std::string(bare) +
                       (events ? "_total" : "_bytes");
    // No kernel writes a key that cannot be part of a metric name: skip it.
    if (!metrics::isValidMetricName(name)) return;
    std::string help = "memory.stat " + std::string(key) + " (a key this exporter does not know; " +
                       (events ? "taken as an event count)." : "taken as bytes).");
    const metrics::Desc& d = sink.own(events ? cgroupCounter(name, help) : cgroupGauge(name, help));
    metrics::Sample s;
    s.values[0] = cg.path;
    s.value = static_cast<double>(v);
    pending.emplace_back(&sink.family(d), s);
  }

  bool unknownEnabled(int set, std::string_view key) {
    std::lock_guard<std::mutex> g(mu_);
    auto [it, fresh] = unknown_[set].try_emplace(std::string(key), false);
    if (fresh) it->second = std::regex_match(key.begin(), key.end(), fields_[set]);
    return it->second;
  }

  std::regex fields_[2];
  std::deque<metrics::Desc> descs_;
  std::deque<std::string> keys_;
  std::unordered_map<std::string_view, Compiled> rows_;
  std::mutex mu_;
  std::unordered_map<std::string, bool> unknown_[2];
};

}  // namespace

FlagList memoryStatFlags(MemoryStatOptions& o) {
  return {{"collector.memory_stat.fields",
           "Regex of memory.stat keys to export (whole match; default: a set chosen for reclaim "
           "analysis, see README).",
           false, [&o](const std::string& v) { o.fields = checkFlagRegex("collector.memory_stat.fields", v); },
           ""}};
}

std::unique_ptr<Collector> makeMemoryStatCollector(const MemoryStatOptions& o) {
  return std::make_unique<MemoryStatCollector>(o);
}

}  // namespace memcg
