#include "controller/worker.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/prot.h"

namespace memcg::controller {

double threadCpuSeconds() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void Controller::workerLoop() {
  setThreadPolicy(opts_.schedPolicy);
  pthread_setname_np(pthread_self(), "memcg-ctl-act");
  // The reclaim this thread causes (a v1 limit nudge reclaims in the writer;
  // a v2 memory.reclaim write too) is traced under its tid: mark it as ours,
  // so the vmscan metrics tell it apart from the workload's own reclaim.
  const auto tid = static_cast<int32_t>(::gettid());
  if (attribution_) attribution_->markReclaimer(tid);
  cpu_.start(budgetClock_.readNow(), budgetClock_.readCpu());
  for (;;) {
    std::shared_ptr<Prot> p;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      p = queue_.front();
      queue_.pop_front();
      p->locked.queued = false;
      if (p->locked.removed) continue;
      p->locked.busy = true;
    }
    // The episode's reclaim is charged to its cgroup (kind proactive), not ours.
    if (attribution_) attribution_->beginEpisode(tid, p->p.cgroup);
    episode(p);
    if (attribution_) attribution_->endEpisode(tid);
    bool removed;
    {
      std::lock_guard<std::mutex> g(mu_);
      p->locked.busy = false;
      p->locked.adaptPrimed = true;
      removed = p->locked.removed;
      int cd = opts_.dryRun ? std::max(opts_.cooldownMs, 1000) : opts_.cooldownMs;
      p->locked.cooldownUntil = Clock::now() + std::chrono::milliseconds(cd);
    }
    if (removed) actuator_->releaseJournal(*p->dir);
    stats_->setWorkerCpu(threadCpuSeconds());
  }
  stats_->setWorkerCpu(threadCpuSeconds());
  if (attribution_) attribution_->unmarkReclaimer(tid);
}

void Controller::record(const Prot& p, const ReclaimResult& r, bool first) {
  std::string act(actuatorName(r.actuator));
  std::string res(outcomeName(r.outcome));
  stats_->recordAction(p.p.cgroup, act, res, r.reclaimed);
  uint64_t episode;  // the cgroup's episode this action belongs to (1, 2, ...)
  {
    std::lock_guard<std::mutex> g(mu_);
    episode = p.locked.episodes;
    auto& mp = const_cast<Prot&>(p);
    mp.locked.actions++;
    mp.locked.reclaimed += r.reclaimed;
    mp.locked.lastOutcome = res;
    mp.locked.lastDetail = r.detail;
    mp.locked.lastActionMs = unixMs();
    if (first && (r.outcome == Outcome::kOk || r.outcome == Outcome::kPartial)) {
      double s = std::chrono::duration<double>(r.reclaimedAt - p.locked.triggerAt).count();
      if (s < 0) s = 0;
      stats_->observeLatency(p.locked.triggerSource, s);
    }
  }
  nlohmann::json a = {{"cgroup", p.p.cgroup},
                      {"actuator", act},
                      {"result", res},
                      {"requested_bytes", r.requested},
                      {"reclaimed_bytes", r.reclaimed},
                      {"usage_before_bytes", r.usageBefore},
                      {"usage_after_bytes", r.usageAfter},
                      {"write_seconds", r.writeSeconds},
                      {"trigger", p.locked.triggerSource},
                      {"episode", episode}};
  if (r.actuator == ActuatorKind::kV1LimitNudge) {
    a["original_limit"] = r.original.unlimited ? nlohmann::json("unlimited")
                                               : nlohmann::json(r.original.bytes);
    a["lowered_limit"] = r.lowered;
    a["pair_seconds"] = r.pairSeconds;
  }
  if (!r.detail.empty()) a["detail"] = r.detail;
  audit_->write("reclaim", std::move(a));
}

void Controller::episode(const std::shared_ptr<Prot>& p) {
  std::string buf;
  {
    std::lock_guard<std::mutex> g(mu_);
    p->locked.episodes++;
  }
  for (int i = 0; i < opts_.maxNudgesPerEpisode && !stop_; ++i) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (p->locked.removed) return;
    }
    Reading r = readUsage(*p, buf);
    if (!r.ok || r.unlimited) return;
    // reclaimNeed: to the target margin (at least the start margin).
    uint64_t need;
    {
      std::lock_guard<std::mutex> g(mu_);
      need = reclaimNeed(marginsLocked(*p, r.limit), r.usage, r.limit);
    }
    if (need == 0) return;
    if (opts_.dryRun) {
      stats_->countDryRun();
      {
        std::lock_guard<std::mutex> g(mu_);
        p->locked.lastOutcome = "dry_run";
        p->locked.lastActionMs = unixMs();
      }
      audit_->write("dry_run", {{"cgroup", p->p.cgroup},
                                {"actuator", std::string(actuatorName(
                                                 v2_ ? ActuatorKind::kV2MemoryReclaim
                                                     : ActuatorKind::kV1LimitNudge))},
                                {"would_reclaim_bytes", need},
                                {"usage_bytes", r.usage},
                                {"limit_bytes", r.limit},
                                {"trigger", p->locked.triggerSource}});
      return;
    }
    // Budgets: bytes per second (token bucket, 1 s burst) and CPU per 1 s window.
    Clock::time_point now = budgetClock_.readNow();
    tokens_.refill(now);
    const std::string throttle(throttleReason(cpu_.spent(now, budgetClock_.readCpu()), tokens_));
    if (!throttle.empty()) {
      stats_->countThrottle(throttle);
      std::lock_guard<std::mutex> g(mu_);
      p->locked.lastOutcome = "throttled_" + throttle;
      return;
    }
    need = std::min<uint64_t>(need, static_cast<uint64_t>(tokens_.tokens()));
    ReclaimRequest req{p->p.cgroup, need, p->p.floorBytes, opts_.maxStepBytes};
    ReclaimResult res = v2_ ? actuator_->v2Reclaim(*p->dir, req) : actuator_->v1Nudge(*p->dir, req);
    tokens_.take(static_cast<double>(res.reclaimed));
    record(*p, res, i == 0);
    if (res.outcome != Outcome::kOk) return;
  }
}

}  // namespace memcg::controller
