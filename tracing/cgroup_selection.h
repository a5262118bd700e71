// Which cgroups a scrape exports tracer series for: the cgroups of the
// scrape's tree, i.e. what discovery selected (--cgroup.include/exclude,
// --cgroup.max-depth, --cgroup.limit) or the history's subset of it. The
// vmscan collector builds it from ScrapeContext::tree, so the tracer exports
// exactly the cgroups the cgroupfs collectors export in the same scrape; the
// selection itself is decided once, by discovery.
//
// A series is selected when the tree holds its path and, where both sides
// know it, the same cgroup id (directory inode): a cgroup recreated under the
// same path is exported from the walk that finds the new one, as the cgroupfs
// collectors do.
//
// The tracer's two pseudo-series are not cgroups:
//  - "_unknown": events of tasks whose cgroup could not be resolved (a task
//    that exited before its first /proc lookup, an event naming a cgroup id
//    no walk finds);
//  - "_overflow": every cgroup beyond the tracer's own cap
//    (AggregatorOptions::max_cgroups), folded together.
// Either could hold any cgroup's events, so both go with the root: exported
// when the selection holds "/" (the whole hierarchy; the default), never
// when it is narrowed without the root (e.g. --cgroup.include="/kubepods.*").
// One label value each, so they add a bounded number of series.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "tracing/series_table.h"

namespace memcg::tracing {

class CgroupSelection {
 public:
  /// Adds a selected cgroup: `path` is its label ("/", "/a/b") and must stay
  /// valid while the selection is used; `id` its directory inode (0: unknown).
  void add(std::string_view path, uint64_t id) { by_path_.emplace(path, id); }
  size_t size() const { return by_path_.size(); }

  /// The pseudo-series ("_unknown", "_overflow") are exported.
  bool pseudoSelected() const { return by_path_.count("/") != 0; }

  bool selects(const CgroupTraceStats& c) const {
    if (c.unknown || c.overflow) return pseudoSelected();
    auto it = by_path_.find(traceCgroupLabel(c));
    if (it == by_path_.end()) return false;
    return c.id == 0 || it->second == 0 || c.id == it->second;
  }
  /// For series known by label only (lock series): a path, "_unknown" or "_overflow".
  bool selectsLabel(std::string_view label) const {
    if (label == "_unknown" || label == "_overflow") return pseudoSelected();
    return by_path_.count(label) != 0;
  }

 private:
  std::unordered_map<std::string_view, uint64_t> by_path_;
};

}  // namespace memcg::tracing
