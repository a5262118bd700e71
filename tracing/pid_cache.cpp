#include "tracing/pid_cache.h"

#include <algorithm>

namespace memcg::tracing {

PidCache::PidCache(size_t max_pids, CgroupResolver* resolver, SeriesTable& series)
    : max_pids_(max_pids), resolver_(resolver), series_(series) {
  pids_.reserve(4096);
}

TaskState& PidCache::add(int32_t tid, uint32_t slot) {
  TaskState st;
  st.slot = slot;
  if (hooks_.created) hooks_.created(tid, st);
  return pids_.insert_or_assign(tid, st).first->second;
}

TaskState& PidCache::get(int32_t tid) {
  if (auto it = pids_.find(tid); it != pids_.end()) return it->second;
  if (pids_.size() >= max_pids_) clear();
  ++counters_.lookups;
  std::optional<std::string> path;
  if (resolver_) path = resolver_->resolve(tid);
  uint32_t slot = SeriesTable::kUnknown;
  if (path) {
    slot = series_.intern(*path, 0);
  } else {
    ++counters_.lookup_failures;
  }
  return add(tid, slot);
}

TaskState* PidCache::find(int32_t tid) {
  auto it = pids_.find(tid);
  return it == pids_.end() ? nullptr : &it->second;
}

const TaskState* PidCache::find(int32_t tid) const {
  auto it = pids_.find(tid);
  return it == pids_.end() ? nullptr : &it->second;
}

void PidCache::attach(int32_t tid, uint32_t slot) {
  if (auto it = pids_.find(tid); it != pids_.end()) {
    it->second.slot = slot;
    it->second.flags &= static_cast<uint8_t>(~TaskState::kExited);
    return;
  }
  if (pids_.size() >= max_pids_) clear();
  add(tid, slot);
}

void PidCache::fork(int32_t parent, int32_t child) {
  // The child starts in its parent's cgroup; learn it without /proc if we
  // already know the parent (otherwise resolve lazily on first use).
  auto p = pids_.find(parent);
  if (p == pids_.end()) return;
  if (pids_.size() >= max_pids_) return;
  const uint32_t slot = p->second.slot;
  if (auto old = pids_.find(child); old != pids_.end()) forget(old);
  add(child, slot);
}

TaskState* PidCache::exit(int32_t tid) {
  auto it = pids_.find(tid);
  if (it == pids_.end()) return nullptr;
  it->second.flags |= TaskState::kExited;
  exited_.push_back(tid);
  if (auto w = where(it->second, true)) {
    if (recent_exits_.size() >= kRecentExits) recent_exits_.pop_front();
    recent_exits_.push_back({tid, round_, std::move(*w)});
  }
  return &it->second;
}

void PidCache::endRound() {
  // Exits are applied one round late: a round reads the CPUs one after the
  // other, so a record the task wrote on an already-read CPU just before
  // exiting on a later-read one only arrives in the next round (seen live:
  // the last few memcg reclaims of a streaming task). It must still find
  // the task's cgroup and report row.
  for (int32_t tid : exited_prev_) {
    auto it = pids_.find(tid);
    if (it != pids_.end() && (it->second.flags & TaskState::kExited)) forget(it);
    if (hooks_.exited) hooks_.exited(tid);
  }
  exited_prev_.swap(exited_);
  exited_.clear();
  ++round_;
  while (!recent_exits_.empty() && recent_exits_.front().round + kRecentExitRounds < round_)
    recent_exits_.pop_front();
}

void PidCache::dropSlot(uint32_t slot) {
  for (auto p = pids_.begin(); p != pids_.end();) {
    auto next = std::next(p);
    if (p->second.slot == slot) forget(p);
    p = next;
  }
}

void PidCache::forget(Map::iterator it) {
  if (hooks_.forgotten) hooks_.forgotten(it->first, it->second);
  pids_.erase(it);
}

void PidCache::clear() {
  if (hooks_.forgotten) {
    for (auto& [tid, st] : pids_) hooks_.forgotten(tid, st);
  }
  pids_.clear();
  ++counters_.resets;
}

std::optional<PidCgroup> PidCache::where(const TaskState& st, bool exited) const {
  if (st.slot == SeriesTable::kUnknown || series_.isOverflow(st.slot)) return std::nullopt;
  const CgroupTraceStats& c = series_[st.slot];
  return PidCgroup{c.path.empty() ? std::string("/") : c.path, c.id, exited};
}

std::optional<PidCgroup> PidCache::cgroupOf(int32_t tid) const {
  if (const TaskState* st = find(tid)) return where(*st, (st->flags & TaskState::kExited) != 0);
  for (auto it = recent_exits_.rbegin(); it != recent_exits_.rend(); ++it) {
    if (it->tid == tid) return it->where;
  }
  return std::nullopt;
}

}  // namespace memcg::tracing
