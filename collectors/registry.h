// The explicit list of collectors, and what the App hands their factories.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.h"
#include "collectors/kubepods.h"
#include "collectors/memory_events.h"
#include "collectors/memory_stat.h"
#include "collectors/memory_usage.h"
#include "collectors/taskstats.h"
#include "collectors/vmscan.h"
#include "common/flag_spec.h"

namespace memcg {

/// Every collector's own options, composed (each struct and its flags are
/// declared beside its collector).
struct CollectorOptions {
  MemoryStatOptions memoryStat;
  MemoryUsageOptions memoryUsage;
  MemoryEventsOptions memoryEvents;
  TaskstatsOptions taskstats;
  VmscanOptions vmscan;
  KubepodsOptions kubepods;
};

/// The flags of every collector's options, in registry order.
FlagList collectorFlags(CollectorOptions& o);

/// What a factory may use: the procfs root, the collector's own options and
/// the services the App owns (not owned here; null when not started).
struct CollectorInputs {
  std::string procfsRoot = "/proc";
  MemoryStatOptions memoryStat;
  MemoryUsageOptions memoryUsage;
  MemoryEventsOptions memoryEvents;
  KubepodsOptions kubepods;
  tracing::Tracer* tracer = nullptr;  ///< vmscan: null while down
  Error tracingDown;                  ///< vmscan: why tracer is null
  VmscanBackend vmscanBackend;        ///< vmscan: backend in use (bpf: its tracer)
  TaskstatsService* taskstats = nullptr;
};

struct CollectorInfo {
  std::string_view name;
  bool defaultEnabled;
  /// Needs the live kernel beyond cgroupfs/procfs files (tracefs, netlink):
  /// not run against fixture trees.
  bool live;
  std::string_view help;
  std::function<std::unique_ptr<Collector>(const CollectorInputs&)> make;
};

/// Every collector, in scrape order. An explicit list (no static-init
/// registration, which static libraries would silently drop).
const std::vector<CollectorInfo>& collectorRegistry();

}  // namespace memcg
