#include "tracing/series_table.h"

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
const char* lruListName(LruList l) { return l == LruList::kActive ? "active" : "inactive"; }
const char* writeIoName(WriteIo w) { return w == WriteIo::kSync ? "sync" : "async"; }
const char* throttleReasonName(size_t i) {
  // enum vmscan_throttle_state order (include/linux/mmzone.h).
  static constexpr const char* kNames[kThrottleSlots] = {"writeback", "isolated", "noprogress",
                                                         "congested", "other"};
  return i < kThrottleSlots ? kNames[i] : "other";
}

std::string_view traceCgroupLabel(const CgroupTraceStats& c) {
  if (c.overflow) return "_overflow";
  if (c.unknown) return "_unknown";
  return c.path.empty() ? std::string_view("/") : std::string_view(c.path);
}

SeriesTable::SeriesTable(size_t max_cgroups, CgroupResolver* resolver)
    : max_cgroups_(max_cgroups), resolver_(resolver) {
  CgroupTraceStats unknown;
  unknown.unknown = true;
  slots_.push_back(std::move(unknown));
}

uint32_t SeriesTable::intern(std::string_view path, uint64_t id) {
  // Heterogeneous lookup needs C++20 transparent hashing; a std::string key
  // built per call is fine since interning happens once per task.
  std::string key(path.empty() ? std::string_view("/") : path);
  if (id != 0) {
    if (auto it = by_id_.find(id); it != by_id_.end()) {
      CgroupTraceStats& c = slots_[it->second];
      if (c.path != key) {  // renamed (v1 allows rename(2) of a cgroup directory)
        if (auto old = by_path_.find(c.path); old != by_path_.end() && old->second == it->second)
          by_path_.erase(old);
        if (auto other = by_path_.find(key); other != by_path_.end()) retire(other->second);
        c.path = key;
        by_path_[key] = it->second;
      }
      return it->second;
    }
  }
  if (auto it = by_path_.find(key); it != by_path_.end()) {
    CgroupTraceStats& c = slots_[it->second];
    if (id == 0 || c.id == id) return it->second;
    if (c.id == 0) {  // learnt the id of a series first seen without one
      c.id = id;
      by_id_[id] = it->second;
      return it->second;
    }
    // The same path, another cgroup: the old one was removed (rmdir not seen).
    retire(it->second);
  }
  if (by_path_.size() >= max_cgroups_) {
    if (overflow_ == 0) {
      CgroupTraceStats o;
      o.overflow = true;
      overflow_ = static_cast<uint32_t>(slots_.size());
      slots_.push_back(std::move(o));
    }
    return overflow_;
  }
  if (id == 0 && resolver_) id = resolver_->idOf(key);
  if (id != 0) {
    // The stat'ed directory is a cgroup with a series under an older path.
    if (auto it = by_id_.find(id); it != by_id_.end()) return intern(key, id);
  }
  return create(std::move(key), id);
}

uint32_t SeriesTable::create(std::string key, uint64_t id) {
  CgroupTraceStats s;
  s.path = key;
  s.id = id;
  uint32_t slot;
  if (!free_slots_.empty()) {  // a removed cgroup's slot
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(s);
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(s));
  }
  if (id != 0) by_id_[id] = slot;
  by_path_.emplace(std::move(key), slot);
  unresolved_ids_.erase(id);
  return slot;
}

uint32_t SeriesTable::slotOfId(uint64_t id) {
  if (id == 0) return kUnknown;
  if (auto it = by_id_.find(id); it != by_id_.end()) return it->second;
  if (unresolved_ids_.count(id) || !resolver_) return kUnknown;
  // A cgroup no task of ours was seen in yet: one walk of the hierarchy.
  std::optional<std::string> path = resolver_->pathOfId(id);
  if (!path) {
    if (unresolved_ids_.size() >= max_cgroups_) unresolved_ids_.clear();
    unresolved_ids_.insert(id);
    return kUnknown;
  }
  return intern(*path, id);
}

bool SeriesTable::remove(std::string_view path, uint64_t id) {
  if (path.empty()) return false;
  auto it = by_path_.find(std::string(path));
  if (it == by_path_.end()) return false;
  const uint32_t slot = it->second;
  // A cgroup recreated under the same path has another id: not ours to drop.
  if (id != 0 && slots_[slot].id != 0 && slots_[slot].id != id) return false;
  retire(slot);
  return true;
}

void SeriesTable::retire(uint32_t slot) {
  if (on_retire_) on_retire_(slot);
  CgroupTraceStats& c = slots_[slot];
  if (auto it = by_path_.find(c.path); it != by_path_.end() && it->second == slot)
    by_path_.erase(it);
  if (c.id != 0) {
    if (auto it = by_id_.find(c.id); it != by_id_.end() && it->second == slot) by_id_.erase(it);
  }
  c = CgroupTraceStats{};
  free_slots_.push_back(slot);
  ++retired_;
}

std::string SeriesTable::labelOf(uint32_t slot) const {
  if (slot == kUnknown) return "_unknown";
  if (isOverflow(slot)) return "_overflow";
  return slots_[slot].path;
}

void SeriesTable::copyLive(std::vector<CgroupTraceStats>& out) const {
  out.reserve(out.size() + slots_.size());
  for (const CgroupTraceStats& c : slots_) {
    // A retired slot (cleared, path empty) until it is reused.
    if (c.path.empty() && !c.unknown && !c.overflow) continue;
    out.push_back(c);
  }
}

}  // namespace memcg::tracing
