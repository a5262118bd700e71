// A private tracefs instance and the thread that reads its ring buffers.
//
// Kernel interface (Documentation/trace/ftrace.rst):
//  - tracefs, mounted at /sys/kernel/tracing or /sys/kernel/debug/tracing
//    (found via statfs magic TRACEFS_MAGIC). When it is not mounted: at the
//    given path if one was given, else a private detached mount (fsopen/
//    fsmount, 5.2+) that no other process sees and that goes with its
//    descriptor even on a crash, else at /sys/kernel/tracing; what we mounted
//    visibly is unmounted on exit. Either way the root is held by a
//    descriptor and reached as /proc/self/fd/N, so another process
//    unmounting the visible path cannot take our instance away;
//  - instances/<name>/: our own buffer (never the top-level one), created by
//    mkdir and removed by rmdir (EBUSY while any of its files is open). The
//    name must start with "memcg_exporter"; an instance of that exact name
//    found at start is a leftover of a crash and is removed;
//  - instances/<name>/events/<sys>/<event>/{enable,filter};
//  - instances/<name>/buffer_size_kb (KiB per CPU), buffer_subbuf_size_kb
//    (6.8+; else the page size);
//  - instances/<name>/per_cpu/cpuN/trace_pipe_raw: binary sub-buffers, read
//    non-blocking; reading CONSUMES the events. Parsed with libtraceevent's
//    kbuffer. per_cpu/cpuN/stats gives "overrun", "commit overrun" and
//    "dropped events": the events the kernel lost for this instance.
//  - instances/<name>/trace_clock: set to "mono" and read back; the reader
//    reads the same clock (CLOCK_MONOTONIC) to bound what it may hand out.
//  - instances/<name>/buffer_percent (5.0+): how full a CPU's buffer must be
//    before poll reports it readable; set to 0 (readable, and a waiter
//    woken, at the first committed event). Also options/block set to 0
//    (with it, poll always reports readable).
// A round reads each CPU until the kernel has nothing more (or its round's
// share is read; after a partly filled sub-buffer, the page the writer is
// on, it reads once more and stops there, not chasing the writer) and hands
// records to a RecordSink in global timestamp order (record_merger.h).
//
// When rounds run (SessionOptions::wait). Rounds are at least
// poll_interval apart, as they always were. Between two, the reader
//  - kPoll (default): sleeps in one epoll_wait over every CPU's pipe
//    (cpu_poller.h) until one holds data (returning at once on a busy
//    host), then until the gap since the last round is over and at least
//    commit_slack more (so that the event which woke it is past the
//    watermark below: one round hands it out), and reads only the CPUs a
//    poll() with no timeout reports holding data. With records held back it
//    waits only for the gap. Without data it wakes every idle_wake for a
//    round that checks every CPU that way (a safety net against a lost
//    wake-up) and refreshes its counters. The per-CPU stats files are read
//    (once a second at most) only for CPUs that had data since the last
//    read: the kernel counts overruns and drops only when writing to a
//    buffer, and then the CPU has data. Idle cost: 3 system calls and one
//    wake-up per idle_wake whatever the number of CPUs, instead of
//    5 x (CPUs + 2) a second plus the stats files (bench/tracing_idle_cost.cpp);
//  - kInterval: sleeps poll_interval and reads every CPU (the older loop;
//    the fallback when the kernel keeps buffer_percent above 0,
//    when poll could only say "that full", not "has data", or when epoll is
//    unavailable).
// Either way an event is handed out at most poll_interval + commit_slack
// (+ the time to read a round) after it is committed; in kPoll an event on
// an idle reader, ~commit_slack after.
//
// Global order across rounds (a task's begin and end must pair in time
// order even when it moved CPUs in between). Before reading any CPU the reader
// reads the trace clock, T0, and hands out only records with
// ts <= W = T0 - commit_slack (and, for a CPU read only in part, no newer
// than its newest record read); newer ones, already read, wait for the next
// round. Why no record can still come later with ts <= W:
//  - the ring buffer returns every event committed on a CPU before the read
//    of that CPU (a read while the writer is on the same page copies the
//    committed events only: never a half-written one); a CPU counts as read
//    fully only once a read returned EAGAIN, after every earlier read;
//  - so a record that comes in a later round with ts <= W was reserved at
//    ts (the ring buffer stamps it at reserve) and committed after that
//    CPU's last read, which is after T0 >= ts + commit_slack: it spent more
//    than commit_slack between reserve and commit;
//  - between reserve and commit the writer runs with preemption disabled
//    (ring_buffer_lock_reserve .. ring_buffer_unlock_commit), filling a few
//    fields (events with a filter are built aside and written in one
//    ring_buffer_write, stamped at that write). Only what preempt-off code
//    can be interrupted by stretches that window: hard interrupts, softirqs
//    run on interrupt exit (__do_softirq yields to ksoftirqd after 2 ms),
//    NMIs, and a hypervisor descheduling the vCPU. Interrupting events are
//    nested in the same page and committed with it, so they wait too;
//  - per CPU, stamps never decrease in buffer order (an event interrupted
//    between taking its stamp and reserving its slot is given its
//    interrupter's time), so a CPU's unread records are no older than its
//    newest read one: that bounds W for a CPU not read fully;
//    commit_slack (50 ms) is well beyond these on a sane host but it is a
//    bound, not a guarantee (a vCPU stolen for longer breaks it);
//  - timestamps of "mono" are ktime_get_mono_fast_ns: CLOCK_MONOTONIC, the
//    same on every CPU (a task's begin on CPU0 before its end on CPU1 after
//    a migration, which goes through the run-queue locks, has the smaller
//    stamp); "local" (the default clock) is per-CPU sched_clock, neither
//    readable from user space nor comparable across CPUs.
// A record handed out older than one handed out before is counted
// (SessionStats::out_of_order), so a broken bound is visible, not silent.
// If the kernel refuses every clock user space can read, rounds are ordered
// only within themselves (the pre-issue-11 behaviour), with a warning.
// Cost: the held-back records are re-walked once per round (a few hundred at
// most); reports lag by commit_slack beyond the poll interval.
// Minimum kernel: 4.x for instances and trace_pipe_raw, 4.1 for "mono";
// tested on 6.18 and 6.1.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "tracing/cpu_poller.h"
#include "tracing/record_merger.h"

struct memcg_tfs_instance;

namespace memcg::tracing {

inline constexpr std::string_view kInstancePrefix = "memcg_exporter";
/// An instance name we may create and remove: starts with kInstancePrefix,
/// one path component, printable.
inline bool isValidInstanceName(std::string_view name) {
  if (!name.starts_with(kInstancePrefix) || name.size() > 255) return false;
  for (char c : name) {
    if (c == '/' || c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

struct SessionOptions {
  /// tracefs mount point; empty: /sys/kernel/tracing, then /sys/kernel/debug/tracing.
  std::string tracefs_path;
  /// If tracefs is not mounted, mount it (at tracefs_path; without one, a
  /// private detached mount, else /sys/kernel/tracing).
  bool mount_if_missing = true;
  /// Instance name; must start with kInstancePrefix.
  std::string instance_name = std::string(kInstancePrefix);
  /// Ring buffer per CPU, KiB. 8 MiB holds ~200k vmscan events per CPU, i.e.
  /// >= 1 s of a heavy reclaim storm between two polls.
  size_t buffer_kb_per_cpu = 8192;
  /// Sub-buffer size asked of the kernel (buffer_subbuf_size_kb, 6.8+; older
  /// kernels keep one page). One read() returns one sub-buffer, so larger
  /// ones mean fewer system calls per event; 0 keeps the kernel's default.
  size_t subbuf_kb = 16;
  /// Rounds are at least this far apart (a burst of events is read in one).
  std::chrono::milliseconds poll_interval{200};
  /// How the reader waits for data between rounds (see the header comment).
  enum class Wait { kPoll, kInterval };
  Wait wait = Wait::kPoll;
  /// kPoll: the longest the reader sleeps with no data before a round that
  /// checks every CPU and refreshes its counters.
  std::chrono::milliseconds idle_wake{1000};
  /// The instance's trace_clock. "mono" (CLOCK_MONOTONIC, 4.1+) lets user
  /// space place its own actions on the events' time line (proactive
  /// episodes, aggregator.h); if the kernel refuses it the default "local"
  /// stays (traceClock() says which).
  std::string trace_clock = "mono";
  /// How long a record may take from reserve to commit in the kernel and
  /// still be handed out in order (see the header comment): records newer
  /// than the trace clock minus this wait for the next round.
  std::chrono::milliseconds commit_slack{50};
  /// Upper bound on bytes read from one CPU per round (bounds the reader's
  /// buffer, which becomes resident as rounds fill it); a CPU with more
  /// waiting is read again at once.
  size_t max_bytes_per_cpu_round = 2 << 20;
};

/// Receives records in timestamp order on the reader thread.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  /// `data` holds one event (common header first) and is valid only during the call.
  virtual void onRecord(const void* data, uint32_t size, uint64_t ts, int cpu) = 0;
  /// Called after each round's records.
  virtual void onRoundEnd() = 0;
};

struct SessionStats {
  uint64_t records = 0;       ///< records handed to the sink
  uint64_t subbufs = 0;       ///< sub-buffers read
  uint64_t lost = 0;          ///< overrun + commit overrun + dropped (kernel stats)
  uint64_t missed_flags = 0;  ///< events the sub-buffer headers flagged as missed
  uint64_t read_errors = 0;   ///< read() failures other than EAGAIN
  bool reads_failing = false;  ///< a read() failed (not EAGAIN) in the last round
  uint64_t rounds = 0;
  uint64_t out_of_order = 0;  ///< handed out older than a record before them
  uint64_t held = 0;          ///< read, waiting for a later round (last round)
  uint64_t reader_cpu_ns =
      0;  ///< CPU time of the reader thread (CLOCK_THREAD_CPUTIME_ID)
  /// System calls the reader thread made (reads, polls, waits, stats reads,
  /// its CPU clock), counted where it makes them.
  uint64_t syscalls = 0;
  uint64_t cpu_reads = 0;  ///< read()s of trace_pipe_raw
};

class TracefsSession {
 public:
  /// Finds or mounts tracefs, removes a stale instance of the same name and
  /// creates ours with tracing off. Fails with a clear Error (EACCES/EPERM,
  /// ENODEV for no tracefs support, EBUSY if the instance is in use).
  static Result<std::unique_ptr<TracefsSession>> open(const SessionOptions& opts);
  ~TracefsSession();
  TracefsSession(const TracefsSession&) = delete;
  TracefsSession& operator=(const TracefsSession&) = delete;

  /// The tracefs root in use, as a path valid in this process only
  /// (/proc/self/fd/N): load event formats from it.
  const std::string& tracefsRoot() const { return root_; }
  /// Where tracefs is for people: its mount point, or "tracefs(private mount)".
  const std::string& displayRoot() const { return display_root_; }
  /// The instance directory under displayRoot() (…/instances/<name>), for messages.
  const std::string& instanceDir() const { return instance_dir_; }
  bool mountedByUs() const { return mounted_by_us_; }
  /// Mounted by us, detached: visible to no other process.
  bool privateMount() const { return private_mount_; }
  /// The instance's trace_clock in use, as the kernel reports it ("mono",
  /// or "local" if unchangeable).
  const std::string& traceClock() const { return clock_; }
  /// Whether records are handed out in global order across rounds (a trace
  /// clock user space can read; see the header comment).
  bool globalOrder() const { return clock_id_ >= 0; }
  /// How the reader waits between rounds: what was asked, or kInterval if
  /// the kernel does not allow kPoll (see the header comment).
  SessionOptions::Wait waitMode() const { return opts_.wait; }
  /// Readable CPU buffers (online CPUs).
  size_t cpuCount() const { return cpus_.size(); }

  /// Sets an in-kernel filter (if non-empty) and enables one event.
  Status enableEvent(const char* system, const char* event,
                     const std::string& filter = {});
  /// Writes `value` to instances/<name>/events/<system>/<event>/<file>
  /// (e.g. "trigger"); callable while the reader runs.
  Status writeEventFile(const char* system, const char* event, const char* file,
                        const std::string& value);
  /// Turns tracing on and starts the reader thread. `sink` must outlive stop().
  Status start(RecordSink* sink);
  /// Stops the reader after a final drain; idempotent.
  void stop();
  bool running() const { return running_.load(); }
  SessionStats stats() const;

 private:
  TracefsSession() = default;
  struct Cpu;
  void run();
  bool drainRound(bool final_round);
  void flushAll();
  void refreshLost(bool all);
  void waitForRound();
  bool waitStop(std::chrono::milliseconds d);  // true: stop requested
  void setUpPolling(const std::string& inst_path);

  Fd root_fd_;                // tracefs root (O_PATH, or the detached mount)
  std::string root_;          // "/proc/self/fd/<root_fd_>"
  std::string display_root_;  // mount point, or "tracefs(private mount)"
  std::string instance_dir_;  // display_root_ + "/instances/<name>"
  bool mounted_by_us_ = false;
  bool private_mount_ = false;
  std::string clock_ = "local";
  int clock_id_ = -1;  // clockid_t of clock_, -1 if user space cannot read it
  memcg_tfs_instance* instance_ = nullptr;
  size_t subbuf_size_ = 4096;
  SessionOptions opts_;
  std::vector<std::unique_ptr<Cpu>> cpus_;
  std::unique_ptr<RecordMerger> merger_;  // one stream per cpus_ entry, same index
  std::unique_ptr<CpuPoller> poller_;     // kPoll: over cpus_' pipes, same index
  std::vector<uint8_t> ready_;            // this round's CPUs to read
  std::chrono::steady_clock::time_point last_round_end_{};
  uint64_t own_syscalls_ = 0;  // the reader's, besides the poller's
  uint64_t cpu_reads_local_ = 0;
  RecordSink* sink_ = nullptr;

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_requested_ = false;
  std::atomic<bool> running_{false};
  std::atomic<bool> reads_failing_{false};

  std::atomic<uint64_t> records_{0}, subbufs_{0}, lost_{0}, missed_{0}, read_errors_{0},
      rounds_{0}, reader_cpu_ns_{0}, out_of_order_{0}, held_{0};
  std::atomic<uint64_t> syscalls_{0}, cpu_reads_{0};
};

/// The selected clock of a trace_clock file ("[mono] local global ..." ->
/// "mono"); empty if none is marked.
std::string selectedTraceClock(std::string_view trace_clock_file);
/// The clockid_t user space reads for a trace clock that is one of the
/// kernel's clocks ("mono", "mono_raw", "boot", "tai"), or -1.
int traceClockId(std::string_view clock);

}  // namespace memcg::tracing
