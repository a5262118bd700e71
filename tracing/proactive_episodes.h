// Reclaim the exporter causes on purpose (the controller's limit nudges and
// memory.reclaim writes): which threads are registered reclaimers, and the
// episodes in which a reclaimer works on behalf of a cgroup.
//
// Memcg reclaim by a registered tid counts as kind "proactive". Between
// begin(tid, slot, ts) and end(tid, ts) (event-clock timestamps, so the trace
// clock must be CLOCK_MONOTONIC) everything the tid does is charged to
// series `slot` instead of the reclaimer's own cgroup. The reader runs a
// poll interval (200 ms) behind the controller, which starts at most a few
// episodes per second: the last kMaxEpisodes are kept for it to match.
// Not thread-safe: the Aggregator calls it under its mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

namespace memcg::tracing {

class ProactiveEpisodes {
 public:
  static constexpr size_t kMaxEpisodes = 64;

  void registerReclaimer(int32_t tid) { reclaimers_.insert(tid); }
  void unregisterReclaimer(int32_t tid) { reclaimers_.erase(tid); }
  bool isReclaimer(int32_t tid) const {
    return !reclaimers_.empty() && reclaimers_.count(tid) != 0;
  }

  /// Opens an episode of registered `tid` for series `slot` at `ts`; false
  /// (nothing recorded) if `tid` is not registered.
  bool begin(int32_t tid, uint32_t slot, uint64_t ts);
  /// Closes `tid`'s newest open episode at `ts`.
  void end(int32_t tid, uint64_t ts);
  /// The series an event of `tid` at `ts` is charged to, if an episode covers it.
  std::optional<uint32_t> targetAt(int32_t tid, uint64_t ts) const;
  bool empty() const { return episodes_.empty(); }
  /// Series `slot` was retired: its episodes end.
  void dropSlot(uint32_t slot);

  /// CLOCK_MONOTONIC now, in ns (the event clock when trace_clock is "mono").
  static uint64_t monoNowNs();

 private:
  struct Episode {
    int32_t tid;
    uint32_t slot;
    uint64_t begin_ts, end_ts;  // end_ts = UINT64_MAX while open
  };
  std::unordered_set<int32_t> reclaimers_;
  std::vector<Episode> episodes_;
};

}  // namespace memcg::tracing
