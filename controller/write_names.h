// The cgroupfs files the controller WRITES, named once (the read side is
// cgroupfs/file_names.h; where a file is also read, the read goes
// through its FileId there).
//
// Only controller/actuator.cpp opens these for writing. Candidates to move to
// file_names.h once another writer exists (there should never be one).
#pragma once

#include <string_view>

namespace memcg::controller::wfile {

/// v1: hard limit, bytes (page-rounded by the kernel); "-1" = unlimited.
/// Lowering it below usage reclaims synchronously in the writing thread;
/// EBUSY when the target cannot be reached (the limit is then unchanged).
inline constexpr std::string_view kV1Limit = "memory.limit_in_bytes";
/// v1: "<eventfd> <fd of memory.usage_in_bytes> <threshold bytes>" registers
/// a usage threshold; the eventfd fires on each crossing, both directions.
/// Closing the eventfd unregisters it.
inline constexpr std::string_view kV1EventControl = "cgroup.event_control";
/// v1: the file a threshold is registered on (opened read-only, its fd is
/// passed to cgroup.event_control).
inline constexpr std::string_view kV1Usage = "memory.usage_in_bytes";
/// v2 (5.19+): "<bytes>[ swappiness=<0-200>]" (swappiness= since 6.12):
/// proactive reclaim; EAGAIN when less than asked was reclaimed.
inline constexpr std::string_view kV2Reclaim = "memory.reclaim";
/// v2 (PSI, 4.20+ with CONFIG_PSI and psi enabled): writing "some|full
/// <stall us> <window us>" (with its terminating NUL) to an open fd creates a
/// trigger that lives as long as that fd and signals POLLPRI. Opened O_RDWR.
inline constexpr std::string_view kV2Pressure = "memory.pressure";
/// v2: throttling threshold (not written yet: the memory.high dip fallback
/// for kernels without memory.reclaim is listed as not done).
inline constexpr std::string_view kV2High = "memory.high";

}  // namespace memcg::controller::wfile
