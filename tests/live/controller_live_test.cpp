// The controller on the real kernel (root, cgroup v1 memory): (a) protection
// takes limit reclaim off a streaming reader's path, (b) SIGKILL between
// lowering and restoring the limit is undone by the journal at the next
// start, (c) a cgroup outside the allow-list (and the root) is never written,
// (d) the adaptive start margin widens under a fast reader and narrows back.
// Every memcg is memcg_exporter_test_ctl_<pid>_* and removed on scope exit.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <thread>

#include "controller/controller.h"
#include "tests/support/controller_fixture.h"
#include "tests/support/controller_live_support.h"

namespace memcg::controller {
namespace {

using live::TestCgroup;
using testing::MiB;

constexpr uint64_t kFileBytes = 1024 * MiB;
constexpr uint64_t kLimit = 256 * MiB;

class ControllerLive : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = live::skipReason();
    if (!why.empty()) GTEST_SKIP() << why;
    file_ = "/var/tmp/memcg_exporter_test_ctl_" + std::to_string(::getpid()) + ".dat";
    ASSERT_TRUE(live::ensureFile(file_, kFileBytes)) << "cannot create " << file_;
    DiscoveryOptions d;
    discovery_ = std::make_unique<Discovery>(d);
    walks_ = std::make_unique<WalkScheduler>(*discovery_);
    ASSERT_NE(discovery_->layout().mode, CgroupMode::kV2);  // v1 or hybrid: v1 memory
    opts_.enable = true;
    opts_.allow = "/memcg_exporter_test_ctl_" + std::to_string(::getpid()) +
                  "_(prot|victim|ok|adapt)";
    opts_.journal = tmp_.path("journal");
    opts_.auditLog = tmp_.path("audit.jsonl");
  }
  void TearDown() override {
    if (!file_.empty()) ::unlink(file_.c_str());
  }

  testing::TempTree tmp_;
  std::string file_;
  std::unique_ptr<Discovery> discovery_;
  std::unique_ptr<WalkScheduler> walks_;
  ControllerOptions opts_;
};

TEST_F(ControllerLive, ProtectionTakesReclaimOffTheWorkload) {
  TestCgroup cg("prot", kLimit);
  ASSERT_TRUE(cg.ok());
  ASSERT_TRUE(discovery_->refresh().ok());
  auto run = [&] {
    live::dropCache(file_);
    cg.resetCounters();
    auto r = live::runReader(cg.path(), file_);
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.bytes, kFileBytes);
    return std::pair<uint64_t, live::ReaderResult>(cg.u64("memory.failcnt"), r);
  };
  std::vector<uint64_t> off, on;
  std::vector<double> meanLatency;  // seconds, one a run with threshold episodes
  for (int i = 0; i < 3; ++i) {
    off.push_back(run().first);
    Controller c(opts_, *walks_);
    c.start();
    ASSERT_FALSE(c.protect({cg.label(), 64 * MiB, 128 * MiB, 0}));
    auto [failcnt, r] = run();
    on.push_back(failcnt);
    metrics::Sink s;
    c.collect(s);
    c.stop();
    EXPECT_EQ(cg.u64("memory.limit_in_bytes"), kLimit) << "limit not restored";
    // The trigger-to-reclaim latency is observed on the eventfd path (the
    // threshold is what wakes it; the 50 ms poll is the fallback).
    std::map<std::string, std::pair<uint64_t, double>> lat;
    for (const auto& f : s.families()) {
      if (f.desc->name != "memcg_controller_trigger_to_reclaim_seconds") continue;
      for (const auto& h : f.histograms) lat[std::string(h.values[0])] = {h.count, h.sum};
    }
    ASSERT_EQ(lat.size(), 2u);  // v1: threshold and poll
    const auto [n, sum] = lat["threshold"];
    EXPECT_GT(n, 0u) << "no episode woken by the threshold eventfd";
    if (n > 0) meanLatency.push_back(sum / static_cast<double>(n));
    std::printf("  trigger_to_reclaim: threshold n=%llu mean %.2f ms; poll n=%llu\n",
                (unsigned long long)n, n ? sum / static_cast<double>(n) * 1000 : 0.0,
                (unsigned long long)lat["poll"].first);
    std::printf(
        "run %d: failcnt off=%llu on=%llu (on: wall %.2fs p99 %.2fms max %.2fms)\n", i,
        (unsigned long long)off.back(), (unsigned long long)failcnt, r.wallSeconds,
        r.p99ReadMs, r.maxReadMs);
  }
  std::sort(off.begin(), off.end());
  std::sort(on.begin(), on.end());
  std::printf("median failcnt: off=%llu on=%llu\n", (unsigned long long)off[1],
              (unsigned long long)on[1]);
  // Wake -> return of the reclaiming write: a few ms here (the write itself
  // reclaims 64+ MiB). The bound is on the median of the three runs' means,
  // so one run descheduled on a loaded machine (other sessions' builds)
  // does not fail it; a controller that waited for its poll or stalled
  // misses it in every run.
  if (!meanLatency.empty()) {
    std::sort(meanLatency.begin(), meanLatency.end());
    const double med = meanLatency[meanLatency.size() / 2];
    std::printf("trigger_to_reclaim (threshold): median of %zu run means %.2f ms (bound 100 ms)\n",
                meanLatency.size(), med * 1000);
    EXPECT_LT(med, 0.1);
  }
  EXPECT_GT(off[1], 50u) << "the unprotected reader should hit its limit";
  EXPECT_LE(on[1] * 5, off[1])
      << "protection should cut the workload's limit hits >= 80%";
}

TEST_F(ControllerLive, KillBetweenLowerAndRestoreIsUndoneAtRestart) {
  TestCgroup cg("victim", kLimit);
  ASSERT_TRUE(cg.ok());
  // Fill it with page cache (usage at the limit).
  live::dropCache(file_);
  ASSERT_TRUE(live::runReader(cg.path(), file_).ok);
  ASSERT_GT(cg.u64("memory.usage_in_bytes"), 200 * MiB);
  ASSERT_TRUE(discovery_->refresh().ok());
  auto dir = discovery_->find(cg.label());
  ASSERT_TRUE(dir);

  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The "exporter": journals, lowers, then stops dead before restoring.
    ::close(p[0]);
    auto j = Journal::open(opts_.journal);
    if (!j) _exit(3);
    ActuatorOptions o;
    o.allowed = [](std::string_view) { return true; };
    o.afterLower = [&] {
      (void)!::write(p[1], "x", 1);
      for (;;) ::pause();
    };
    Actuator a(o, j->get());
    (void)a.v1Nudge(*dir, {cg.label(), 64 * MiB, 16 * MiB, 256 * MiB});
    _exit(4);
  }
  ::close(p[1]);
  struct pollfd pfd {
    p[0], POLLIN, 0
  };
  ASSERT_EQ(::poll(&pfd, 1, 10000), 1) << "child never lowered the limit";
  char c;
  ASSERT_EQ(::read(p[0], &c, 1), 1);
  ::close(p[0]);
  uint64_t lowered = cg.u64("memory.limit_in_bytes");
  EXPECT_LT(lowered, kLimit);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(cg.u64("memory.limit_in_bytes"), lowered) << "still lowered after the kill";

  // "Restart": the controller replays its journal at construction.
  Controller ctl(opts_, *walks_);
  EXPECT_EQ(ctl.startupRecovery().pending, 1u);
  EXPECT_EQ(ctl.startupRecovery().restored, 1u);
  EXPECT_EQ(cg.u64("memory.limit_in_bytes"), kLimit);
  metrics::Sink s;
  ctl.collect(s);
  bool seen = false;
  for (const auto& f : s.families()) {
    if (f.desc->name == "memcg_controller_journal_restores_total") {
      seen = true;
      EXPECT_EQ(f.samples.at(0).value, 1.0);
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_NE(tmp_.read("audit.jsonl").find("\"event\":\"journal_restore\""),
            std::string::npos);
}

TEST_F(ControllerLive, OutsideTheAllowListIsNeverWritten) {
  TestCgroup deny("deny", kLimit);
  TestCgroup ok("ok", kLimit);
  ASSERT_TRUE(deny.ok() && ok.ok());
  ASSERT_TRUE(discovery_->refresh().ok());
  const std::vector<std::string> files = {"memory.limit_in_bytes",
                                          "memory.soft_limit_in_bytes",
                                          "memory.swappiness",
                                          "memory.oom_control",
                                          "memory.use_hierarchy",
                                          "memory.move_charge_at_immigrate",
                                          "memory.memsw.limit_in_bytes",
                                          "memory.kmem.limit_in_bytes",
                                          "memory.kmem.tcp.limit_in_bytes"};
  auto snapshot = [&](const std::string& dir) {
    std::map<std::string, std::string> m;
    for (const auto& f : files) m[f] = live::readText(dir + "/" + f);
    return m;
  };
  auto before = snapshot(deny.path());
  auto rootBefore = snapshot(live::kV1Root);
  {
    Controller c(opts_, *walks_);
    c.start();
    auto e = c.protect({deny.label(), 64 * MiB, 128 * MiB, 0});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, ErrorKind::kForbidden);
    e = c.protect({"/", 64 * MiB, 128 * MiB, 0});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, ErrorKind::kForbidden);
    ASSERT_FALSE(c.protect({ok.label(), 64 * MiB, 128 * MiB, 0}));
    // Both stream while the controller runs; only "ok" is helped.
    live::dropCache(file_);
    deny.resetCounters();
    auto r = live::runReader(deny.path(), file_);
    EXPECT_TRUE(r.ok);
    live::dropCache(file_);
    EXPECT_TRUE(live::runReader(ok.path(), file_).ok);
    c.stop();
  }
  EXPECT_GT(deny.u64("memory.failcnt"), 0u) << "the denied cgroup was not helped";
  EXPECT_EQ(snapshot(deny.path()), before);
  EXPECT_EQ(snapshot(live::kV1Root), rootBefore);
  std::string audit = tmp_.read("audit.jsonl");
  EXPECT_EQ(audit.find(deny.label()), std::string::npos);
  EXPECT_NE(audit.find(ok.label()), std::string::npos);
}

// The adaptive start margin (margin_adapt.h) on the real kernel: a fast
// reader (ext4 on a loop device over /dev/shm, 1 MiB reads) wakes the
// controller far past a small start margin, so the margin in force widens;
// never above the bound (half the limit), never below the configured start.
// Calm again (the reader gone), it narrows back to the configured margin.
// Asserted on Controller::state(), the JSON GET /api/v1/controller/state
// serves, sampled every 5 ms.
TEST_F(ControllerLive, AdaptiveMarginWidensUnderAFastReaderAndNarrowsBack) {
  live::FastFs fs("ctl", kFileBytes + 128 * MiB);
  ASSERT_TRUE(fs.ok()) << "needs mkfs.ext4, losetup and /dev/shm";
  ASSERT_TRUE(live::ensureFile(fs.file(), kFileBytes));
  TestCgroup cg("adapt", kLimit);
  ASSERT_TRUE(cg.ok());
  ASSERT_TRUE(discovery_->refresh().ok());
  constexpr uint64_t kStart = 1 * MiB, kTarget = 4 * MiB;
  Controller c(opts_, *walks_);
  c.start();
  ASSERT_FALSE(c.protect({cg.label(), kStart, kTarget, 0}));
  struct Sample {
    uint64_t eff = 0, ceiling = 0, widenings = 0, narrowings = 0, maxOvershoot = 0;
  };
  auto sample = [&] {
    nlohmann::json s = c.state();
    Sample x;
    if (s["protections"].size() != 1) return x;
    const auto& j = s["protections"][0];
    x.eff = j["start_margin_effective_bytes"].get<uint64_t>();
    x.ceiling = j["margin_adapt"]["start_ceiling_bytes"].get<uint64_t>();
    x.widenings = j["margin_adapt"]["widenings"].get<uint64_t>();
    x.narrowings = j["margin_adapt"]["narrowings"].get<uint64_t>();
    x.maxOvershoot = j["margin_adapt"]["max_overshoot_bytes"].get<uint64_t>();
    EXPECT_EQ(j["start_margin_bytes"].get<uint64_t>(), kStart);  // the API's meaning kept
    return x;
  };
  std::atomic<bool> done{false};
  uint64_t maxEff = 0, minEff = UINT64_MAX;
  std::thread sampler([&] {
    while (!done) {
      Sample x = sample();
      maxEff = std::max(maxEff, x.eff);
      minEff = std::min(minEff, x.eff);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  // Two passes, and more (8 at most) until one widened: on a loaded machine
  // the reader is slower and a pass may never outrun the controller.
  for (int pass = 0; pass < 8 && (pass < 2 || sample().widenings == 0); ++pass) {
    live::dropCache(fs.file());
    auto r = live::runReader(cg.path(), fs.file(), {}, 1 << 20);
    EXPECT_TRUE(r.ok);
    std::printf(
        "  pass %d: %.2f GB/s\n", pass,
        r.wallSeconds > 0 ? static_cast<double>(r.bytes) / r.wallSeconds / 1e9 : 0.0);
  }
  done = true;
  sampler.join();
  // The last pass's final wake may still be handled after the reader
  // returned (a widening from it came 20 -> 54 MiB into the calm phase once
  // under ASan): calm starts when no widening came for 1 s (10 s at most).
  Sample busy = sample();
  Sample settled = busy;
  for (int quiet = 0, i = 0; quiet < 10 && i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const Sample now = sample();
    quiet = now.widenings == settled.widenings ? quiet + 1 : 0;
    maxEff = std::max(maxEff, now.eff);
    settled = now;
  }
  busy.widenings = settled.widenings;
  std::printf(
      "under the reader: start margin in force %.1f..%.1f MiB (configured %.0f, ceiling "
      "%.0f), widenings %llu, largest overshoot at wake %.1f MiB\n",
      static_cast<double>(minEff) / MiB, static_cast<double>(maxEff) / MiB,
      static_cast<double>(kStart) / MiB, static_cast<double>(busy.ceiling) / MiB,
      (unsigned long long)busy.widenings, static_cast<double>(busy.maxOvershoot) / MiB);
  EXPECT_EQ(busy.ceiling, kLimit / 2);
  EXPECT_GT(busy.widenings, 0u) << "the fast reader never came late enough to widen";
  EXPECT_GT(maxEff, kStart);
  EXPECT_LE(maxEff, busy.ceiling) << "above the bound";
  EXPECT_GE(minEff, kStart) << "below the configured margin";
  // Calm: one halving per 2 s; from the ceiling down to the configured margin
  // in at most ~8 steps.
  Sample calm = settled;
  uint64_t prev = calm.eff;
  for (int i = 0; i < 400 && calm.eff > kStart; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    calm = sample();
    EXPECT_LE(calm.eff, prev) << "widened with no workload: " << c.state().dump();
    EXPECT_GE(calm.eff, kStart);
    prev = calm.eff;
  }
  std::printf("calm: start margin in force back to %.1f MiB after %llu narrowings\n",
              static_cast<double>(calm.eff) / MiB,
              (unsigned long long)(calm.narrowings - busy.narrowings));
  EXPECT_EQ(calm.eff, kStart) << "never narrowed back";
  EXPECT_GT(calm.narrowings, busy.narrowings);
  metrics::Sink sink;
  c.collect(sink);
  std::map<std::string, double> margins;
  double protectedValue = 0;
  for (const auto& f : sink.families()) {
    for (const auto& x : f.samples) {
      if (f.desc->name == "memcg_controller_margin_bytes" && x.values[0] == cg.label())
        margins[std::string(x.values[1])] = x.value;
      if (f.desc->name == "memcg_controller_protected" && x.values[0] == cg.label())
        protectedValue = x.value;
    }
  }
  EXPECT_EQ(protectedValue, 1.0);
  EXPECT_EQ(margins["start"], static_cast<double>(kStart));
  EXPECT_EQ(margins["target"], static_cast<double>(kTarget));
  EXPECT_EQ(margins["start_effective"], static_cast<double>(calm.eff));
  c.stop();
  EXPECT_EQ(cg.u64("memory.limit_in_bytes"), kLimit) << "limit not restored";
}

}  // namespace
}  // namespace memcg::controller
