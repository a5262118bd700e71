// Per-cgroup delay accounting: TASKSTATS per process, summed per cgroup, kept
// monotonic across process exits (the rules are in delay_ledger.h).
//
// Kernel interfaces: <cgroup>/cgroup.procs (v1 and v2; one tgid per line) and
// the TASKSTATS family (taskstats_client.h): one TASKSTATS_CMD_GET per process
// (per tgid: cheaper than per thread and it keeps exited threads), sent 64 per
// sendmsg(), plus an exit listener. Units: nanoseconds and counts; the
// collector converts to seconds. Needs CAP_NET_ADMIN. Minimum kernel 2.6.24;
// exit folding needs TASKSTATS v12 (AGROUP in exit records).
//
// Thread-safe: collect() may run on any scrape thread; the exit listener is
// drained on a thread of its own and in collect().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/taskstats/delay_ledger.h"
#include "collectors/taskstats/taskstats_client.h"
#include "common/fd.h"
#include "common/result.h"

namespace memcg::taskstats {

/// Parses a cgroup.procs/tasks style file: one decimal id per line; `file`
/// names it in errors.
Result<std::vector<uint32_t>> parseIdList(std::string_view text, const std::string& file);
/// Reads and parses a cgroup.procs/tasks style file by path.
Result<std::vector<uint32_t>> readIdList(const std::string& file);

class CgroupDelayAggregator {
 public:
  struct Options {
    size_t batch = 64;         ///< TASKSTATS requests per sendmsg (1..64)
    bool listen_exits = true;  ///< register the exit listener
    bool exit_thread = true;   ///< drain exits on a thread (else only in collect())
    std::string cpumask;       ///< listener CPUs; empty: all possible CPUs
    /// Places exits of processes no scrape saw alive (delay_ledger.h).
    DelayLedger::ExitLocator locate_exit;
    /// Between scrapes the exit thread reads the scraped cgroups'
    /// cgroup.procs this often (no queries; 0 = never), so a process that
    /// lived at least this long is placed even without a locator.
    std::chrono::milliseconds sample_members{1000};
    /// Receive buffers of the query socket and of the exit listener (bytes;
    /// the kernel doubles them). Small ones make the kernel drop replies and
    /// notifications (ENOBUFS): counted, logged, retried (tests).
    int query_rcvbuf = 1 << 20;
    int listener_rcvbuf = 8 << 20;
  };
  struct Stats : DelayLedger::Stats {
    uint64_t listener_overruns = 0;  ///< ENOBUFS on the exit listener (records lost)
    uint64_t query_overruns = 0;     ///< ENOBUFS on the query socket (replies retried)
    bool listening = false;          ///< the exit listener is registered
  };

  /// Opens the query socket and, if asked, the exit listener. Failing to
  /// register the listener is logged and leaves listening=false.
  static Result<std::unique_ptr<CgroupDelayAggregator>> create(Options opts);
  static Result<std::unique_ptr<CgroupDelayAggregator>> create() {
    return create(Options{});
  }
  ~CgroupDelayAggregator();
  CgroupDelayAggregator(const CgroupDelayAggregator&) = delete;
  CgroupDelayAggregator& operator=(const CgroupDelayAggregator&) = delete;

  /// One scrape of the cgroup directory `cgroup_dir` (the path is the key; a
  /// directory recreated under the same path, i.e. a new inode, starts over).
  /// A vanished cgroup yields an Error with gone() true, and its state is dropped.
  Result<CgroupDelays> collect(const std::string& cgroup_dir);
  /// The same with the cgroup's directory inode known and its process list
  /// read by `tgids` (e.g. cgroup.procs through a kept directory descriptor),
  /// which runs under the aggregator's lock. An Error with gone() true from
  /// `tgids` drops the cgroup's state.
  Result<CgroupDelays> collect(const std::string& cgroup_dir, ino_t inode,
                               const std::function<Result<std::vector<uint32_t>>()>& tgids);

  /// Drops the state of a cgroup (removed, or no longer exported).
  void forget(const std::string& cgroup_dir);
  /// Drops the state of every cgroup not in `dirs`.
  void retainOnly(const std::vector<std::string>& dirs);
  /// Reads queued exit notifications now.
  void drainExits();

  Stats stats() const;

  /// Runs fn(TaskstatsClient&) under the aggregator's lock (the client is not
  /// thread-safe); used for the /api/v1/delays table.
  template <typename F>
  auto withClient(F&& fn) {
    std::lock_guard lock(mu_);
    return fn(client_);
  }

 private:
  CgroupDelayAggregator(TaskstatsClient client, Options opts)
      : client_(std::move(client)), opts_(std::move(opts)) {}
  void drainLocked();
  // A warning when a socket overflowed: per socket, at most once a minute.
  void logOverrunsLocked();
  void sampleLocked();
  void exitLoop();

  mutable std::mutex mu_;
  TaskstatsClient client_;
  Options opts_;
  DelayLedger ledger_;
  std::chrono::steady_clock::time_point retried_at_{};
  std::chrono::steady_clock::time_point sampled_at_{};
  struct OverrunLog {
    uint64_t logged = 0;  ///< overruns when last logged
    std::optional<std::chrono::steady_clock::time_point> at;
  };
  OverrunLog query_overrun_log_, listener_overrun_log_;
  std::optional<ExitListener> listener_;
  Fd wake_fd_;
  std::atomic<bool> stop_{false};
  std::thread exit_thread_;
};

}  // namespace memcg::taskstats
