// Every cgroupfs file memcg_exporter reads, named once.
//
// FileId indexes the per-cgroup cache of open file descriptors (CgroupDir), so
// the list is closed: add a file here before reading it anywhere.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace memcg::cgroupfs {

enum class FileId : unsigned {
  // Present in every cgroup of both versions: the liveness probe.
  kCgroupProcs,
  // Shared by v1 and v2.
  kMemoryStat,
  kMemoryReclaimStat,  // only on kernels patched with 2011's (never merged) async reclaim
  // cgroup v1 (Documentation/admin-guide/cgroup-v1/memory.rst).
  kV1Usage,
  kV1Limit,
  kV1MaxUsage,
  kV1SoftLimit,
  kV1Failcnt,
  kV1MemswUsage,
  kV1MemswLimit,
  kV1MemswMaxUsage,
  kV1MemswFailcnt,
  kV1KmemUsage,
  kV1KmemLimit,
  kV1KmemMaxUsage,
  kV1KmemFailcnt,
  kV1KmemTcpUsage,
  kV1KmemTcpLimit,
  kV1KmemTcpMaxUsage,
  kV1KmemTcpFailcnt,
  kV1OomControl,
  // cgroup v2 (Documentation/admin-guide/cgroup-v2.rst).
  kV2Current,
  kV2Min,
  kV2Low,
  kV2High,
  kV2Max,
  kV2Peak,
  kV2Events,
  kV2EventsLocal,
  kV2SwapCurrent,
  kV2SwapMax,
  kV2SwapHigh,
  kV2SwapPeak,
  kV2SwapEvents,
  kV2ZswapCurrent,
  kV2ZswapMax,
  // PSI: v2 cgroups, also in the cgroup2 tree of a hybrid host.
  kMemoryPressure,
  kCount
};

inline constexpr size_t kFileCount = static_cast<size_t>(FileId::kCount);

inline constexpr std::array<std::string_view, kFileCount> kFileNames = {
    "cgroup.procs",
    "memory.stat",
    "memory.reclaim_stat",
    "memory.usage_in_bytes",
    "memory.limit_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.soft_limit_in_bytes",
    "memory.failcnt",
    "memory.memsw.usage_in_bytes",
    "memory.memsw.limit_in_bytes",
    "memory.memsw.max_usage_in_bytes",
    "memory.memsw.failcnt",
    "memory.kmem.usage_in_bytes",
    "memory.kmem.limit_in_bytes",
    "memory.kmem.max_usage_in_bytes",
    "memory.kmem.failcnt",
    "memory.kmem.tcp.usage_in_bytes",
    "memory.kmem.tcp.limit_in_bytes",
    "memory.kmem.tcp.max_usage_in_bytes",
    "memory.kmem.tcp.failcnt",
    "memory.oom_control",
    "memory.current",
    "memory.min",
    "memory.low",
    "memory.high",
    "memory.max",
    "memory.peak",
    "memory.events",
    "memory.events.local",
    "memory.swap.current",
    "memory.swap.max",
    "memory.swap.high",
    "memory.swap.peak",
    "memory.swap.events",
    "memory.zswap.current",
    "memory.zswap.max",
    "memory.pressure",
};

constexpr std::string_view fileName(FileId id) { return kFileNames[static_cast<size_t>(id)]; }

/// cgroup.procs is a seq_file of one record per process (a page per read at
/// most); every other file here is one record, rendered whole in one read.
constexpr bool multiRecord(FileId id) { return id == FileId::kCgroupProcs; }

// Files outside any cgroup, relative to --path.procfs.
inline constexpr std::string_view kProcMountinfo = "self/mountinfo";
inline constexpr std::string_view kProcVmstat = "vmstat";
inline constexpr std::string_view kProcPressureMemory = "pressure/memory";

}  // namespace memcg::cgroupfs
