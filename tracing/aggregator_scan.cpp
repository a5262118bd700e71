// The Aggregator's LRU/writeback/slab detail events, the report's per-task
// rows, cgroup removal and proactive episodes (aggregator.h declares them).
// Kept apart from aggregator.cpp so that the reclaim begin/end core stays small.
#include <time.h>

#include <algorithm>
#include <limits>

#include "tracing/aggregator.h"

namespace memcg::tracing {

const char* lruListName(LruList l) { return l == LruList::kActive ? "active" : "inactive"; }
const char* writeIoName(WriteIo w) { return w == WriteIo::kSync ? "sync" : "async"; }
const char* throttleReasonName(size_t i) {
  // enum vmscan_throttle_state order (include/linux/mmzone.h).
  static constexpr const char* kNames[kThrottleSlots] = {"writeback", "isolated", "noprogress",
                                                         "congested", "other"};
  return i < kThrottleSlots ? kNames[i] : "other";
}

ReclaimContext Aggregator::contextOf(const PidState& st) {
  // The innermost open reclaim of the task (softlimit runs inside direct).
  if (st.begin_ts[2]) return ReclaimContext::kSoftlimit;
  if (st.begin_ts[1])
    return (st.flags & kFlagProactive) ? ReclaimContext::kProactive : ReclaimContext::kMemcg;
  if (st.begin_ts[0]) return ReclaimContext::kDirect;
  if (st.flags & kFlagKswapd) return ReclaimContext::kKswapd;
  if (st.flags & kFlagProactive) return ReclaimContext::kProactive;
  return ReclaimContext::kOther;
}

void Aggregator::handleScan(const Event& e) {
  if (e.type == EventType::kCgroupRmdir) {
    removeCgroup(e);
    return;
  }
  PidState& st = pidState(e.pid);
  const size_t ctx = static_cast<size_t>(contextOf(st));
  const uint32_t slot = chargeSlot(st, e);
  ScanDetail& d = slots_[slot].detail;
  switch (e.type) {
    case EventType::kLruIsolate: {
      if (e.lru < 0 || e.lru >= kLruUnevictable) break;  // reclaim never isolates those
      const size_t lru = e.lru >= 2 ? 1 : 0;               // enum lru_list: file after anon
      const size_t list = (e.lru & 1) ? 1 : 0;             // active after inactive
      IsolateStats& s = d.isolate[ctx][lru][list];
      s.scanned_pages += e.nr_scanned;
      s.taken_pages += e.nr_taken;
      break;
    }
    case EventType::kLruShrinkActive: {
      const size_t lru = (e.reclaim_flags & kReclaimWbFile) ? 1 : 0;
      d.active[ctx][lru].taken_pages += e.nr_taken;
      d.active[ctx][lru].deactivated_pages += e.nr_deactivated;
      break;
    }
    case EventType::kWriteFolio: {
      // Since 2.6.38 reclaim writes are always ASYNC; SYNC is kept for the
      // script's columns and older kernels. Neither bit: counted as async.
      const bool sync = (e.reclaim_flags & kReclaimWbSync) != 0;
      ++d.write_folios[ctx][sync ? 0 : 1];
      ProcessTraceStats& p = proc(st, e.pid, slot);
      ++(sync ? p.write_sync : p.write_async);
      break;
    }
    case EventType::kThrottled: {
      size_t r = kThrottleSlots - 1;
      for (size_t i = 0; i < kThrottleReasons; ++i) {
        if (e.reason & (1u << i)) {
          r = i;
          break;
        }
      }
      ++d.throttled[r].count;
      d.throttled[r].delayed_us += e.delayed_us;
      ProcessTraceStats& p = proc(st, e.pid, slot);
      ++p.throttled;
      p.throttled_us += e.delayed_us;
      break;
    }
    case EventType::kShrinkSlabStart:
      st.slab_start_ts = e.ts ? e.ts : 1;
      break;
    case EventType::kShrinkSlabEnd: {
      SlabStats& s = d.slab[ctx];
      ++s.calls;
      if (e.freed > 0) s.freed_objects += static_cast<uint64_t>(e.freed);
      if (st.slab_start_ts != 0 && e.ts >= st.slab_start_ts) s.ns += e.ts - st.slab_start_ts;
      st.slab_start_ts = 0;
      break;
    }
    case EventType::kReclaimPages:
      d.pageout_scanned_pages += e.nr_scanned;
      d.pageout_reclaimed_pages += e.nr_reclaimed;
      break;
    default:
      break;
  }
}

void Aggregator::removeCgroup(const Event& e) {
  if (e.dst_root != opts_.hierarchy_id || e.dst_path.empty()) return;
  auto it = by_path_.find(std::string(e.dst_path));
  if (it == by_path_.end()) return;
  const uint32_t slot = it->second;
  // A cgroup recreated under the same path has another id: not ours to drop.
  if (e.dst_id != 0 && slots_[slot].id != 0 && slots_[slot].id != e.dst_id) return;
  by_path_.erase(it);
  if (slots_[slot].id != 0) by_id_.erase(slots_[slot].id);
  slots_[slot] = CgroupTraceStats{};
  locks_.dropSlot(slot);
  free_slots_.push_back(slot);
  ++counters_.cgroups_removed;
  // rmdir needs an empty cgroup, so entries still pointing here are stale
  // (a migration we missed): forget them, the next event re-reads /proc.
  for (auto p = pids_.begin(); p != pids_.end();) {
    auto next = std::next(p);
    if (p->second.slot == slot) forgetPid(p);
    p = next;
  }
  for (size_t i = 0; i < procs_slot_.size(); ++i) {
    if (procs_slot_[i] == slot) procs_slot_[i] = 0;
  }
  std::erase_if(episodes_, [&](const Episode& ep) { return ep.slot == slot; });
}

std::string Aggregator::labelOf(uint32_t slot) const {
  if (slot == 0) return "_unknown";
  if (slot == overflow_slot_) return "_overflow";
  return slots_[slot].path;
}

ProcessTraceStats& Aggregator::proc(PidState& st, int32_t tid, uint32_t slot) {
  if (st.proc == kNoProc) {
    // tid 0 (work in interrupt context on an idle CPU) never exits: "other".
    if (live_procs_ >= opts_.max_processes || tid <= 0) return procs_[0];
    uint32_t i;
    if (!free_procs_.empty()) {
      i = free_procs_.back();
      free_procs_.pop_back();
    } else {
      i = static_cast<uint32_t>(procs_.size());
      procs_.emplace_back();
      procs_slot_.push_back(0);
    }
    ProcessTraceStats& p = procs_[i];
    p = ProcessTraceStats{};
    p.pid = tid;
    if (resolver_) p.comm = resolver_->comm(tid);
    st.proc = i;
    ++live_procs_;
  }
  procs_slot_[st.proc] = slot;
  return procs_[st.proc];
}

namespace {
void addInto(ProcessTraceStats& to, const ProcessTraceStats& p) {
  for (size_t k = 0; k < kReclaimKinds; ++k) to.reclaims[k] += p.reclaims[k];
  to.stall_ns += p.stall_ns;
  to.wake_requests += p.wake_requests;
  to.scanned_pages += p.scanned_pages;
  to.reclaimed_pages += p.reclaimed_pages;
  to.write_sync += p.write_sync;
  to.write_async += p.write_async;
  to.throttled += p.throttled;
  to.throttled_us += p.throttled_us;
  to.kswapd_wakeups += p.kswapd_wakeups;
  to.kswapd_rewakeups += p.kswapd_rewakeups;
  to.kswapd_awake_ns += p.kswapd_awake_ns;
}
}  // namespace

void Aggregator::dropProc(PidState& st) {
  if (st.proc == kNoProc) return;
  ProcessTraceStats p = std::move(procs_[st.proc]);
  p.cgroup = labelOf(procs_slot_[st.proc]);
  p.exited = true;
  procs_[st.proc] = ProcessTraceStats{};  // pid 0 = free
  free_procs_.push_back(st.proc);
  --live_procs_;
  st.proc = kNoProc;
  // Keep the most stalled exited tasks (ties: most reclaims); sum the rest.
  auto weight = [](const ProcessTraceStats& x) {
    uint64_t n = 0;
    for (uint64_t r : x.reclaims) n += r;
    return std::make_pair(x.stall_ns, n + x.scanned_pages);
  };
  if (exited_procs_.size() < opts_.max_exited_processes) {
    exited_procs_.push_back(std::move(p));
    return;
  }
  if (exited_procs_.empty()) {
    addInto(procs_[0], p);
    return;
  }
  auto least = std::min_element(exited_procs_.begin(), exited_procs_.end(),
                                [&](const auto& a, const auto& b) { return weight(a) < weight(b); });
  if (weight(*least) < weight(p)) std::swap(*least, p);
  addInto(procs_[0], p);
}

void Aggregator::forgetPid(std::unordered_map<int32_t, PidState>::iterator it) {
  dropProc(it->second);
  pids_.erase(it);
}

void Aggregator::clearPids() {
  for (auto& [tid, st] : pids_) dropProc(st);
  pids_.clear();
  ++counters_.pid_cache_resets;
}

uint32_t Aggregator::episodeSlot(const PidState& st, const Event& e) {
  for (const Episode& ep : episodes_) {
    if (ep.tid == e.pid && e.ts >= ep.begin_ts && e.ts <= ep.end_ts) {
      ++counters_.proactive_targeted;
      return ep.slot;
    }
  }
  return st.slot;
}

namespace {
uint64_t monoNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}
// Episodes kept for the reader to match: it runs a poll interval (200 ms)
// behind the controller, which starts at most a few episodes per second.
constexpr size_t kMaxEpisodes = 64;
}  // namespace

bool Aggregator::beginProactiveTarget(int32_t tid, std::string_view cgroup) {
  if (!opts_.mono_clock) return false;
  return beginProactiveTarget(tid, cgroup, monoNowNs());
}

void Aggregator::endProactiveTarget(int32_t tid) {
  if (opts_.mono_clock) endProactiveTarget(tid, monoNowNs());
}

bool Aggregator::beginProactiveTarget(int32_t tid, std::string_view cgroup, uint64_t ts) {
  std::lock_guard<std::mutex> g(mu_);
  if (!proactive_.count(tid)) return false;
  const uint32_t slot = internCgroup(cgroup, 0);
  if (episodes_.size() >= kMaxEpisodes) episodes_.erase(episodes_.begin());
  episodes_.push_back({tid, slot, ts, std::numeric_limits<uint64_t>::max()});
  return true;
}

void Aggregator::endProactiveTarget(int32_t tid, uint64_t ts) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = episodes_.rbegin(); it != episodes_.rend(); ++it) {
    if (it->tid == tid && it->end_ts == std::numeric_limits<uint64_t>::max()) {
      it->end_ts = ts;
      break;
    }
  }
}

}  // namespace memcg::tracing
