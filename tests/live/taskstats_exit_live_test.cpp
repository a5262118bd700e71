// Regression: an exited task's delays were attributed only if some
// scrape saw it alive. A child in a 64 MiB memcg streams a 256 MiB file and
// exits; the cgroup is scraped only afterwards. Its reclaim delays
// (taskstats freepages) must be attributed, and close to the number of memcg
// reclaims the kernel traced for the cgroup (the vmscan backend, which is
// also the independent count here). Three times: with the tracefs backend as
// the collector's lookup, and with the bpf backend as it (its map of exited
// processes' memcgs; skipped without the backend) (256 MiB, well under a
// second, the cgroup never scraped before), and without a lookup, by the
// fallback (cgroup.procs sampled every second between scrapes: a 1 GiB
// stream, ~1-2 s, then 2 s idle in the cgroup before it is killed, in a
// cgroup scraped once before the task started; the tracefs backend counts).
// Root, cgroup v1, TASKSTATS and kernel.task_delayacct (switched on for the
// test and restored).
#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "collectors/taskstats/cgroup_delays.h"
#include "collectors/taskstats/delayacct_sysctl.h"
#include "collectors/taskstats_locator.h"
#include "tests/support/tracing_live_support.h"
#include "tests/support/test_cgroup.h"
#include "tracing/bpf/bpf_tracer.h"

namespace memcg::tracing::live {
namespace {

using taskstats::CgroupDelayAggregator;
using taskstats::DelayClass;

constexpr uint64_t kLimit = 64 * kMiB;
constexpr uint64_t kFile = 256 * kMiB;

class TaskstatsExitLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!skipReason.empty()) GTEST_SKIP() << skipReason;
    if (auto r = test::v1SkipReason(); !r.empty()) GTEST_SKIP() << r;
    if (!taskstats::TaskstatsClient::open().ok()) GTEST_SKIP() << "no TASKSTATS";
    auto prev = taskstats::readTaskDelayacct();
    if (!prev.ok()) GTEST_SKIP() << "no kernel.task_delayacct: " << prev.error().message();
    prev_ = *prev;
    ASSERT_TRUE(taskstats::writeTaskDelayacct(true).ok());
    struct statfs fs {};
    if (::statfs("/var/tmp", &fs) == 0 && fs.f_type == 0x01021994)
      GTEST_SKIP() << "/var/tmp is tmpfs: no reclaim";
  }
  void TearDown() override {
    if (prev_) (void)taskstats::writeTaskDelayacct(*prev_);
  }

  struct Result {
    uint64_t delays = 0;  // taskstats freepages count attributed to the cgroup
    uint64_t traced = 0;  // memcg reclaims the tracer saw for the cgroup
    uint64_t located = 0;
  };

  // Who tells the collector where an exited process was.
  enum class Lookup { kTracefs, kBpf, kNone };

  Result run(Lookup how, int n, uint64_t file_bytes) {
    Result r;
    const bool with_tracer = how != Lookup::kNone;
    const char* name = how == Lookup::kTracefs ? "trace" : how == Lookup::kBpf ? "bpf" : "proc";
    test::TestCgroupV1 cg(std::string("tracing_texit_") + name);
    cg.write("memory.limit_in_bytes", std::to_string(kLimit));
    // The backend that counts the cgroup's reclaims (and, but for kNone, is
    // the lookup): the bpf backend records exits only when asked, as the
    // App asks when the taskstats collector is on.
    std::unique_ptr<Tracer> tracer;
    std::unique_ptr<bpf::BpfTracer> bpf_tracer;
    const PidCgroupLookup* lookup = nullptr;
    std::function<TraceSnapshot()> snapshot;
    if (how == Lookup::kBpf) {
      bpf::BpfTracerOptions o;
      o.memory_root = kMemcgRoot;
      o.exit_cgroups = true;
      auto t = bpf::BpfTracer::start(o);
      EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
      if (!t.ok()) return r;
      bpf_tracer = std::move(*t);
      lookup = bpf_tracer.get();
      snapshot = [&] { return bpf_tracer->snapshot(); };
    } else {
      auto t = Tracer::start(liveTracerOptions("texit", n));
      EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
      if (!t.ok()) return r;
      tracer = std::move(*t);
      if (how == Lookup::kTracefs) lookup = tracer.get();
      snapshot = [&] { return tracer->snapshot(); };
    }
    auto cgroups = readWholeFile("/proc/cgroups");
    auto hid = cgroups.ok() ? parseMemoryHierarchyId(*cgroups) : std::nullopt;
    EXPECT_TRUE(hid.has_value());
    auto ids = std::make_shared<ProcCgroupResolver>("/proc", *hid, kMemcgRoot);
    CgroupDelayAggregator::Options opts;
    opts.locate_exit = memcg::taskstatsExitLocator(lookup, ids);
    // With the tracer: it alone. Without: sampling, every 250 ms here so that
    // the ~1 s task is sampled for sure (the collector samples every second).
    opts.sample_members = std::chrono::milliseconds(with_tracer ? 0 : 250);
    auto agg = CgroupDelayAggregator::create(std::move(opts));
    EXPECT_TRUE(agg.ok());
    if (!agg.ok()) return r;

    test::WorkloadFile file(file_bytes);
    file.dropCache();
    if (!with_tracer) {
      // Scraped once before the task starts (the cgroup existed before).
      auto before = (*agg)->collect(cg.path());
      EXPECT_TRUE(before.ok());
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (with_tracer) {
      EXPECT_EQ(cg.streamFile(file.path()), 0);  // no scrape while it lives
    } else {
      // The fallback needs a sampling round (every 250 ms, on the
      // aggregator's thread) while the task lives: a ~1 s stream gave only a
      // few, and a loaded machine can starve that thread for as long. The
      // task stays 2 s more after its stream (8 rounds), then is killed:
      // still no scrape while it lives, the same exit record and totals.
      const pid_t pid = cg.streamFileAndStay(file.path());
      std::this_thread::sleep_for(std::chrono::seconds(2));
      ::kill(pid, SIGKILL);
      int status = 0;
      EXPECT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    }
    // The reader runs a poll behind: wait until the traced count stays the
    // same while the reader thread ran twice (its CPU time moved: a round
    // each), not a fixed 800 ms. The first scrape then places the exit,
    // which the pid cache keeps for 50 reader rounds: the wait stays well
    // inside that (at most 8 s; a loaded machine runs fewer rounds). (The
    // bpf backend has no reader: its maps are complete once the task is
    // reaped, and each snapshot's own CPU time moves the clock.)
    auto sampleNow = [&] {
      TraceSnapshot s = snapshot();
      uint64_t n = 0;
      for (const auto& c : s.cgroups)
        if (c.path == cg.label()) n = c.reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total;
      return std::make_pair(n, s.reader_cpu_ns);
    };
    auto last = sampleNow();
    int quietRounds = 0;
    for (int i = 0; i < 160 && quietRounds < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto now = sampleNow();
      if (now.first != last.first) quietRounds = 0;
      else if (now.second != last.second) ++quietRounds;
      last = now;
    }
    // The exit record is placed by the listener's thread, retried every
    // 200 ms until the lookup knows the task: the scrape comes after that
    // (up to 5 s), as a scrape interval would. With the bpf backend the
    // wait above is a few snapshots, shorter than one retry: once in 111
    // runs its scrape came first and found nothing placed yet.
    for (int i = 0; i < 100 && with_tracer && (*agg)->stats().exits_located == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto d = (*agg)->collect(cg.path());  // the first scrape: after the exit
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message());
    if (d.ok()) r.delays = (*d)[DelayClass::kFreepages].count;
    const auto st = (*agg)->stats();
    r.located = st.exits_located;
    for (const auto& c : snapshot().cgroups) {
      if (c.path == cg.label()) r.traced = c.reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total;
    }
    std::printf(
        "[ live ] %s: task ran and was placed in %.2f s, no scrape; freepages delays attributed %lu, memcg "
        "reclaims traced %lu, exits located %lu (exit records %lu, listener overruns %lu)\n",
        how == Lookup::kTracefs ? "tracefs lookup"
        : how == Lookup::kBpf   ? "bpf lookup"
                                : "sampling fallback",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
        static_cast<unsigned long>(r.delays), static_cast<unsigned long>(r.traced),
        static_cast<unsigned long>(r.located), static_cast<unsigned long>(st.exit_messages),
        static_cast<unsigned long>(st.listener_overruns));
    return r;
  }

  static void expectClose(const Result& r) {
    ASSERT_GT(r.traced, 20u) << "the workload did not reclaim";
    EXPECT_GT(r.delays, 0u);
    EXPECT_GE(r.located, 1u);
    // One freepages delay per memcg reclaim call (try_to_free_mem_cgroup_pages);
    // direct reclaim would add more, so allow 10% either way.
    EXPECT_GE(static_cast<double>(r.delays), 0.9 * static_cast<double>(r.traced));
    EXPECT_LE(static_cast<double>(r.delays), 1.1 * static_cast<double>(r.traced) + 2);
  }

  std::optional<bool> prev_;
};

TEST_F(TaskstatsExitLive, ShortTaskWithTracerLookup) {
  expectClose(run(Lookup::kTracefs, 1, kFile));
}

TEST_F(TaskstatsExitLive, ShortTaskWithBpfLookup) {
  if (auto a = bpf::probe(bpf::BpfTracerOptions{}); !a.ok)
    GTEST_SKIP() << "bpf backend unavailable: " << a.reason;
  expectClose(run(Lookup::kBpf, 3, kFile));
}

TEST_F(TaskstatsExitLive, TaskWithoutTracingBySampling) {
  expectClose(run(Lookup::kNone, 2, 4 * kFile));
}

}  // namespace
}  // namespace memcg::tracing::live
