// pid -> memory cgroup path, for events that carry no cgroup (all vmscan
// events: mm_vmscan_memcg_reclaim_begin has no memcg id on 6.18).
//
// Kernel interface: /proc/<tid>/cgroup, one "hierarchy-id:controllers:path"
// line per hierarchy (proc(5)). cgroup v1: the line whose controller list
// contains "memory"; cgroup v2: the "0::/path" line. /proc/cgroups gives the
// memory controller's hierarchy id (0 = v2 or not mounted as v1).
// /proc/<tid>/comm: the task's name, for the reclaim report's rows.
// A /proc lookup costs ~10-20 us, so it happens only on a cache miss.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memcg::tracing {

class CgroupResolver {
 public:
  virtual ~CgroupResolver() = default;
  /// The memcg path ("/a/b", "/" for the root) of task `tid`, or nullopt if
  /// the task is gone or unreadable.
  virtual std::optional<std::string> resolve(int32_t tid) = 0;
  /// Inode of the cgroup directory (the cgroup id), 0 if unknown.
  virtual uint64_t idOf(const std::string& path) { return 0; }
  /// The task's comm (/proc/<tid>/comm), empty if gone. Read once per task
  /// with a report row (tasks that reclaim), not per event.
  virtual std::string comm(int32_t tid) { return {}; }
  /// The path of the cgroup whose id (directory inode) is `id`, nullopt if
  /// none (events that name a cgroup by id: rstat, memcg_flush_stats).
  virtual std::optional<std::string> pathOfId(uint64_t id) { return std::nullopt; }
};

/// Reads /proc/<tid>/cgroup.
class ProcCgroupResolver final : public CgroupResolver {
 public:
  /// `hierarchy_id`: the memory controller's v1 hierarchy id, or 0 for v2.
  /// `cgroup_mount`: where that hierarchy is mounted (for idOf), may be empty;
  /// the caller takes it from discovery (the one mountinfo parser).
  ProcCgroupResolver(std::string procfs, int hierarchy_id, std::string cgroup_mount);
  std::optional<std::string> resolve(int32_t tid) override;
  uint64_t idOf(const std::string& path) override;
  std::string comm(int32_t tid) override;
  /// Walks the hierarchy (depth <= 16); a miss costs one walk, so callers
  /// cache misses.
  std::optional<std::string> pathOfId(uint64_t id) override;

 private:
  std::string procfs_;
  int hierarchy_id_;
  std::string cgroup_mount_;
};

/// Extracts the memcg path from the text of /proc/<pid>/cgroup.
std::optional<std::string_view> parseProcCgroup(std::string_view text, int hierarchy_id);

/// Memory controller's hierarchy id from the text of /proc/cgroups (0 if it is
/// on the v2 hierarchy, nullopt if the controller is absent or disabled).
std::optional<int> parseMemoryHierarchyId(std::string_view proc_cgroups);

}  // namespace memcg::tracing
