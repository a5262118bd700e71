// CpuPoller (tracing/cpu_poller.h) on pipes standing in for per-CPU buffers:
// which descriptors are ready, waking on data, on wake() and on timeout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tracing/cpu_poller.h"

namespace memcg::tracing {
namespace {

using namespace std::chrono_literals;

struct Pipes {
  std::vector<Fd> r, w;
  explicit Pipes(int n) {
    for (int i = 0; i < n; ++i) {
      int p[2];
      EXPECT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
      r.emplace_back(p[0]);
      w.emplace_back(p[1]);
    }
  }
  std::vector<int> fds() const {
    std::vector<int> v;
    for (const auto& f : r) v.push_back(f.get());
    return v;
  }
  void put(int i) { ASSERT_EQ(::write(w[i].get(), "x", 1), 1); }
  void take(int i) {
    char c;
    ASSERT_EQ(::read(r[i].get(), &c, 1), 1);
  }
};

TEST(CpuPoller, ReadyListsExactlyTheDescriptorsHoldingData) {
  Pipes p(64);
  auto poller = CpuPoller::create(p.fds());
  ASSERT_TRUE(poller.ok()) << poller.error().message();
  std::vector<uint8_t> ready;
  EXPECT_EQ(poller->ready(ready), 0u);
  ASSERT_EQ(ready.size(), 64u);
  p.put(3);
  p.put(63);
  EXPECT_EQ(poller->ready(ready), 2u);
  for (size_t i = 0; i < ready.size(); ++i) EXPECT_EQ(ready[i], i == 3 || i == 63) << i;
  p.take(3);
  EXPECT_EQ(poller->ready(ready), 1u);
  EXPECT_EQ(ready[63], 1);
  EXPECT_EQ(ready[3], 0);
}

TEST(CpuPoller, WaitReturnsOnDataStaysReadyUntilReadAndTimesOutWhenEmpty) {
  Pipes p(8);
  auto poller = CpuPoller::create(p.fds());
  ASSERT_TRUE(poller.ok());
  EXPECT_EQ(poller->wait(0ms), CpuPoller::Wake::kTimeout);
  EXPECT_EQ(poller->wait(20ms), CpuPoller::Wake::kTimeout);
  // Data written from another thread while the poller sleeps (an hour at most).
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    p.put(5);
  });
  EXPECT_EQ(poller->wait(std::chrono::hours(1)), CpuPoller::Wake::kData);
  writer.join();
  EXPECT_EQ(poller->wait(0ms), CpuPoller::Wake::kData) << "level-triggered: still unread";
  p.take(5);
  EXPECT_EQ(poller->wait(0ms), CpuPoller::Wake::kTimeout);
}

TEST(CpuPoller, WakeInterruptsAWaitUntilCleared) {
  Pipes p(2);
  auto poller = CpuPoller::create(p.fds());
  ASSERT_TRUE(poller.ok());
  std::thread waker([&] {
    std::this_thread::sleep_for(50ms);
    poller->wake();
  });
  EXPECT_EQ(poller->wait(std::chrono::hours(1)), CpuPoller::Wake::kWoken);
  waker.join();
  EXPECT_EQ(poller->wait(0ms), CpuPoller::Wake::kWoken) << "stays woken";
  poller->clearWake();
  EXPECT_EQ(poller->wait(0ms), CpuPoller::Wake::kTimeout);
  EXPECT_EQ(poller->syscalls(), 3u);  // three epoll_waits
}

TEST(CpuPoller, ADescriptorInErrorCountsAsReady) {
  Pipes p(2);
  auto poller = CpuPoller::create(p.fds());
  ASSERT_TRUE(poller.ok());
  p.w[1].reset();  // the writer gone: POLLHUP, a read would tell (EOF)
  std::vector<uint8_t> ready;
  EXPECT_EQ(poller->ready(ready), 1u);
  EXPECT_EQ(ready[1], 1);
  EXPECT_EQ(poller->wait(0ms), CpuPoller::Wake::kData);
}

}  // namespace
}  // namespace memcg::tracing
