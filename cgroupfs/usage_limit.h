// Usage and the limit a margin is kept under, read from one cgroup directory.
//
//   v1: memory.usage_in_bytes and memory.limit_in_bytes.
//   v2: memory.current and memory.max; when memory.max is "max", memory.high
//       (the throttling limit) stands in for it, when it has one.
// Limits are Limit values (readers.h): "max" and v1's PAGE_COUNTER_MAX are
// unlimited. This is the one place the max-then-high rule is written.
#pragma once

#include <cstdint>
#include <string>

#include "cgroupfs/cgroup_dir.h"
#include "cgroupfs/readers.h"
#include "common/result.h"

namespace memcg::cgroupfs {

struct UsageLimit {
  uint64_t usage = 0;
  Limit limit;  ///< unlimited: no memory.max / memory.high / limit_in_bytes set
};

/// Reads usage and limit. A removed cgroup is an Error whose gone() is true;
/// a missing or malformed file is an Error with its path. Never throws.
Result<UsageLimit> readUsageLimit(const CgroupDir& dir, bool v2, std::string& buf);

}  // namespace memcg::cgroupfs
