#include "tracing/lock_stats.h"

#include <algorithm>
#include <cstring>

#include "tracing/series_table.h"

namespace memcg::tracing {

std::string lockEventFilter(EventType t, int hierarchy_id) {
  switch (t) {
    case EventType::kRstatLockContended:
    case EventType::kRstatLocked:
    case EventType::kRstatUnlock:
      return "root==" + std::to_string(hierarchy_id);
    case EventType::kLockContentionBegin:
      return "flags!=" + std::to_string(kLcbMutex);
    default:
      return {};
  }
}

std::string lockCallerTrigger(unsigned samples) {
  // Same filter as the event: one stack per contention, not per re-begin.
  return "stacktrace:" + std::to_string(samples) + " if flags!=" + std::to_string(kLcbMutex);
}

LockKind lockKindFromFlags(uint32_t flags) {
  if (flags & kLcbMutex) return LockKind::kMutex;  // MUTEX or MUTEX|SPIN
  switch (flags & (kLcbSpin | kLcbRead | kLcbWrite | kLcbRt | kLcbPercpu)) {
    case kLcbSpin:
      return LockKind::kSpinlock;
    case kLcbSpin | kLcbRead:
      return LockKind::kRwlockRead;
    case kLcbSpin | kLcbWrite:
      return LockKind::kRwlockWrite;
    case kLcbRead:
      return LockKind::kRwsemRead;
    case kLcbWrite:
      return LockKind::kRwsemWrite;
    case kLcbRt:
      return LockKind::kRtMutex;
    case kLcbRt | kLcbRead:
      return LockKind::kRtRwlockRead;
    case kLcbRt | kLcbWrite:
      return LockKind::kRtRwlockWrite;
    case kLcbPercpu | kLcbRead:
      return LockKind::kPercpuRwsemRead;
    case kLcbPercpu | kLcbWrite:
      return LockKind::kPercpuRwsemWrite;
    default:
      return LockKind::kOther;
  }
}

const char* lockKindName(LockKind k) {
  static constexpr const char* kNames[kLockKinds] = {
      "spinlock",   "rwlock_read",      "rwlock_write",       "rwsem_read",
      "rwsem_write", "mutex",           "rtmutex",            "rt_rwlock_read",
      "rt_rwlock_write", "percpu_rwsem_read", "percpu_rwsem_write", "other"};
  size_t i = static_cast<size_t>(k);
  return i < kLockKinds ? kNames[i] : "other";
}

LockStats::PidState& LockStats::pid(int32_t tid) {
  auto it = pids_.find(tid);
  if (it != pids_.end()) return it->second;
  if (pids_.size() >= max_pids_) pids_.clear();  // open waits are then unpaired
  return pids_[tid];
}

LockStats::CgState& LockStats::cg(uint32_t slot) {
  if (slot >= cgroups_.size()) cgroups_.resize(slot + 1);
  CgState& c = cgroups_[slot];
  c.used = true;
  return c;
}

void LockStats::dropSlot(uint32_t slot) {
  if (slot < cgroups_.size()) cgroups_[slot] = CgState{};
  for (auto& [tid, p] : pids_) {
    for (uint8_t i = 0; i < p.depth; ++i) {
      if (p.open[i].slot == slot) p.open[i].slot = kNodeWide;
    }
  }
}

void LockStats::contentionBegin(const Event& e, uint32_t reclaim_slot) {
  PidState& p = pid(e.pid);
  p.last_flags = e.lock_flags;
  for (uint8_t i = 0; i < p.depth; ++i) {
    if (p.open[i].addr == e.lock_addr) {  // mutex re-begin: keep the first
      ++nested_begins_;
      return;
    }
  }
  if (p.depth == p.open.size()) {  // deeper than irq nesting goes: ignore
    ++nested_begins_;
    return;
  }
  p.open[p.depth++] = Open{e.ts ? e.ts : 1, e.lock_addr, e.lock_flags, reclaim_slot};
}

void LockStats::contentionEnd(const Event& e) {
  auto it = pids_.find(e.pid);
  int found = -1;
  if (it != pids_.end()) {
    PidState& p = it->second;
    for (int i = p.depth - 1; i >= 0; --i) {
      if (p.open[static_cast<size_t>(i)].addr == e.lock_addr) {
        found = i;
        break;
      }
    }
  }
  if (found < 0) {
    ++unpaired_ends_;
    return;
  }
  PidState& p = it->second;
  const Open o = p.open[static_cast<size_t>(found)];
  // Opens above the match lost their end (lost event): drop them with it.
  p.depth = static_cast<uint8_t>(found);
  dropIfIdle(it);
  const uint64_t wait = e.ts >= o.ts ? e.ts - o.ts : 0;
  const LockKind kind = lockKindFromFlags(o.flags);
  LockKindArray& by_kind = o.slot == kNodeWide ? node_ : cg(o.slot).contention;
  LockKindStats& s = by_kind[static_cast<size_t>(kind)];
  ++s.count;
  if (e.lock_ret != 0) ++s.aborted;
  s.wait.observe(wait);

  auto [lit, inserted] = locks_.try_emplace(o.addr);
  if (inserted) {
    lit->second.addr = o.addr;
    lit->second.kind = kind;
  }
  ++lit->second.count;
  lit->second.wait_ns += wait;
  if (locks_.size() > kMaxTrackedLocks) pruneLocks();
}

void LockStats::dropIfIdle(std::unordered_map<int32_t, PidState>::iterator it) {
  // Only tasks inside a contention or an rstat lock keep an entry, so the map
  // is bounded by what is in flight, not by every task that ever contended.
  if (it == pids_.end()) return;
  const PidState& p = it->second;
  if (p.depth == 0 && p.rstat_wait_ts == 0 && p.rstat_hold_ts == 0) pids_.erase(it);
}

void LockStats::pruneLocks() {
  // Keep the heavier half by wait time; fold the rest into "other". A lock
  // folded here starts from zero if it comes back (the top list is a sample
  // of the heaviest, not an exact ranking).
  std::vector<std::pair<uint64_t, uint64_t>> by_wait;  // wait, addr
  by_wait.reserve(locks_.size());
  for (const auto& [addr, l] : locks_) by_wait.emplace_back(l.wait_ns, addr);
  const size_t keep = kMaxTrackedLocks / 2;
  std::nth_element(by_wait.begin(), by_wait.begin() + static_cast<long>(keep), by_wait.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = keep; i < by_wait.size(); ++i) {
    auto it = locks_.find(by_wait[i].second);
    other_locks_.count += it->second.count;
    other_locks_.wait_ns += it->second.wait_ns;
    locks_.erase(it);
  }
}

void LockStats::rstat(const Event& e, uint32_t cg_slot) {
  PidState& p = pid(e.pid);
  switch (e.type) {
    case EventType::kRstatLockContended:
      ++cg(cg_slot).rstat.contended;
      p.rstat_wait_ts = e.ts ? e.ts : 1;
      break;
    case EventType::kRstatLocked: {
      CgState& c = cg(cg_slot);
      if (e.contended) {
        if (p.rstat_wait_ts != 0 && e.ts >= p.rstat_wait_ts) {
          c.rstat.wait.observe(e.ts - p.rstat_wait_ts);
        } else {
          ++rstat_unpaired_;
        }
      }
      p.rstat_wait_ts = 0;
      p.rstat_hold_ts = e.ts ? e.ts : 1;
      break;
    }
    case EventType::kRstatUnlock:
      if (p.rstat_hold_ts != 0 && e.ts >= p.rstat_hold_ts) {
        cg(cg_slot).rstat.hold.observe(e.ts - p.rstat_hold_ts);
      } else {
        ++rstat_unpaired_;
      }
      p.rstat_hold_ts = 0;
      dropIfIdle(pids_.find(e.pid));
      break;
    default:
      break;
  }
}

void LockStats::flushStats(const Event& e, uint32_t cg_slot) {
  RstatStats& r = cg(cg_slot).rstat;
  if (e.needs_flush) {
    ++r.flushes;
  } else {
    ++r.flushes_skipped;
  }
}

void LockStats::kernelStack(const Event& e) {
  ++stacks_sampled_;
  std::vector<uint64_t> frames(std::min<size_t>(e.stack_depth, kMaxStackFrames));
  for (size_t i = 0; i < frames.size(); ++i) {
    std::memcpy(&frames[i], e.stack + i * 8, 8);
  }
  auto it = stacks_.find(frames);
  if (it == stacks_.end()) {
    if (stacks_.size() >= kMaxTrackedStacks) pruneStacks();
    TopStack s;
    s.frames = frames;
    auto p = pids_.find(e.pid);
    s.kind = lockKindFromFlags(p != pids_.end() ? p->second.last_flags : 0);
    it = stacks_.emplace(std::move(frames), std::move(s)).first;
  }
  ++it->second.count;
}

void LockStats::pruneStacks() {
  std::vector<uint64_t> counts;
  for (const auto& [k, s] : stacks_) counts.push_back(s.count);
  const size_t keep = kMaxTrackedStacks / 2;
  std::nth_element(counts.begin(), counts.begin() + static_cast<long>(keep), counts.end(),
                   std::greater<>());
  const uint64_t cut = counts[keep];
  for (auto it = stacks_.begin(); it != stacks_.end();) {
    if (it->second.count <= cut) {
      stacks_pruned_ += it->second.count;
      it = stacks_.erase(it);
    } else {
      ++it;
    }
  }
}

void rankStacks(std::vector<TopStack> all, LockSnapshot& s) {
  std::sort(all.begin(), all.end(), [](const TopStack& a, const TopStack& b) {
    return a.count != b.count ? a.count > b.count : a.frames < b.frames;
  });
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < kTopStacks) {
      s.top_stacks.push_back(std::move(all[i]));
    } else {
      s.stacks_other += all[i].count;
    }
  }
}

LockSnapshot LockStats::snapshot(const SeriesTable& series) const {
  const std::vector<CgroupTraceStats>& slots = series.slots();
  LockSnapshot s;
  s.node = node_;
  for (size_t i = 0; i < cgroups_.size() && i < slots.size(); ++i) {
    if (!cgroups_[i].used) continue;
    LockCgroupSeries c;
    c.label = std::string(traceCgroupLabel(slots[i]));
    c.rstat = cgroups_[i].rstat;
    c.contention = cgroups_[i].contention;
    s.cgroups.push_back(std::move(c));
  }
  std::vector<TopLock> all;
  all.reserve(locks_.size());
  for (const auto& [addr, l] : locks_) all.push_back(l);
  std::sort(all.begin(), all.end(), [](const TopLock& a, const TopLock& b) {
    return a.wait_ns != b.wait_ns ? a.wait_ns > b.wait_ns : a.addr < b.addr;
  });
  s.other_locks = other_locks_;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < kTopLocks) {
      s.top_locks.push_back(all[i]);
    } else {
      s.other_locks.count += all[i].count;
      s.other_locks.wait_ns += all[i].wait_ns;
    }
  }
  std::vector<TopStack> stacks;
  stacks.reserve(stacks_.size());
  for (const auto& [k, st] : stacks_) stacks.push_back(st);
  s.stacks_sampled = stacks_sampled_;
  s.stacks_other = stacks_pruned_;
  rankStacks(std::move(stacks), s);
  s.unpaired_ends = unpaired_ends_;
  s.nested_begins = nested_begins_;
  s.rstat_unpaired = rstat_unpaired_;
  return s;
}

}  // namespace memcg::tracing
