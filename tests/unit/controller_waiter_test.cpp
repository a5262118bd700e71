// controller/waiter.h: wake sources, epoll keys and the PSI trigger spec.
#include <gtest/gtest.h>

#include "controller/waiter.h"

namespace memcg::controller {
namespace {

TEST(Waiter, EpollKeysKeepTheWakeIdApart) {
  for (uint64_t id : {1u, 2u, 77u}) {
    for (bool psi : {false, true}) {
      const uint64_t k = epollKey(id, psi);
      EXPECT_NE(k, kWakeId);
      EXPECT_EQ(epollKeyId(k), id);
      EXPECT_EQ(epollKeyIsPsi(k), psi);
    }
  }
  EXPECT_NE(epollKey(1, true), epollKey(2, false));
}

TEST(Waiter, WakeName) {
  EXPECT_EQ(wakeName(false, true, false), "threshold+poll");
  EXPECT_EQ(wakeName(true, true, true), "memory.events+psi+poll");
  EXPECT_EQ(wakeName(true, false, true), "psi+poll");
  EXPECT_EQ(wakeName(true, false, false), "poll");
}

TEST(Waiter, PsiTriggerSpec) {
  auto t = parsePsiTrigger("full 5000 1000000");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->full);
  EXPECT_EQ(t->stallUs, 5000u);
  EXPECT_EQ(t->windowUs, 1000000u);
  EXPECT_FALSE(parsePsiTrigger("some 1000 499999").ok());    // window below 500 ms
  EXPECT_FALSE(parsePsiTrigger("some 1000 10000001").ok());  // above 10 s
  EXPECT_FALSE(parsePsiTrigger("some 600000 500000").ok());  // stall above window
  EXPECT_FALSE(parsePsiTrigger("some 0 500000").ok());
  EXPECT_FALSE(parsePsiTrigger("half 1000 500000").ok());
  EXPECT_FALSE(parsePsiTrigger("some 1000 500000 x").ok());
}

}  // namespace
}  // namespace memcg::controller
