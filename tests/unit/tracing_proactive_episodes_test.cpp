// ProactiveEpisodes (tracing/proactive_episodes.h).
#include "tracing/proactive_episodes.h"

#include <gtest/gtest.h>

namespace memcg::tracing {
namespace {

TEST(ProactiveEpisodes, OnlyRegisteredReclaimersOpenEpisodes) {
  ProactiveEpisodes p;
  EXPECT_FALSE(p.isReclaimer(7));
  EXPECT_FALSE(p.begin(7, 3, 100));
  EXPECT_TRUE(p.empty());
  p.registerReclaimer(7);
  EXPECT_TRUE(p.isReclaimer(7));
  EXPECT_TRUE(p.begin(7, 3, 100));
  p.unregisterReclaimer(7);
  EXPECT_FALSE(p.isReclaimer(7));
}

TEST(ProactiveEpisodes, TargetCoversBeginToEnd) {
  ProactiveEpisodes p;
  p.registerReclaimer(7);
  ASSERT_TRUE(p.begin(7, 3, 100));
  EXPECT_EQ(p.targetAt(7, 99), std::nullopt);
  EXPECT_EQ(p.targetAt(7, 100), 3u);
  EXPECT_EQ(p.targetAt(7, 1'000'000), 3u);  // open
  EXPECT_EQ(p.targetAt(8, 150), std::nullopt);
  p.end(7, 200);
  EXPECT_EQ(p.targetAt(7, 200), 3u);
  EXPECT_EQ(p.targetAt(7, 201), std::nullopt);
  ASSERT_TRUE(p.begin(7, 4, 300));
  p.end(7, 400);
  // Late events of the first episode still find it (the reader runs behind).
  EXPECT_EQ(p.targetAt(7, 150), 3u);
  EXPECT_EQ(p.targetAt(7, 350), 4u);
  p.dropSlot(3);
  EXPECT_EQ(p.targetAt(7, 150), std::nullopt);
  EXPECT_EQ(p.targetAt(7, 350), 4u);
}

TEST(ProactiveEpisodes, KeepsTheLastFew) {
  ProactiveEpisodes p;
  p.registerReclaimer(1);
  for (uint64_t i = 0; i < ProactiveEpisodes::kMaxEpisodes + 5; ++i) {
    ASSERT_TRUE(p.begin(1, static_cast<uint32_t>(i + 1), i * 10));
    p.end(1, i * 10 + 5);
  }
  EXPECT_EQ(p.targetAt(1, 0), std::nullopt);  // the oldest are gone
  EXPECT_EQ(p.targetAt(1, (ProactiveEpisodes::kMaxEpisodes + 4) * 10), ProactiveEpisodes::kMaxEpisodes + 5);
}

TEST(ProactiveEpisodes, MonoClockAdvances) {
  const uint64_t a = ProactiveEpisodes::monoNowNs();
  EXPECT_GT(a, 0u);
  EXPECT_GE(ProactiveEpisodes::monoNowNs(), a);
}

}  // namespace
}  // namespace memcg::tracing
