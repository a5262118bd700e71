// controller/margin_adapt.h: the adaptive start margin's maths (widen on a
// late wake, hold, narrow after a calm period, the bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "controller/margin_adapt.h"
#include "controller/options.h"

namespace memcg::controller {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t kLimit = 256 * MiB;
constexpr double kFrac = 0.5;
using Clock = MarginAdapt::Clock;

Protection prot(uint64_t start, uint64_t target) {
  return Protection{"/a", start, target, 0};
}

/// A wake whose free margin is `margin` (usage = limit - margin).
void wake(MarginAdapt& a, const Protection& p, uint64_t margin, Clock::time_point t,
          uint64_t limit = kLimit) {
  observeShortWake(a, p, limit - margin, limit, kFrac, t);
}

TEST(MarginAdapt, NoWideningIsTheConfiguredMargins) {
  const Protection p = prot(64 * MiB, 128 * MiB);
  Margins m = effectiveMargins(p, kLimit, 0, kFrac);
  EXPECT_EQ(m.start, 64 * MiB);
  EXPECT_EQ(m.target, 128 * MiB);
  EXPECT_EQ(v1Threshold(m, kLimit), kLimit - 64 * MiB);
  EXPECT_EQ(v1Threshold(p, kLimit), v1Threshold(m, kLimit));  // same as protection.h
  EXPECT_EQ(reclaimNeed(m, kLimit - 10 * MiB, kLimit),
            reclaimNeed(p, kLimit - 10 * MiB, kLimit));
}

TEST(MarginAdapt, ALateWakeWidensByTwiceTheOvershoot) {
  const Protection p = prot(64 * MiB, 128 * MiB);
  MarginAdapt a;
  const auto t0 = Clock::now();
  wake(a, p, 24 * MiB, t0);  // 40 MiB past a 64 MiB start: >= half
  EXPECT_EQ(a.lastOvershoot, 40 * MiB);
  EXPECT_EQ(a.extra, 64 * MiB);  // 2 x 40 = 80, capped: 64 + 80 is above half the limit
  EXPECT_EQ(a.widenings, 1u);
  Margins m = effectiveMargins(p, kLimit, a.extra, kFrac);
  EXPECT_EQ(m.start, 128 * MiB);
  EXPECT_EQ(m.target, 192 * MiB);  // 3/4 of the limit
  // Uncapped: a larger limit takes the whole 2 x overshoot.
  MarginAdapt b;
  observeShortWake(b, p, 1024 * MiB - 24 * MiB, 1024 * MiB, kFrac, t0);
  EXPECT_EQ(b.extra, 80 * MiB);
  EXPECT_EQ(effectiveMargins(p, 1024 * MiB, b.extra, kFrac).start, 144 * MiB);
  // The same overshoot against the wider margin: held (>= 1/4), not widened.
  wake(a, p, m.start - 40 * MiB, t0 + std::chrono::milliseconds(100));
  EXPECT_EQ(a.widenings, 1u);
  EXPECT_EQ(a.lastPressure, t0 + std::chrono::milliseconds(100));
}

TEST(MarginAdapt, AnEarlyWakeChangesNothing) {
  const Protection p = prot(64 * MiB, 128 * MiB);
  MarginAdapt a;
  const auto t0 = Clock::now();
  wake(a, p, 60 * MiB, t0);  // 4 MiB past: calm
  EXPECT_EQ(a.extra, 0u);
  EXPECT_EQ(a.widenings, 0u);
  EXPECT_EQ(a.lastPressure, Clock::time_point{});
  wake(a, p, 33 * MiB, t0);  // 31 MiB past: under half, at least a quarter: pressure
  EXPECT_EQ(a.extra, 0u);
  EXPECT_EQ(a.lastPressure, t0);
}

TEST(MarginAdapt, AtTheLimitWidensUpToTheBound) {
  const Protection p = prot(8 * MiB, 16 * MiB);
  MarginAdapt a;
  auto t = Clock::now();
  uint64_t prevStart = 8 * MiB;
  for (int i = 0; i < 20; ++i) {
    wake(a, p, 0, t);  // the workload is at its limit every time
    Margins m = effectiveMargins(p, kLimit, a.extra, kFrac);
    EXPECT_GE(m.start, prevStart);
    EXPECT_LE(m.start, kLimit / 2);  // never above the bound
    EXPECT_GT(m.target, m.start);
    EXPECT_LT(m.target, kLimit);
    prevStart = m.start;
  }
  EXPECT_EQ(prevStart, kLimit / 2);
  EXPECT_EQ(effectiveMargins(p, kLimit, a.extra, kFrac).target, kLimit / 2 + 8 * MiB);
}

TEST(MarginAdapt, NarrowsBackAfterCalmPeriodsToTheFloor) {
  const Protection p = prot(64 * MiB, 128 * MiB);
  MarginAdapt a;
  auto t = Clock::now();
  wake(a, p, 0, t);
  ASSERT_GT(a.extra, 0u);
  EXPECT_FALSE(narrowIfCalm(a, p, kLimit, kFrac, t + kCalmPeriod / 2));  // not yet calm
  uint64_t prev = a.extra;
  int steps = 0;
  for (auto now = t + kCalmPeriod; a.extra > 0; now += kCalmPeriod) {
    ASSERT_TRUE(narrowIfCalm(a, p, kLimit, kFrac, now));
    EXPECT_LT(a.extra, prev);
    EXPECT_FALSE(
        narrowIfCalm(a, p, kLimit, kFrac, now + kCalmPeriod / 2));  // one step per period
    prev = a.extra;
    ASSERT_LT(++steps, 40);
  }
  EXPECT_EQ(effectiveMargins(p, kLimit, a.extra, kFrac).start, 64 * MiB);  // never below
  EXPECT_EQ(a.narrowings, static_cast<uint64_t>(steps));
}

TEST(MarginAdapt, ASmallerLimitReappliesTheBound) {
  const Protection p = prot(16 * MiB, 32 * MiB);
  MarginAdapt a;
  wake(a, p, 0, Clock::now());
  const uint64_t small = 64 * MiB;
  Margins m = effectiveMargins(p, small, a.extra, kFrac);
  EXPECT_EQ(m.start, 32 * MiB);
  EXPECT_LE(m.target, small * 3 / 4);
  EXPECT_GT(m.target, m.start);
}

TEST(MarginAdapt, AConfiguredMarginAboveTheBoundStaysAsIs) {
  const Protection p = prot(150 * MiB, 200 * MiB);  // start above half the limit
  MarginAdapt a;
  wake(a, p, 0, Clock::now());
  EXPECT_EQ(a.extra, 0u);
  Margins m = effectiveMargins(p, kLimit, a.extra, kFrac);
  EXPECT_EQ(m.start, 150 * MiB);
  EXPECT_EQ(m.target, 200 * MiB);
  EXPECT_EQ(startCeiling(p, kLimit, kFrac), 150 * MiB);
}

TEST(MarginAdapt, PercentMarginsFollowTheLimit) {
  Protection p{"/a", 0, 0, 0};
  p.startMarginPercent = 10;
  p.targetMarginPercent = 20;
  MarginAdapt a;
  wake(a, p, 0, Clock::now(), 1000 * MiB);
  Margins m = effectiveMargins(p, 1000 * MiB, a.extra, kFrac);
  EXPECT_EQ(m.start, 300 * MiB);  // 100 + 2 x 100
  EXPECT_EQ(m.target, 400 * MiB);
}

TEST(MarginAdapt, TheMaxFractionFlag) {
  ControllerOptions o;
  EXPECT_EQ(o.marginMaxFraction, 0.5);
  FlagList flags = controllerFlags(o);
  auto it = std::find_if(flags.begin(), flags.end(), [](const FlagSpec& f) {
    return f.name == "controller.margin-max-fraction";
  });
  ASSERT_NE(it, flags.end());
  EXPECT_EQ(it->defaultText, "0.5");
  it->set("0.25");
  EXPECT_EQ(o.marginMaxFraction, 0.25);
  it->set("0");
  EXPECT_EQ(o.marginMaxFraction, 0.0);
  for (const char* bad : {"0.9", "-0.1", "x", "0.3x", ""})
    EXPECT_THROW(it->set(bad), std::invalid_argument) << bad;
  EXPECT_EQ(o.marginMaxFraction, 0.0);
}

TEST(MarginAdapt, AZeroFractionNeverWidens) {
  const Protection p = prot(64 * MiB, 128 * MiB);
  Margins m = effectiveMargins(p, kLimit, 100 * MiB, 0);
  EXPECT_EQ(m.start, 64 * MiB);
  EXPECT_EQ(m.target, 128 * MiB);
}

}  // namespace
}  // namespace memcg::controller
