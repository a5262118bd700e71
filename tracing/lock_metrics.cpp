#include "tracing/lock_metrics.h"

#include <memory>
#include <mutex>

#include "metrics/descriptors.h"

namespace memcg::tracing {
namespace {

using metrics::Desc;

const std::vector<double> kLockBounds = kLockBuckets.exposedBounds();

const Desc kNodeCount = metrics::nodeCounter(
    "memcg_node_lock_contentions_total",
    "Kernel lock contentions (lock:contention_begin -> end) outside reclaim, by lock kind.",
    {"kind"});
const Desc kNodeWait = metrics::nodeHistogram(
    "memcg_node_lock_contention_wait_seconds",
    "Wait of a kernel lock contention outside reclaim, by lock kind.", {"kind"}, kLockBounds);
const Desc kCgCount = metrics::cgroupCounter(
    "memcg_lock_contentions_total",
    "Kernel lock contentions that began while a task of the cgroup was in direct, memcg or "
    "soft-limit reclaim, by lock kind.",
    {"kind"});
const Desc kCgWait = metrics::cgroupHistogram(
    "memcg_lock_contention_wait_seconds",
    "Wait of a kernel lock contention by a task of the cgroup in reclaim, by lock kind.",
    {"kind"}, kLockBounds);
const Desc kRstatContended = metrics::cgroupCounter(
    "memcg_cgroup_rstat_lock_contended_total",
    "rstat flush lock acquisitions that had to wait (cgroup:cgroup_rstat_lock_contended), by "
    "flushed cgroup.");
const Desc kRstatWait = metrics::cgroupHistogram(
    "memcg_cgroup_rstat_lock_wait_seconds",
    "Wait for the rstat flush lock (contended -> locked), by flushed cgroup.", {}, kLockBounds);
const Desc kRstatHold = metrics::cgroupHistogram(
    "memcg_cgroup_rstat_lock_hold_seconds",
    "Hold time of the rstat flush lock (locked -> unlock, one per CPU flushed), by flushed "
    "cgroup.",
    {}, kLockBounds);
const Desc kFlushes = metrics::cgroupCounter(
    "memcg_stats_flushes_total",
    "mem_cgroup_flush_stats calls (memcg:memcg_flush_stats) by cgroup; outcome=skipped when "
    "too few updates were pending to flush.",
    {"outcome"});
const Desc kUnpaired = metrics::nodeCounter(
    "memcg_lock_contention_unpaired_total",
    "contention_end events without an open begin of the same task and lock (began before "
    "tracing, or a lost event).");
const Desc kSamples = metrics::nodeCounter(
    "memcg_lock_caller_samples_total",
    "Kernel stacks sampled at lock contention begins (a stacktrace trigger, or the bpf "
    "backend's contention_begin program; --collector.vmscan.lock-callers).");

double d(uint64_t v) { return static_cast<double>(v); }

void renderKinds(const LockKindArray& kinds, const Desc& count, const Desc& wait,
                 std::string_view cgroup, metrics::Sink& sink) {
  for (size_t k = 0; k < kLockKinds; ++k) {
    const LockKindStats& s = kinds[k];
    if (s.count == 0) continue;
    const char* kind = lockKindName(static_cast<LockKind>(k));
    if (cgroup.empty()) {
      sink.add(count, {kind}, d(s.count));
      s.wait.addTo(sink, wait, {kind});
    } else {
      sink.add(count, {cgroup, kind}, d(s.count));
      s.wait.addTo(sink, wait, {cgroup, kind});
    }
  }
}

nlohmann::json kindsJson(const LockKindArray& kinds) {
  nlohmann::json o = nlohmann::json::object();
  for (size_t k = 0; k < kLockKinds; ++k) {
    const LockKindStats& s = kinds[k];
    if (s.count == 0) continue;
    o[lockKindName(static_cast<LockKind>(k))] = {
        {"count", s.count}, {"aborted", s.aborted}, {"wait_seconds", s.wait.exposedSum()}};
  }
  return o;
}

nlohmann::json histJson(const LockHistogram& h) {
  return {{"count", h.count}, {"sum_seconds", h.exposedSum()}};
}

// The stacktrace trigger's own frames, and the bpf backend's: its program
// (bpf_prog_<tag>_contention_begin) and the runner that calls it.
bool isTracingFrame(std::string_view name) {
  return name.rfind("trace_event_raw_event_", 0) == 0 || name.rfind("__traceiter_", 0) == 0 ||
         name.rfind("__trace_", 0) == 0 || name.rfind("trace_contention_", 0) == 0 ||
         name.rfind("bpf_prog_", 0) == 0 || name.rfind("bpf_trace_run", 0) == 0;
}

}  // namespace

std::vector<const metrics::Desc*> lockMetricDescs() {
  return {&kNodeCount, &kNodeWait, &kCgCount,  &kCgWait,   &kRstatContended,
          &kRstatWait, &kRstatHold, &kFlushes, &kUnpaired, &kSamples};
}

void renderLockSnapshot(const LockSnapshot& s, metrics::Sink& sink,
                        const CgroupSelection* selection) {
  if (!s.enabled) return;
  sink.add(kUnpaired, {}, d(s.unpaired_ends));
  if (s.callers) sink.add(kSamples, {}, d(s.stacks_sampled));
  renderKinds(s.node, kNodeCount, kNodeWait, {}, sink);
  for (const LockCgroupSeries& c : s.cgroups) {
    if (selection && !selection->selectsLabel(c.label)) continue;
    std::string_view label = sink.keep(c.label);
    renderKinds(c.contention, kCgCount, kCgWait, label, sink);
    const RstatStats& r = c.rstat;
    if (r.contended) sink.add(kRstatContended, {label}, d(r.contended));
    if (r.wait.count) {
      r.wait.addTo(sink, kRstatWait, {label});
    }
    if (r.hold.count) {
      r.hold.addTo(sink, kRstatHold, {label});
    }
    if (r.flushes) sink.add(kFlushes, {label, "flushed"}, d(r.flushes));
    if (r.flushes_skipped) sink.add(kFlushes, {label, "skipped"}, d(r.flushes_skipped));
  }
}

std::string LockIds::id(uint64_t addr) {
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = index_.find(addr); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return "lock-" + std::to_string(it->second->second);
  }
  if (index_.size() >= capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  lru_.emplace_front(addr, next_++);
  index_[addr] = lru_.begin();
  return "lock-" + std::to_string(lru_.front().second);
}

size_t LockIds::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return index_.size();
}

nlohmann::json lockReport(const LockSnapshot& s, const Kallsyms* syms, LockIds& ids,
                          bool addresses) {
  using nlohmann::json;
  const bool sym = syms && syms->usable();
  json out = {{"enabled", s.enabled},
              {"callers_enabled", s.callers},
              {"symbols", sym},
              {"node", kindsJson(s.node)},
              {"unpaired_ends", s.unpaired_ends},
              {"nested_begins", s.nested_begins},
              {"rstat_unpaired", s.rstat_unpaired}};
  json cgroups = json::array();
  for (const LockCgroupSeries& c : s.cgroups) {
    const RstatStats& r = c.rstat;
    cgroups.push_back({{"cgroup", c.label},
                       {"contention", kindsJson(c.contention)},
                       {"rstat",
                        {{"contended", r.contended},
                         {"wait", histJson(r.wait)},
                         {"hold", histJson(r.hold)},
                         {"flushes", r.flushes},
                         {"flushes_skipped", r.flushes_skipped}}}});
  }
  out["cgroups"] = std::move(cgroups);
  json locks = json::array();
  for (const TopLock& l : s.top_locks) {
    json row = {{"id", ids.id(l.addr)},
                {"kind", lockKindName(l.kind)},
                {"count", l.count},
                {"wait_seconds", static_cast<double>(l.wait_ns) * 1e-9}};
    std::optional<std::string> name = sym ? syms->symbolizeData(l.addr) : std::nullopt;
    row["symbol"] = name ? json(*name) : json(nullptr);
    if (addresses) row["addr"] = hexAddr(l.addr);
    locks.push_back(std::move(row));
  }
  out["top_locks"] = std::move(locks);
  out["other_locks"] = {{"count", s.other_locks.count},
                        {"wait_seconds", static_cast<double>(s.other_locks.wait_ns) * 1e-9}};
  // Unnamed frames: raw text addresses only when asked (KASLR).
  auto unnamed = [addresses](uint64_t a) { return addresses ? hexAddr(a) : std::string("?"); };
  json callers = json::array();
  for (const TopStack& st : s.top_stacks) {
    json frames = json::array();
    bool top = true;
    for (uint64_t a : st.frames) {
      if (sym) {
        auto name = syms->textName(a);
        if (top && name && isTracingFrame(*name)) continue;
        top = false;
        auto full = syms->symbolizeText(a);
        frames.push_back(full ? *full : unnamed(a));
      } else {
        frames.push_back(unnamed(a));
      }
    }
    callers.push_back(
        {{"count", st.count}, {"kind", lockKindName(st.kind)}, {"frames", std::move(frames)}});
  }
  out["callers"] = std::move(callers);
  out["callers_sampled"] = s.stacks_sampled;
  out["callers_other"] = s.stacks_other;
  return out;
}

}  // namespace memcg::tracing
