// The collector interface and the explicit list of collectors.
//
// One collector per kernel source (node_exporter's layout). A collector reads
// its files for every cgroup of the scrape's CgroupTree and writes samples into
// the scrape's Sink. It never throws: a read or parse failure is recorded with
// ScrapeContext::fail() (the scrape then reports the collector as failed for
// that scrape and logs path and line) and the collector goes on with the next
// cgroup; a vanished cgroup is skipped silently.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/cgroupfs/cgroup_dir.h"
#include "collectors/discovery.h"
#include "common/result.h"
#include "metrics/descriptors.h"
#include "metrics/metric.h"

namespace memcg {

/// Options collectors may read; filled from flags.
struct CollectorConfig {
  std::string procfsRoot = "/proc";
  /// tracefs mount point; empty = find or mount it (tracing collectors).
  std::string tracefsPath;
  /// Where the memory hierarchy is (from Discovery), for collectors that
  /// start kernel-side machinery (tracing) at construction.
  MountLayout layout;
  /// Regex on memory.stat keys (whole match); empty = the default set.
  std::string memoryStatFields;
  /// taskstats: switch kernel.task_delayacct on at start (off again at exit).
  bool enableDelayacct = false;
  /// vmscan: off-by-default tracepoints (tracing/tracer.h explains the cost).
  bool vmscanLruDetail = false;   ///< lru_isolate + lru_shrink_active
  bool vmscanShrinkSlab = false;  ///< mm_shrink_slab_start/end
  /// vmscan: lock contention probes (--collector.vmscan.locks), off by default.
  bool vmscanLocks = false;
  /// vmscan: sampled lock callers (--collector.vmscan.lock-callers; implies locks).
  bool vmscanLockCallers = false;
  /// vmscan: raw kernel addresses in /api/v1/locks (--collector.vmscan.lock-addresses).
  bool vmscanLockAddresses = false;
  /// vmscan: name of the exporter's tracefs instance (--collector.vmscan.instance).
  /// A stale instance of this name is removed at start, so two exporters on
  /// one host (or tests beside a running exporter) need different names.
  std::string vmscanInstance = "memcg_exporter";
};

struct ScrapeContext {
  const CgroupTree& tree;
  std::string buf;  ///< scratch buffer for file contents, reused
  std::vector<Error> errors;
  size_t vanished = 0;  ///< cgroups that went away mid-scrape

  explicit ScrapeContext(const CgroupTree& t) : tree(t) {}
  void fail(Error e) { errors.push_back(std::move(e)); }

  /// Reads a cgroup file; records an error on kError, counts kGone.
  cgroupfs::ReadStatus read(const cgroupfs::CgroupDir& dir, cgroupfs::FileId id,
                            std::string_view& out);
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual void collect(ScrapeContext& ctx, metrics::Sink& sink) = 0;
  /// The metrics it can emit (for docs and the JSON API). Names made at run
  /// time for unknown kernel keys are not listed.
  virtual std::vector<const metrics::Desc*> describe() const = 0;
};

struct CollectorInfo {
  std::string_view name;
  bool defaultEnabled;
  /// Needs the live kernel beyond cgroupfs/procfs files (tracefs, netlink):
  /// not run against fixture trees.
  bool live;
  std::string_view help;
  std::function<std::unique_ptr<Collector>(const CollectorConfig&)> make;
};

/// Every collector, in scrape order. An explicit list (no static-init
/// registration, which static libraries would silently drop).
const std::vector<CollectorInfo>& collectorRegistry();

// Descriptor helpers (metrics/descriptors.h, shared with tracing and the controller).
using metrics::cgroupCounter;
using metrics::cgroupGauge;
using metrics::nodeCounter;
using metrics::nodeGauge;

// Factories, one per collector file.
std::unique_ptr<Collector> makeMemoryStatCollector(const CollectorConfig&);
std::unique_ptr<Collector> makeMemoryUsageCollector(const CollectorConfig&);
std::unique_ptr<Collector> makeMemoryEventsCollector(const CollectorConfig&);
std::unique_ptr<Collector> makeReclaimStatCollector(const CollectorConfig&);
std::unique_ptr<Collector> makePressureCollector(const CollectorConfig&);
std::unique_ptr<Collector> makeVmstatCollector(const CollectorConfig&);
std::unique_ptr<Collector> makeTaskstatsCollector(const CollectorConfig&);
std::unique_ptr<Collector> makeVmscanCollector(const CollectorConfig&);

/// The getdelays table (one row per task) of the cgroup directory, as JSON,
/// from a collector made by makeTaskstatsCollector (for /api/v1/delays).
Result<nlohmann::json> taskstatsDelayTable(Collector& c, const std::string& cgroupDir);

}  // namespace memcg
