#include "tracing/aggregator.h"

#include <algorithm>

namespace memcg::tracing {

void StallHistogram::observe(uint64_t ns) {
  // Linear scan: stalls cluster in the low buckets, and 22 compares beat a
  // branchy binary search at this size.
  size_t i = 0;
  while (i < kStallBoundsNs.size() && ns > kStallBoundsNs[i]) ++i;
  ++buckets[i];
  ++count;
  sum_ns += ns;
}

std::array<uint64_t, kStallBoundsNs.size() + 1> StallHistogram::cumulative() const {
  std::array<uint64_t, kStallBoundsNs.size() + 1> c{};
  uint64_t run = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    run += buckets[i];
    c[i] = run;
  }
  return c;
}

const char* reclaimKindName(ReclaimKind k) {
  switch (k) {
    case ReclaimKind::kDirect:
      return "direct";
    case ReclaimKind::kMemcg:
      return "memcg";
    case ReclaimKind::kSoftlimit:
      return "softlimit";
    case ReclaimKind::kProactive:
      return "proactive";
    default:
      return "unknown";
  }
}

const char* reclaimContextName(ReclaimContext c) {
  switch (c) {
    case ReclaimContext::kDirect:
      return "direct";
    case ReclaimContext::kMemcg:
      return "memcg";
    case ReclaimContext::kSoftlimit:
      return "softlimit";
    case ReclaimContext::kProactive:
      return "proactive";
    case ReclaimContext::kKswapd:
      return "kswapd";
    case ReclaimContext::kOther:
      return "other";
    default:
      return "unknown";
  }
}

const char* lruTypeName(LruType l) { return l == LruType::kAnon ? "anon" : "file"; }

Aggregator::Aggregator(AggregatorOptions opts, std::unique_ptr<CgroupResolver> resolver)
    : opts_(opts), resolver_(std::move(resolver)) {
  CgroupTraceStats unknown;
  unknown.unknown = true;
  slots_.push_back(std::move(unknown));
  pids_.reserve(4096);
  locks_.setMaxPids(opts_.max_pids);
}

void Aggregator::registerProactiveReclaimer(int32_t tid) {
  std::lock_guard<std::mutex> g(mu_);
  proactive_.insert(tid);
  auto it = pids_.find(tid);
  if (it != pids_.end()) it->second.flags |= kFlagProactive;
}

void Aggregator::unregisterProactiveReclaimer(int32_t tid) {
  std::lock_guard<std::mutex> g(mu_);
  proactive_.erase(tid);
  auto it = pids_.find(tid);
  if (it != pids_.end()) it->second.flags &= static_cast<uint8_t>(~kFlagProactive);
}

uint32_t Aggregator::internCgroup(std::string_view path, uint64_t id) {
  // Heterogeneous lookup needs C++20 transparent hashing; a std::string key
  // built per miss is fine since interning happens once per task.
  std::string key(path.empty() ? std::string_view("/") : path);
  auto it = by_path_.find(key);
  if (it != by_path_.end()) {
    if (id != 0) {
      slots_[it->second].id = id;
      by_id_[id] = it->second;
    }
    return it->second;
  }
  if (slots_.size() - (overflow_slot_ ? 1 : 0) - 1 >= opts_.max_cgroups) {
    if (overflow_slot_ == 0) {
      CgroupTraceStats o;
      o.overflow = true;
      overflow_slot_ = static_cast<uint32_t>(slots_.size());
      slots_.push_back(std::move(o));
    }
    return overflow_slot_;
  }
  CgroupTraceStats s;
  s.path = key;
  s.id = id != 0 ? id : (resolver_ ? resolver_->idOf(key) : 0);
  uint32_t slot = static_cast<uint32_t>(slots_.size());
  if (s.id != 0) by_id_[s.id] = slot;
  slots_.push_back(std::move(s));
  by_path_.emplace(std::move(key), slot);
  return slot;
}

Aggregator::PidState& Aggregator::pidState(int32_t tid) {
  auto it = pids_.find(tid);
  if (it != pids_.end()) return it->second;
  if (pids_.size() >= opts_.max_pids) {
    pids_.clear();
    ++counters_.pid_cache_resets;
  }
  PidState st;
  ++counters_.pid_lookups;
  std::optional<std::string> path;
  if (resolver_) path = resolver_->resolve(tid);
  if (path) {
    st.slot = internCgroup(*path, 0);
  } else {
    ++counters_.pid_lookup_failures;
    st.slot = 0;
  }
  if (!proactive_.empty() && proactive_.count(tid)) st.flags |= kFlagProactive;
  return pids_.emplace(tid, st).first->second;
}

void Aggregator::endReclaim(const Event& e, size_t idx) {
  PidState& st = pidState(e.pid);
  ReclaimKind kind = static_cast<ReclaimKind>(idx);
  if (idx == 1 && (st.flags & kFlagProactive)) kind = ReclaimKind::kProactive;
  CgroupTraceStats& c = slots_[st.slot];
  if (st.slot == overflow_slot_ && overflow_slot_ != 0) ++counters_.overflow_events;
  ReclaimStats& r = c.reclaim[static_cast<size_t>(kind)];
  ++r.total;
  r.reclaimed_pages += e.nr_reclaimed;
  uint64_t b = st.begin_ts[idx];
  if (b != 0 && e.ts >= b) {
    r.stall.observe(e.ts - b);
  } else {
    ++r.unpaired;
  }
  st.begin_ts[idx] = 0;
}

void Aggregator::handle(const Event& e) {
  ++counters_.events;
  switch (e.type) {
    case EventType::kDirectReclaimBegin:
      pidState(e.pid).begin_ts[0] = e.ts ? e.ts : 1;
      break;
    case EventType::kMemcgReclaimBegin:
      pidState(e.pid).begin_ts[1] = e.ts ? e.ts : 1;
      break;
    case EventType::kSoftlimitReclaimBegin:
      pidState(e.pid).begin_ts[2] = e.ts ? e.ts : 1;
      break;
    case EventType::kDirectReclaimEnd:
      endReclaim(e, 0);
      break;
    case EventType::kMemcgReclaimEnd:
      endReclaim(e, 1);
      break;
    case EventType::kSoftlimitReclaimEnd:
      endReclaim(e, 2);
      break;
    case EventType::kLruShrinkInactive: {
      PidState& st = pidState(e.pid);
      ReclaimContext ctx;
      if (st.begin_ts[2]) {
        ctx = ReclaimContext::kSoftlimit;
      } else if (st.begin_ts[1]) {
        ctx = (st.flags & kFlagProactive) ? ReclaimContext::kProactive
                                          : ReclaimContext::kMemcg;
      } else if (st.begin_ts[0]) {
        ctx = ReclaimContext::kDirect;
      } else if (st.flags & kFlagKswapd) {
        ctx = ReclaimContext::kKswapd;
      } else {
        ctx = ReclaimContext::kOther;
      }
      LruType lru = (e.reclaim_flags & kReclaimWbFile) ? LruType::kFile : LruType::kAnon;
      LruStats& l =
          slots_[st.slot].lru[static_cast<size_t>(ctx)][static_cast<size_t>(lru)];
      l.scanned_pages += e.nr_scanned;
      l.reclaimed_pages += e.nr_reclaimed;
      l.dirty_pages += e.nr_dirty;
      l.writeback_pages += e.nr_writeback;
      break;
    }
    case EventType::kKswapdWake: {
      PidState& st = pidState(e.pid);
      st.flags |= kFlagKswapd;
      if (st.kswapd_wake_ts == 0) st.kswapd_wake_ts = e.ts ? e.ts : 1;
      ++node_.kswapd_wakeups;
      break;
    }
    case EventType::kKswapdSleep: {
      PidState& st = pidState(e.pid);
      st.flags |= kFlagKswapd;
      if (st.kswapd_wake_ts != 0 && e.ts >= st.kswapd_wake_ts) {
        node_.kswapd_awake_ns += e.ts - st.kswapd_wake_ts;
      }
      st.kswapd_wake_ts = 0;
      break;
    }
    case EventType::kWakeupKswapd: {
      size_t o = e.order < 0
                     ? 0
                     : std::min<size_t>(static_cast<size_t>(e.order), kWakeupOrders - 1);
      ++node_.wakeup_requests_by_order[o];
      ++slots_[pidState(e.pid).slot].kswapd_wakeup_requests;
      break;
    }
    case EventType::kCgroupAttach: {
      if (e.dst_root != opts_.hierarchy_id) break;  // another v1 hierarchy
      uint32_t slot = internCgroup(e.dst_path, e.dst_id);
      ++slots_[slot].tasks_attached;
      auto it = pids_.find(e.target_pid);
      if (it != pids_.end()) {
        it->second.slot = slot;
        it->second.flags &= static_cast<uint8_t>(~kFlagExited);
      } else {
        if (pids_.size() >= opts_.max_pids) {
          pids_.clear();
          ++counters_.pid_cache_resets;
        }
        PidState st;
        st.slot = slot;
        if (!proactive_.empty() && proactive_.count(e.target_pid))
          st.flags |= kFlagProactive;
        pids_.emplace(e.target_pid, st);
      }
      break;
    }
    case EventType::kProcessFork: {
      // The child starts in its parent's cgroup; learn it without /proc if we
      // already know the parent (otherwise resolve lazily on first use).
      auto parent = pids_.find(e.pid);
      if (parent == pids_.end()) break;
      if (pids_.size() >= opts_.max_pids) break;
      PidState st;
      st.slot = parent->second.slot;
      pids_[e.target_pid] = st;
      break;
    }
    case EventType::kProcessExit: {
      auto it = pids_.find(e.target_pid);
      if (it != pids_.end()) {
        it->second.flags |= kFlagExited;
        exited_.push_back(e.target_pid);
      }
      break;
    }
    default:
      if (isLockEvent(e.type)) handleLock(e);
      break;
  }
}

void Aggregator::apply(std::span<const Event> events) {
  std::lock_guard<std::mutex> g(mu_);
  for (const Event& e : events) handle(e);
}

void Aggregator::endRound() {
  std::lock_guard<std::mutex> g(mu_);
  // Exits are applied late so that records of the exiting task that sit on
  // another CPU's not-yet-merged page still find its cgroup in this round.
  for (int32_t tid : exited_) {
    auto it = pids_.find(tid);
    if (it != pids_.end() && (it->second.flags & kFlagExited)) pids_.erase(it);
    locks_.forget(tid);
  }
  exited_.clear();
}

TraceSnapshot Aggregator::snapshot() const {
  TraceSnapshot s;
  std::lock_guard<std::mutex> g(mu_);
  s.cgroups = slots_;
  s.node = node_;
  s.aggregator = counters_;
  s.aggregator.pid_cache_entries = pids_.size();
  s.locks = locks_.snapshot(slots_);
  return s;
}

// --- Lock probes -------------------------------------------------------------

uint32_t Aggregator::slotOfId(uint64_t id) {
  auto it = by_id_.find(id);
  if (it != by_id_.end()) return it->second;
  if (id == 0 || unresolved_ids_.count(id) || !resolver_) return 0;
  // A cgroup no task of ours was seen in yet: one walk of the hierarchy.
  std::optional<std::string> path = resolver_->pathOfId(id);
  if (!path) {
    if (unresolved_ids_.size() >= opts_.max_cgroups) unresolved_ids_.clear();
    unresolved_ids_.insert(id);
    return 0;
  }
  uint32_t slot = internCgroup(*path, id);
  by_id_[id] = slot;
  return slot;
}

void Aggregator::handleLock(const Event& e) {
  switch (e.type) {
    case EventType::kLockContentionBegin: {
      // Inside reclaim: charged to the task's cgroup. A plain lookup, never a
      // /proc read: most contending tasks are not reclaiming.
      uint32_t slot = LockStats::kNodeWide;
      auto it = pids_.find(e.pid);
      if (it != pids_.end()) {
        const auto& b = it->second.begin_ts;
        if (b[0] || b[1] || b[2]) slot = it->second.slot;
      }
      locks_.contentionBegin(e, slot);
      break;
    }
    case EventType::kLockContentionEnd:
      locks_.contentionEnd(e);
      break;
    case EventType::kRstatLockContended:
    case EventType::kRstatLocked:
    case EventType::kRstatUnlock:
      if (e.cg_root == opts_.hierarchy_id) locks_.rstat(e, slotOfId(e.cg_id));
      break;
    case EventType::kMemcgFlushStats:
      locks_.flushStats(e, slotOfId(e.cg_id));
      break;
    case EventType::kKernelStack:
      locks_.kernelStack(e);
      break;
    default:
      break;
  }
}

}  // namespace memcg::tracing
