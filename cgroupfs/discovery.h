// Cgroup discovery: where the memory hierarchy is, and which cgroups exist.
//
// Everything else asks discovery; nothing else parses mountinfo or walks
// directories.
//
// Layout. /proc/self/mountinfo names the cgroup mounts below --path.cgroupfs:
//   v2      cgroup2 whose cgroup.controllers lists "memory"
//   v1      a cgroup (v1) mount with the "memory" super option
//   hybrid  v1 memory plus a cgroup2 mount without it (systemd's "unified"):
//           the cgroup2 directory of the same path still has memory.pressure,
//           which is joined to the v1 memcg.
// When mountinfo names nothing below --path.cgroupfs (a fixture tree, a copy),
// the directory itself is probed: <root>/cgroup.controllers (v2),
// <root>/memory/memory.limit_in_bytes (v1), <root>/unified (hybrid).
//
// Walk. The memory hierarchy is walked breadth-first from its root, children in
// name order, down to --cgroup.max-depth; paths are matched against the
// include/exclude regexes; at most --cgroup.limit cgroups are kept (the rest are
// counted as dropped), so label cardinality is bounded. A cgroup is identified
// by its directory inode (the v2 cgroup id): a cgroup removed and recreated
// under the same name is a new cgroup with new descriptors.
//
// Off the scrape path. A walk getdents()es every memcg directory (~15 ms at
// 1,000 cgroups), so scrapes do not walk: the walk scheduler
// (walk_scheduler.h, owned by the App) decides when to walk, for everyone.
// A cgroup created since is exported within the interval; one removed since is
// skipped at once, because its kept descriptors read ENODEV
// (ReadStatus::kGone); one recreated under the same name reads as gone until
// the next walk finds its new inode. Concurrent refresh() callers share one walk.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/flag_spec.h"
#include "cgroupfs/cgroup_dir.h"
#include "common/result.h"

namespace memcg {

enum class CgroupMode { kV1, kV2, kHybrid };
std::string_view modeName(CgroupMode m);

struct MountLayout {
  CgroupMode mode = CgroupMode::kV1;
  std::string memoryRoot;   ///< mount point of the memory hierarchy
  std::string unifiedRoot;  ///< hybrid only: the cgroup2 mount point
  bool v1SwapAccounting = false;  ///< v1 and hybrid: memory.memsw.* exist (probed once)
};

struct MountEntry {
  std::string mountPoint;
  std::string fsType;
  std::string superOptions;
};

/// Parses /proc/<pid>/mountinfo text. Malformed lines are an Error.
Result<std::vector<MountEntry>> parseMountinfo(std::string_view text, std::string_view path);

/// Finds the memory hierarchy below `cgroupfsRoot` (see the file comment).
Result<MountLayout> detectLayout(const std::string& cgroupfsRoot,
                                 const std::string& procfsRoot);

struct DiscoveryOptions {
  std::string cgroupfsRoot = "/sys/fs/cgroup";
  std::string procfsRoot = "/proc";
  std::string include = ".*";  ///< regex on the cgroup label, whole match
  std::string exclude;         ///< regex on the cgroup label, whole match; empty = none
  int maxDepth = 8;            ///< 0 = root only
  size_t limit = 2000;         ///< cgroups exported at most
  /// --cgroup.refresh-interval: how often the walk scheduler walks; a
  /// scrape has it walk only when the last walk is older than twice this
  /// (not started, or stuck). 0: every scrape walks.
  std::chrono::milliseconds refreshInterval{5000};
  /// --cgroup.fd-budget: descriptors this Discovery's CgroupDirs keep open
  /// at most (its FdBudget). The flag's 0 means "from RLIMIT_NOFILE"
  /// (cgroupfs::defaultFdBudget()), which main() resolves before it gets
  /// here; a Discovery given 0 keeps directories only.
  long fdBudget = 0;
};

/// --path.cgroupfs, --path.procfs and the --cgroup.* bounds.
FlagList discoveryFlags(DiscoveryOptions& o);

/// One cgroup as seen by one walk.
struct Cgroup {
  std::string path;  ///< the `cgroup` label: "/" or "/a/b", relative to the root
  ino_t inode = 0;
  int depth = 0;
  std::shared_ptr<const cgroupfs::CgroupDir> dir;     ///< in the memory hierarchy
  std::shared_ptr<const cgroupfs::CgroupDir> psiDir;  ///< has memory.pressure (v2 or hybrid join); may be null
};

/// An immutable result of one walk, shared by a scrape's collectors.
struct CgroupTree {
  MountLayout layout;
  std::vector<Cgroup> cgroups;  ///< breadth-first, children in name order
  size_t dropped = 0;           ///< cgroups beyond the limit
  uint64_t generation = 0;
};

class Discovery {
 public:
  /// Validates the options (regexes) and finds the layout; throws
  /// std::invalid_argument on bad options (start-up only).
  explicit Discovery(DiscoveryOptions opts);

  /// Walks the hierarchy and returns the current tree. Concurrent callers
  /// share one walk. Never throws; a failure of the root itself is an Error.
  Result<std::shared_ptr<const CgroupTree>> refresh();

  /// The last walk's result (its tree, or its Error) if that walk started
  /// less than `maxAge` ago; nullopt before the first walk or when older.
  /// Never walks: when to walk is the walk scheduler's decision.
  std::optional<Result<std::shared_ptr<const CgroupTree>>> lastIfYounger(
      std::chrono::steady_clock::duration maxAge) const;

  /// The last tree refreshed (null before the first).
  std::shared_ptr<const CgroupTree> current() const;

  const MountLayout& layout() const { return layout_; }
  const DiscoveryOptions& options() const { return opts_; }
  /// The descriptor budget of the cgroup directories it opens (their
  /// metrics; tests change it). Thread-safe.
  cgroupfs::FdBudget& fdBudget() const { return *fdBudget_; }

  /// Finds a cgroup by label in the last tree; null if unknown.
  std::shared_ptr<const cgroupfs::CgroupDir> find(std::string_view path) const;

 private:
  struct Entry {
    std::shared_ptr<const cgroupfs::CgroupDir> dir;
    std::shared_ptr<const cgroupfs::CgroupDir> psiDir;
    std::chrono::steady_clock::time_point psiProbed;
    bool selected = false;  ///< include/exclude verdict, fixed for a path
    uint64_t seen = 0;      ///< generation of the last walk that saw it
  };

  bool selected(const std::string& path) const;
  void attachPsi(const std::string& path, Entry& e, std::chrono::steady_clock::time_point now);

  DiscoveryOptions opts_;
  MountLayout layout_;
  std::shared_ptr<cgroupfs::FdBudget> fdBudget_;  // shared with the CgroupDirs it counts
  std::regex include_;
  std::optional<std::regex> exclude_;

  Result<std::shared_ptr<const CgroupTree>> walkLocked();

  mutable std::mutex mu_;  // one walk at a time; guards the walk's state below
  std::unordered_map<std::string, Entry> entries_;
  std::shared_ptr<const cgroupfs::CgroupDir> unifiedRootDir_;
  uint64_t generation_ = 0;
  std::vector<char> dents_;

  mutable std::mutex treeMu_;  // guards the published result; never held during a walk
  std::shared_ptr<const CgroupTree> current_;
  std::optional<Error> lastError_;  ///< the last walk failed
  std::chrono::steady_clock::time_point lastWalkStart_{};
};

}  // namespace memcg
