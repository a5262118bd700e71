// Where a process no scrape saw alive was when it exited: the taskstats
// service's ExitLocator (collectors/taskstats/delay_ledger.h), from the
// running vmscan backend (tracefs pid cache or bpf exit map), handed in as
// TaskstatsExitAttribution
// (collectors/taskstats.h). The fallback without it, sampling cgroup.procs,
// is explained in collectors/taskstats.cpp.
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "collectors/taskstats/delay_ledger.h"
#include "tracing/attribution.h"
#include "tracing/cgroup_resolver.h"

namespace memcg {

/// Directory inodes of cgroup paths under layout.memoryRoot (idOf); null
/// without a memory controller.
std::shared_ptr<tracing::CgroupResolver> procCgroupResolver(const std::string& procfs,
                                                           const MountLayout& layout);

/// Asks `lookup` (the tracer); `ids` (may be null) gives the inode of an
/// answer that has no id. Empty if `lookup` is null (the ledger's sampling
/// of cgroup.procs is the fallback then).
taskstats::DelayLedger::ExitLocator taskstatsExitLocator(
    const tracing::PidCgroupLookup* lookup, std::shared_ptr<tracing::CgroupResolver> ids);

}  // namespace memcg
