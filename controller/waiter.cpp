#include "controller/waiter.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cgroupfs/file_names.h"
#include "common/parse.h"
#include "controller/controller.h"
#include "controller/prot.h"

namespace memcg::controller {

using cgroupfs::FileId;

std::string wakeName(bool v2, bool eventArmed, bool psiArmed) {
  std::string w;
  if (eventArmed) w = v2 ? kSrcEvents : kSrcThreshold;
  if (psiArmed) w += w.empty() ? kSrcPsi : std::string("+") + kSrcPsi;
  return w.empty() ? kSrcPoll : w + "+" + kSrcPoll;
}

std::string Controller::wakeName(const Prot& p) const {
  return controller::wakeName(v2_, p.armed.load(), p.psiArmed.load());
}

Result<PsiTrigger> parsePsiTrigger(std::string_view text) {
  PsiTrigger t;
  std::string_view rest = text, kind, stall, window, extra;
  auto word = [&](std::string_view& out) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t n = rest.find(' ');
    out = rest.substr(0, n);
    rest = n == std::string_view::npos ? std::string_view{} : rest.substr(n);
    return !out.empty();
  };
  const char* want =
      "want \"some|full <stall us> <window us>\", e.g. \"some 1000 500000\"";
  if (!word(kind) || !word(stall) || !word(window) || word(extra) ||
      (kind != "some" && kind != "full")) {
    return makeError(EINVAL, std::string(text), want);
  }
  t.full = kind == "full";
  auto s = parseU64(stall), w = parseU64(window);
  if (!s || !w) return makeError(EINVAL, std::string(text), want);
  // The kernel's limits (kernel/sched/psi.c): 500 ms <= window <= 10 s,
  // 0 < stall <= window.
  if (*w < 500000 || *w > 10000000)
    return makeError(EINVAL, std::string(text), "the window must be 500000..10000000 us");
  if (*s == 0 || *s > *w)
    return makeError(EINVAL, std::string(text),
                     "the stall must be > 0 and at most the window");
  t.stallUs = *s;
  t.windowUs = *w;
  return t;
}

Margins Controller::marginsLocked(const Prot& p, uint64_t limit) const {
  return effectiveMargins(p.p, limit, p.locked.adapt.extra, opts_.marginMaxFraction);
}

void Controller::rearm(const std::shared_ptr<Prot>& p, uint64_t limit,
                       uint64_t threshold) {
  if (p->waiter.armFailed && p->waiter.armedFor == limit &&
      (v2_ || p->waiter.armedThreshold == threshold))
    return;
  if (p->waiter.eventFd.valid()) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p->waiter.eventFd.get(), nullptr);
    p->waiter.eventFd.reset();
  }
  p->waiter.armedFor = limit;
  p->waiter.armedThreshold = threshold;
  p->waiter.armFailed = false;
  struct epoll_event ev {};
  ev.data.u64 = epollKey(p->id, false);
  if (!v2_) {
    auto efd = actuator_->armV1Threshold(*p->dir, p->p.cgroup, threshold);
    if (!efd) {
      p->waiter.armFailed = true;
      log::debug("controller: no usage threshold, polling only",
                 kv("cgroup", p->p.cgroup) + " " + kv("err", efd.error().message()));
      return;
    }
    p->waiter.eventFd = std::move(*efd);
    ev.events = EPOLLIN;
  } else {
    // memory.events notifies (POLLPRI) when a key changes: "high"/"max"
    // hits wake us at once; the poll covers the approach.
    if (!opts_.v2WakeEvents) {
      p->waiter.armFailed = true;
      return;
    }
    std::string n(cgroupfs::fileName(FileId::kV2Events));
    Fd fd(::openat(p->dir->fd(), n.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      p->waiter.armFailed = true;
      return;
    }
    p->waiter.eventFd = std::move(fd);
    ev.events = EPOLLPRI;
  }
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p->waiter.eventFd.get(), &ev) != 0) {
    p->waiter.eventFd.reset();
    p->waiter.armFailed = true;
  }
}

void Controller::armPsi(const std::shared_ptr<Prot>& p) {
  auto fd = actuator_->armV2PressureTrigger(*p->dir, p->p.cgroup, opts_.psiTrigger);
  struct epoll_event ev {};
  ev.events = EPOLLPRI;
  ev.data.u64 = epollKey(p->id, true);
  if (fd && ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd->get(), &ev) == 0) {
    p->waiter.psiFd = std::move(*fd);
    p->psiArmed = true;
    return;
  }
  p->waiter.psiFailed = true;
  std::string why =
      fd ? std::string("epoll: ") + std::strerror(errno) : fd.error().message();
  log::info("controller: no PSI trigger, waking on memory.events and the poll",
            kv("cgroup", p->p.cgroup) + " " + kv("err", why));
}

void Controller::check(const std::shared_ptr<Prot>& p, Clock::time_point now,
                       const char* firedBy, std::string& buf, bool& retrySoon) {
  bool busyBefore;
  {
    std::lock_guard<std::mutex> g(mu_);
    busyBefore = p->locked.busy;
  }
  Reading r = readUsage(*p, buf);
  if (r.gone) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (p->locked.removed) return;
      p->locked.removed = true;
      prots_.erase(p->p.cgroup);
    }
    actuator_->releaseJournal(*p->dir);
    audit_->write("unprotect", {{"cgroup", p->p.cgroup}, {"reason", "cgroup removed"}});
    return;
  }
  if (!r.ok) return;
  bool busyAfter;
  uint64_t threshold = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    busyAfter = p->locked.busy;
    if (!r.unlimited && !busyBefore && !busyAfter) {
      // Narrowing only between episodes, so the limit read is the real one.
      narrowIfCalm(p->locked.adapt, p->p, r.limit, opts_.marginMaxFraction, now);
    }
    threshold = v1Threshold(marginsLocked(*p, r.limit), r.limit);
  }
  // Not while a v1 nudge may be in flight: the limit read may be the lowered
  // one, and re-arming for it (then back) would leave a window with no
  // threshold at the right place.
  if (!r.unlimited && !busyBefore && !busyAfter &&
      (!p->waiter.eventFd.valid() || p->waiter.armedFor != r.limit ||
       (!v2_ && p->waiter.armedThreshold != threshold))) {
    rearm(p, r.limit, threshold);
    p->armed = p->waiter.eventFd.valid();
  }
  if (v2_ && opts_.v2WakePsi && !p->waiter.psiFd.valid() && !p->waiter.psiFailed)
    armPsi(p);
  std::lock_guard<std::mutex> g(mu_);
  p->locked.lastUsage = r.usage;
  // A reading taken while a v1 nudge may have had the limit lowered keeps the
  // last real limit (state() and the margin metrics resolve against it).
  if (!busyBefore && !busyAfter) {
    p->locked.lastLimit = r.limit;
    p->locked.lastUnlimited = r.unlimited;
  }
  if (r.unlimited || p->locked.removed) return;
  if (!marginShort(marginsLocked(*p, r.limit), r.usage, r.limit)) {
    p->locked.pendingSource = nullptr;
    if (!busyBefore && !busyAfter) p->locked.adaptPrimed = true;
    return;
  }
  if (p->locked.queued || p->locked.busy) return;
  const char* source = firedBy ? firedBy : kSrcPoll;
  if (now < p->locked.cooldownUntil) {
    retrySoon = true;
    if (!p->locked.pendingSource) {
      p->locked.pendingAt = now;
      p->locked.pendingSource = source;
    }
    return;
  }
  // The overshoot of the wake that queues the episode adapts the margins
  // (margin_adapt.h); not from a reading taken while a nudge may have had the
  // limit lowered; not in dry-run (nothing is reclaimed, the margin stays short).
  if (p->locked.adaptPrimed && !busyBefore && !busyAfter && !opts_.dryRun &&
      opts_.marginMaxFraction > 0)
    observeShortWake(p->locked.adapt, p->p, r.usage, r.limit, opts_.marginMaxFraction,
                     now);
  p->locked.queued = true;
  p->locked.triggerAt = p->locked.pendingSource ? p->locked.pendingAt : now;
  p->locked.triggerSource = p->locked.pendingSource ? p->locked.pendingSource : source;
  p->locked.pendingSource = nullptr;
  queue_.push_back(p);
  cv_.notify_one();
}

void Controller::waiterLoop() {
  setThreadPolicy(opts_.schedPolicy);
  pthread_setname_np(pthread_self(), "memcg-ctl-wait");
  std::string buf;
  struct epoll_event evs[32];
  bool retrySoon = false;
  while (!stop_) {
    // A cgroup in its cooldown is retried when the cooldown ends, but never
    // later than the next poll: the others are polled on time.
    int timeout = retrySoon ? std::max(1, std::min(opts_.cooldownMs, opts_.pollIntervalMs))
                            : opts_.pollIntervalMs;
    int n = ::epoll_wait(epoll_.get(), evs, 32, timeout);
    Clock::time_point now = Clock::now();
    if (stop_) break;
    std::vector<std::shared_ptr<Prot>> list;
    std::vector<std::shared_ptr<Prot>> dead;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto it = byId_.begin(); it != byId_.end();) {
        if (it->second->locked.removed) {
          dead.push_back(it->second);
          it = byId_.erase(it);
        } else {
          list.push_back(it->second);
          ++it;
        }
      }
    }
    for (auto& d : dead) {
      for (Fd* f : {&d->waiter.eventFd, &d->waiter.psiFd}) {
        if (f->valid()) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, f->get(), nullptr);
        f->reset();  // closing the eventfd drops the threshold; the PSI fd, the trigger
      }
    }
    for (int i = 0; i < n; ++i) {
      uint64_t key = evs[i].data.u64;
      if (key == kWakeId) {
        uint64_t v;
        (void)!::read(wake_.get(), &v, sizeof v);
        continue;
      }
      const bool psi = epollKeyIsPsi(key);
      for (auto& p : list) {
        if (p->id != epollKeyId(key)) continue;
        const char* src;
        if (psi) {
          // POLLPRI = the trigger fired (epoll's poll call consumed it);
          // POLLERR = the trigger is gone (cgroup removed): stop polling it.
          if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
            ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p->waiter.psiFd.get(), nullptr);
            p->waiter.psiFd.reset();
            p->waiter.psiFailed = true;
            p->psiArmed = false;
            continue;
          }
          src = kSrcPsi;
        } else if (!v2_) {
          uint64_t v;
          (void)!::read(p->waiter.eventFd.get(), &v, sizeof v);
          src = kSrcThreshold;
        } else {
          char tmp[512];
          (void)!::pread(p->waiter.eventFd.get(), tmp, sizeof tmp, 0);  // re-arms POLLPRI
          src = kSrcEvents;
        }
        if (!p->waiter.firedBy) p->waiter.firedBy = src;  // the first source of this wake
      }
    }
    retrySoon = false;
    for (auto& p : list) {
      check(p, now, p->waiter.firedBy, buf, retrySoon);
      p->waiter.firedBy = nullptr;
    }
    stats_->setWaiterCpu(threadCpuSeconds());
  }
  // Unregister all thresholds on the way out.
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [_, p] : byId_) {
    p->waiter.eventFd.reset();
    p->waiter.psiFd.reset();
  }
}

}  // namespace memcg::controller
