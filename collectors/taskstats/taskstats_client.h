// Generic-netlink TASKSTATS client, written directly on AF_NETLINK sockets.
//
// Kernel interface: NETLINK_GENERIC family "TASKSTATS" (kernel/taskstats.c).
//   - TASKSTATS_CMD_GET + TASKSTATS_CMD_ATTR_PID / _TGID: the stats of one thread /
//     one thread group (live threads plus those already exited). Needs
//     CAP_NET_ADMIN (GENL_ADMIN_PERM) and the initial user and pid namespaces.
//   - TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: the kernel then sends a TASKSTATS_CMD_NEW
//     message to this socket for every task exiting on those CPUs (AGGR_PID, plus
//     AGGR_TGID when the last thread of a multi-threaded process exits).
// Units: see taskstats_format.h. Minimum kernel 2.6.19; CONFIG_TASKSTATS and, for
// non-zero delays, CONFIG_TASK_DELAY_ACCT.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "collectors/taskstats/taskstats_format.h"
#include "common/fd.h"
#include "common/result.h"

namespace memcg::taskstats {

enum class IdKind : uint8_t { kPid, kTgid };

/// Synchronous query socket. Not thread-safe: one per thread.
class TaskstatsClient {
 public:
  /// Opens a NETLINK_GENERIC socket (receive buffer `rcvbuf` bytes, forced
  /// when permitted) and resolves the TASKSTATS family id.
  static Result<TaskstatsClient> open(int rcvbuf = 1 << 20);

  uint16_t familyId() const { return family_; }

  /// TASKSTATS_CMD_GET for one pid (thread) or tgid (process). A task that
  /// does not exist (any more) yields an Error with err == ESRCH.
  Result<TaskStats> query(uint32_t id, IdKind kind);

  /// Queries many ids, `batch` requests per sendmsg() and replies read with
  /// recvmmsg(); calls fn(id, result) once per id, in order. Replies lost to a
  /// full receive buffer (the kernel drops them and the next read fails with
  /// ENOBUFS, counted in overruns()) are retried one by one. Fails only if
  /// the socket fails.
  using QueryFn = std::function<void(uint32_t id, Result<TaskStats>&& r)>;
  Status queryMany(std::span<const uint32_t> ids, IdKind kind, const QueryFn& fn,
                   size_t batch = 64);

  /// Reads that failed with ENOBUFS: the kernel dropped replies to this socket.
  uint64_t overruns() const { return overruns_; }

  /// The raw reply datagram (netlink header included), for fixtures.
  Result<std::vector<uint8_t>> queryRaw(uint32_t id, IdKind kind);

 private:
  TaskstatsClient(Fd fd, uint16_t family) : fd_(std::move(fd)), family_(family) {}
  Status sendBatch(std::span<const uint32_t> ids, IdKind kind, uint32_t first_seq);

  Fd fd_;
  uint16_t family_ = 0;
  uint32_t seq_ = 1;
  uint64_t overruns_ = 0;
  std::vector<uint8_t> send_buf_;
  std::vector<uint8_t> recv_buf_;
};

/// Listener for exit notifications (TASKSTATS_CMD_ATTR_REGISTER_CPUMASK).
/// Thread-compatible: drain() from one thread at a time.
class ExitListener {
 public:
  /// Registers for the exits on `cpumask` ("0-3,6"; empty: every possible CPU,
  /// from /sys/devices/system/cpu/possible). `rcvbuf` is forced with
  /// SO_RCVBUFFORCE when permitted: the kernel drops notifications (and we
  /// count an overrun) when the socket is full.
  static Result<ExitListener> open(uint16_t family, std::string cpumask = {},
                                   int rcvbuf = 8 << 20);
  ExitListener(ExitListener&&) noexcept = default;
  ExitListener& operator=(ExitListener&&) noexcept = default;
  ~ExitListener();  // deregisters

  int fd() const { return fd_.get(); }
  const std::string& cpumask() const { return cpumask_; }

  /// Reads every queued notification without blocking and calls fn for each.
  /// Returns the number of messages read. ENOBUFS (the kernel dropped
  /// notifications) is counted in overruns() and is not an error.
  Result<size_t> drain(const std::function<void(const TaskstatsMessage&)>& fn);
  /// Same, handing over each raw datagram (for fixtures); returns datagrams read.
  Result<size_t> drainRaw(const std::function<void(std::span<const uint8_t>)>& fn);

  /// Waits up to timeout_ms for the socket to become readable (poll).
  /// Returns false on timeout.
  bool waitReadable(int timeout_ms, int wake_fd = -1) const;

  uint64_t overruns() const { return overruns_; }
  uint64_t malformed() const { return malformed_; }

 private:
  ExitListener(Fd fd, uint16_t family, std::string mask)
      : fd_(std::move(fd)), family_(family), cpumask_(std::move(mask)) {}

  Fd fd_;
  uint16_t family_ = 0;
  std::string cpumask_;
  std::vector<uint8_t> buf_;
  uint64_t overruns_ = 0;
  uint64_t malformed_ = 0;
};

/// Reads /sys/devices/system/cpu/possible (e.g. "0-1").
Result<std::string> possibleCpus();

}  // namespace memcg::taskstats
