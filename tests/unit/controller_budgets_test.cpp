// The controller's safety budgets, each set low and shown to hold:
// the bytes-per-second cap and the CPU budget on a fake budget clock (exact:
// nothing refills or resets until the test moves the clock), the nudges per
// episode and the step size, the cooldown (a lower bound on the real clock,
// which load can only lengthen), and their --controller.* flags.
//
// A v1 fixture tree, polled (a regular file never signals): lowering the
// limit "reclaims" (the seam sets usage to the lowered limit, as the kernel
// would).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "tests/support/controller_fixture.h"

namespace memcg::controller {
namespace {

using testing::metricValue;
using testing::MiB;
using testing::waitUntil;
using Clock = std::chrono::steady_clock;

class ControllerBudgetTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kLimit = 256 * MiB;

  void SetUp() override {
    // Usage 250 MiB of 256: margin 6 MiB < start 64 MiB, 122 MiB to reclaim
    // to the target margin (128 MiB); 200 MiB of page cache to give.
    testing::makeV1(t_, "a", kLimit, 250 * MiB, 200 * MiB);
    DiscoveryOptions d;
    d.cgroupfsRoot = t_.root();
    d.procfsRoot = t_.path("noproc");
    discovery_ = std::make_unique<Discovery>(d);
    walks_ = std::make_unique<WalkScheduler>(*discovery_);
    ASSERT_TRUE(discovery_->refresh().ok());
    opts_.enable = true;
    opts_.allow = "/a";
    opts_.journal = t_.path("journal");
    opts_.auditLog = t_.path("audit.jsonl");
    opts_.pollIntervalMs = 5;
    opts_.cooldownMs = 1;
    opts_.floorBytes = 16 * MiB;
    opts_.marginMaxFraction = 0;  // the configured margins only: exact needs
  }

  ActuatorOptions seams() {
    ActuatorOptions o;
    o.faultInjector = [this](std::string_view f, std::string_view text) {
      std::lock_guard<std::mutex> g(mu_);
      if (f != "memory.limit_in_bytes") return 0;
      limitWrites_.push_back({std::string(text), Clock::now()});
      cpu_ = cpu_ + cpuPerWrite_;
      if (text != std::to_string(kLimit))
        t_.write("memory/a/memory.usage_in_bytes", std::string(text) + "\n");
      return 0;
    };
    return o;
  }
  BudgetClock fakeClock() {
    BudgetClock c;
    c.now = [this] { return t0_ + std::chrono::nanoseconds(fakeNs_.load()); };
    c.cpuSeconds = [this] { return cpu_.load(); };
    return c;
  }
  std::vector<std::string> written() {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<std::string> v;
    for (const auto& w : limitWrites_) v.push_back(w.text);
    return v;
  }
  static double metric(const Controller& c, const std::string& name,
                       std::string_view label = {}, size_t index = 0) {
    metrics::Sink s;
    c.collect(s);
    return metricValue(s, name, label, index);
  }
  static double throttled(const Controller& c, const char* reason) {
    return metric(c, "memcg_controller_throttled_total", reason);
  }
  static double reclaimed(const Controller& c) {
    return metric(c, "memcg_controller_reclaimed_bytes_total");
  }
  static std::string mib(uint64_t m) { return std::to_string(m * MiB); }

  struct Write {
    std::string text;
    Clock::time_point at;
  };
  testing::TempTree t_;
  std::unique_ptr<Discovery> discovery_;
  std::unique_ptr<WalkScheduler> walks_;
  ControllerOptions opts_;
  std::mutex mu_;
  std::vector<Write> limitWrites_;
  std::atomic<double> cpu_{0};
  double cpuPerWrite_ = 0;
  const Clock::time_point t0_ = Clock::time_point{} + std::chrono::hours(1);
  std::atomic<int64_t> fakeNs_{0};
};

// 16 MiB/s: the 1 s burst reclaims 16 MiB, then every episode is throttled
// (reason rate) while the clock stands still; 250 ms later 4 MiB more; after
// 10 s only one second's worth (the burst cap), not 10 s worth.
TEST_F(ControllerBudgetTest, BytesPerSecondCapHolds) {
  opts_.maxBytesPerSecond = 16 * MiB;
  Controller c(opts_, *walks_, seams(), nullptr, fakeClock());
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  ASSERT_TRUE(waitUntil([&] { return throttled(c, "rate") >= 5; }));
  EXPECT_EQ(reclaimed(c), 16.0 * MiB);
  EXPECT_EQ(written(), (std::vector<std::string>{mib(234), mib(256)}));

  fakeNs_ += 250'000'000;  // +4 MiB of tokens
  ASSERT_TRUE(waitUntil([&] { return reclaimed(c) >= 20.0 * MiB; }));
  const double seen = throttled(c, "rate");
  ASSERT_TRUE(waitUntil([&] { return throttled(c, "rate") >= seen + 5; }));
  EXPECT_EQ(reclaimed(c), 20.0 * MiB);

  fakeNs_ += 10'000'000'000;  // the bucket holds one second's worth at most
  ASSERT_TRUE(waitUntil([&] { return reclaimed(c) >= 36.0 * MiB; }));
  const double seen2 = throttled(c, "rate");
  ASSERT_TRUE(waitUntil([&] { return throttled(c, "rate") >= seen2 + 5; }));
  c.stop();
  EXPECT_EQ(reclaimed(c), 36.0 * MiB);
  EXPECT_EQ(written(), (std::vector<std::string>{mib(234), mib(256), mib(230), mib(256),
                                                 mib(214), mib(256)}));
  EXPECT_EQ(throttled(c, "cpu"), 0);
  EXPECT_EQ(t_.read("memory/a/memory.limit_in_bytes"), mib(256));
  EXPECT_EQ(c.state()["protections"][0]["last_result"], "throttled_rate");
}

// CPU budget 0.5 s per 1 s window, each nudge "costs" 0.4 s of worker CPU:
// two nudges per window, then throttled (reason cpu) until the window turns.
TEST_F(ControllerBudgetTest, CpuBudgetHolds) {
  opts_.cpuBudget = 0.5;
  opts_.maxStepBytes = 8 * MiB;
  cpuPerWrite_ = 0.2;
  Controller c(opts_, *walks_, seams(), nullptr, fakeClock());
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  ASSERT_TRUE(waitUntil([&] { return throttled(c, "cpu") >= 5; }));
  EXPECT_EQ(metric(c, "memcg_controller_actions_total", "ok", 2), 2);
  EXPECT_EQ(reclaimed(c), 16.0 * MiB);

  fakeNs_ += 1'000'000'000;  // a new window: two more
  ASSERT_TRUE(waitUntil([&] { return reclaimed(c) >= 32.0 * MiB; }));
  const double seen = throttled(c, "cpu");
  ASSERT_TRUE(waitUntil([&] { return throttled(c, "cpu") >= seen + 5; }));
  c.stop();
  EXPECT_EQ(metric(c, "memcg_controller_actions_total", "ok", 2), 4);
  EXPECT_EQ(reclaimed(c), 32.0 * MiB);
  EXPECT_EQ(written(),
            (std::vector<std::string>{mib(242), mib(256), mib(234), mib(256), mib(226),
                                      mib(256), mib(218), mib(256)}));
  EXPECT_EQ(throttled(c, "rate"), 0);
  EXPECT_EQ(c.state()["protections"][0]["last_result"], "throttled_cpu");
}

// Three nudges of at most 8 MiB in an episode, then the (long) cooldown:
// exactly three lower-and-restore pairs, each exactly one step.
TEST_F(ControllerBudgetTest, NudgesPerEpisodeAndStepHold) {
  opts_.maxNudgesPerEpisode = 3;
  opts_.maxStepBytes = 8 * MiB;
  opts_.cooldownMs = 600000;
  Controller c(opts_, *walks_, seams());
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  // Done when the episode returned (busy false); a fourth nudge would have
  // come before that, and the cooldown forbids a second episode.
  ASSERT_TRUE(waitUntil([&] {
    auto p = c.state()["protections"][0];
    return p["episodes"] == 1 && p["actions"] == 3 && p["busy"] == false;
  })) << c.state().dump();
  // The waiter keeps polling through a long cooldown (a cooldown pauses this
  // cgroup's episodes, not the readings of it or of any other protection).
  t_.write("memory/a/memory.usage_in_bytes", mib(100) + "\n");
  ASSERT_TRUE(waitUntil([&] {
    return c.state()["protections"][0]["usage_bytes"] == 100 * MiB;
  })) << c.state().dump();
  c.stop();
  auto st = c.state()["protections"][0];
  EXPECT_EQ(st["episodes"], 1);
  EXPECT_EQ(st["actions"], 3);
  EXPECT_EQ(written(), (std::vector<std::string>{mib(242), mib(256), mib(234), mib(256),
                                                 mib(226), mib(256)}));
  EXPECT_EQ(reclaimed(c), 24.0 * MiB);
}

// A 200 ms cooldown, one nudge per episode: consecutive nudges are at least
// 200 ms apart (a lower bound: load only makes the gaps longer).
TEST_F(ControllerBudgetTest, CooldownIsRespected) {
  opts_.maxNudgesPerEpisode = 1;
  opts_.maxStepBytes = 8 * MiB;
  opts_.cooldownMs = 200;
  Controller c(opts_, *walks_, seams());
  c.start();
  ASSERT_FALSE(c.protect({"/a", 64 * MiB, 128 * MiB, 0}));
  ASSERT_TRUE(waitUntil([&] { return written().size() >= 8; }));
  c.stop();
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Clock::time_point> lowered;
  for (const auto& w : limitWrites_)
    if (w.text != mib(256)) lowered.push_back(w.at);
  ASSERT_GE(lowered.size(), 4u);
  for (size_t i = 1; i < lowered.size(); ++i) {
    EXPECT_GE(lowered[i] - lowered[i - 1], std::chrono::milliseconds(200))
        << "nudge " << i;
  }
}

TEST(ControllerBudgetFlags, SetEachBudget) {
  ControllerOptions o;
  FlagList flags = controllerFlags(o);
  auto flag = [&](const std::string& name) -> FlagSpec& {
    auto it = std::find_if(flags.begin(), flags.end(),
                           [&](const FlagSpec& f) { return f.name == name; });
    if (it == flags.end()) throw std::logic_error("no flag " + name);
    return *it;
  };
  EXPECT_EQ(flag("controller.cpu-budget").defaultText, "0.5");
  EXPECT_EQ(flag("controller.max-bytes-per-second").defaultText,
            std::to_string(o.maxBytesPerSecond));
  EXPECT_EQ(flag("controller.max-nudges-per-episode").defaultText, "8");
  EXPECT_EQ(flag("controller.max-step-bytes").defaultText,
            std::to_string(o.maxStepBytes));
  EXPECT_EQ(flag("controller.cooldown-ms").defaultText, "5");
  flag("controller.cpu-budget").set("0.05");
  flag("controller.max-bytes-per-second").set("16777216");
  flag("controller.max-nudges-per-episode").set("2");
  flag("controller.max-step-bytes").set("4096");
  flag("controller.cooldown-ms").set("0");
  EXPECT_EQ(o.cpuBudget, 0.05);
  EXPECT_EQ(o.maxBytesPerSecond, 16 * MiB);
  EXPECT_EQ(o.maxNudgesPerEpisode, 2);
  EXPECT_EQ(o.maxStepBytes, 4096u);
  EXPECT_EQ(o.cooldownMs, 0);
  EXPECT_EQ(checkBudgets(o), "");
  for (const char* bad : {"0", "-0.1", "1.5", "x", "0.5x", ""})
    EXPECT_THROW(flag("controller.cpu-budget").set(bad), std::invalid_argument) << bad;
  for (const char* bad : {"1048575", "0", "-1", "1MiB", "", "2251799813685249"})
    EXPECT_THROW(flag("controller.max-bytes-per-second").set(bad), std::invalid_argument)
        << bad;
  for (const char* bad : {"0", "1001", "x"})
    EXPECT_THROW(flag("controller.max-nudges-per-episode").set(bad),
                 std::invalid_argument)
        << bad;
  for (const char* bad : {"4095", "x", ""})
    EXPECT_THROW(flag("controller.max-step-bytes").set(bad), std::invalid_argument)
        << bad;
  for (const char* bad : {"-1", "600001", "1s"})
    EXPECT_THROW(flag("controller.cooldown-ms").set(bad), std::invalid_argument) << bad;
  // Refused values left the options as they were.
  EXPECT_EQ(o.cpuBudget, 0.05);
  EXPECT_EQ(o.maxBytesPerSecond, 16 * MiB);
}

TEST(ControllerBudgetFlags, TheControllerRefusesBudgetsOutOfRange) {
  testing::TempTree t;
  testing::makeV1(t, "a", 256 * MiB, 100 * MiB, 90 * MiB);
  DiscoveryOptions d;
  d.cgroupfsRoot = t.root();
  d.procfsRoot = t.path("noproc");
  Discovery discovery(d);
  WalkScheduler walks(discovery);
  ASSERT_TRUE(discovery.refresh().ok());
  ControllerOptions good;
  good.journal = t.path("journal");
  EXPECT_NO_THROW(Controller(good, walks));
  auto refused = [&](auto change) {
    ControllerOptions o = good;
    change(o);
    EXPECT_NE(checkBudgets(o), "");
    EXPECT_THROW(Controller(o, walks), std::invalid_argument);
  };
  refused([](ControllerOptions& o) { o.cpuBudget = 0; });
  refused([](ControllerOptions& o) { o.cpuBudget = 2; });
  refused([](ControllerOptions& o) { o.maxBytesPerSecond = MiB - 1; });
  refused([](ControllerOptions& o) { o.maxNudgesPerEpisode = 0; });
  refused([](ControllerOptions& o) { o.maxStepBytes = 0; });
  refused([](ControllerOptions& o) { o.cooldownMs = -1; });
}

}  // namespace
}  // namespace memcg::controller
