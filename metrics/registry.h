// The one list of what reaches /metrics. Every part that has series (the
// cgroup collectors, the controller, the rule engine and its notifier, the
// history and its query API, the privileges, the HTTP server) registers its
// Collectable here once, after it is built; the /metrics handler, the
// history's sampler and /api/v1/metrics all read this registry, so a part
// added here appears in every one of them and no part is wired twice.
//
// Registration is start-up work but may come after readers started (the
// sampler runs while the rule engine is still being built): the list is
// guarded, and a collection works on a copy of it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metric.h"

namespace memcg::metrics {

/// A restricted collection (the history's sampler): only the families
/// `family` accepts, over only the cgroups `cgroup` accepts. Null functions
/// accept everything.
struct Filter {
  std::function<bool(std::string_view family)> family;
  std::function<bool(std::string_view cgroup)> cgroup;
  /// How old the cgroup list read may be: the last walk's when it is younger,
  /// else a walk now (0: a walk now). A cgroup removed since reads as gone and
  /// is skipped; new ones appear at the next walk.
  int64_t maxTreeAgeMs = 0;
};

class Collectable {
 public:
  virtual ~Collectable() = default;
  /// Appends this part's series to `sink`; `filter` null (a /metrics scrape)
  /// wants everything. Returns what must stay alive while the sink's label
  /// values are in use (null when the values are literals or kept by the sink).
  virtual std::shared_ptr<const void> collect(Sink& sink, const Filter* filter) = 0;
  /// The fixed metrics it can emit (the JSON API, the docs). Names made at
  /// run time for unknown kernel keys are not listed.
  virtual std::vector<const Desc*> describe() const = 0;
};

/// A Collectable from two functions (parts whose series need no label
/// storage: counters and gauges with literal labels).
class FunctionCollectable final : public Collectable {
 public:
  FunctionCollectable(std::function<void(Sink&)> collect,
                      std::function<std::vector<const Desc*>()> describe)
      : collect_(std::move(collect)), describe_(std::move(describe)) {}
  std::shared_ptr<const void> collect(Sink& sink, const Filter*) override {
    collect_(sink);
    return nullptr;
  }
  std::vector<const Desc*> describe() const override { return describe_(); }

 private:
  std::function<void(Sink&)> collect_;
  std::function<std::vector<const Desc*>()> describe_;
};

class Registry {
 public:
  /// What one collection keeps alive, by part; hold it while the sink is read.
  struct Collected {
    std::vector<std::pair<std::string, std::shared_ptr<const void>>> kept;
    /// The value part `name` returned (null if none or not collected).
    std::shared_ptr<const void> of(std::string_view name) const;
  };

  /// Registers `part` under `name`, in collection order. `part` must outlive
  /// every collection; the owner registers once, after construction. Throws
  /// std::logic_error for a name registered twice.
  void add(std::string name, Collectable& part);
  /// The same, the registry owning `part` (adapters made by the composition root).
  void add(std::string name, std::unique_ptr<Collectable> part);

  /// The registered parts' names, in collection order.
  std::vector<std::string> names() const;

  /// Every part into `sink`, in registration order. With a filter, a part
  /// none of whose described families the filter wants is not asked.
  Collected collect(Sink& sink, const Filter* filter = nullptr) const;

  /// Every part's fixed metrics.
  std::vector<const Desc*> describe() const;

 private:
  struct Part {
    std::string name;
    Collectable* part;
  };
  std::vector<Part> snapshot() const;

  mutable std::mutex mu_;
  std::vector<Part> parts_;
  std::vector<std::unique_ptr<Collectable>> owned_;
};

}  // namespace memcg::metrics
