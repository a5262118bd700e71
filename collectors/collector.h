// The collector interface (the explicit list of collectors is registry.h).
//
// One collector per kernel source (node_exporter's layout). A collector reads
// its files for every cgroup of the scrape's CgroupTree and writes samples into
// the scrape's Sink. It never throws: a read or parse failure is recorded with
// ScrapeContext::fail() (the scrape then reports the collector as failed for
// that scrape and logs path and line) and the collector goes on with the next
// cgroup; a vanished cgroup is skipped silently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cgroupfs/cgroup_dir.h"
#include "cgroupfs/discovery.h"
#include "common/result.h"
#include "metrics/descriptors.h"
#include "metrics/metric.h"
#include "metrics/registry.h"

namespace memcg {

/// A narrow restriction of one scrape (the history's sampler). The scraper
/// runs only the collectors that describe() a family `family` accepts, hands
/// them a tree of only the cgroups `cgroup` accepts, and hands them the filter
/// itself (ScrapeContext::filter): a collector that reads several files asks
/// ScrapeContext::wants() and reads only the files that can produce an
/// accepted family (the collectors are the same reading path as /metrics).
/// Names a collector makes at run time (unknown memory.stat keys) come along
/// only when the file they come from is read for a listed family. Empty
/// functions accept all.
/// A restricted scrape (the history's sampler): metrics::Filter, the
/// registry's one definition.
using ScrapeFilter = metrics::Filter;

struct ScrapeContext {
  const CgroupTree& tree;
  /// The restriction of this scrape; null (a /metrics scrape) wants everything.
  const ScrapeFilter* filter = nullptr;
  std::string buf;  ///< scratch buffer for file contents, reused
  std::vector<Error> errors;
  size_t vanished = 0;  ///< cgroups that went away mid-scrape
  size_t reads = 0;     ///< cgroup files read through read(), any outcome

  explicit ScrapeContext(const CgroupTree& t, const ScrapeFilter* f = nullptr)
      : tree(t), filter(f) {}
  void fail(Error e) { errors.push_back(std::move(e)); }

  /// Reads a cgroup file; records an error on kError, counts kGone.
  cgroupfs::ReadStatus read(const cgroupfs::CgroupDir& dir, cgroupfs::FileId id,
                            std::string_view& out);

  /// True when this scrape wants family `d` (always without a filter). It may
  /// run a regex: ask once per file per scrape, not per cgroup.
  bool wants(const metrics::Desc& d) const {
    return !filter || !filter->family || filter->family(d.name);
  }
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual void collect(ScrapeContext& ctx, metrics::Sink& sink) = 0;
  /// The metrics it can emit (for docs and the JSON API). Names made at run
  /// time for unknown kernel keys are not listed.
  virtual std::vector<const metrics::Desc*> describe() const = 0;
};

// Descriptor helpers (metrics/descriptors.h, shared with tracing and the controller).
using metrics::cgroupCounter;
using metrics::cgroupGauge;
using metrics::nodeCounter;
using metrics::nodeGauge;

// Factories of the collectors without options of their own (the others are
// declared in memory_stat.h, memory_usage.h, memory_events.h, vmscan.h and
// taskstats.h, beside
// their options).
std::unique_ptr<Collector> makeReclaimStatCollector();
std::unique_ptr<Collector> makePressureCollector(const std::string& procfs);
std::unique_ptr<Collector> makeVmstatCollector(const std::string& procfs);
std::unique_ptr<Collector> makeKubepodsCollector();

}  // namespace memcg
