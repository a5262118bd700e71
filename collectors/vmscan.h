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
#include "tracing/bpf/bpf_tracer.h"
#include "tracing/tracer.h"

namespace memcg {

/// --collector.vmscan.backend: where the vmscan/lock events are aggregated.
enum class VmscanBackendChoice {
  kTracefs,  ///< the exporter's tracefs instance, read in user space (the reference)
  kBpf,      ///< in the kernel, by a BPF program (tracing/bpf/bpf_tracer.h)
  kAuto,     ///< bpf where the kernel has BTF and the process the privileges, else tracefs
};

struct VmscanOptions {
  VmscanBackendChoice backend = VmscanBackendChoice::kTracefs;
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

/// The backend in use and why (memcg_trace_backend_info), and the bpf
/// backend's tracer if it is the one (not owned).
struct VmscanBackend {
  std::string name = "tracefs";  ///< "tracefs" or "bpf"
  std::string reason;            ///< why this one ("" when it was simply asked for)
  tracing::bpf::BpfTracer* bpf = nullptr;
};

/// The running tracer, or why there is none.
struct TracingService {
  std::unique_ptr<tracing::Tracer> tracer;
  std::unique_ptr<tracing::bpf::BpfTracer> bpf;  ///< set instead of tracer for bpf
  Error down;  ///< set when neither runs
  std::string backend = "tracefs";
  std::string reason;
  VmscanBackend info() const { return {backend, reason, bpf.get()}; }
  /// Whichever backend runs, for the reclaim report API (null when down).
  tracing::ReclaimReportSource* reportSource() const {
    if (tracer) return tracer.get();
    return bpf.get();
  }
  /// Whichever backend runs, for the lock API (null when down).
  tracing::LockReportSource* lockSource() const {
    if (tracer) return tracer.get();
    return bpf.get();
  }
  /// Whichever backend runs, for the controller (null when down).
  tracing::ReclaimAttribution* attribution() const {
    if (tracer) return tracer.get();
    return bpf.get();
  }
  /// Whichever backend runs, for the taskstats exit attribution (null when
  /// down; the bpf backend answers only if started with exit_cgroups).
  const tracing::PidCgroupLookup* pidLookup() const {
    if (tracer) return tracer.get();
    return bpf.get();
  }
};

/// Starts tracing (logs the outcome once). Never throws.
TracingService startTracing(const tracing::TracerOptions& o);

/// The bpf backend's options for these flags (same hierarchy and bounds).
tracing::bpf::BpfTracerOptions bpfTracerOptions(const VmscanOptions& o,
                                                const MountLayout& layout,
                                                const std::string& procfs);

/// Starts the backend --collector.vmscan.backend asks for (auto: bpf if
/// bpf::probe() allows it and it loads, else tracefs), logging the choice
/// and its reason once. `exitCgroups`: the taskstats collector will ask
/// where exited processes were (pidLookup()), which the bpf backend
/// records only when asked (BpfTracerOptions::exit_cgroups). Never throws.
TracingService startVmscanBackend(const VmscanOptions& o, const MountLayout& layout,
                                  const std::string& procfs, bool exitCgroups = false);
/// The same with explicit backend options (tests).
TracingService startVmscanBackend(VmscanBackendChoice choice,
                                  const tracing::TracerOptions& tracefs,
                                  const tracing::bpf::BpfTracerOptions& bpf);

/// `tracer` not owned (null: down for `down`, unless backend.bpf is set).
std::unique_ptr<Collector> makeVmscanCollector(tracing::Tracer* tracer, Error down,
                                               VmscanBackend backend = {});

}  // namespace memcg
