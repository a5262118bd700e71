// The vmscan collector's options and flags, and the tracing service it reads
// (collectors/vmscan.cpp).
//
// The tracer (tracing/tracer.h) is not the collector's: the App starts it from
// these options (startTracing) before it builds the collectors, owns it, and
// hands it to the vmscan collector, to the reclaim report / lock APIs and, as
// a ReclaimAttribution, to the controller. When it cannot start, the
// collector is handed the reason and reports down.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "collectors/collector.h"
#include "cgroupfs/discovery.h"
#include "common/flag_spec.h"
#include "common/result.h"
#include "tracing/tracer.h"

namespace memcg {

struct VmscanOptions {
  /// --path.tracefs: tracefs mount point; empty = find or mount it.
  std::string tracefsPath;
  /// --collector.vmscan.instance: name of the exporter's tracefs instance. A
  /// stale instance of this name is removed at start, so two exporters on
  /// one host (or tests beside a running exporter) need different names.
  std::string instance = "memcg_exporter";
  // Off-by-default tracepoints (tracing/tracer.h explains the cost).
  bool lruDetail = false;      ///< --collector.vmscan.lru-detail
  bool shrinkSlab = false;     ///< --collector.vmscan.shrink-slab
  bool locks = false;          ///< --collector.vmscan.locks
  bool lockCallers = false;    ///< --collector.vmscan.lock-callers (implies locks)
  bool lockAddresses = false;  ///< --collector.vmscan.lock-addresses
};

FlagList vmscanFlags(VmscanOptions& o);

/// The tracer's options for these flags, the hierarchy discovery found and
/// the procfs root.
tracing::TracerOptions tracerOptions(const VmscanOptions& o, const MountLayout& layout,
                                     const std::string& procfs);

/// The running tracer, or why there is none.
struct TracingService {
  std::unique_ptr<tracing::Tracer> tracer;
  Error down;  ///< set when tracer is null
};

/// Starts tracing (logs the outcome once). Never throws.
TracingService startTracing(const tracing::TracerOptions& o);

/// `tracer` not owned (null: down for `down`).
std::unique_ptr<Collector> makeVmscanCollector(tracing::Tracer* tracer, Error down);

}  // namespace memcg
