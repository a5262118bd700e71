// The controller on a v1 fixture tree (polling: a regular file never
// signals): validation, an episode that reaches the target margin, dry-run,
// the allow-list, metrics, audit log, and the journal replay at start-up.
#include "controller/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "tests/support/controller_fixture.h"

namespace memcg::controller {
namespace {

using testing::MiB;

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::makeV1(t_, "a", 256 * MiB, 100 * MiB, 90 * MiB);
    t_.mkdir("memory/a/b");
    t_.write("memory/a/b/cgroup.procs", "");
    t_.write("memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
    t_.write("memory/a/b/memory.usage_in_bytes", "1\n");
    t_.mkdir("memory/other");
    t_.write("memory/other/cgroup.procs", "");
    t_.write("memory/other/memory.limit_in_bytes", std::to_string(256 * MiB) + "\n");
    t_.write("memory/other/memory.usage_in_bytes", std::to_string(255 * MiB) + "\n");
    DiscoveryOptions d;
    d.cgroupfsRoot = t_.root();
    d.procfsRoot = t_.path("noproc");
    discovery_ = std::make_unique<Discovery>(d);
    walks_ = std::make_unique<WalkScheduler>(*discovery_);
    ASSERT_TRUE(discovery_->refresh().ok());
    opts_.enable = true;
    opts_.allow = "/a(/.*)?";
    opts_.journal = t_.path("journal");
    opts_.auditLog = t_.path("audit.jsonl");
    opts_.pollIntervalMs = 5;
    opts_.cooldownMs = 1;
    opts_.floorBytes = 16 * MiB;
  }
  /// Seams: record limit writes; lowering the limit "reclaims" (the fixture's
  /// usage follows the lowered limit, as the kernel's would).
  ActuatorOptions seams() {
    ActuatorOptions o;
    o.faultInjector = [this](std::string_view f, std::string_view text) {
      std::lock_guard<std::mutex> g(mu_);
      writes_.push_back(std::string(f) + "=" + std::string(text));
      if (f == "memory.limit_in_bytes" && text != std::to_string(origLimit_.load())) {
        t_.write("memory/a/memory.usage_in_bytes", std::string(text) + "\n");
      }
      return 0;
    };
    return o;
  }
  size_t limitWrites() {
    std::lock_guard<std::mutex> g(mu_);
    size_t n = 0;
    for (auto& w : writes_) n += w.rfind("memory.limit_in_bytes", 0) == 0;
    return n;
  }
  static double value(const metrics::Sink& s, const std::string& name,
                      std::string_view result = {}) {
    return testing::metricValue(s, name, result, 2);  // {cgroup, actuator, result}
  }
  /// A generous deadline (testing::waitUntil): the condition, not the time, decides.
  static bool waitFor(const std::function<bool()>& pred) { return testing::waitUntil(pred); }
  /// The waiter has checked /a at least once: it tried to arm the v1 usage
  /// threshold (cgroup.event_control), which it does before deciding.
  bool waiterChecked() {
    std::lock_guard<std::mutex> g(mu_);
    return std::any_of(writes_.begin(), writes_.end(), [](const std::string& w) {
      return w.rfind("cgroup.event_control=", 0) == 0;
    });
  }
  /// The episode(s) ended: `actions` recorded and the worker idle.
  static bool idleAfter(const Controller& c, int actions) {
    auto st = c.state();
    if (st["protections"].empty()) return false;
    const auto& p = st["protections"][0];
    return p["actions"] == actions && p["busy"] == false;
  }

  testing::TempTree t_;
  std::unique_ptr<Discovery> discovery_;
  std::unique_ptr<WalkScheduler> walks_;
  ControllerOptions opts_;
  std::mutex mu_;
  std::vector<std::string> writes_;
  std::atomic<uint64_t> origLimit_{256 * MiB};  // a limit write of anything else "reclaims"
};

TEST_F(ControllerTest, ValidatesProtections) {
  Controller c(opts_, *walks_, seams());
  auto kind = [&](Protection p) {
    auto e = c.protect(p);
    return e ? e->kind : ErrorKind::kInternal;
  };
  EXPECT_EQ(kind({"a", 1, 2, 0}), ErrorKind::kBadInput);
  EXPECT_EQ(kind({"/a", 0, 2, 0}), ErrorKind::kBadInput);
  EXPECT_EQ(kind({"/a", 64 * MiB, 64 * MiB, 0}), ErrorKind::kBadInput);
  EXPECT_EQ(kind({"/a", 64 * MiB, 300 * MiB, 0}), ErrorKind::kBadInput);  // >= limit
  EXPECT_EQ(kind({"/", 64 * MiB, 128 * MiB, 0}), ErrorKind::kForbidden);
  EXPECT_EQ(kind({"/other", 64 * MiB, 128 * MiB, 0}), ErrorKind::kForbidden);
  EXPECT_EQ(kind({"/a/nope", 64 * MiB, 128 * MiB, 0}), ErrorKind::kNotFound);
  EXPECT_EQ(kind({"/a/b", 64 * MiB, 128 * MiB, 0}), ErrorKind::kConflict);  // unlimited
  EXPECT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  EXPECT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));  // idempotent
  EXPECT_EQ(kind({"/a", 32 * MiB, 128 * MiB, 0}), ErrorKind::kConflict);
  EXPECT_EQ(c.unprotect("/other")->kind, ErrorKind::kNotFound);
  EXPECT_FALSE(c.unprotect("/a"));
  EXPECT_EQ(limitWrites(), 0u);  // not started: nothing written
}

TEST_F(ControllerTest, ReclaimsToTheTargetMarginAndCountsIt) {
  Controller c(opts_, *walks_, seams());
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  ASSERT_TRUE(waitFor([&] { return waiterChecked(); }));
  EXPECT_EQ(limitWrites(), 0u);  // margin 156 MiB >= start 64 MiB
  // Usage creeps up to 200 MiB: margin 56 MiB < 64 MiB -> reclaim to 128 MiB margin.
  t_.write("memory/a/memory.usage_in_bytes", std::to_string(200 * MiB) + "\n");
  // Wait for the episode to end (the action recorded, the worker idle), not
  // for the writes: the result is recorded after the restore write returns.
  ASSERT_TRUE(waitFor([&] { return idleAfter(c, 1); })) << c.state().dump();
  {
    std::lock_guard<std::mutex> g(mu_);
    ASSERT_GE(writes_.size(), 2u);
    EXPECT_EQ(writes_[writes_.size() - 2], "memory.limit_in_bytes=" + std::to_string(128 * MiB));
    EXPECT_EQ(writes_.back(), "memory.limit_in_bytes=" + std::to_string(256 * MiB));
  }
  EXPECT_EQ(limitWrites(), 2u);  // target reached: one pair only
  EXPECT_EQ(t_.read("memory/a/memory.limit_in_bytes"), std::to_string(256 * MiB));
  metrics::Sink s;
  c.collect(s);
  EXPECT_EQ(value(s, "memcg_controller_protected_cgroups"), 1);
  EXPECT_EQ(value(s, "memcg_controller_actions_total", "ok"), 1);
  EXPECT_EQ(value(s, "memcg_controller_reclaimed_bytes_total"), 72.0 * MiB);
  EXPECT_EQ(value(s, "memcg_controller_trigger_to_reclaim_seconds"), 1);
  auto st = c.state();
  ASSERT_EQ(st["protections"].size(), 1u);
  EXPECT_EQ(st["protections"][0]["cgroup"], "/a");
  EXPECT_EQ(st["protections"][0]["last_result"], "ok");
  EXPECT_EQ(st["protections"][0]["wake"], "poll");
  c.stop();
  std::string audit = t_.read("audit.jsonl");
  EXPECT_NE(audit.find("\"event\":\"protect\""), std::string::npos);
  EXPECT_NE(audit.find("\"event\":\"reclaim\""), std::string::npos);
  EXPECT_EQ(audit.find("/other"), std::string::npos);
}

TEST_F(ControllerTest, ValidatesPercentMargins) {
  Controller c(opts_, *walks_, seams());
  auto kind = [&](Protection p) {
    auto e = c.protect(p);
    return e ? e->kind : ErrorKind::kInternal;
  };
  auto pct = [](double s, double t, uint64_t sb = 0, uint64_t tb = 0) {
    Protection p{"/a", sb, tb, 0};
    p.startMarginPercent = s;
    p.targetMarginPercent = t;
    return p;
  };
  EXPECT_EQ(kind(pct(0, 50)), ErrorKind::kBadInput);     // no start margin at all
  EXPECT_EQ(kind(pct(-1, 50)), ErrorKind::kBadInput);
  EXPECT_EQ(kind(pct(25, 100)), ErrorKind::kBadInput);   // 100% is the whole limit
  EXPECT_EQ(kind(pct(25, std::nan(""))), ErrorKind::kBadInput);
  EXPECT_EQ(kind(pct(50, 25)), ErrorKind::kBadInput);    // target below start
  EXPECT_EQ(kind(pct(25, 25)), ErrorKind::kBadInput);
  EXPECT_EQ(kind(pct(25, 50, 64 * MiB)), ErrorKind::kBadInput);  // bytes and percent
  // Mixed forms are compared at the current limit (256 MiB): 64 MiB vs 20% = 51.2 MiB.
  EXPECT_EQ(kind(pct(0, 20, 64 * MiB)), ErrorKind::kBadInput);
  auto e = c.protect(pct(0, 20, 64 * MiB));
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("the target is 53687091 bytes, the start 67108864"),
            std::string::npos) << e->message;
  // 1e-7% of 256 MiB is 0 bytes.
  EXPECT_EQ(kind(pct(1e-7, 50)), ErrorKind::kBadInput);
  EXPECT_FALSE(c.protect(pct(0, 50, 64 * MiB)));  // 64 MiB start, 128 MiB target
  EXPECT_FALSE(c.protect(pct(0, 50, 64 * MiB)));  // idempotent
  EXPECT_EQ(kind(pct(25, 50)), ErrorKind::kConflict);  // same bytes, other form
  auto st = c.state();
  ASSERT_EQ(st["protections"].size(), 1u);
  EXPECT_EQ(st["protections"][0]["start_margin_bytes"], 64 * MiB);
  EXPECT_EQ(st["protections"][0]["target_margin_bytes"], 128 * MiB);
  EXPECT_EQ(st["protections"][0]["target_margin_percent"], 50.0);
  EXPECT_FALSE(st["protections"][0].contains("start_margin_percent"));
}

TEST_F(ControllerTest, PercentMarginsFollowTheLimit) {
  Controller c(opts_, *walks_, seams());
  c.start();
  Protection p{"/a", 0, 0, 0};
  p.startMarginPercent = 25;   // 64 MiB of 256 MiB
  p.targetMarginPercent = 50;  // 128 MiB
  ASSERT_FALSE(c.protect(p));
  t_.write("memory/a/memory.usage_in_bytes", std::to_string(200 * MiB) + "\n");
  ASSERT_TRUE(waitFor([&] { return idleAfter(c, 1); })) << c.state().dump();
  ASSERT_EQ(limitWrites(), 2u);
  {
    std::lock_guard<std::mutex> g(mu_);
    EXPECT_EQ(writes_[writes_.size() - 2], "memory.limit_in_bytes=" + std::to_string(128 * MiB));
  }
  // Someone raises the limit to 512 MiB: the margins become 128 / 256 MiB.
  origLimit_ = 512 * MiB;
  t_.write("memory/a/memory.limit_in_bytes", std::to_string(512 * MiB) + "\n");
  t_.write("memory/a/memory.usage_in_bytes", std::to_string(300 * MiB) + "\n");  // margin 212
  // A check that read both new values has decided: 212 MiB free >= 128 MiB.
  ASSERT_TRUE(waitFor([&] {
    auto p = c.state()["protections"][0];
    return p["limit_bytes"] == 512 * MiB && p["usage_bytes"] == 300 * MiB;
  }));
  EXPECT_EQ(c.state()["protections"][0]["start_margin_bytes"], 128 * MiB);
  EXPECT_EQ(c.state()["protections"][0]["target_margin_bytes"], 256 * MiB);
  EXPECT_EQ(limitWrites(), 2u);  // nothing to do
  t_.write("memory/a/memory.usage_in_bytes", std::to_string(400 * MiB) + "\n");  // margin 112
  // Reclaim down to 512 - 256 MiB (in two nudges: the fixture's memory.stat
  // gives back 90 MiB per step), the limit put back after each.
  ASSERT_TRUE(waitFor([&] { return idleAfter(c, 3); })) << c.state().dump();
  c.stop();
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::string> lw;
  bool rearmed = false;
  for (const auto& w : writes_) {
    if (w.rfind("memory.limit_in_bytes=", 0) == 0) lw.push_back(w.substr(22));
    // The v1 threshold follows too: 512 - 128 MiB.
    rearmed |= w.rfind("cgroup.event_control=", 0) == 0 &&
               w.substr(w.rfind(' ') + 1) == std::to_string(384 * MiB);
  }
  EXPECT_TRUE(rearmed);
  ASSERT_EQ(lw.size(), 6u);
  EXPECT_EQ(lw[4], std::to_string(256 * MiB));
  EXPECT_EQ(lw[5], std::to_string(512 * MiB));
}

TEST(PsiTriggerTest, Parses) {
  auto t = parsePsiTrigger("some 1000 500000");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->full);
  EXPECT_EQ(t->stallUs, 1000u);
  EXPECT_EQ(t->windowUs, 500000u);
  EXPECT_TRUE(parsePsiTrigger("full 150000 1000000")->full);
  for (const char* bad : {"", "some", "some 1000", "some 1000 500000 x", "any 1000 500000",
                          "some 0 500000", "some 600000 500000", "some 1000 100000",
                          "some 1000 20000000", "some -1 500000", "some 1e3 500000"}) {
    EXPECT_FALSE(parsePsiTrigger(bad).ok()) << bad;
  }
}

// v2 on a fixture tree: memory.reclaim, the PSI trigger attempted (a regular
// file never signals: the poll wakes it), the latency by trigger.
TEST(ControllerV2Test, ReclaimsAndTriesThePsiTrigger) {
  testing::TempTree t;
  testing::makeV2(t, "a", 256 * MiB, 100 * MiB);
  t.write("a/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  DiscoveryOptions d;
  d.cgroupfsRoot = t.root();
  d.procfsRoot = t.path("noproc");
  Discovery discovery(d);
  WalkScheduler walks(discovery);
  ASSERT_TRUE(discovery.refresh().ok());
  ASSERT_EQ(discovery.layout().mode, CgroupMode::kV2);
  ControllerOptions o;
  o.enable = true;
  o.allow = "/a";
  o.journal = "";
  o.pollIntervalMs = 5;
  o.cooldownMs = 1;
  std::mutex mu;
  std::vector<std::string> writes;
  ActuatorOptions seams;
  seams.faultInjector = [&](std::string_view f, std::string_view text) {
    std::lock_guard<std::mutex> g(mu);
    writes.push_back(std::string(f) + "=" + std::string(text));
    if (f == "memory.reclaim") t.write("a/memory.current", std::to_string(100 * MiB) + "\n");
    return 0;
  };
  {
    ControllerOptions bad = o;
    bad.psiTrigger = "some 1000 100";
    EXPECT_THROW(Controller(bad, walks, seams), std::invalid_argument);
  }
  Controller c(o, walks, seams);
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  t.write("a/memory.current", std::to_string(200 * MiB) + "\n");  // margin 56 MiB
  auto reclaimWrites = [&] {
    std::lock_guard<std::mutex> g(mu);
    return std::count_if(writes.begin(), writes.end(),
                         [](const std::string& w) { return w.rfind("memory.reclaim=", 0) == 0; });
  };
  ASSERT_TRUE(testing::waitUntil([&] {
    auto p = c.state()["protections"][0];
    return p["actions"] == 1 && p["busy"] == false;
  })) << c.state().dump();
  auto st = c.state();
  c.stop();
  ASSERT_EQ(reclaimWrites(), 1);
  {
    std::lock_guard<std::mutex> g(mu);
    EXPECT_NE(std::find(writes.begin(), writes.end(),
                        std::string("memory.pressure=some 1000 500000\0", 33)),
              writes.end());
    EXPECT_NE(std::find(writes.begin(), writes.end(), "memory.reclaim=" + std::to_string(72 * MiB)),
              writes.end());
  }
  EXPECT_EQ(st["psi_trigger"], "some 1000 500000");
  EXPECT_EQ(st["protections"][0]["wake"], "poll");  // fixture files never signal
  metrics::Sink s;
  c.collect(s);
  std::map<std::string, uint64_t> byTrigger;
  for (const auto& f : s.families()) {
    if (f.desc->name != "memcg_controller_trigger_to_reclaim_seconds") continue;
    for (const auto& h : f.histograms) byTrigger[std::string(h.values[0])] = h.count;
  }
  EXPECT_EQ(byTrigger, (std::map<std::string, uint64_t>{{"memory.events", 0}, {"poll", 1}, {"psi", 0}}));
}

TEST_F(ControllerTest, DryRunNeverWritesTheLimit) {
  opts_.dryRun = true;
  Controller c(opts_, *walks_, seams());
  c.start();
  t_.write("memory/a/memory.usage_in_bytes", std::to_string(250 * MiB) + "\n");
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  metrics::Sink s;
  ASSERT_TRUE(waitFor([&] {
    metrics::Sink x;
    c.collect(x);
    return value(x, "memcg_controller_dry_run_actions_total") >= 1;
  }));
  c.stop();
  EXPECT_EQ(limitWrites(), 0u);
  EXPECT_EQ(t_.read("memory/a/memory.limit_in_bytes"), std::to_string(256 * MiB) + "\n");
  EXPECT_NE(t_.read("audit.jsonl").find("\"would_reclaim_bytes\":" + std::to_string(122 * MiB)),
            std::string::npos);
}

TEST_F(ControllerTest, RemovedCgroupIsDropped) {
  Controller c(opts_, *walks_, seams());
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  // cgroup.procs vanishing is how a removed cgroup reads in a fixture.
  for (auto f : {"cgroup.procs", "memory.usage_in_bytes", "memory.limit_in_bytes"}) {
    ::unlink(t_.path(std::string("memory/a/") + f).c_str());
  }
  // The waiter's next poll sees the cgroup gone and drops its protection
  // (audited as "cgroup removed"); nothing of it is left: not in the state,
  // not in the journal, and a later unprotect finds nothing to remove.
  ASSERT_TRUE(waitFor([&] { return c.state()["protections"].empty(); }))
      << c.state().dump();
  auto err = c.unprotect("/a");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->kind, ErrorKind::kNotFound);
  auto j = Journal::open(opts_.journal);
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE((*j)->pending().empty());
}

TEST_F(ControllerTest, StartupReplaysTheJournal) {
  // A crash left /a lowered to 128 MiB from 256 MiB.
  {
    auto j = Journal::open(opts_.journal);
    auto d = cgroupfs::CgroupDir::open(t_.path("memory/a"));
    JournalEntry e;
    e.cgroup = "/a";
    e.dir = t_.path("memory/a");
    e.inode = (*d)->inode();
    e.original = 256 * MiB;
    e.lowered = 128 * MiB;
    ASSERT_TRUE((*j)->record(e).ok());
  }
  t_.write("memory/a/memory.limit_in_bytes", std::to_string(128 * MiB) + "\n");
  Controller c(opts_, *walks_, seams());
  EXPECT_EQ(c.startupRecovery().restored, 1u);
  EXPECT_EQ(t_.read("memory/a/memory.limit_in_bytes"), std::to_string(256 * MiB));
  metrics::Sink s;
  c.collect(s);
  EXPECT_EQ(value(s, "memcg_controller_journal_restores_total"), 1);
  auto j = Journal::open(opts_.journal);
  EXPECT_TRUE((*j)->pending().empty());
  // The disabled-controller path: nothing pending, nothing done.
  EXPECT_EQ(recoverJournal(opts_).pending, 0u);
}

// Faults: EBUSY, ENOSPC and EINTR on the controller's limit write
// (injected before the write reaches the file). Each is counted by result in
// memcg_controller_actions_total, written to the audit log and logged (the
// "controller audit" line on stderr), the limit is never seen changed when
// the write failed, and nothing is left pending in the journal.
TEST_F(ControllerTest, WriteFaultsAreCountedAuditedAndLogged) {
  struct Case {
    int err;
    const char* result;
    const char* detail;  // in the audit line and the state API
  };
  const Case cases[] = {{EBUSY, "busy", "EBUSY"},
                        {ENOSPC, "error", "No space left on device"},
                        {EINTR, "ok", nullptr}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.result);
    t_.write("memory/a/memory.usage_in_bytes", std::to_string(100 * MiB) + "\n");
    t_.write("memory/a/memory.limit_in_bytes", std::to_string(256 * MiB) + "\n");
    t_.write("audit.jsonl", "");
    ActuatorOptions o = seams();
    auto inner = o.faultInjector;
    std::atomic<int> injected{0};
    // Every lowering write fails (EINTR: the first two; the actuator retries).
    o.faultInjector = [&, inner](std::string_view f, std::string_view text) {
      if (f == "memory.limit_in_bytes" && text != std::to_string(256 * MiB) &&
          (k.err != EINTR || injected.load() < 2)) {
        injected.fetch_add(1);
        return k.err;
      }
      return inner(f, text);
    };
    ::testing::internal::CaptureStderr();
    {
      Controller c(opts_, *walks_, o);
      c.start();
      ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
      ASSERT_TRUE(waitFor([&] { return waiterChecked(); }));
      t_.write("memory/a/memory.usage_in_bytes", std::to_string(200 * MiB) + "\n");
      double counted = 0;
      ASSERT_TRUE(waitFor([&] {
        metrics::Sink s;
        c.collect(s);
        counted = value(s, "memcg_controller_actions_total", k.result);
        return counted >= 1;
      })) << c.state().dump();
      if (k.err != EINTR) {
        EXPECT_EQ(t_.read("memory/a/memory.limit_in_bytes"),
                  std::to_string(256 * MiB) + "\n")
            << "a failed lowering never changed the limit";
        auto st = c.state();
        EXPECT_EQ(st["protections"][0]["last_result"], k.result);
        EXPECT_NE(st.dump().find(k.detail), std::string::npos) << st.dump();
        metrics::Sink s;
        c.collect(s);
        EXPECT_EQ(value(s, "memcg_controller_actions_total", "ok"), 0);
        EXPECT_EQ(value(s, "memcg_controller_reclaimed_bytes_total"), 0);
      }
      (void)c.unprotect("/a");
      c.stop();
    }
    const std::string log = ::testing::internal::GetCapturedStderr();
    const std::string audit = t_.read("audit.jsonl");
    const std::string result = std::string("\"result\":\"") + k.result + "\"";
    std::printf("%s: %d faults injected; audit lines with %s: %zu\n", strerror(k.err),
                injected.load(), result.c_str(),
                static_cast<size_t>(std::count(audit.begin(), audit.end(), '\n')));
    EXPECT_GE(injected.load(), k.err == EINTR ? 2 : 1);
    EXPECT_NE(audit.find(result), std::string::npos) << audit;
    // The log line carries the same entry (quoted: \" inside).
    const std::string logged = std::string("\\\"result\\\":\\\"") + k.result;
    EXPECT_NE(log.find("msg=\"controller audit\""), std::string::npos) << log;
    EXPECT_NE(log.find(logged), std::string::npos) << log;
    if (k.detail) {
      EXPECT_NE(audit.find(k.detail), std::string::npos) << audit;
    } else {
      EXPECT_EQ(t_.read("memory/a/memory.limit_in_bytes"), std::to_string(256 * MiB))
          << "EINTR retried: lowered, then restored";
    }
    auto j = Journal::open(opts_.journal);
    ASSERT_TRUE(j.ok());
    EXPECT_TRUE((*j)->pending().empty()) << "nothing left pending in the journal";
  }
}

TEST_F(ControllerTest, BadOptionsThrow) {
  ControllerOptions o = opts_;
  o.allow = "(";
  EXPECT_THROW(Controller(o, *walks_), std::invalid_argument);
  o = opts_;
  o.journal = "/nonexistent-dir-memcg/j";
  EXPECT_THROW(Controller(o, *walks_), std::runtime_error);
  o = opts_;
  o.schedPolicy = "fifo";
  EXPECT_THROW(Controller(o, *walks_), std::invalid_argument);
}

}  // namespace
}  // namespace memcg::controller
