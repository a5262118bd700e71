// Waiting on many per-CPU ring buffers with one system call, so an idle
// reader costs the same at 2 or 256 CPUs.
//
// The reader used to wake every poll interval and read every CPU's
// trace_pipe_raw without blocking: 5 rounds/s x 256 CPUs is ~1,300 reads a
// second on an idle host, plus the stats files. This waits instead:
//  - wait(): one epoll_wait over every CPU's descriptor and a wake-up
//    eventfd. trace_pipe_raw implements poll (kernel/trace/trace.c
//    tracing_buffers_poll -> ring_buffer_poll_wait): with the instance's
//    buffer_percent at 0 it is readable as soon as the CPU's buffer holds a
//    committed event, and the writer wakes a waiter (by irq_work, so from any
//    context) on the first commit after the waiter armed it; any other
//    buffer_percent means "readable once that share of the buffer is full",
//    which is why TracefsSession sets 0 and falls back to reading every CPU
//    if the kernel keeps another value. Level-triggered: a CPU still holding
//    data stays readable.
//  - ready(): one poll() with a zero timeout over every descriptor: which
//    CPUs hold data now. It asks each buffer directly (no wait queue, no
//    reliance on a wake-up having been delivered), so a CPU it reports empty
//    was empty at that moment: what the reader's watermark needs (see
//    tracefs_session.h) to skip it.
// A descriptor in error (EPOLLERR/EPOLLHUP) counts as ready: its read tells.
// Any descriptor that supports poll works (the bench drives this with pipes
// standing in for CPUs).
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace memcg::tracing {

class CpuPoller {
 public:
  /// An epoll set over `fds` (not owned; they must outlive the poller) and
  /// its own eventfd for wake().
  static Result<CpuPoller> create(const std::vector<int>& fds);
  CpuPoller(CpuPoller&&) = default;
  CpuPoller& operator=(CpuPoller&&) = default;

  enum class Wake { kData, kTimeout, kWoken };
  /// Sleeps until a descriptor is readable (kData), wake() was called
  /// (kWoken; stays so until clearWake()) or `timeout` passed (kTimeout).
  /// A zero timeout only checks.
  Wake wait(std::chrono::milliseconds timeout);
  /// ready[i] = whether fds[i] holds data now (or is in error); returns how
  /// many do.
  size_t ready(std::vector<uint8_t>& ready);
  /// Thread-safe: makes the current or next wait() return kWoken.
  void wake();
  /// Undoes wake().
  void clearWake();
  /// System calls made by wait() and ready() (the reader's cost figures).
  uint64_t syscalls() const { return syscalls_; }

 private:
  CpuPoller() = default;
  Fd epoll_;
  Fd event_;
  std::vector<pollfd> pfds_;
  uint64_t syscalls_ = 0;
};

}  // namespace memcg::tracing
