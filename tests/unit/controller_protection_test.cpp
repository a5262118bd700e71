// controller/protection.h: the checks a protection passes and its margin maths.
#include <gtest/gtest.h>

#include "controller/protection.h"

namespace memcg::controller {
namespace {

constexpr uint64_t MiB = 1ull << 20;

Protection bytes(uint64_t start, uint64_t target) {
  return Protection{"/a", start, target, 0};
}
Protection percent(double start, double target) {
  Protection p{"/a", 0, 0, 0};
  p.startMarginPercent = start;
  p.targetMarginPercent = target;
  return p;
}

std::optional<ErrorKind> kind(const std::optional<OpError>& e) {
  return e ? std::optional<ErrorKind>(e->kind) : std::nullopt;
}

TEST(Protection, FormChecks) {
  EXPECT_EQ(kind(checkProtection(bytes(8 * MiB, 32 * MiB))), std::nullopt);
  EXPECT_EQ(kind(checkProtection(percent(10, 25))), std::nullopt);
  Protection noLabel = bytes(1, 2);
  noLabel.cgroup = "a";
  EXPECT_EQ(kind(checkProtection(noLabel)), ErrorKind::kBadInput);
  EXPECT_EQ(kind(checkProtection(bytes(0, 2))), ErrorKind::kBadInput);
  EXPECT_EQ(kind(checkProtection(bytes(2, 0))), ErrorKind::kBadInput);
  EXPECT_EQ(kind(checkProtection(bytes(2, 2))), ErrorKind::kBadInput);  // target > start
  EXPECT_EQ(kind(checkProtection(percent(30, 20))), ErrorKind::kBadInput);
  EXPECT_EQ(kind(checkProtection(percent(0, 100))), ErrorKind::kBadInput);  // below 100
  EXPECT_EQ(kind(checkProtection(percent(-1, 20))), ErrorKind::kBadInput);
  Protection both = percent(10, 20);
  both.startMarginBytes = MiB;
  EXPECT_EQ(kind(checkProtection(both)), ErrorKind::kBadInput);
  Protection root = bytes(1, 2);
  root.cgroup = "/";
  EXPECT_EQ(kind(checkProtection(root)), ErrorKind::kForbidden);
  // Mixed forms are only comparable at a limit.
  Protection mixed = bytes(32 * MiB, 0);
  mixed.targetMarginPercent = 10;
  EXPECT_EQ(kind(checkProtection(mixed)), std::nullopt);
  EXPECT_EQ(kind(checkAtLimit(mixed, 256 * MiB)), ErrorKind::kBadInput);  // 25.6 MiB < 32
  EXPECT_EQ(kind(checkAtLimit(mixed, 1024 * MiB)), std::nullopt);
}

TEST(Protection, ChecksAtTheLimit) {
  EXPECT_EQ(kind(checkAtLimit(bytes(8 * MiB, 32 * MiB), 256 * MiB)), std::nullopt);
  EXPECT_EQ(kind(checkAtLimit(bytes(8 * MiB, 256 * MiB), 256 * MiB)),
            ErrorKind::kBadInput);
  // 0.5% of 100 bytes floors to 0.
  EXPECT_EQ(kind(checkAtLimit(percent(0.5, 10), 100)), ErrorKind::kBadInput);
  auto e = checkAtLimit(percent(10, 10.1), 100);  // both floor to 10
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("the target is 10 bytes, the start 10"), std::string::npos);
}

TEST(Protection, MarginMaths) {
  Protection p = percent(25, 50);
  EXPECT_EQ(p.startBytes(1000), 250u);
  EXPECT_EQ(p.targetBytes(999), 499u);  // floor
  EXPECT_EQ(marginBytes(700, 1000), 300u);
  EXPECT_EQ(marginBytes(1200, 1000), 0u);
  EXPECT_FALSE(marginShort(p, 750, 1000));  // margin 250 = start
  EXPECT_TRUE(marginShort(p, 751, 1000));
  EXPECT_EQ(reclaimNeed(p, 800, 1000), 300u);  // to a 500 margin
  EXPECT_EQ(reclaimNeed(p, 500, 1000), 0u);
  // A target that fell below a bytes start margin: reclaim to the start.
  Protection mixed = bytes(300, 0);
  mixed.targetMarginPercent = 10;
  EXPECT_EQ(reclaimNeed(mixed, 900, 1000), 200u);
  EXPECT_EQ(v1Threshold(bytes(100, 200), 1000), 900u);
  EXPECT_EQ(v1Threshold(bytes(2000, 3000), 1000), 1u);
  EXPECT_EQ(errorKindName(ErrorKind::kConflict), "conflict");
}

}  // namespace
}  // namespace memcg::controller
