// controller/worker.h: the worker's token bucket and CPU budget.
#include <gtest/gtest.h>

#include "controller/worker.h"

namespace memcg::controller {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucket, RefillsUpToOneSecondOfRate) {
  const auto t0 = SteadyClock::time_point{} + std::chrono::hours(1);
  TokenBucket b(1000, t0);
  EXPECT_EQ(b.tokens(), 1000);  // starts full: a one-second burst
  b.take(800);
  EXPECT_EQ(b.tokens(), 200);
  b.refill(t0 + milliseconds(500));
  EXPECT_DOUBLE_EQ(b.tokens(), 700);
  b.refill(t0 + milliseconds(5000));
  EXPECT_DOUBLE_EQ(b.tokens(), 1000);  // capped
  b.take(1500);                        // an actuation may reclaim more than it was given
  EXPECT_DOUBLE_EQ(b.tokens(), -500);
  b.refill(t0 + milliseconds(6000));
  EXPECT_DOUBLE_EQ(b.tokens(), 500);
}

TEST(CpuBudget, PerOneSecondWindow) {
  const auto t0 = SteadyClock::time_point{} + std::chrono::hours(1);
  CpuBudget c(0.5);
  c.start(t0, 10.0);
  EXPECT_FALSE(c.spent(t0 + milliseconds(100), 10.2));
  EXPECT_TRUE(c.spent(t0 + milliseconds(900), 10.5));
  // A new window starts after a second: the CPU so far no longer counts.
  EXPECT_FALSE(c.spent(t0 + milliseconds(1000), 10.6));
  EXPECT_TRUE(c.spent(t0 + milliseconds(1500), 11.1));
}

TEST(Worker, ThrottleReason) {
  const auto t0 = SteadyClock::time_point{} + std::chrono::hours(1);
  TokenBucket full(8.0 * kMinTokens, t0);
  EXPECT_EQ(throttleReason(false, full), "");
  EXPECT_EQ(throttleReason(true, full), "cpu");  // cpu first
  TokenBucket empty(8.0 * kMinTokens, t0);
  empty.take(8.0 * kMinTokens - 1);
  EXPECT_EQ(throttleReason(false, empty), "rate");
  const double a = threadCpuSeconds();
  volatile double x = 0;
  for (int i = 0; i < 2000000; ++i) x = x + i;
  EXPECT_GT(threadCpuSeconds(), a);
}

}  // namespace
}  // namespace memcg::controller
