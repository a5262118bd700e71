#include "controller/protection_table.h"

#include "controller/prot.h"

namespace memcg::controller {

ProtectionTable::Ptr ProtectionTable::find(const std::string& cgroup) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = byLabel_.find(cgroup);
  return it == byLabel_.end() ? nullptr : it->second;
}

bool ProtectionTable::contains(const std::string& cgroup) const {
  std::lock_guard<std::mutex> g(mu_);
  return byLabel_.count(cgroup) != 0;
}

bool ProtectionTable::add(const Ptr& p) {
  std::lock_guard<std::mutex> g(mu_);
  if (byLabel_.count(p->p.cgroup)) return false;
  p->id = nextId_++;
  byLabel_[p->p.cgroup] = p;
  byId_[p->id] = p;
  return true;
}

ProtectionTable::Ptr ProtectionTable::remove(const std::string& cgroup, bool& idle) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = byLabel_.find(cgroup);
  if (it == byLabel_.end()) return nullptr;
  Ptr p = it->second;
  byLabel_.erase(it);
  std::lock_guard<std::mutex> pg(p->mu);
  p->locked.removed = true;
  idle = !p->locked.busy;
  return p;
}

bool ProtectionTable::removeGone(const Ptr& p) {
  std::lock_guard<std::mutex> g(mu_);
  std::lock_guard<std::mutex> pg(p->mu);
  if (p->locked.removed) return false;
  p->locked.removed = true;
  // Not removed yet, so the label still names this protection.
  byLabel_.erase(p->p.cgroup);
  return true;
}

void ProtectionTable::sweep(std::vector<Ptr>& live, std::vector<Ptr>& dead) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = byId_.begin(); it != byId_.end();) {
    bool removed;
    {
      std::lock_guard<std::mutex> pg(it->second->mu);
      removed = it->second->locked.removed;
    }
    if (removed) {
      dead.push_back(it->second);
      it = byId_.erase(it);
    } else {
      live.push_back(it->second);
      ++it;
    }
  }
}

std::vector<ProtectionTable::Ptr> ProtectionTable::byId() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Ptr> all;
  for (const auto& [_, p] : byId_) all.push_back(p);
  return all;
}

std::vector<ProtectionTable::Ptr> ProtectionTable::byLabel() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Ptr> all;
  for (const auto& [_, p] : byLabel_) all.push_back(p);
  return all;
}

}  // namespace memcg::controller
