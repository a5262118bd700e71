// The one owner of discovery walks. A walk getdents()es every memcg directory
// (~15 ms at 1,000 cgroups; ~0.8 s at 10,000), so when to walk is one decision,
// made here for everyone: the cadence (--cgroup.refresh-interval, on a thread
// of its own once started) and the on-demand walks of the scrapes, the
// history's sampler, the controller and the API. Nothing else calls
// Discovery::refresh(); a walk any of them asks for is seen by all (the
// history does not walk again when the cadence just did).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "cgroupfs/discovery.h"
#include "common/result.h"

namespace memcg {

class WalkScheduler {
 public:
  using TreeResult = Result<std::shared_ptr<const CgroupTree>>;

  /// Walks nothing until asked or started.
  explicit WalkScheduler(Discovery& discovery);
  /// Stops the cadence thread (before `discovery` goes).
  ~WalkScheduler();
  WalkScheduler(const WalkScheduler&) = delete;
  WalkScheduler& operator=(const WalkScheduler&) = delete;

  /// Walks every refresh interval on a thread of its own (nothing when the
  /// interval is 0), logging a failure once and its end. Call once.
  void start();

  /// The tree a scrape reads: the last walk's while it is younger than twice
  /// the refresh interval, else a walk now. Interval 0: every scrape walks.
  /// The last walk's Error if it failed.
  TreeResult tree();
  /// A tree at most `maxAge` old: the last walk's, else a walk now (the
  /// history's sampler). 0: a walk now.
  TreeResult within(std::chrono::milliseconds maxAge);
  /// A walk now, shared with concurrent callers: start-up, and a caller that
  /// needs a cgroup made since the last walk.
  TreeResult walkNow();
  /// The directory of cgroup `path` (its label), walking once more when the
  /// last walk did not see it or it has gone since; null if still unknown.
  std::shared_ptr<const cgroupfs::CgroupDir> findOrWalk(std::string_view path);

  /// The last tree walked (null before the first); never walks.
  std::shared_ptr<const CgroupTree> current() const { return discovery_.current(); }
  Discovery& discovery() const { return discovery_; }

  /// Walks done by the cadence thread (tests).
  uint64_t cadenceWalks() const;

 private:
  void run();

  Discovery& discovery_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t walks_ = 0;
  std::thread thread_;
};

}  // namespace memcg
