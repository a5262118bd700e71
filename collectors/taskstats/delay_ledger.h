// Bookkeeping that keeps per-cgroup delay counters monotonic while processes
// come and go. Pure (no I/O, not thread-safe): CgroupDelayAggregator feeds it
// cgroup.procs lists, TASKSTATS replies and exit records; tests feed it
// captured replies.
//
// A cgroup's counter for a class is
//     sum over exited processes (final totals) + sum over live processes (last totals)
// Processes are tracked per tgid: the kernel's per-tgid figure includes the
// threads that already exited (signal->stats), so thread churn needs no
// bookkeeping. A process ends with the exit record of its last thread (AGROUP
// flag, TASKSTATS v12+; the AGGR_TGID figure when it had several threads). The
// kernel queues that record before the task leaves cgroup.procs, so a process
// missing from the list has had its record delivered unless the listener
// overran. Without a record (overrun, no listener, kernel < v12, or the
// process moved to another cgroup) its last scraped totals are folded in.
// A process no scrape saw alive (it started and exited between two scrapes)
// is tied to its cgroup by an ExitLocator, when one is set: it answers, for
// an exit record, the directory inode of the cgroup the process was in (the
// tracer's pid cache: see collectors/taskstats.cpp); else by the last
// sampling of the cgroups' members (sampleMembers, cgroup.procs only).
// Its final totals are folded into that cgroup.
// The locator may not know the process yet when its record arrives (the
// trace reader runs behind), and the cgroup may not have been scraped yet:
// such exits wait (at most kMaxPendingExits, for kPendingAge) and are
// retried (retryPending, called by the owner a few times a second). A located process is
// remembered for a few scrapes so that a scrape that still lists it (the
// record is queued just before the task leaves cgroup.procs) cannot count it
// again.
// Limits (by design):
//   - without a locator, a process that starts and exits between two scrapes
//     of its cgroup is not counted (nothing tied it to the cgroup while it lived);
//   - a process moved into a cgroup brings its lifetime totals with it;
//   - max is the largest single delay of any process while tracked (a gauge
//     that only goes up until the cgroup is forgotten).
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/taskstats/taskstats_format.h"

namespace memcg::taskstats {

using DelayArray = std::array<DelayCounter, kDelayClassCount>;

/// The per-cgroup figures of one scrape (nanoseconds and counts).
struct CgroupDelays {
  DelayArray delay{};             ///< count/total monotonic, max only grows
  uint16_t has_total = 0;         ///< bit per DelayClass reported by the kernel
  uint16_t has_max = 0;           ///< bit per DelayClass whose max the kernel reports
  uint32_t live_processes = 0;    ///< listed and answered this scrape
  uint64_t exited_processes = 0;  ///< folded in since the cgroup was first seen
  uint32_t query_errors = 0;      ///< failed queries this scrape (exits not counted)

  const DelayCounter& operator[](DelayClass c) const {
    return delay[static_cast<size_t>(c)];
  }
  bool has(DelayClass c) const { return has_total & (1u << static_cast<unsigned>(c)); }
  bool hasMax(DelayClass c) const { return has_max & (1u << static_cast<unsigned>(c)); }
};

class DelayLedger {
 public:
  struct Stats {
    uint64_t scrapes = 0;
    uint64_t queries = 0;
    uint64_t query_errors = 0;
    uint64_t exit_messages = 0;         ///< exit records seen (every task on the host)
    uint64_t exits_folded = 0;          ///< tracked processes ended by their exit record
    uint64_t exits_without_record = 0;  ///< vanished processes folded from last values
    uint64_t pid_reuse = 0;             ///< a tgid's totals went backwards: new process
    uint64_t tracked_processes = 0;     ///< now
    uint64_t exits_located = 0;  ///< untracked processes folded via the ExitLocator
    uint64_t exits_unlocated = 0;  ///< untracked exits dropped: no cgroup known in time
  };

  /// The directory inode of the cgroup process `tgid` was in when it exited,
  /// 0 if unknown (yet). `first`: called as the exit record arrives (later
  /// calls are retries of an exit not placed yet). Called under the owner's lock.
  using ExitLocator = std::function<uint64_t(uint32_t tgid, bool first)>;
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxPendingExits = 4096;
  static constexpr Clock::duration kPendingAge = std::chrono::seconds(10);
  static constexpr size_t kMaxLocated = 8192;

  void setExitLocator(ExitLocator f) { locate_ = std::move(f); }
  /// A look at cgroup `key`'s members between scrapes (its cgroup.procs, no
  /// queries): an exit of one of them that no scrape tracked is folded into
  /// `key` (the fallback without a locator, and for tasks it does not know).
  /// `round_start`: the first cgroup of a sampling round (the round before
  /// the previous one is forgotten).
  void sampleMembers(const std::string& key, std::span<const uint32_t> tgids,
                     bool round_start);
  /// The keys of the cgroups being scraped (for sampling).
  std::vector<std::string> keys() const;
  /// Retries exits that could not be placed yet; drops those older than
  /// kPendingAge (`now` also stamps the exits that arrive until the next call).
  void retryPending(Clock::time_point now);
  size_t pendingExits() const { return pending_.size(); }

  /// Starts a scrape of cgroup `key` (directory inode `inode`; another inode
  /// under the same key starts over) whose cgroup.procs lists `tgids`.
  void begin(const std::string& key, ino_t inode, std::span<const uint32_t> tgids);
  /// The reply for `tgid` in the current scrape of `key`.
  void observe(const std::string& key, uint32_t tgid, const TaskStats& ts);
  /// A failed query (errno `err`; ESRCH means the process just exited).
  void observeError(const std::string& key, uint32_t tgid, int err);
  /// An exit notification (any time, for any task on the host).
  void onExit(const TaskstatsMessage& m);
  /// Ends the scrape of `key`: folds processes no longer listed, returns the totals.
  CgroupDelays end(const std::string& key);

  void forget(const std::string& key);
  void retainOnly(const std::vector<std::string>& keys);
  Stats stats() const;

 private:
  struct Proc {
    DelayArray last{};
    uint16_t has_total = 0;
    uint16_t has_max = 0;
    uint64_t scrape = 0;  ///< last scrape that listed it
  };
  struct Cgroup {
    ino_t inode = 0;
    uint64_t scrape = 0;
    DelayArray dead{};
    uint16_t dead_has_total = 0;
    uint16_t dead_has_max = 0;
    uint64_t exited = 0;
    std::unordered_map<uint32_t, Proc> procs;
    DelayArray emitted{};
    uint32_t live = 0;
    uint32_t errors = 0;
  };

  struct PendingExit {
    uint32_t tgid = 0;
    uint64_t inode = 0;  ///< 0: not located yet
    Clock::time_point since{};
    Proc fin;
  };

  void fold(Cgroup& cg, const Proc& p);
  void drop(const std::string& key, Cgroup& cg);
  /// Folds `pe` into the cgroup with its inode; false if none is tracked.
  bool place(PendingExit& pe);

  std::unordered_map<std::string, Cgroup> cgroups_;
  /// tgid -> the key of the cgroup tracking it (points into cgroups_; entries
  /// are removed before their cgroup is).
  std::unordered_map<uint32_t, const std::string*> owner_;
  uint64_t scrape_seq_ = 0;
  Stats stats_;
  ExitLocator locate_;
  std::deque<PendingExit> pending_;
  /// tgid -> cgroup inode from sampleMembers: this round and the previous one.
  std::unordered_map<uint32_t, uint64_t> sampled_, sampled_prev_;
  Clock::time_point now_{};
  /// tgids folded via the locator: not tracked by the next scrape that still
  /// lists them (then forgotten; cleared when it reaches kMaxLocated).
  std::unordered_map<uint32_t, uint64_t> located_;
};

}  // namespace memcg::taskstats
