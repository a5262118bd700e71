// controller/protection_table.h and episode_queue.h: the parts the waiter,
// the worker and the API share, each under its own lock.
#include "controller/protection_table.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "controller/episode_queue.h"
#include "controller/prot.h"

namespace memcg::controller {
namespace {

std::shared_ptr<Prot> prot(const std::string& cgroup) {
  auto p = std::make_shared<Prot>();
  p->p.cgroup = cgroup;
  return p;
}

bool removed(const Prot& p) {
  std::lock_guard<std::mutex> g(p.mu);
  return p.locked.removed;
}

TEST(ProtectionTable, AddGivesIdsAndRefusesASecondProtectionOfACgroup) {
  ProtectionTable t;
  auto a = prot("/a"), b = prot("/b"), a2 = prot("/a");
  ASSERT_TRUE(t.add(a));
  ASSERT_TRUE(t.add(b));
  EXPECT_EQ(a->id, 1u);
  EXPECT_EQ(b->id, 2u);
  EXPECT_FALSE(t.add(a2));
  EXPECT_EQ(a2->id, 0u);  // not published
  EXPECT_EQ(t.find("/a"), a);
  EXPECT_EQ(t.find("/c"), nullptr);
  EXPECT_TRUE(t.contains("/b"));
  EXPECT_EQ(t.byLabel().size(), 2u);
}

TEST(ProtectionTable, RemoveEndsItAtOnceAndTheWaiterSweepsItOnce) {
  ProtectionTable t;
  auto a = prot("/a"), b = prot("/b");
  t.add(a);
  t.add(b);
  {
    std::lock_guard<std::mutex> g(b->mu);
    b->locked.busy = true;  // an episode under way
  }
  bool idle = false;
  EXPECT_EQ(t.remove("/a", idle), a);
  EXPECT_TRUE(idle);
  EXPECT_EQ(t.remove("/b", idle), b);
  EXPECT_FALSE(idle);  // the worker releases its journal entry
  EXPECT_EQ(t.remove("/a", idle), nullptr);
  EXPECT_TRUE(removed(*a));
  EXPECT_FALSE(t.contains("/a"));
  EXPECT_TRUE(t.byLabel().empty());
  // Still in the id index: the waiter closes their fds when it sweeps.
  EXPECT_EQ(t.byId().size(), 2u);
  std::vector<ProtectionTable::Ptr> live, dead;
  t.sweep(live, dead);
  EXPECT_TRUE(live.empty());
  ASSERT_EQ(dead.size(), 2u);
  EXPECT_EQ(dead[0], a);
  live.clear();
  dead.clear();
  t.sweep(live, dead);
  EXPECT_TRUE(dead.empty());
  EXPECT_TRUE(t.byId().empty());
}

TEST(ProtectionTable, AVanishedCgroupEndsOnceAndNeverTakesANewerProtection) {
  ProtectionTable t;
  auto old = prot("/a");
  t.add(old);
  EXPECT_TRUE(t.removeGone(old));
  EXPECT_FALSE(t.removeGone(old));  // ended already: not released or audited twice
  EXPECT_FALSE(t.contains("/a"));
  // The cgroup is made again and protected again: a late report about the
  // old protection leaves the new one alone.
  auto again = prot("/a");
  ASSERT_TRUE(t.add(again));
  EXPECT_FALSE(t.removeGone(old));
  EXPECT_EQ(t.find("/a"), again);
  // And one unprotected by hand is not ended a second time.
  bool idle = false;
  t.remove("/a", idle);
  EXPECT_FALSE(t.removeGone(again));
}

TEST(EpisodeQueue, PopsInOrderAndStopWakesAWaitingWorker) {
  EpisodeQueue q;
  auto a = prot("/a"), b = prot("/b");
  q.push(a);
  q.push(b);
  EXPECT_EQ(q.pop(), a);
  EXPECT_EQ(q.pop(), b);
  auto waiting = std::async(std::launch::async, [&] { return q.pop(); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  q.stop();
  EXPECT_EQ(waiting.get(), nullptr);
  // What is queued after a stop waits for the restart.
  q.push(a);
  EXPECT_EQ(q.pop(), nullptr);
  q.restart();
  EXPECT_EQ(q.pop(), a);
}

}  // namespace
}  // namespace memcg::controller
