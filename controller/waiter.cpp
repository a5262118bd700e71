#include "controller/waiter.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cgroupfs/file_names.h"
#include "common/parse.h"
#include "controller/actuator.h"
#include "controller/episode_queue.h"
#include "controller/prot.h"
#include "controller/protection_table.h"
#include "controller/state.h"
#include "controller/worker.h"

namespace memcg::controller {

using cgroupfs::FileId;

std::string wakeName(bool v2, bool eventArmed, bool psiArmed) {
  std::string w;
  if (eventArmed) w = v2 ? kSrcEvents : kSrcThreshold;
  if (psiArmed) w += w.empty() ? kSrcPsi : std::string("+") + kSrcPsi;
  return w.empty() ? kSrcPoll : w + "+" + kSrcPoll;
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

Waiter::Waiter(ThreadParts parts, ProtectionTable& table, WakeArming& arming,
               std::function<void(const Prot&)> onGone)
    : parts_(parts), opts_(parts.opts), table_(table), arming_(arming), onGone_(std::move(onGone)) {}

Waiter::~Waiter() { stop(); }

std::string Waiter::wakeName(const Prot& p) const {
  return controller::wakeName(parts_.v2, p.armed.load(), p.psiArmed.load());
}

void Waiter::start() {
  if (started_) return;
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_.valid() || !wake_.valid()) throw std::runtime_error("controller: epoll/eventfd failed");
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
  started_ = true;
}

void Waiter::stop() {
  if (!started_) return;
  stop_ = true;
  wake();
  thread_.join();
  started_ = false;
}

void Waiter::wake() {
  if (!wake_.valid()) return;
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

void Waiter::rearm(const Prot& p, Arm& a, uint64_t limit, uint64_t threshold) {
  if (a.armFailed && a.armedFor == limit && (parts_.v2 || a.armedThreshold == threshold)) return;
  if (a.eventFd.valid()) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, a.eventFd.get(), nullptr);
    a.eventFd.reset();
  }
  a.armedFor = limit;
  a.armedThreshold = threshold;
  a.armFailed = false;
  struct epoll_event ev {};
  ev.data.u64 = epollKey(p.id, false);
  if (!parts_.v2) {
    auto efd = arming_.armV1Threshold(*p.dir, p.p.cgroup, threshold);
    if (!efd) {
      a.armFailed = true;
      log::debug("controller: no usage threshold, polling only",
                 kv("cgroup", p.p.cgroup) + " " + kv("err", efd.error().message()));
      return;
    }
    a.eventFd = std::move(*efd);
    ev.events = EPOLLIN;
  } else {
    // memory.events notifies (POLLPRI) when a key changes: "high"/"max"
    // hits wake us at once; the poll covers the approach.
    if (!opts_.v2WakeEvents) {
      a.armFailed = true;
      return;
    }
    std::string n(cgroupfs::fileName(FileId::kV2Events));
    Fd fd(::openat(p.dir->fd(), n.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      a.armFailed = true;
      return;
    }
    a.eventFd = std::move(fd);
    ev.events = EPOLLPRI;
  }
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, a.eventFd.get(), &ev) != 0) {
    a.eventFd.reset();
    a.armFailed = true;
  }
}

void Waiter::armPsi(Prot& p, Arm& a) {
  auto fd = arming_.armV2PressureTrigger(*p.dir, p.p.cgroup, opts_.psiTrigger);
  struct epoll_event ev {};
  ev.events = EPOLLPRI;
  ev.data.u64 = epollKey(p.id, true);
  if (fd && ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd->get(), &ev) == 0) {
    a.psiFd = std::move(*fd);
    p.psiArmed = true;
    return;
  }
  a.psiFailed = true;
  std::string why =
      fd ? std::string("epoll: ") + std::strerror(errno) : fd.error().message();
  log::info("controller: no PSI trigger, waking on memory.events and the poll",
            kv("cgroup", p.p.cgroup) + " " + kv("err", why));
}

void Waiter::drop(Arm& a) {
  for (Fd* f : {&a.eventFd, &a.psiFd}) {
    if (f->valid()) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, f->get(), nullptr);
    f->reset();  // closing the eventfd drops the threshold; the PSI fd, the trigger
  }
}

void Waiter::check(const std::shared_ptr<Prot>& p, Arm& a, Clock::time_point now,
                   std::string& buf, bool& retrySoon) {
  const double maxFraction = opts_.marginMaxFraction;
  bool busyBefore;
  {
    std::lock_guard<std::mutex> g(p->mu);
    busyBefore = p->locked.busy;
  }
  Reading r = readUsage(*p, parts_.v2, buf);
  if (r.gone) {
    if (table_.removeGone(p)) onGone_(*p);
    return;
  }
  if (!r.ok) return;
  bool busyAfter;
  uint64_t threshold = 0;
  {
    std::lock_guard<std::mutex> g(p->mu);
    busyAfter = p->locked.busy;
    if (!r.unlimited && !busyBefore && !busyAfter) {
      // Narrowing only between episodes, so the limit read is the real one.
      narrowIfCalm(p->locked.adapt, p->p, r.limit, maxFraction, now);
    }
    threshold = v1Threshold(p->marginsLocked(r.limit, maxFraction), r.limit);
  }
  // Not while a v1 nudge may be in flight: the limit read may be the lowered
  // one, and re-arming for it (then back) would leave a window with no
  // threshold at the right place.
  if (!r.unlimited && !busyBefore && !busyAfter &&
      (!a.eventFd.valid() || a.armedFor != r.limit || (!parts_.v2 && a.armedThreshold != threshold))) {
    rearm(*p, a, r.limit, threshold);
    p->armed = a.eventFd.valid();
  }
  if (parts_.v2 && opts_.v2WakePsi && !a.psiFd.valid() && !a.psiFailed) armPsi(*p, a);
  {
    std::lock_guard<std::mutex> g(p->mu);
    p->locked.lastUsage = r.usage;
    // A reading taken while a v1 nudge may have had the limit lowered keeps
    // the last real limit (state() and the margin metrics resolve against it).
    if (!busyBefore && !busyAfter) {
      p->locked.lastLimit = r.limit;
      p->locked.lastUnlimited = r.unlimited;
    }
    if (r.unlimited || p->locked.removed) return;
    if (!marginShort(p->marginsLocked(r.limit, maxFraction), r.usage, r.limit)) {
      p->locked.pendingSource = nullptr;
      if (!busyBefore && !busyAfter) p->locked.adaptPrimed = true;
      return;
    }
    if (p->locked.queued || p->locked.busy) return;
    const char* source = a.firedBy ? a.firedBy : kSrcPoll;
    if (now < p->locked.cooldownUntil) {
      retrySoon = true;
      if (!p->locked.pendingSource) {
        p->locked.pendingAt = now;
        p->locked.pendingSource = source;
      }
      return;
    }
    // The overshoot of the wake that queues the episode adapts the margins
    // (margin_adapt.h); not from a reading taken while a nudge may have had
    // the limit lowered; not in dry-run (nothing is reclaimed, the margin
    // stays short).
    if (p->locked.adaptPrimed && !busyBefore && !busyAfter && !opts_.dryRun && maxFraction > 0)
      observeShortWake(p->locked.adapt, p->p, r.usage, r.limit, maxFraction, now);
    // Queued once: `queued` stays set until the worker pops it.
    p->locked.queued = true;
    p->locked.triggerAt = p->locked.pendingSource ? p->locked.pendingAt : now;
    p->locked.triggerSource = p->locked.pendingSource ? p->locked.pendingSource : source;
    p->locked.pendingSource = nullptr;
  }
  parts_.queue.push(p);
}

void Waiter::loop() {
  setThreadPolicy(opts_.schedPolicy);
  pthread_setname_np(pthread_self(), "memcg-ctl-wait");
  std::string buf;
  struct epoll_event evs[32];
  bool retrySoon = false;
  std::vector<std::shared_ptr<Prot>> live, dead;
  while (!stop_) {
    // A cgroup in its cooldown is retried when the cooldown ends, but never
    // later than the next poll: the others are polled on time.
    int timeout = retrySoon ? std::max(1, std::min(opts_.cooldownMs, opts_.pollIntervalMs))
                            : opts_.pollIntervalMs;
    int n = ::epoll_wait(epoll_.get(), evs, 32, timeout);
    Clock::time_point now = Clock::now();
    if (stop_) break;
    live.clear();
    dead.clear();
    table_.sweep(live, dead);
    for (auto& d : dead) {
      auto it = arms_.find(d->id);
      if (it == arms_.end()) continue;
      drop(it->second);
      arms_.erase(it);
    }
    for (auto& p : live) arms_.try_emplace(p->id);
    for (int i = 0; i < n; ++i) {
      uint64_t key = evs[i].data.u64;
      if (key == kWakeId) {
        uint64_t v;
        (void)!::read(wake_.get(), &v, sizeof v);
        continue;
      }
      auto it = arms_.find(epollKeyId(key));
      if (it == arms_.end()) continue;
      Arm& a = it->second;
      const char* src;
      if (epollKeyIsPsi(key)) {
        // POLLPRI = the trigger fired (epoll's poll call consumed it);
        // POLLERR = the trigger is gone (cgroup removed): stop polling it.
        if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
          ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, a.psiFd.get(), nullptr);
          a.psiFd.reset();
          a.psiFailed = true;
          for (auto& p : live)
            if (p->id == it->first) p->psiArmed = false;
          continue;
        }
        src = kSrcPsi;
      } else if (!parts_.v2) {
        uint64_t v;
        (void)!::read(a.eventFd.get(), &v, sizeof v);
        src = kSrcThreshold;
      } else {
        char tmp[512];
        (void)!::pread(a.eventFd.get(), tmp, sizeof tmp, 0);  // re-arms POLLPRI
        src = kSrcEvents;
      }
      if (!a.firedBy) a.firedBy = src;  // the first source of this wake
    }
    retrySoon = false;
    for (auto& p : live) {
      Arm& a = arms_.at(p->id);
      check(p, a, now, buf, retrySoon);
      a.firedBy = nullptr;
    }
    parts_.stats.setWaiterCpu(threadCpuSeconds());
  }
  // Unregister all thresholds and triggers on the way out.
  for (auto& [_, a] : arms_) drop(a);
  arms_.clear();
}

}  // namespace memcg::controller
