// Limit and OOM events, as counters.
//
// v1: memory.failcnt, memory.memsw.failcnt (where swap accounting is on),
//     memory.kmem.failcnt, and memory.kmem.tcp.failcnt with
//     --collector.memory_events.kmem-tcp: times usage hit the limit; a write
//     of 0 resets it, which rate() treats as a counter reset.
//     memory.oom_control (flat keyed): oom_kill (counter, same name as v2's),
//     under_oom (gauge).
// v2: memory.events and memory.events.local (flat keyed: low, high, max, oom,
//     oom_kill, oom_group_kill, sock_throttled, ...) and memory.swap.events
//     (high, max, fail). memory.events counts include descendants; .local
//     counts only the cgroup itself. Each key has its own *_total name; a key
//     this table does not know is exported by the same rule.
#include <optional>
#include <span>
#include <unordered_map>

#include "cgroupfs/readers.h"
#include "collectors/memory_events.h"

namespace memcg {
namespace {

using cgroupfs::FileId;
using cgroupfs::ReadStatus;

struct KeyHelp {
  std::string_view key, help;
};

constexpr KeyHelp kEventKeys[] = {
    {"low", "times the cgroup was reclaimed below its memory.low protection"},
    {"high", "times usage went over memory.high and the cgroup was throttled into reclaim"},
    {"max", "times usage was about to go over memory.max (limit reclaim)"},
    {"oom", "times the cgroup hit its limit and allocations were about to fail"},
    {"oom_kill", "processes killed by the OOM killer"},
    {"oom_group_kill", "times the OOM killer killed the whole group"},
    {"sock_throttled", "times network sockets were throttled"},
};
constexpr KeyHelp kSwapKeys[] = {
    {"high", "times swap usage went over memory.swap.high"},
    {"max", "times a swap-out failed at memory.swap.max"},
    {"fail", "times a swap-out failed for lack of swap or memory.swap.max"},
};

// One flat-keyed events file: key -> counter.
class EventsFile {
 public:
  EventsFile(FileId file, std::string prefix, std::string source, std::span<const KeyHelp> keys)
      : file_(file), prefix_(std::move(prefix)), source_(std::move(source)) {
    for (const auto& k : keys) {
      const auto& d = descs_.emplace_back(cgroupCounter(nameOf(k.key), source_ + " " +
                                                                           std::string(k.key) +
                                                                           ": " + std::string(k.help) + "."));
      byKey_.emplace(k.key, &d);
    }
  }

  void collect(ScrapeContext& ctx, metrics::Sink& sink, const Cgroup& cg) const {
    thread_local std::vector<std::pair<const metrics::Desc*, double>> pending;
    std::string_view content;
    if (ctx.read(*cg.dir, file_, content) != ReadStatus::kOk) return;
    pending.clear();
    // The path only goes into an error (no string built per read).
    Status st = cgroupfs::parseFlatKeyed(
        content, {},
        [&](std::string_view key, uint64_t v) {
          auto it = byKey_.find(key);
          // A key that cannot be part of a metric name (no kernel writes one): skip it.
          if (it == byKey_.end() && !metrics::isValidMetricName(nameOf(key))) return;
          const metrics::Desc* d =
              it != byKey_.end()
                  ? it->second
                  : &sink.own(cgroupCounter(nameOf(key), source_ + " " + std::string(key) +
                                                             " (a key this exporter does not know)."));
          pending.emplace_back(d, static_cast<double>(v));
        });
    if (!st.ok()) {
      Error e = st.error();
      e.path = cg.dir->path() + "/" + std::string(cgroupfs::fileName(file_));
      ctx.fail(std::move(e));
      return;
    }
    for (auto& [d, v] : pending) sink.add(*d, {cg.path}, v);
  }

  /// True when the scrape wants a family of this file (its unknown keys come
  /// along when it is read).
  bool wanted(const ScrapeContext& ctx) const {
    for (const auto& d : descs_) {
      if (ctx.wants(d)) return true;
    }
    return false;
  }
  bool wantsOomKill(const ScrapeContext& ctx) const {
    return ctx.wants(*byKey_.at("oom_kill"));
  }

  /// v1's memory.oom_control oom_kill means what v2's memory.events oom_kill
  /// means: one name for both.
  void addOomKill(metrics::Sink& sink, const Cgroup& cg, double v) const {
    sink.add(*byKey_.at("oom_kill"), {cg.path}, v);
  }

  void describe(std::vector<const metrics::Desc*>& out) const {
    for (const auto& d : descs_) out.push_back(&d);
  }

 private:
  std::string nameOf(std::string_view key) const { return prefix_ + std::string(key) + "_total"; }

  FileId file_;
  std::string prefix_, source_;
  std::deque<metrics::Desc> descs_;
  std::unordered_map<std::string_view, const metrics::Desc*> byKey_;
};

class MemoryEventsCollector : public Collector {
 public:
  explicit MemoryEventsCollector(const MemoryEventsOptions& o)
      : kmemTcp_(o.kmemTcp),
        events_(FileId::kV2Events, "memcg_memory_events_", "memory.events", kEventKeys),
        local_(FileId::kV2EventsLocal, "memcg_memory_events_local_", "memory.events.local", kEventKeys),
        swap_(FileId::kV2SwapEvents, "memcg_swap_events_", "memory.swap.events", kSwapKeys) {
    auto counter = [this](std::string n, std::string h) {
      return &descs_.emplace_back(cgroupCounter(std::move(n), std::move(h)));
    };
    failcnt_ = {
        {FileId::kV1Failcnt, counter("memcg_memory_failcnt_total", "Times memory usage hit the limit (v1 memory.failcnt).")},
        {FileId::kV1MemswFailcnt, counter("memcg_memsw_failcnt_total", "Times memory+swap usage hit the limit (v1 memory.memsw.failcnt)."), Failcnt::kMemsw},
        {FileId::kV1KmemFailcnt, counter("memcg_kmem_failcnt_total", "Times kernel memory usage hit the limit (v1 memory.kmem.failcnt).")},
        {FileId::kV1KmemTcpFailcnt, counter("memcg_kmem_tcp_failcnt_total", "Times TCP buffer usage hit the limit (v1 memory.kmem.tcp.failcnt)."), Failcnt::kKmemTcp},
    };
    underOom_ = &descs_.emplace_back(cgroupGauge("memcg_memory_under_oom", "1 while the cgroup is under OOM (v1 memory.oom_control under_oom)."));
  }

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    const bool v2 = ctx.tree.layout.mode == CgroupMode::kV2;
    // The files this scrape reads (the history's filter may want only some
    // families), decided once per scrape. A v1 failcnt file a flag or the
    // kernel's swap accounting is off for is never opened.
    const bool events = v2 && events_.wanted(ctx), local = v2 && local_.wanted(ctx),
               swap = v2 && swap_.wanted(ctx);
    const bool memsw = !v2 && ctx.tree.layout.v1SwapAccounting;
    std::vector<char> on(failcnt_.size(), 0);
    for (size_t i = 0; !v2 && i < failcnt_.size(); ++i) {
      const auto g = failcnt_[i].group;
      on[i] = (g == Failcnt::kAlways || (g == Failcnt::kMemsw && memsw) ||
               (g == Failcnt::kKmemTcp && kmemTcp_)) &&
              ctx.wants(*failcnt_[i].desc);
    }
    const bool oom = !v2 && (ctx.wants(*underOom_) || events_.wantsOomKill(ctx));
    // v1 families resolved once per scrape, on first use (exposition order).
    std::vector<metrics::Family*> fams(failcnt_.size(), nullptr);
    for (const Cgroup& cg : ctx.tree.cgroups) {
      if (v2) {
        if (events) events_.collect(ctx, sink, cg);
        if (local) local_.collect(ctx, sink, cg);
        if (swap) swap_.collect(ctx, sink, cg);
        continue;
      }
      bool gone = false;
      for (size_t i = 0; i < failcnt_.size(); ++i) {
        if (!on[i]) continue;
        const auto& [file, desc, group] = failcnt_[i];
        std::string_view content;
        ReadStatus st = ctx.read(*cg.dir, file, content);
        if (st == ReadStatus::kGone) {
          gone = true;
          break;
        }
        if (st != ReadStatus::kOk) continue;
        auto n = cgroupfs::parseSingle(content, {});
        if (!n) {
          Error e = n.error();
          e.path = cg.dir->path() + "/" + std::string(cgroupfs::fileName(file));
          ctx.fail(std::move(e));
          continue;
        }
        if (!fams[i]) {
          fams[i] = &sink.family(*desc);
          fams[i]->samples.reserve(fams[i]->samples.size() + ctx.tree.cgroups.size());
        }
        fams[i]->add({cg.path}, static_cast<double>(*n));
      }
      if (!gone && oom) oomControl(ctx, sink, cg);
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    std::vector<const metrics::Desc*> out;
    for (const auto& d : descs_) out.push_back(&d);
    events_.describe(out);
    local_.describe(out);
    swap_.describe(out);
    return out;
  }

 private:
  void oomControl(ScrapeContext& ctx, metrics::Sink& sink, const Cgroup& cg) {
    std::string_view content;
    if (ctx.read(*cg.dir, FileId::kV1OomControl, content) != ReadStatus::kOk) return;
    std::optional<uint64_t> underOom, oomKill;
    Status st = cgroupfs::parseFlatKeyed(content, {}, [&](std::string_view k, uint64_t v) {
      if (k == "under_oom") underOom = v;
      if (k == "oom_kill") oomKill = v;
    });
    if (!st.ok()) {
      Error e = st.error();
      e.path = cg.dir->path() + "/memory.oom_control";
      ctx.fail(std::move(e));
      return;
    }
    if (underOom) sink.add(*underOom_, {cg.path}, static_cast<double>(*underOom));
    if (oomKill) events_.addOomKill(sink, cg, static_cast<double>(*oomKill));
  }

  const bool kmemTcp_;
  EventsFile events_, local_, swap_;
  std::deque<metrics::Desc> descs_;
  struct Failcnt {
    FileId file;
    const metrics::Desc* desc;
    enum Group { kAlways, kMemsw, kKmemTcp } group = kAlways;
  };
  std::vector<Failcnt> failcnt_;
  const metrics::Desc* underOom_;
};

}  // namespace

FlagList memoryEventsFlags(MemoryEventsOptions& o) {
  return {switchFlag("collector.memory_events.kmem-tcp",
                     "Also read v1 memory.kmem.tcp.failcnt (1 file per cgroup).", o.kmemTcp)};
}

std::unique_ptr<Collector> makeMemoryEventsCollector(const MemoryEventsOptions& o) {
  return std::make_unique<MemoryEventsCollector>(o);
}

}  // namespace memcg
