// The controller's protections as a part of their own: which cgroups are
// protected (by label, for the API, state and metrics) and which protections
// the waiter still has to wake for (by id, including the ones just removed,
// whose fds only the waiter may close). Its lock guards the two indexes; a
// protection's own fields have their own lock (prot.h), taken after this one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace memcg::controller {

struct Prot;

class ProtectionTable {
 public:
  using Ptr = std::shared_ptr<Prot>;

  /// The protection of `cgroup`, null if none.
  Ptr find(const std::string& cgroup) const;
  bool contains(const std::string& cgroup) const;
  /// Publishes `p` under a fresh id; false (nothing done) if its cgroup is
  /// protected already.
  bool add(const Ptr& p);
  /// Ends the protection of `cgroup` (marks it removed; the waiter drops it
  /// from the id index). Null if there was none; `idle`: no episode is
  /// running on it, so nobody else will release its journal entry.
  Ptr remove(const std::string& cgroup, bool& idle);
  /// Ends `p` because its cgroup vanished; false if it had ended already.
  bool removeGone(const Ptr& p);
  /// The waiter's sweep: the live protections by id into `live`; the removed
  /// ones leave the id index into `dead`.
  void sweep(std::vector<Ptr>& live, std::vector<Ptr>& dead);
  /// Every protection still in the id index (live or not yet swept).
  std::vector<Ptr> byId() const;
  /// The live protections by label (state and metrics).
  std::vector<Ptr> byLabel() const;

 private:
  mutable std::mutex mu_;  // guards everything below
  std::map<std::string, Ptr> byLabel_;
  std::map<uint64_t, Ptr> byId_;
  uint64_t nextId_ = 1;
};

}  // namespace memcg::controller
