#include "tracing/cpu_poller.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cerrno>

namespace memcg::tracing {

Result<CpuPoller> CpuPoller::create(const std::vector<int>& fds) {
  CpuPoller p;
  p.epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!p.epoll_.valid()) return makeError(errno, "epoll_create1");
  p.event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!p.event_.valid()) return makeError(errno, "eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = fds.size();  // the eventfd: one past the descriptors
  if (::epoll_ctl(p.epoll_.get(), EPOLL_CTL_ADD, p.event_.get(), &ev) != 0) {
    return makeError(errno, "epoll_ctl(eventfd)");
  }
  p.pfds_.reserve(fds.size());
  for (size_t i = 0; i < fds.size(); ++i) {
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (::epoll_ctl(p.epoll_.get(), EPOLL_CTL_ADD, fds[i], &ev) != 0) {
      return makeError(errno, "epoll_ctl(fd " + std::to_string(fds[i]) + ")");
    }
    p.pfds_.push_back(pollfd{fds[i], POLLIN, 0});
  }
  return p;
}

CpuPoller::Wake CpuPoller::wait(std::chrono::milliseconds timeout) {
  // A handful is enough: which CPUs are ready is asked by ready(), this only
  // sleeps until one is (or the eventfd).
  epoll_event evs[8];
  const long long ms = timeout.count();
  const int t = ms < 0 ? 0 : ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
  for (;;) {
    ++syscalls_;
    const int n = ::epoll_wait(epoll_.get(), evs, 8, t);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Wake::kTimeout;  // EBADF/EINVAL cannot happen on our own set
    }
    if (n == 0) return Wake::kTimeout;
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.u64 == pfds_.size()) return Wake::kWoken;
    }
    return Wake::kData;
  }
}

size_t CpuPoller::ready(std::vector<uint8_t>& ready) {
  ready.assign(pfds_.size(), 0);
  if (pfds_.empty()) return 0;
  for (;;) {
    ++syscalls_;
    const int n = ::poll(pfds_.data(), pfds_.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      ready.assign(pfds_.size(), 1);  // cannot tell: read them all
      return pfds_.size();
    }
    break;
  }
  size_t count = 0;
  for (size_t i = 0; i < pfds_.size(); ++i) {
    if (pfds_[i].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) {
      ready[i] = 1;
      ++count;
    }
  }
  return count;
}

void CpuPoller::wake() {
  const uint64_t one = 1;
  (void)!::write(event_.get(), &one, sizeof one);
}

void CpuPoller::clearWake() {
  uint64_t v = 0;
  (void)!::read(event_.get(), &v, sizeof v);
}

}  // namespace memcg::tracing
