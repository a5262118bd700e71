#include "controller/worker.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "controller/actuator.h"
#include "controller/audit_log.h"
#include "controller/episode_queue.h"
#include "controller/prot.h"
#include "controller/state.h"
#include "tracing/attribution.h"

namespace memcg::controller {

double threadCpuSeconds() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Worker::Worker(ThreadParts parts, Reclaimer& reclaimer, AuditLog& audit,
               tracing::ReclaimAttribution* attribution, BudgetClock budgetClock)
    : parts_(parts),
      opts_(parts.opts),
      reclaimer_(reclaimer),
      audit_(audit),
      attribution_(attribution),
      budgetClock_(std::move(budgetClock)) {}

Worker::~Worker() { stop(); }

void Worker::start() {
  if (started_) return;
  stop_ = false;
  parts_.queue.restart();
  tokens_ = TokenBucket(static_cast<double>(opts_.maxBytesPerSecond), budgetClock_.readNow());
  cpu_ = CpuBudget(opts_.cpuBudget);
  thread_ = std::thread([this] { loop(); });
  started_ = true;
}

void Worker::stop() {
  if (!started_) return;
  stop_ = true;
  parts_.queue.stop();
  thread_.join();
  started_ = false;
}

void Worker::loop() {
  setThreadPolicy(opts_.schedPolicy);
  pthread_setname_np(pthread_self(), "memcg-ctl-act");
  // The reclaim this thread causes (a v1 limit nudge reclaims in the writer;
  // a v2 memory.reclaim write too) is traced under its tid: mark it as ours,
  // so the vmscan metrics tell it apart from the workload's own reclaim.
  const auto tid = static_cast<int32_t>(::gettid());
  if (attribution_) attribution_->markReclaimer(tid);
  cpu_.start(budgetClock_.readNow(), budgetClock_.readCpu());
  for (;;) {
    std::shared_ptr<Prot> p = parts_.queue.pop();
    if (!p) break;  // stopped
    {
      std::lock_guard<std::mutex> g(p->mu);
      p->locked.queued = false;
      if (p->locked.removed) continue;
      p->locked.busy = true;
    }
    // The episode's reclaim is charged to its cgroup (kind proactive), not ours.
    if (attribution_) attribution_->beginEpisode(tid, p->p.cgroup);
    episode(*p);
    if (attribution_) attribution_->endEpisode(tid);
    bool removed;
    {
      std::lock_guard<std::mutex> g(p->mu);
      p->locked.busy = false;
      p->locked.adaptPrimed = true;
      removed = p->locked.removed;
      int cd = opts_.dryRun ? std::max(opts_.cooldownMs, 1000) : opts_.cooldownMs;
      p->locked.cooldownUntil = Clock::now() + std::chrono::milliseconds(cd);
    }
    if (removed) reclaimer_.releaseJournal(*p->dir);
    parts_.stats.setWorkerCpu(threadCpuSeconds());
  }
  parts_.stats.setWorkerCpu(threadCpuSeconds());
  if (attribution_) attribution_->unmarkReclaimer(tid);
}

void Worker::record(Prot& p, const ReclaimResult& r, bool first) {
  std::string act(actuatorName(r.actuator));
  std::string res(outcomeName(r.outcome));
  parts_.stats.recordAction(p.p.cgroup, act, res, r.reclaimed);
  uint64_t episode;  // the cgroup's episode this action belongs to (1, 2, ...)
  std::string trigger;
  {
    std::lock_guard<std::mutex> g(p.mu);
    episode = p.locked.episodes;
    trigger = p.locked.triggerSource;
    p.locked.actions++;
    p.locked.reclaimed += r.reclaimed;
    p.locked.lastOutcome = res;
    p.locked.lastDetail = r.detail;
    p.locked.lastActionMs = unixMs();
    if (first && (r.outcome == Outcome::kOk || r.outcome == Outcome::kPartial)) {
      double s = std::chrono::duration<double>(r.reclaimedAt - p.locked.triggerAt).count();
      if (s < 0) s = 0;
      parts_.stats.observeLatency(p.locked.triggerSource, s);
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
                      {"trigger", trigger},
                      {"episode", episode}};
  if (r.actuator == ActuatorKind::kV1LimitNudge) {
    a["original_limit"] = r.original.unlimited ? nlohmann::json("unlimited")
                                               : nlohmann::json(r.original.bytes);
    a["lowered_limit"] = r.lowered;
    a["pair_seconds"] = r.pairSeconds;
  }
  if (!r.detail.empty()) a["detail"] = r.detail;
  audit_.write("reclaim", std::move(a));
}

void Worker::episode(Prot& p) {
  std::string buf;
  std::string trigger;
  {
    std::lock_guard<std::mutex> g(p.mu);
    p.locked.episodes++;
    trigger = p.locked.triggerSource;
  }
  for (int i = 0; i < opts_.maxNudgesPerEpisode && !stop_; ++i) {
    {
      std::lock_guard<std::mutex> g(p.mu);
      if (p.locked.removed) return;
    }
    Reading r = readUsage(p, parts_.v2, buf);
    if (!r.ok || r.unlimited) return;
    // reclaimNeed: to the target margin (at least the start margin).
    uint64_t need;
    {
      std::lock_guard<std::mutex> g(p.mu);
      need = reclaimNeed(p.marginsLocked(r.limit, opts_.marginMaxFraction), r.usage, r.limit);
    }
    if (need == 0) return;
    if (opts_.dryRun) {
      parts_.stats.countDryRun();
      {
        std::lock_guard<std::mutex> g(p.mu);
        p.locked.lastOutcome = "dry_run";
        p.locked.lastActionMs = unixMs();
      }
      audit_.write("dry_run", {{"cgroup", p.p.cgroup},
                                {"actuator", std::string(actuatorName(
                                                 parts_.v2 ? ActuatorKind::kV2MemoryReclaim
                                                     : ActuatorKind::kV1LimitNudge))},
                                {"would_reclaim_bytes", need},
                                {"usage_bytes", r.usage},
                                {"limit_bytes", r.limit},
                                {"trigger", trigger}});
      return;
    }
    // Budgets: bytes per second (token bucket, 1 s burst) and CPU per 1 s window.
    Clock::time_point now = budgetClock_.readNow();
    tokens_.refill(now);
    const std::string throttle(throttleReason(cpu_.spent(now, budgetClock_.readCpu()), tokens_));
    if (!throttle.empty()) {
      parts_.stats.countThrottle(throttle);
      std::lock_guard<std::mutex> g(p.mu);
      p.locked.lastOutcome = "throttled_" + throttle;
      return;
    }
    need = std::min<uint64_t>(need, static_cast<uint64_t>(tokens_.tokens()));
    ReclaimRequest req{p.p.cgroup, need, p.p.floorBytes, opts_.maxStepBytes};
    ReclaimResult res =
        parts_.v2 ? reclaimer_.v2Reclaim(*p.dir, req) : reclaimer_.v1Nudge(*p.dir, req);
    tokens_.take(static_cast<double>(res.reclaimed));
    record(p, res, i == 0);
    if (res.outcome != Outcome::kOk) return;
  }
}

}  // namespace memcg::controller
