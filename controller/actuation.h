// What the controller's threads need from the actuator (actuator.h, the only
// cgroupfs writer), as two narrow interfaces: the waiter arms wake-ups, the
// worker reclaims. Both release a protection's armed journal entry when it
// ends.
#pragma once

#include <cstdint>
#include <string_view>

#include "cgroupfs/cgroup_dir.h"
#include "common/fd.h"
#include "common/result.h"

namespace memcg::controller {

struct ReclaimRequest;
struct ReclaimResult;

/// Clears the armed journal entries of a cgroup directory (protection ended).
class JournalRelease {
 public:
  virtual ~JournalRelease() = default;
  virtual void releaseJournal(const cgroupfs::CgroupDir& dir) = 0;
};

/// The waiter's wake-ups that need a cgroupfs write.
class WakeArming {
 public:
  virtual ~WakeArming() = default;
  /// v1: a usage-threshold eventfd (non-blocking) at `thresholdBytes`.
  virtual Result<Fd> armV1Threshold(const cgroupfs::CgroupDir& dir, std::string_view cgroup,
                                    uint64_t thresholdBytes) = 0;
  /// v2: a PSI trigger on memory.pressure; its fd polls POLLPRI.
  virtual Result<Fd> armV2PressureTrigger(const cgroupfs::CgroupDir& dir,
                                          std::string_view cgroup,
                                          std::string_view trigger) = 0;
};

/// The worker's actuations.
class Reclaimer : public JournalRelease {
 public:
  virtual ReclaimResult v1Nudge(const cgroupfs::CgroupDir& dir, const ReclaimRequest& req) = 0;
  virtual ReclaimResult v2Reclaim(const cgroupfs::CgroupDir& dir, const ReclaimRequest& req) = 0;
};

}  // namespace memcg::controller
