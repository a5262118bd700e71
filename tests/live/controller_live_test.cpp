// The controller on the real kernel (root, cgroup v1 memory): (a) protection
// takes limit reclaim off a streaming reader's path, (b) SIGKILL between
// lowering and restoring the limit is undone by the journal at the next
// start, (c) a cgroup outside the allow-list (and the root) is never written.
// Every memcg is memcg_exporter_test_ctl_<pid>_* and removed on scope exit.
#include <gtest/gtest.h>
#include <poll.h>

#include <cstdlib>
#include <map>

#include "controller/controller.h"
#include "tests/support/controller_live_support.h"
#include "tests/support/controller_fixture.h"

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
    ASSERT_NE(discovery_->layout().mode, CgroupMode::kV2);  // v1 or hybrid: v1 memory
    opts_.enable = true;
    opts_.allow = "/memcg_exporter_test_ctl_" + std::to_string(::getpid()) + "_(prot|victim|ok)";
    opts_.journal = tmp_.path("journal");
    opts_.auditLog = tmp_.path("audit.jsonl");
  }
  void TearDown() override {
    if (!file_.empty()) ::unlink(file_.c_str());
  }

  testing::TempTree tmp_;
  std::string file_;
  std::unique_ptr<Discovery> discovery_;
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
  for (int i = 0; i < 3; ++i) {
    off.push_back(run().first);
    Controller c(opts_, *discovery_);
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
    if (n > 0) {
      // Wake -> return of the reclaiming write: a few ms here (the write
      // itself reclaims 64+ MiB); far below the 50 ms poll period.
      EXPECT_LT(sum / static_cast<double>(n), 0.1);
    }
    std::printf("  trigger_to_reclaim: threshold n=%llu mean %.2f ms; poll n=%llu\n",
                (unsigned long long)n, n ? sum / static_cast<double>(n) * 1000 : 0.0,
                (unsigned long long)lat["poll"].first);
    std::printf("run %d: failcnt off=%llu on=%llu (on: wall %.2fs p99 %.2fms max %.2fms)\n", i,
                (unsigned long long)off.back(), (unsigned long long)failcnt, r.wallSeconds,
                r.p99ReadMs, r.maxReadMs);
  }
  std::sort(off.begin(), off.end());
  std::sort(on.begin(), on.end());
  std::printf("median failcnt: off=%llu on=%llu\n", (unsigned long long)off[1],
              (unsigned long long)on[1]);
  EXPECT_GT(off[1], 50u) << "the unprotected reader should hit its limit";
  EXPECT_LE(on[1] * 5, off[1]) << "protection should cut the workload's limit hits >= 80%";
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
  struct pollfd pfd {p[0], POLLIN, 0};
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
  Controller ctl(opts_, *discovery_);
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
  EXPECT_NE(tmp_.read("audit.jsonl").find("\"event\":\"journal_restore\""), std::string::npos);
}

TEST_F(ControllerLive, OutsideTheAllowListIsNeverWritten) {
  TestCgroup deny("deny", kLimit);
  TestCgroup ok("ok", kLimit);
  ASSERT_TRUE(deny.ok() && ok.ok());
  ASSERT_TRUE(discovery_->refresh().ok());
  const std::vector<std::string> files = {
      "memory.limit_in_bytes",       "memory.soft_limit_in_bytes", "memory.swappiness",
      "memory.oom_control",          "memory.use_hierarchy",       "memory.move_charge_at_immigrate",
      "memory.memsw.limit_in_bytes", "memory.kmem.limit_in_bytes", "memory.kmem.tcp.limit_in_bytes"};
  auto snapshot = [&](const std::string& dir) {
    std::map<std::string, std::string> m;
    for (const auto& f : files) m[f] = live::readText(dir + "/" + f);
    return m;
  };
  auto before = snapshot(deny.path());
  auto rootBefore = snapshot(live::kV1Root);
  {
    Controller c(opts_, *discovery_);
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

}  // namespace
}  // namespace memcg::controller
