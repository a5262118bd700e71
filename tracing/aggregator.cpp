#include "tracing/aggregator.h"

#include <algorithm>

namespace memcg::tracing {

Aggregator::Aggregator(AggregatorOptions opts, std::unique_ptr<CgroupResolver> resolver)
    : opts_(opts),
      resolver_(std::move(resolver)),
      series_(opts_.max_cgroups, resolver_.get()),
      pids_(opts_.max_pids, resolver_.get(), series_),
      rows_(opts_.max_processes, opts_.max_exited_processes) {
  series_.onRetire([this](uint32_t slot) { retired(slot); });
  PidCache::Hooks hooks;
  hooks.created = [this](int32_t tid, TaskState& st) {
    if (proactive_.isReclaimer(tid)) st.flags |= TaskState::kProactive;
  };
  hooks.forgotten = [this](int32_t, TaskState& st) { rows_.drop(st.row, series_); };
  hooks.exited = [this](int32_t tid) { locks_.forget(tid); };
  pids_.setHooks(std::move(hooks));
  locks_.setMaxPids(opts_.max_pids);
}

void Aggregator::retired(uint32_t slot) {
  // Whatever points at the slot lets go before it is cleared for reuse.
  locks_.dropSlot(slot);
  pids_.dropSlot(slot);
  rows_.dropSlot(slot);
  proactive_.dropSlot(slot);
  ++counters_.cgroups_removed;
}

void Aggregator::registerProactiveReclaimer(int32_t tid) {
  std::lock_guard<std::mutex> g(mu_);
  proactive_.registerReclaimer(tid);
  if (TaskState* st = pids_.find(tid)) st->flags |= TaskState::kProactive;
}

void Aggregator::unregisterProactiveReclaimer(int32_t tid) {
  std::lock_guard<std::mutex> g(mu_);
  proactive_.unregisterReclaimer(tid);
  if (TaskState* st = pids_.find(tid)) st->flags &= static_cast<uint8_t>(~TaskState::kProactive);
}

bool Aggregator::beginProactiveTarget(int32_t tid, std::string_view cgroup) {
  if (!opts_.mono_clock) return false;
  return beginProactiveTarget(tid, cgroup, ProactiveEpisodes::monoNowNs());
}

void Aggregator::endProactiveTarget(int32_t tid) {
  if (opts_.mono_clock) endProactiveTarget(tid, ProactiveEpisodes::monoNowNs());
}

bool Aggregator::beginProactiveTarget(int32_t tid, std::string_view cgroup, uint64_t ts) {
  std::lock_guard<std::mutex> g(mu_);
  if (!proactive_.isReclaimer(tid)) return false;
  return proactive_.begin(tid, series_.intern(cgroup, 0), ts);
}

void Aggregator::endProactiveTarget(int32_t tid, uint64_t ts) {
  std::lock_guard<std::mutex> g(mu_);
  proactive_.end(tid, ts);
}

uint32_t Aggregator::chargeSlot(const TaskState& st, const Event& e) {
  if (!(st.flags & TaskState::kProactive) || proactive_.empty()) return st.slot;
  if (auto target = proactive_.targetAt(e.pid, e.ts)) {
    ++counters_.proactive_targeted;
    return *target;
  }
  return st.slot;
}

ReclaimContext Aggregator::contextOf(const TaskState& st) {
  // The innermost open reclaim of the task (softlimit runs inside direct).
  if (st.begin_ts[2]) return ReclaimContext::kSoftlimit;
  if (st.begin_ts[1])
    return (st.flags & TaskState::kProactive) ? ReclaimContext::kProactive
                                              : ReclaimContext::kMemcg;
  if (st.begin_ts[0]) return ReclaimContext::kDirect;
  if (st.flags & TaskState::kKswapd) return ReclaimContext::kKswapd;
  if (st.flags & TaskState::kProactive) return ReclaimContext::kProactive;
  return ReclaimContext::kOther;
}

const char* unpairedReasonName(UnpairedReason r) {
  switch (r) {
    case UnpairedReason::kEndWithoutBegin:
      return "end_without_begin";
    case UnpairedReason::kEndBeforeAnyBegin:
      return "end_before_any_begin";
    case UnpairedReason::kBeginWithoutEnd:
      return "begin_without_end";
    case UnpairedReason::kBeginOpenTooLong:
      return "begin_open_too_long";
  }
  return "unknown";
}

void Aggregator::countUnpaired(const TaskState& st, size_t idx, UnpairedReason why) {
  ReclaimKind kind = static_cast<ReclaimKind>(idx);
  if (idx == 1 && (st.flags & TaskState::kProactive)) kind = ReclaimKind::kProactive;
  ++counters_.unpaired[static_cast<size_t>(kind)][static_cast<size_t>(why)];
}

void Aggregator::beginReclaim(const Event& e, size_t idx) {
  TaskState& st = pids_.get(e.pid);
  // A begin over an open one of the same kind: that one's end never came.
  if (st.begin_ts[idx] != 0) countUnpaired(st, idx, UnpairedReason::kBeginWithoutEnd);
  st.begin_ts[idx] = e.ts ? e.ts : 1;
  st.overdue &= static_cast<uint8_t>(~(1u << idx));
  st.flags |= TaskState::kBegan;
}

void Aggregator::checkOverdueBegins() {
  if (last_ts_ <= kUnpairedBoundNs) return;
  const uint64_t limit = last_ts_ - kUnpairedBoundNs;
  pids_.forEach([&](int32_t, TaskState& st) {
    for (size_t i = 0; i < st.begin_ts.size(); ++i) {
      if (st.begin_ts[i] == 0 || st.begin_ts[i] > limit || (st.overdue & (1u << i))) continue;
      st.overdue |= static_cast<uint8_t>(1u << i);  // once; a late end still pairs
      countUnpaired(st, i, UnpairedReason::kBeginOpenTooLong);
    }
  });
}

void Aggregator::endReclaim(const Event& e, size_t idx) {
  TaskState& st = pids_.get(e.pid);
  ReclaimKind kind = static_cast<ReclaimKind>(idx);
  if (idx == 1 && (st.flags & TaskState::kProactive)) kind = ReclaimKind::kProactive;
  const uint32_t slot = chargeSlot(st, e);
  CgroupTraceStats& c = series_[slot];
  if (series_.isOverflow(slot)) ++counters_.overflow_events;
  ReclaimStats& r = c.reclaim[static_cast<size_t>(kind)];
  ++r.total;
  r.reclaimed_pages += e.nr_reclaimed;
  ProcessTraceStats& p = row(st, e.pid, slot);
  ++p.reclaims[static_cast<size_t>(kind)];
  uint64_t b = st.begin_ts[idx];
  if (b != 0 && e.ts >= b) {
    r.stall.observe(e.ts - b);
    // A task's stall: direct + memcg. Soft-limit reclaim runs inside direct
    // reclaim or kswapd (mm/vmscan.c shrink_zones, balance_pgdat): its time
    // is already in the direct stall, or is kswapd's, so it is kept apart.
    if (kind == ReclaimKind::kSoftlimit) {
      p.softlimit_ns += e.ts - b;
    } else if (kind != ReclaimKind::kProactive) {
      p.stall_ns += e.ts - b;
    }
  } else {
    ++r.unpaired;
    countUnpaired(st, idx,
                  (st.flags & TaskState::kBegan) ? UnpairedReason::kEndWithoutBegin
                                                 : UnpairedReason::kEndBeforeAnyBegin);
  }
  st.begin_ts[idx] = 0;
  st.overdue &= static_cast<uint8_t>(~(1u << idx));
}

void Aggregator::handle(const Event& e) {
  ++counters_.events;
  if (e.ts > last_ts_) last_ts_ = e.ts;
  switch (e.type) {
    case EventType::kDirectReclaimBegin:
      beginReclaim(e, 0);
      break;
    case EventType::kMemcgReclaimBegin:
      beginReclaim(e, 1);
      break;
    case EventType::kSoftlimitReclaimBegin:
      beginReclaim(e, 2);
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
      TaskState& st = pids_.get(e.pid);
      const ReclaimContext ctx = contextOf(st);
      const uint32_t slot = chargeSlot(st, e);
      LruType lru = (e.reclaim_flags & kReclaimWbFile) ? LruType::kFile : LruType::kAnon;
      LruStats& l = series_[slot].lru[static_cast<size_t>(ctx)][static_cast<size_t>(lru)];
      l.scanned_pages += e.nr_scanned;
      l.reclaimed_pages += e.nr_reclaimed;
      l.dirty_pages += e.nr_dirty;
      l.writeback_pages += e.nr_writeback;
      ProcessTraceStats& p = row(st, e.pid, slot);
      p.scanned_pages += e.nr_scanned;
      p.reclaimed_pages += e.nr_reclaimed;
      break;
    }
    case EventType::kKswapdWake: {
      TaskState& st = pids_.get(e.pid);
      st.flags |= TaskState::kKswapd;
      ProcessTraceStats& p = row(st, e.pid, st.slot);
      p.kswapd = true;
      ++p.kswapd_wakeups;
      if (st.kswapd_wake_ts == 0) {
        st.kswapd_wake_ts = e.ts ? e.ts : 1;
      } else {
        ++p.kswapd_rewakeups;
        ++node_.kswapd_rewakeups;
      }
      ++node_.kswapd_wakeups;
      break;
    }
    case EventType::kKswapdSleep: {
      TaskState& st = pids_.get(e.pid);
      st.flags |= TaskState::kKswapd;
      if (st.kswapd_wake_ts != 0 && e.ts >= st.kswapd_wake_ts) {
        node_.kswapd_awake_ns += e.ts - st.kswapd_wake_ts;
        ProcessTraceStats& p = row(st, e.pid, st.slot);
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
      TaskState& st = pids_.get(e.pid);
      const uint32_t slot = chargeSlot(st, e);
      ++series_[slot].kswapd_wakeup_requests;
      ++row(st, e.pid, slot).wake_requests;
      break;
    }
    case EventType::kCgroupAttach: {
      if (e.dst_root != opts_.hierarchy_id) break;  // another v1 hierarchy
      const uint32_t slot = series_.intern(e.dst_path, e.dst_id);
      ++series_[slot].tasks_attached;
      pids_.attach(e.target_pid, slot);
      break;
    }
    case EventType::kProcessFork:
      pids_.fork(e.pid, e.target_pid);
      break;
    case EventType::kProcessExit:
      // Its report row keeps the name even if /proc was gone at first sight.
      if (TaskState* st = pids_.exit(e.target_pid)) rows_.nameIfUnnamed(st->row, e.comm);
      break;
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
  pids_.endRound();
  // Every 32 rounds (~6 s at the default poll): a walk of the pid cache.
  if (++rounds_ % 32 == 0) checkOverdueBegins();
}

TraceSnapshot Aggregator::snapshot() const {
  TraceSnapshot s;
  std::lock_guard<std::mutex> g(mu_);
  series_.copyLive(s.cgroups);
  rows_.copyTo(s.processes, series_);
  s.node = node_;
  s.aggregator = counters_;
  s.aggregator.pid_cache_entries = pids_.size();
  s.aggregator.pid_lookups = pids_.counters().lookups;
  s.aggregator.pid_lookup_failures = pids_.counters().lookup_failures;
  s.aggregator.pid_cache_resets = pids_.counters().resets;
  s.locks = locks_.snapshot(series_);
  return s;
}

std::optional<PidCgroup> Aggregator::cgroupOf(int32_t tid) const {
  std::lock_guard<std::mutex> g(mu_);
  return pids_.cgroupOf(tid);
}

// --- Lock probes -------------------------------------------------------------

void Aggregator::handleLock(const Event& e) {
  switch (e.type) {
    case EventType::kLockContentionBegin: {
      // Inside reclaim: charged to the task's cgroup. A plain lookup, never a
      // /proc read: most contending tasks are not reclaiming.
      uint32_t slot = LockStats::kNodeWide;
      if (const TaskState* st = pids_.find(e.pid); st && st->inReclaim()) slot = st->slot;
      locks_.contentionBegin(e, slot);
      break;
    }
    case EventType::kLockContentionEnd:
      locks_.contentionEnd(e);
      break;
    case EventType::kRstatLockContended:
    case EventType::kRstatLocked:
    case EventType::kRstatUnlock:
      if (e.cg_root == opts_.hierarchy_id) locks_.rstat(e, series_.slotOfId(e.cg_id));
      break;
    case EventType::kMemcgFlushStats:
      locks_.flushStats(e, series_.slotOfId(e.cg_id));
      break;
    case EventType::kKernelStack:
      locks_.kernelStack(e);
      break;
    default:
      break;
  }
}

}  // namespace memcg::tracing
