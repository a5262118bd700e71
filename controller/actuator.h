// The actuator: the ONLY code in memcg_exporter that writes to cgroupfs.
//
// cgroup v1: the limit nudge (memory.limit_in_bytes).
//   1. read limit L and usage U (memory.usage_in_bytes) and what the cgroup
//      can give back now (memory.stat total_{in,}active_file);
//   2. choose T = U - want, never below the floor, never below U minus what
//      can be given back (so the kernel can reach it in one step), at most
//      max-step below U, rounded up to a page (the kernel reads the limit back
//      in whole pages, so T is what a re-read shows);
//   3. journal {original L, lowered T} and fdatasync it;
//   4. under SCHED_OTHER, write T (the kernel reclaims down to T synchronously
//      in this write: 6-9 ms for 64 MiB here; EBUSY after ~23 ms when it
//      cannot, the limit then unchanged), re-read the limit, and if it still
//      reads T write L back ("-1" when L was unlimited: v1 has no "max");
//      if it reads anything else, someone changed it: it is left alone;
//   5. clear the journal entry.
//   EINTR on either write is retried. memory.force_empty is never used: it
//   reports success without draining and stalls on writeback.
//
// cgroup v2 (5.19+): memory.reclaim ("<bytes>[ swappiness=<n>]"). EAGAIN means
// less than asked was reclaimed; the progress is measured from memory.current.
// swappiness= (6.12+) is probed once with a zero-byte request.
//
// v1 thresholds: armV1Threshold() registers a usage threshold eventfd through
// cgroup.event_control; v2 PSI: armV2PressureTrigger() writes a trigger to
// memory.pressure (cgroupfs writes, hence here).
//
// Every entry point refuses the root cgroup and labels the allow predicate
// rejects, before any write.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "cgroupfs/cgroup_dir.h"
#include "cgroupfs/readers.h"
#include "common/fd.h"
#include "common/result.h"
#include "controller/actuation.h"
#include "controller/journal.h"

namespace memcg::controller {

enum class ActuatorKind { kV1LimitNudge, kV2MemoryReclaim };
std::string_view actuatorName(ActuatorKind k);  ///< "v1_limit_nudge" / "v2_memory_reclaim"

enum class Outcome {
  kOk,        ///< reclaimed what was asked (after clamps)
  kPartial,   ///< v2 EAGAIN: some progress, less than asked
  kBusy,      ///< v1 EBUSY / v2 EAGAIN without progress: the target was unreachable
  kConflict,  ///< the limit was changed by someone else; left alone
  kNothing,   ///< nothing to do (at the floor, nothing reclaimable)
  kDenied,    ///< root or outside the allow-list: not written
  kGone,      ///< the cgroup vanished
  kError,     ///< any other failure (see detail)
};
std::string_view outcomeName(Outcome o);  ///< "ok", "partial", "busy", ...

struct ActuatorOptions {
  /// May this cgroup label be written? Null = nothing may. The root ("/") is
  /// refused whatever this says.
  std::function<bool(std::string_view cgroup)> allowed;
  /// memory.reclaim swappiness= (v2); -1 = leave to the kernel.
  int v2Swappiness = -1;
  /// Keep the journal entry of a successful nudge armed for the next nudge
  /// with the same {original, lowered} (journal.h), saving an fdatasync per
  /// nudge; releaseJournal() clears it. False = clear after every nudge.
  bool keepArmed = false;
  /// Test seam: called before each write with (file name, text); a non-zero
  /// return is taken as the errno of that write, which is then not done.
  std::function<int(std::string_view file, std::string_view text)> faultInjector;
  /// Test seam: called between lowering the v1 limit and re-reading it.
  std::function<void()> afterLower;
};

struct ReclaimRequest {
  std::string cgroup;            ///< label, "/a/b"
  uint64_t bytes = 0;            ///< wanted
  uint64_t floorBytes = 0;       ///< never bring usage (v2) / the limit (v1) below this
  uint64_t maxStepBytes = 256ull << 20;
};

struct ReclaimResult {
  ActuatorKind actuator = ActuatorKind::kV1LimitNudge;
  Outcome outcome = Outcome::kError;
  uint64_t requested = 0;    ///< after the clamps
  uint64_t reclaimed = 0;    ///< v1: U - T on success (the kernel brought usage to <= T); v2: measured
  uint64_t usageBefore = 0;
  uint64_t usageAfter = 0;
  cgroupfs::Limit original;  ///< v1: the limit before
  uint64_t lowered = 0;      ///< v1: T
  std::chrono::steady_clock::time_point reclaimedAt{};  ///< when the reclaiming write returned
  double writeSeconds = 0;   ///< time inside the reclaiming write
  double pairSeconds = 0;    ///< v1: lowered-write return -> restore-write return
  std::string detail;
};

/// Implements the waiter's and the worker's interfaces (actuation.h).
class Actuator final : public WakeArming, public Reclaimer {
 public:
  /// `journal` is required for v1 nudges (may be null for v2 only).
  Actuator(ActuatorOptions opts, Journal* journal);

  ReclaimResult v1Nudge(const cgroupfs::CgroupDir& dir, const ReclaimRequest& req) override;
  ReclaimResult v2Reclaim(const cgroupfs::CgroupDir& dir, const ReclaimRequest& req) override;

  /// Registers a v1 usage threshold; returns the (non-blocking) eventfd.
  Result<Fd> armV1Threshold(const cgroupfs::CgroupDir& dir, std::string_view cgroup,
                            uint64_t thresholdBytes) override;

  /// v2: creates a PSI trigger (`trigger` = "some|full <stall us> <window us>")
  /// on memory.pressure; returns its fd, to poll for POLLPRI (closing it
  /// removes the trigger). ENOENT: no PSI here; EOPNOTSUPP: PSI off for the
  /// cgroup; ENOTSUP: a fixture tree (never signals).
  Result<Fd> armV2PressureTrigger(const cgroupfs::CgroupDir& dir, std::string_view cgroup,
                                  std::string_view trigger) override;

  /// Clears the armed journal entries of a cgroup directory (protection ended).
  void releaseJournal(const cgroupfs::CgroupDir& dir) override;

  /// Crash recovery for one journal entry: writes the original limit back
  /// if the cgroup at e.dir still has inode e.inode and its limit still reads
  /// e.lowered. kOk = restored, kNothing = already at the original, kConflict
  /// = changed by someone else or recreated (left alone), kGone, kError.
  Outcome restoreFromJournal(const JournalEntry& e, std::string* detail);

  /// v2: memory.reclaim accepts swappiness= (probed on first use; false
  /// before the probe).
  bool v2SwappinessSupported() const { return swappinessProbe_.load() == 1; }

 private:
  bool allowed(std::string_view cgroup) const;
  int writeText(int fd, bool regular, std::string_view file, std::string_view text) const;

  ActuatorOptions opts_;
  Journal* journal_;
  std::atomic<int> swappinessProbe_{0};  // 0 unknown, 1 yes, -1 no
};

/// Runs the calling thread under SCHED_OTHER for the scope if it was not.
class SchedOtherScope {
 public:
  SchedOtherScope();
  ~SchedOtherScope();
  SchedOtherScope(const SchedOtherScope&) = delete;
  SchedOtherScope& operator=(const SchedOtherScope&) = delete;

 private:
  int oldPolicy_ = -1;
};

/// Applies "other" | "batch" | "idle" to the calling thread. False if unknown.
bool setThreadPolicy(std::string_view policy);

}  // namespace memcg::controller
