#include "tracing/aggregator.h"

#include <algorithm>

namespace memcg::tracing {

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
  ProcessTraceStats other;
  other.other = true;
  procs_.push_back(std::move(other));
  procs_slot_.push_back(0);
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
  if (by_path_.size() >= opts_.max_cgroups) {
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
  const uint64_t id_of_new = s.id;
  uint32_t slot;
  if (!free_slots_.empty()) {  // a removed cgroup's slot
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(s);
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(s));
  }
  if (id_of_new != 0) by_id_[id_of_new] = slot;
  by_path_.emplace(std::move(key), slot);
  return slot;
}

Aggregator::PidState& Aggregator::pidState(int32_t tid) {
  auto it = pids_.find(tid);
  if (it != pids_.end()) return it->second;
  if (pids_.size() >= opts_.max_pids) clearPids();
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
  const uint32_t slot = chargeSlot(st, e);
  CgroupTraceStats& c = slots_[slot];
  if (slot == overflow_slot_ && overflow_slot_ != 0) ++counters_.overflow_events;
  ReclaimStats& r = c.reclaim[static_cast<size_t>(kind)];
  ++r.total;
  r.reclaimed_pages += e.nr_reclaimed;
  ProcessTraceStats& p = proc(st, e.pid, slot);
  ++p.reclaims[static_cast<size_t>(kind)];
  uint64_t b = st.begin_ts[idx];
  if (b != 0 && e.ts >= b) {
    r.stall.observe(e.ts - b);
    if (kind != ReclaimKind::kProactive) p.stall_ns += e.ts - b;
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
      const ReclaimContext ctx = contextOf(st);
      const uint32_t slot = chargeSlot(st, e);
      LruType lru = (e.reclaim_flags & kReclaimWbFile) ? LruType::kFile : LruType::kAnon;
      LruStats& l = slots_[slot].lru[static_cast<size_t>(ctx)][static_cast<size_t>(lru)];
      l.scanned_pages += e.nr_scanned;
      l.reclaimed_pages += e.nr_reclaimed;
      l.dirty_pages += e.nr_dirty;
      l.writeback_pages += e.nr_writeback;
      ProcessTraceStats& p = proc(st, e.pid, slot);
      p.scanned_pages += e.nr_scanned;
      p.reclaimed_pages += e.nr_reclaimed;
      break;
    }
    case EventType::kKswapdWake: {
      PidState& st = pidState(e.pid);
      st.flags |= kFlagKswapd;
      ProcessTraceStats& p = proc(st, e.pid, st.slot);
      p.kswapd = true;
      ++p.kswapd_wakeups;
      if (st.kswapd_wake_ts == 0) {
        st.kswapd_wake_ts = e.ts ? e.ts : 1;
      } else {
        ++p.kswapd_rewakeups;
      }
      ++node_.kswapd_wakeups;
      break;
    }
    case EventType::kKswapdSleep: {
      PidState& st = pidState(e.pid);
      st.flags |= kFlagKswapd;
      if (st.kswapd_wake_ts != 0 && e.ts >= st.kswapd_wake_ts) {
        node_.kswapd_awake_ns += e.ts - st.kswapd_wake_ts;
        ProcessTraceStats& p = proc(st, e.pid, st.slot);
        p.kswapd = true;
        p.kswapd_awake_ns += e.ts - st.kswapd_wake_ts;
      }
      st.kswapd_wake_ts = 0;
      break;
    }
    case EventType::kWakeupKswapd: {
      size_t o = e.order < 0
                     ? 0
                     : std::min<size_t>(static_cast<size_t>(e.order), kWakeupOrders - 1);
      ++node_.wakeup_requests_by_order[o];
      PidState& st = pidState(e.pid);
      const uint32_t slot = chargeSlot(st, e);
      ++slots_[slot].kswapd_wakeup_requests;
      ++proc(st, e.pid, slot).wake_requests;
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
        if (pids_.size() >= opts_.max_pids) clearPids();
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
      if (auto old = pids_.find(e.target_pid); old != pids_.end()) forgetPid(old);
      pids_.emplace(e.target_pid, st);
      break;
    }
    case EventType::kProcessExit: {
      auto it = pids_.find(e.target_pid);
      if (it != pids_.end()) {
        it->second.flags |= kFlagExited;
        exited_.push_back(e.target_pid);
        // Its report row keeps the name even if /proc was gone at first sight.
        if (it->second.proc != kNoProc && procs_[it->second.proc].comm.empty())
          procs_[it->second.proc].comm = e.comm;
      }
      break;
    }
    case EventType::kLruIsolate:
    case EventType::kLruShrinkActive:
    case EventType::kWriteFolio:
    case EventType::kThrottled:
    case EventType::kShrinkSlabStart:
    case EventType::kShrinkSlabEnd:
    case EventType::kReclaimPages:
    case EventType::kCgroupRmdir:
      handleScan(e);
      break;
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
  // Exits are applied one round late: a round reads the CPUs one after the
  // other, so a record the task wrote on an already-read CPU just before
  // exiting on a later-read one only arrives in the next round (seen live:
  // the last few memcg reclaims of a streaming task). It must still find
  // the task's cgroup and report row.
  for (int32_t tid : exited_prev_) {
    auto it = pids_.find(tid);
    if (it != pids_.end() && (it->second.flags & kFlagExited)) forgetPid(it);
    locks_.forget(tid);
  }
  exited_prev_.swap(exited_);
  exited_.clear();
}

TraceSnapshot Aggregator::snapshot() const {
  TraceSnapshot s;
  std::lock_guard<std::mutex> g(mu_);
  s.cgroups.reserve(slots_.size());
  for (const CgroupTraceStats& c : slots_) {
    // A removed cgroup's slot (cleared, path empty) until it is reused.
    if (c.path.empty() && !c.unknown && !c.overflow) continue;
    s.cgroups.push_back(c);
  }
  s.processes.reserve(live_procs_ + exited_procs_.size() + 1);
  for (size_t i = 1; i < procs_.size(); ++i) {
    if (procs_[i].pid == 0) continue;  // free
    s.processes.push_back(procs_[i]);
    s.processes.back().cgroup = labelOf(procs_slot_[i]);
  }
  s.processes.insert(s.processes.end(), exited_procs_.begin(), exited_procs_.end());
  s.processes.push_back(procs_[0]);
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
