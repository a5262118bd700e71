// One scrape: take the walk scheduler's tree (cgroupfs/walk_scheduler.h), run the enabled collectors into a Sink, add
// the exporter's own metrics, and render the text exposition.
//
// Scrapes may run concurrently (one per HTTP worker): each has its own
// Sink and buffers; shared state is the immutable CgroupTree, the collectors
// (which keep no per-scrape state) and atomic counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "cgroupfs/discovery.h"
#include "cgroupfs/walk_scheduler.h"
#include "metrics/metric.h"
#include "metrics/registry.h"

namespace memcg {

struct EnabledCollector {
  std::string name;
  std::unique_ptr<Collector> collector;
  /// The exporter's own state (like build_info): no success, duration or
  /// error series of its own, and not switched by --collector.* flags.
  bool self = false;
};

/// The cgroup collectors as one part of the metrics registry (named
/// "collectors"): a /metrics scrape, or the sampler's filtered one.
class Scraper final : public metrics::Collectable {
 public:
  /// Asks `walks` for every tree it reads; never walks on its own.
  Scraper(WalkScheduler& walks, std::vector<EnabledCollector> collectors);
  ~Scraper();

  /// Runs one scrape into `sink`. The returned tree must be kept alive while
  /// the sink's label values are in use.
  std::shared_ptr<const CgroupTree> scrape(metrics::Sink& sink);
  /// A scrape restricted by `filter` (the history's sampler): only the
  /// collectors with a family it accepts, over only the cgroups it accepts,
  /// each reading only the files of the families it accepts
  /// (ScrapeContext::wants), without the exporter's own metrics. The returned
  /// tree is the filtered one.
  std::shared_ptr<const CgroupTree> scrape(metrics::Sink& sink, const ScrapeFilter& filter);

  /// Runs one scrape and appends its text exposition to `out`.
  void scrapeText(std::string& out);

  /// Cgroup files the collectors asked for (ScrapeContext::read), over every
  /// scrape so far, filtered or not.
  uint64_t filesRead() const;

  /// True once a discovery walk has succeeded.
  bool ready() const { return walks_.current() != nullptr; }

  /// Every fixed metric of the enabled collectors plus the exporter's own.
  std::vector<const metrics::Desc*> describe() const override;

  /// metrics::Collectable: scrape(sink) or scrape(sink, *filter); keeps the tree.
  std::shared_ptr<const void> collect(metrics::Sink& sink, const metrics::Filter* filter) override {
    if (filter) return scrape(sink, *filter);
    return scrape(sink);
  }

  Discovery& discovery() { return walks_.discovery(); }
  WalkScheduler& walks() { return walks_; }

 private:
  struct Stats;
  WalkScheduler& walks_;
  Discovery& discovery_;
  std::vector<EnabledCollector> collectors_;
  std::unique_ptr<Stats> stats_;
};

}  // namespace memcg
