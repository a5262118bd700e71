#include "collectors/taskstats/delay_ledger.h"

#include <algorithm>
#include <cerrno>
#include <unordered_set>

namespace memcg::taskstats {
namespace {

void addInto(DelayArray& acc, const DelayArray& v) {
  for (size_t i = 0; i < kDelayClassCount; ++i) {
    acc[i].count += v[i].count;
    acc[i].total_ns += v[i].total_ns;
    acc[i].max_ns = std::max(acc[i].max_ns, v[i].max_ns);
  }
}

// True if any counter of `now` is below `before`: not the same process.
bool wentBackwards(const DelayArray& before, const TaskStats& now) {
  for (size_t i = 0; i < kDelayClassCount; ++i) {
    if (now.delay[i].count < before[i].count ||
        now.delay[i].total_ns < before[i].total_ns) {
      return true;
    }
  }
  return false;
}

// Per field max: the last value of a process never decreases.
void mergeMax(DelayArray& last, const TaskStats& now) {
  for (size_t i = 0; i < kDelayClassCount; ++i) {
    last[i].count = std::max(last[i].count, now.delay[i].count);
    last[i].total_ns = std::max(last[i].total_ns, now.delay[i].total_ns);
    last[i].max_ns = std::max(last[i].max_ns, now.delay[i].max_ns);
  }
}

}  // namespace

void DelayLedger::begin(const std::string& key, ino_t inode,
                        std::span<const uint32_t> tgids) {
  ++stats_.scrapes;
  const uint64_t scrape = ++scrape_seq_;
  auto [slot, _] = cgroups_.try_emplace(key);
  const std::string* k = &slot->first;
  Cgroup& cg = slot->second;
  if (cg.inode != inode) {  // new, or recreated under the same path
    drop(*k, cg);
    cg = Cgroup{};
    cg.inode = inode;
  }
  cg.scrape = scrape;
  cg.live = 0;
  cg.errors = 0;
  // Pending exits of processes of this cgroup (located before its first scrape).
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->inode == static_cast<uint64_t>(inode) && place(*it)) {
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  for (uint32_t tgid : tgids) {
    // Already folded from its exit record (it is still listed for a moment):
    // skipped by this one scrape (a later one listing the tgid sees a new
    // process that reused it).
    if (!located_.empty() && located_.erase(tgid)) continue;
    cg.procs[tgid].scrape = scrape;
    // Tracked before it is queried, so an exit racing the query is folded.
    owner_[tgid] = k;
  }
}

void DelayLedger::observe(const std::string& key, uint32_t tgid, const TaskStats& ts) {
  ++stats_.queries;
  auto c = cgroups_.find(key);
  if (c == cgroups_.end()) return;
  auto it = c->second.procs.find(tgid);
  if (it == c->second.procs.end()) return;  // ended by its exit record meanwhile
  Proc& p = it->second;
  if (wentBackwards(p.last, ts)) {
    // The tgid now names another process (pid reuse without an exit
    // record): bank the old one, start the new one from zero.
    ++stats_.pid_reuse;
    fold(c->second, p);
    p.last = {};
  }
  mergeMax(p.last, ts);
  p.has_total |= ts.has_total;
  p.has_max |= ts.has_max;
  ++c->second.live;
}

void DelayLedger::observeError(const std::string& key, uint32_t tgid, int err) {
  ++stats_.queries;
  // ESRCH: exited since cgroup.procs was read; its exit record or end()
  // folds it in.
  if (err == ESRCH) return;
  ++stats_.query_errors;
  if (auto c = cgroups_.find(key); c != cgroups_.end()) ++c->second.errors;
}

void DelayLedger::onExit(const TaskstatsMessage& m) {
  ++stats_.exit_messages;
  // Only the record of the last thread of a process (AGROUP) ends it.
  const bool group_dead = (m.pid_stats && m.pid_stats->groupDead()) || m.tgid_stats;
  if (!group_dead) return;
  uint32_t tgid = 0;
  if (m.tgid) {
    tgid = *m.tgid;
  } else if (m.pid_stats && m.pid_stats->ac_tgid != 0) {
    tgid = m.pid_stats->ac_tgid;
  } else if (m.pid) {
    tgid = *m.pid;
  }
  auto own = owner_.find(tgid);
  if (own == owner_.end()) {
    // No scrape saw it alive: ask where it was.
    if (tgid == 0) return;
    uint64_t sampled = 0;
    if (auto it = sampled_.find(tgid); it != sampled_.end()) {
      sampled = it->second;
    } else if (auto p = sampled_prev_.find(tgid); p != sampled_prev_.end()) {
      sampled = p->second;
    }
    if (!locate_ && sampled == 0) return;
    const TaskStats& fin = m.tgid_stats ? *m.tgid_stats : *m.pid_stats;
    PendingExit pe;
    pe.tgid = tgid;
    pe.since = now_;
    mergeMax(pe.fin.last, fin);
    pe.fin.has_total = fin.has_total;
    pe.fin.has_max = fin.has_max;
    pe.inode = locate_ ? locate_(tgid, true) : 0;
    if (pe.inode == 0) pe.inode = sampled;
    if (pe.inode != 0 && place(pe)) return;
    if (pending_.size() >= kMaxPendingExits) {
      pending_.pop_front();
      ++stats_.exits_unlocated;
    }
    pending_.push_back(std::move(pe));
    return;
  }
  auto c = cgroups_.find(*own->second);
  owner_.erase(own);
  if (c == cgroups_.end()) return;
  auto it = c->second.procs.find(tgid);
  if (it == c->second.procs.end()) return;
  // The final figure: the whole process when it had several threads, else
  // its only thread's.
  const TaskStats& fin = m.tgid_stats ? *m.tgid_stats : *m.pid_stats;
  Proc& p = it->second;
  mergeMax(p.last, fin);
  p.has_total |= fin.has_total;
  p.has_max |= fin.has_max;
  fold(c->second, p);
  c->second.procs.erase(it);
  ++stats_.exits_folded;
}

CgroupDelays DelayLedger::end(const std::string& key) {
  CgroupDelays out;
  auto c = cgroups_.find(key);
  if (c == cgroups_.end()) return out;
  Cgroup& cg = c->second;
  for (auto it = cg.procs.begin(); it != cg.procs.end();) {
    if (it->second.scrape == cg.scrape) {
      ++it;
      continue;
    }
    // Gone without an exit record: keep its last figures.
    ++stats_.exits_without_record;
    fold(cg, it->second);
    auto o = owner_.find(it->first);
    if (o != owner_.end() && o->second == &c->first) owner_.erase(o);
    it = cg.procs.erase(it);
  }
  out.delay = cg.dead;
  out.has_total = cg.dead_has_total;
  out.has_max = cg.dead_has_max;
  for (const auto& [_, p] : cg.procs) {
    addInto(out.delay, p.last);
    out.has_total |= p.has_total;
    out.has_max |= p.has_max;
  }
  // Counters never go backwards, whatever the kernel or a race did.
  for (size_t i = 0; i < kDelayClassCount; ++i) {
    out.delay[i].count = std::max(out.delay[i].count, cg.emitted[i].count);
    out.delay[i].total_ns = std::max(out.delay[i].total_ns, cg.emitted[i].total_ns);
    out.delay[i].max_ns = std::max(out.delay[i].max_ns, cg.emitted[i].max_ns);
  }
  cg.emitted = out.delay;
  out.exited_processes = cg.exited;
  out.live_processes = cg.live;
  out.query_errors = cg.errors;
  return out;
}

bool DelayLedger::place(PendingExit& pe) {
  for (auto& [key, cg] : cgroups_) {
    if (static_cast<uint64_t>(cg.inode) != pe.inode) continue;
    fold(cg, pe.fin);
    ++stats_.exits_located;
    if (located_.size() >= kMaxLocated) located_.clear();
    located_[pe.tgid] = scrape_seq_;
    return true;
  }
  return false;
}

void DelayLedger::sampleMembers(const std::string& key, std::span<const uint32_t> tgids,
                                bool round_start) {
  if (round_start) {
    sampled_prev_.swap(sampled_);
    sampled_.clear();
  }
  auto c = cgroups_.find(key);
  if (c == cgroups_.end() || c->second.inode == 0) return;
  for (uint32_t tgid : tgids) {
    if (!owner_.count(tgid)) sampled_[tgid] = static_cast<uint64_t>(c->second.inode);
  }
}

std::vector<std::string> DelayLedger::keys() const {
  std::vector<std::string> out;
  out.reserve(cgroups_.size());
  for (const auto& [key, _] : cgroups_) out.push_back(key);
  return out;
}

void DelayLedger::retryPending(Clock::time_point now) {
  now_ = now;
  for (auto it = pending_.begin(); it != pending_.end();) {
    PendingExit& pe = *it;
    if (pe.since == Clock::time_point{}) pe.since = now;
    if (pe.inode == 0 && locate_) pe.inode = locate_(pe.tgid, false);
    if (pe.inode != 0 && place(pe)) {
      it = pending_.erase(it);
    } else if (now - pe.since > kPendingAge) {
      ++stats_.exits_unlocated;
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void DelayLedger::fold(Cgroup& cg, const Proc& p) {
  addInto(cg.dead, p.last);
  cg.dead_has_total |= p.has_total;
  cg.dead_has_max |= p.has_max;
  ++cg.exited;
}

// `key` must be the map's own key of `cg` (owner_ holds its address).
void DelayLedger::drop(const std::string& key, Cgroup& cg) {
  for (const auto& [tgid, _] : cg.procs) {
    auto o = owner_.find(tgid);
    if (o != owner_.end() && o->second == &key) owner_.erase(o);
  }
  cg.procs.clear();
}

void DelayLedger::forget(const std::string& key) {
  auto it = cgroups_.find(key);
  if (it == cgroups_.end()) return;
  drop(it->first, it->second);
  cgroups_.erase(it);
}

void DelayLedger::retainOnly(const std::vector<std::string>& keys) {
  std::unordered_set<std::string> keep(keys.begin(), keys.end());
  for (auto it = cgroups_.begin(); it != cgroups_.end();) {
    if (keep.count(it->first)) {
      ++it;
      continue;
    }
    drop(it->first, it->second);
    it = cgroups_.erase(it);
  }
}

DelayLedger::Stats DelayLedger::stats() const {
  Stats s = stats_;
  s.tracked_processes = owner_.size();
  return s;
}

}  // namespace memcg::taskstats
