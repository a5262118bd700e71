// The reader's wait (tracefs_session.h "When rounds run"): in
// kPoll it sleeps in epoll_wait while no event comes, instead of a round
// every poll_interval, and an event wakes it; records held back by a round
// are handed out without another event. Live: our own tracefs instances
// (memcg_exporter_test_tracepoll_*), one event, sched_process_fork filtered
// to a helper process of the test's that forks on request (not the test
// itself: creating a thread is a fork event too, and the sessions start
// threads), so that nothing else can put data in them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/support/tracing_live_support.h"
#include "tracing/tracefs_session.h"

namespace memcg::tracing {
namespace {

using namespace live;  // NOLINT
using namespace std::chrono_literals;

class CountingSink : public RecordSink {
 public:
  void onRecord(const void*, uint32_t, uint64_t ts, int) override {
    if (ts < last_) backwards_.fetch_add(1);
    last_ = ts;
    records_.fetch_add(1);
  }
  void onRoundEnd() override {}
  uint64_t records() const { return records_.load(); }
  uint64_t backwards() const { return backwards_.load(); }

 private:
  uint64_t last_ = 0;
  std::atomic<uint64_t> records_{0}, backwards_{0};
};

// A single-threaded child that forks (and reaps) a short-lived grandchild
// for every byte written to it, answering each with a byte once reaped.
struct Forker {
  pid_t pid = -1;
  int cmd = -1, done = -1;
  Forker() {
    int c[2], d[2];
    if (::pipe2(c, O_CLOEXEC) != 0 || ::pipe2(d, O_CLOEXEC) != 0) return;
    pid = ::fork();
    if (pid == 0) {   // async-signal-safe calls only: the parent has threads
      ::close(c[1]);  // or closing the parent's end would not end the loop
      ::close(d[0]);
      char b;
      while (::read(c[0], &b, 1) == 1) {
        pid_t k = ::fork();
        if (k == 0) ::_exit(0);
        int st = 0;
        if (k > 0) ::waitpid(k, &st, 0);
        b = k > 0 ? 1 : 0;
        if (::write(d[1], &b, 1) != 1) break;
      }
      ::_exit(0);
    }
    ::close(c[0]);
    ::close(d[1]);
    cmd = c[1];
    done = d[0];
  }
  bool forkOne() {
    char b = 1;
    if (::write(cmd, &b, 1) != 1 || ::read(done, &b, 1) != 1) return false;
    return b == 1;
  }
  ~Forker() {
    if (cmd >= 0) ::close(cmd);  // EOF: it exits
    if (done >= 0) ::close(done);
    if (pid > 0) {
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
  }
};

struct Session {
  std::unique_ptr<TracefsSession> s;
  CountingSink sink;
  std::string error;
  Session(int n, SessionOptions::Wait wait, std::chrono::milliseconds interval,
          pid_t parent) {
    SessionOptions o;
    o.instance_name = uniq("tracepoll", n);
    o.buffer_kb_per_cpu = 1024;
    o.wait = wait;
    o.poll_interval = interval;
    o.idle_wake = std::chrono::hours(1);  // only an event can wake a kPoll reader
    auto r = TracefsSession::open(o);
    if (!r.ok()) {
      error = r.error().message();
      return;
    }
    s = std::move(r.value());
    auto st = s->enableEvent("sched", "sched_process_fork",
                             "parent_pid==" + std::to_string(parent));
    if (st.ok()) st = s->start(&sink);
    if (!st.ok()) {
      error = st.error().message();
      s.reset();
    }
  }
  ~Session() {
    if (s) s->stop();
  }
};

// Polls `pred` every 10 ms for up to 30 s.
template <class P>
bool eventually(P pred) {
  for (auto end = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < end;) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

class TracingPollLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!skipReason.empty()) GTEST_SKIP() << skipReason;
  }
};

TEST_F(TracingPollLive, IdleReaderSleepsUntilAnEventWakesIt) {
  Forker forker;
  ASSERT_GT(forker.pid, 0);
  Session poll(1, SessionOptions::Wait::kPoll, 20ms, forker.pid);
  ASSERT_NE(poll.s, nullptr) << poll.error;
  ASSERT_EQ(poll.s->waitMode(), SessionOptions::Wait::kPoll)
      << "the kernel refused buffer_percent 0 or epoll (see the log)";
  Session interval(2, SessionOptions::Wait::kInterval, 20ms, forker.pid);
  ASSERT_NE(interval.s, nullptr) << interval.error;
  ASSERT_TRUE(eventually([&] { return poll.s->stats().rounds >= 1; }))
      << "no first round";

  // One second of nothing, both readers side by side: the interval reader
  // runs its rounds (~50), the poll reader none (nothing can wake it but
  // our forks; idle_wake is an hour).
  const SessionStats p0 = poll.s->stats(), i0 = interval.s->stats();
  std::this_thread::sleep_for(1s);
  const SessionStats p1 = poll.s->stats(), i1 = interval.s->stats();
  EXPECT_GE(i1.rounds - i0.rounds, 2u) << "the interval reader did not run";
  EXPECT_GE(i1.cpu_reads - i0.cpu_reads, (i1.rounds - i0.rounds) * interval.s->cpuCount())
      << "the interval reader reads every CPU each round";
  EXPECT_EQ(p1.rounds, p0.rounds) << "the poll reader ran with no event";
  EXPECT_EQ(p1.cpu_reads, p0.cpu_reads);

  // An event wakes it, and one round hands it out (it waits commit_slack
  // after the wake, so the event is past the watermark).
  ASSERT_TRUE(forker.forkOne());
  ASSERT_TRUE(eventually([&] { return poll.sink.records() >= 1; }))
      << "the event did not wake the poll reader";
  EXPECT_EQ(poll.sink.records(), 1u);
  const SessionStats p2 = poll.s->stats();
  EXPECT_GE(p2.rounds, p1.rounds + 1);
  // It read the CPUs that held data, not every CPU until EAGAIN round after round.
  EXPECT_LE(p2.cpu_reads - p1.cpu_reads,
            2 * (p2.rounds - p1.rounds) * poll.s->cpuCount());
  EXPECT_TRUE(eventually([&] { return interval.sink.records() >= 1; }));
}

TEST_F(TracingPollLive, HeldBackRecordsAreHandedOutWithoutAnotherEvent) {
  // A burst of forks over ~300 ms: rounds during it hold back the newest
  // records (the last commit_slack); after the burst nothing wakes the
  // reader, yet every record must come out, in order.
  Forker forker;
  ASSERT_GT(forker.pid, 0);
  Session poll(3, SessionOptions::Wait::kPoll, 20ms, forker.pid);
  ASSERT_NE(poll.s, nullptr) << poll.error;
  ASSERT_EQ(poll.s->waitMode(), SessionOptions::Wait::kPoll);
  ASSERT_TRUE(eventually([&] { return poll.s->stats().rounds >= 1; }));
  constexpr uint64_t kForks = 60;
  for (uint64_t i = 0; i < kForks; ++i) {
    ASSERT_TRUE(forker.forkOne());
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(eventually([&] { return poll.sink.records() >= kForks; }))
      << poll.sink.records() << " of " << kForks << " records handed out; held "
      << poll.s->stats().held;
  EXPECT_EQ(poll.sink.records(), kForks);
  EXPECT_EQ(poll.sink.backwards(), 0u);
  EXPECT_EQ(poll.s->stats().out_of_order, 0u);
  EXPECT_EQ(poll.s->stats().lost, 0u);
}

}  // namespace
}  // namespace memcg::tracing
