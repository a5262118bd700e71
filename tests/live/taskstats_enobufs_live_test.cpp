// Fault: taskstats netlink ENOBUFS, from the real kernel (root,
// cgroup v1 memory, TASKSTATS). The aggregator is given tiny receive buffers
// (Options::query_rcvbuf / listener_rcvbuf; the kernel drops what does not
// fit and the next read fails with ENOBUFS):
//  - the query socket: 300 processes of a cgroup of this test asked for 64 a
//    sendmsg(): replies are dropped, counted (query_overruns), logged once,
//    and asked for again: every process is answered, no query error;
//  - the exit listener: the 300 exit while nobody drains it: records are
//    dropped, counted (listener_overruns), logged once;
//  - then the sockets recover: 3 new processes are scraped and exit, and
//    their exit records are read and folded (exits_folded grows by 3),
//    and a scrape answers all of them again.
// Everything created is removed in TearDown, also on failure.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collectors/taskstats/cgroup_delays.h"
#include "common/file.h"

namespace memcg::taskstats {
namespace {

constexpr const char* kMemcgRoot = "/sys/fs/cgroup/memory";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; ++p) ++n;
  return n;
}

template <typename F>
bool waitUntil(F&& pred, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

class TaskstatsEnobufs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root (CAP_NET_ADMIN for TASKSTATS, cgroupfs)";
    struct statfs sfs;
    if (statfs(kMemcgRoot, &sfs) != 0 || sfs.f_type != CGROUP_SUPER_MAGIC)
      GTEST_SKIP() << "no cgroup v1 memory hierarchy at " << kMemcgRoot;
    if (!TaskstatsClient::open().ok()) GTEST_SKIP() << "no TASKSTATS";
    cgroup_ = std::string(kMemcgRoot) + "/memcg_exporter_test_faults_enobufs_" +
              std::to_string(getpid());
    ASSERT_EQ(mkdir(cgroup_.c_str(), 0755), 0) << strerror(errno);
    made_ = true;
  }
  void TearDown() override {
    for (auto& g : groups_) release(g);
    if (made_) {
      for (int i = 0; i < 100 && rmdir(cgroup_.c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      struct stat st;
      EXPECT_NE(stat(cgroup_.c_str(), &st), 0) << "could not remove " << cgroup_;
    }
  }

  struct Group {
    std::vector<pid_t> pids;
    int release_fd = -1;  // closing it lets them exit
  };
  /// n children that join the cgroup and wait for release_fd to close.
  /// Only async-signal-safe calls after fork.
  Group spawn(int n) {
    Group g;
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
    const std::string procs = cgroup_ + "/cgroup.procs";
    for (int i = 0; i < n; ++i) {
      pid_t c = fork();
      if (c == 0) {
        close(p[1]);
        int f = open(procs.c_str(), O_WRONLY);
        if (f < 0 || write(f, "0", 1) != 1) _exit(10);
        close(f);
        char ch;
        while (read(p[0], &ch, 1) > 0) {
        }
        _exit(0);
      }
      if (c > 0) g.pids.push_back(c);
    }
    close(p[0]);
    g.release_fd = p[1];
    return g;
  }
  static void release(Group& g) {
    if (g.release_fd >= 0) close(g.release_fd);
    g.release_fd = -1;
    for (pid_t c : g.pids) waitpid(c, nullptr, 0);
    g.pids.clear();
  }
  size_t members() {
    auto ids = readIdList(cgroup_ + "/cgroup.procs");
    return ids.ok() ? ids->size() : 0;
  }

  std::string cgroup_;
  bool made_ = false;
  std::vector<Group> groups_;
};

TEST_F(TaskstatsEnobufs, OverrunsAreCountedLoggedRetriedAndTheSocketsRecover) {
  constexpr int kProcs = 300;
  groups_.push_back(spawn(kProcs));
  ASSERT_EQ(groups_[0].pids.size(), size_t(kProcs));
  ASSERT_TRUE(waitUntil([&] { return members() == kProcs; })) << members();

  CgroupDelayAggregator::Options o;
  o.exit_thread = false;  // exits are read only when the test says (collect)
  o.query_rcvbuf = 4096;  // a few replies fit; the kernel doubles it
  // ~50 exit records: 300 at once overflow it, while the host's other exits
  // between two drains of step 3 (every 20 ms) fit.
  o.listener_rcvbuf = 32 << 10;
  o.batch = 64;
  ::testing::internal::CaptureStderr();
  auto agg = CgroupDelayAggregator::create(o);
  ASSERT_TRUE(agg.ok()) << agg.error().message();
  CgroupDelayAggregator& a = **agg;
  ASSERT_TRUE(a.stats().listening);

  // 1. Queries: replies dropped and asked for again; every process answered.
  auto r = a.collect(cgroup_);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto st = a.stats();
  std::printf("query: %u of %d answered, %u errors, query_overruns %llu\n",
              r->live_processes, kProcs, r->query_errors,
              static_cast<unsigned long long>(st.query_overruns));
  EXPECT_GT(st.query_overruns, 0u) << "the tiny buffer should have overflowed";
  EXPECT_EQ(r->live_processes, uint32_t(kProcs));
  EXPECT_EQ(r->query_errors, 0u);

  // 2. Exits nobody drains: the listener overflows.
  release(groups_[0]);
  ASSERT_TRUE(waitUntil([&] { return members() == 0; }));
  auto r2 = a.collect(cgroup_);  // drains: ENOBUFS, counted
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  st = a.stats();
  std::printf(
      "exits: listener_overruns %llu, exit_messages %llu, exits_folded %llu, "
      "without_record %llu\n",
      static_cast<unsigned long long>(st.listener_overruns),
      static_cast<unsigned long long>(st.exit_messages),
      static_cast<unsigned long long>(st.exits_folded),
      static_cast<unsigned long long>(st.exits_without_record));
  EXPECT_GT(st.listener_overruns, 0u);
  EXPECT_LT(st.exits_folded, uint64_t(kProcs)) << "some exit records were lost";

  // 3. Recovery: three new processes, scraped, then gone; their exit
  // records are read (the socket works again) and folded.
  const uint64_t folded_before = st.exits_folded;
  const uint64_t listener_before = st.listener_overruns;
  groups_.push_back(spawn(3));
  ASSERT_TRUE(waitUntil([&] { return members() == 3; }));
  auto r3 = a.collect(cgroup_);
  ASSERT_TRUE(r3.ok()) << r3.error().message();
  EXPECT_EQ(r3->live_processes, 3u);
  EXPECT_EQ(r3->query_errors, 0u);
  release(groups_[1]);
  ASSERT_TRUE(waitUntil([&] { return members() == 0; }));
  ASSERT_TRUE(waitUntil([&] {
    a.drainExits();
    return a.stats().exits_folded >= folded_before + 3;
  })) << "exits_folded "
      << a.stats().exits_folded << " (was " << folded_before << ")";
  std::printf("recovery: exits_folded %llu -> %llu, listener_overruns %llu -> %llu\n",
              static_cast<unsigned long long>(folded_before),
              static_cast<unsigned long long>(a.stats().exits_folded),
              static_cast<unsigned long long>(listener_before),
              static_cast<unsigned long long>(a.stats().listener_overruns));
  auto r4 = a.collect(cgroup_);
  ASSERT_TRUE(r4.ok()) << r4.error().message();
  EXPECT_EQ(r4->live_processes, 0u);

  const std::string log = ::testing::internal::GetCapturedStderr();
  const size_t qlines = count(log, "taskstats query socket overflowed");
  const size_t llines = count(log, "taskstats exit listener overflowed");
  std::printf("log lines: query %zu, listener %zu\n", qlines, llines);
  EXPECT_EQ(qlines, 1u) << log;
  EXPECT_EQ(llines, 1u) << log;
}

}  // namespace
}  // namespace memcg::taskstats
