// Issue 11 on the running kernel: reclaim stall times stay right when the
// reclaiming task moves between CPUs. A child in a fresh memcg streams a file
// several times its limit while this test moves it between CPU0 and CPU1
// every 2 ms (sched_setaffinity). The exporter (the vmscan collector, as it
// runs in production) is compared with an independent count: a second
// private tracefs instance of ours recording the same begin/end events as
// text, where the kernel merges the CPUs by timestamp, paired here per pid.
// Root, cgroup v1 memory, tracefs and 2 CPUs; skipped with the reason
// otherwise.
//
// Expected: the same number of pairs, 0 unpaired on both sides, stall sums
// (per task in the reclaim report, per cgroup in the report and in the stall
// histogram's _sum) within 1% of the reference (its text timestamps have
// microsecond resolution), histogram _count equal to the pairs.
#include <gtest/gtest.h>
#include <sched.h>

#include <cinttypes>
#include <cmath>

#include "collectors/collector.h"
#include "collectors/discovery.h"
#include "collectors/vmscan.h"
#include "metrics/text_format.h"
#include "tests/support/tracing_live_support.h"
#include "tracing/reclaim_report.h"
#include "tracing/tracer.h"

namespace memcg::tracing {
namespace {

using namespace live;  // NOLINT

std::string scrape(Collector& c, Discovery& d) {
  auto tree = d.refresh();
  EXPECT_TRUE(tree.ok());
  std::string text;
  if (!tree.ok()) return text;
  ScrapeContext ctx(**tree);
  metrics::Sink sink;
  c.collect(ctx, sink);
  metrics::writeText(sink.families(), text);
  EXPECT_EQ(ctx.errors.size(), 0u);
  return text;
}

// The reference: one task's begin/end pairs in the kernel-ordered text trace.
struct RefPairs {
  uint64_t begins = 0, ends = 0, pairs = 0;
  uint64_t unpaired_ends = 0, open_begins = 0;
  uint64_t cross_cpu = 0;  // pairs that began on one CPU and ended on another
  uint64_t stall_us = 0;
};

// "<comm>-<pid> [cpu] flags <sec>.<usec>: mm_vmscan_<kind>_reclaim_{begin,end}: ..."
RefPairs pairTrace(std::string_view text, int pid, const std::string& kind) {
  RefPairs r;
  const std::string begin = ": mm_vmscan_" + kind + "_reclaim_begin:";
  const std::string end = ": mm_vmscan_" + kind + "_reclaim_end:";
  bool open = false;
  uint64_t open_ts = 0;
  long open_cpu = -1;
  std::string_view line;
  while (nextLine(text, line)) {
    if (line.empty() || line[0] == '#') continue;
    const bool is_begin = line.find(begin) != std::string_view::npos;
    const bool is_end = !is_begin && line.find(end) != std::string_view::npos;
    if (!is_begin && !is_end) continue;
    size_t br = line.find(" [");
    if (br == std::string_view::npos) continue;
    std::string_view task = trimRight(line.substr(0, br));
    size_t dash = task.rfind('-');
    if (dash == std::string_view::npos) continue;
    auto p = parseI64(task.substr(dash + 1));
    if (!p || *p != pid) continue;
    size_t close = line.find(']', br);
    auto cpu = parseI64(line.substr(br + 2, close - br - 2));
    // The timestamp is the token that ends in ':' before the event name.
    size_t ev = line.find(is_begin ? begin : end);
    size_t sp = line.rfind(' ', ev - 1);
    std::string_view ts = line.substr(sp + 1, ev - sp - 1);
    size_t dot = ts.find('.');
    auto sec = parseU64(ts.substr(0, dot));
    auto usec = parseU64(ts.substr(dot + 1));
    if (!cpu || !sec || !usec || dot == std::string_view::npos) {
      ADD_FAILURE() << "unparsed reference line: " << line;
      continue;
    }
    const uint64_t t = *sec * 1'000'000 + *usec;
    if (is_begin) {
      ++r.begins;
      if (open) ++r.open_begins;
      open = true;
      open_ts = t;
      open_cpu = *cpu;
    } else {
      ++r.ends;
      if (!open) {
        ++r.unpaired_ends;
        continue;
      }
      ++r.pairs;
      r.stall_us += t - open_ts;
      if (*cpu != open_cpu) ++r.cross_cpu;
      open = false;
    }
  }
  if (open) ++r.open_begins;
  return r;
}

// Streams `file` `passes` times (page cache dropped before each), pinned to
// CPU0 at first; exits 0.
struct StreamChild {
  pid_t pid = -1;
  int go = -1;
  StreamChild(const std::string& file, int passes) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      char c;
      ::close(p[1]);
      if (::read(p[0], &c, 1) != 1) ::_exit(2);
      static char buf[1 << 20];
      for (int i = 0; i < passes; ++i) {
        int fd = ::open(file.c_str(), O_RDONLY);
        if (fd < 0) ::_exit(3);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        while (::read(fd, buf, sizeof buf) > 0) {
        }
        ::close(fd);
      }
      ::_exit(0);
    }
    ::close(p[0]);
    go = p[1];
  }
  void start() {
    char c = 1;
    (void)!::write(go, &c, 1);
    ::close(go);
    go = -1;
  }
  ~StreamChild() {
    if (go >= 0) ::close(go);
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

bool pinTo(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(pid, sizeof set, &set) == 0;
}

TEST(TracingOrderLive, MigratingTaskStallsMatchKernelOrderedTrace) {
  if (!skipReason.empty()) GTEST_SKIP() << skipReason;
  {
    cpu_set_t mine;
    if (::sched_getaffinity(0, sizeof mine, &mine) != 0 || !CPU_ISSET(0, &mine) ||
        !CPU_ISSET(1, &mine)) {
      GTEST_SKIP() << "needs CPUs 0 and 1";
    }
  }
  Discovery discovery{DiscoveryOptions{}};
  ASSERT_EQ(discovery.layout().memoryRoot, kMemcgRoot);
  VmscanOptions cfg;
  const int n = 30;

  RefInstance ref(uniq("order_ref", n));
  ASSERT_TRUE(ref.ok) << "mkdir " << ref.dir << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(ref.dir + "/buffer_size_kb", "16384"));
  ASSERT_TRUE(writeStr(ref.dir + "/trace_clock", "mono"));
  for (const char* e : {"mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end",
                        "mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end"}) {
    ASSERT_TRUE(ref.enable("vmscan", e)) << e;
  }
  Cgroup cg(uniq("order", n));
  ASSERT_TRUE(cg.ok) << cg.path << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(32 * kMiB)));
  DataFile file("/var/tmp/" + uniq("order_file", n), 256 * kMiB);
  ASSERT_TRUE(file.ok) << "cannot write " << file.path;

  cfg.instance = uniq("order", n);
  // As the App starts it: the tracer first, then the collector handed it.
  TracingService svc = startTracing(tracerOptions(cfg, discovery.layout(), "/proc"));
  ASSERT_NE(svc.tracer, nullptr) << "tracer did not start: " << svc.down.message();
  tracing::Tracer* tracer = svc.tracer.get();
  auto collector = makeVmscanCollector(tracer, svc.down);
  EXPECT_TRUE(tracer->session().globalOrder()) << "clock " << tracer->session().traceClock();
  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);

  ASSERT_TRUE(writeStr(ref.dir + "/tracing_on", "1"));
  // 4 passes: ~400 pairs, ~30 ms of stall, so that 1% is well above one
  // interrupt landing between the two instances' stamps of one event.
  StreamChild kid(file.path, 4);
  ASSERT_GT(kid.pid, 0);
  ASSERT_TRUE(pinTo(kid.pid, 0));
  ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(kid.pid)));
  const pid_t child = kid.pid;
  kid.start();
  // Move it every 2 ms until it exits.
  uint64_t moves = 0;
  int status = -1;
  for (int cpu = 1;; cpu ^= 1) {
    pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) break;
    ASSERT_EQ(w, 0) << strerror(errno);
    if (pinTo(child, cpu)) ++moves;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kid.pid = -1;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  writeStr(ref.dir + "/tracing_on", "0");

  // The reader polls (200 ms) and holds back the last commit_slack: scrape
  // until the event count stops moving.
  std::string text;
  double prev = -2;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    text = scrape(*collector, discovery);
    double v = sampleValue(text, "memcg_trace_events_total");
    if (v >= 0 && v == prev) break;
    prev = v;
  }
  const nlohmann::json report = reclaimReport(tracer->snapshot());
  const SessionStats ss = tracer->session().stats();

  auto trace = readWholeFile(ref.dir + "/trace");
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(ref.lost(), 0u) << "reference instance lost events; enlarge its buffer";
  const RefPairs memcg = pairTrace(*trace, child, "memcg");
  const RefPairs direct = pairTrace(*trace, child, "direct");

  // The exporter: the cgroup's row and the child's row of the report, and
  // the stall histogram of the scrape.
  nlohmann::json cg_row, kid_row;
  for (const auto& c : report["cgroups"]) {
    if (c["cgroup"] == rel) cg_row = c;
  }
  for (const auto& p : report["processes"]) {
    if (p["pid"].is_number() && p["pid"].get<int>() == child) kid_row = p;
  }
  ASSERT_TRUE(cg_row.is_object()) << rel << " not in the report";
  ASSERT_TRUE(kid_row.is_object()) << "pid " << child << " not in the report";
  const nlohmann::json& km = cg_row["by_kind"]["memcg"];
  const std::string sel = "{cgroup=\"" + rel + "\",kind=\"memcg\"}";
  const double h_sum = sampleValue(text, "memcg_vmscan_reclaim_stall_seconds_sum" + sel);
  const double h_count = sampleValue(text, "memcg_vmscan_reclaim_stall_seconds_count" + sel);
  const double ref_s = static_cast<double>(memcg.stall_us) * 1e-6;
  double unpairedEvents = 0;
  {
    const std::string fam = "memcg_vmscan_unpaired_events_total{";
    std::string_view t = text, line;
    while (nextLine(t, line)) {
      if (!line.starts_with(fam) || line.find("end_before_any_begin") != std::string_view::npos)
        continue;
      unpairedEvents += std::strtod(std::string(line.substr(line.rfind(' ') + 1)).c_str(), nullptr);
    }
  }
  const double task_s = kid_row["time_stalled_seconds"].get<double>();
  const double cg_s = km["stall_seconds"].get<double>();

  std::printf(
      "[ live ] moves %" PRIu64 " | reference (kernel-ordered text): memcg pairs %" PRIu64
      " (%" PRIu64 " across CPUs) unpaired ends %" PRIu64 " open begins %" PRIu64
      " stall %.6f s; direct pairs %" PRIu64 "\n"
      "[ live ] exporter: memcg reclaims %" PRIu64 " stalls %" PRIu64 " unpaired %" PRIu64
      " | stall per task %.6f s, per cgroup %.6f s, histogram _sum %.6f s _count %.0f"
      " | unpaired events %.0f out-of-order records %" PRIu64 " events %" PRIu64 "\n",
      moves, memcg.pairs, memcg.cross_cpu, memcg.unpaired_ends, memcg.open_begins, ref_s,
      direct.pairs, km["reclaims"].get<uint64_t>(), km["stalls"].get<uint64_t>(),
      km["unpaired"].get<uint64_t>(), task_s, cg_s, h_sum, h_count, unpairedEvents, ss.out_of_order,
      ss.records);

  ASSERT_GT(memcg.pairs, 200u) << "workload did not cause enough memcg reclaim";
  ASSERT_GT(moves, 20u);
  // The reference itself is consistent, and the workload did move reclaims.
  EXPECT_EQ(memcg.unpaired_ends, 0u);
  EXPECT_EQ(memcg.open_begins, 0u);
  EXPECT_GT(memcg.cross_cpu, 0u) << "no reclaim spanned a migration: the test proves nothing";

  EXPECT_EQ(km["reclaims"].get<uint64_t>(), memcg.ends);
  EXPECT_EQ(km["stalls"].get<uint64_t>(), memcg.pairs);
  EXPECT_EQ(km["unpaired"].get<uint64_t>(), 0u);
  EXPECT_EQ(kid_row["memcg_reclaims"].get<uint64_t>(), memcg.ends);
  EXPECT_EQ(h_count, static_cast<double>(memcg.pairs));
  // 1%, plus 0.5 us per pair: each tracepoint hit is stamped separately in
  // each instance, so one pair's duration differs between our instance and
  // the reference by the difference of those stamping costs (measured here:
  // 0.18-0.22 us per pair, exporter below the reference). On an idle machine
  // a pair can be as short as 15 us, where that alone is above 1%. An
  // ordering bug adds whole gaps between passes (milliseconds: +158% before).
  const double slack = 0.5e-6 * static_cast<double>(memcg.pairs);
  EXPECT_NEAR(cg_s, ref_s, 0.01 * ref_s + slack);
  EXPECT_NEAR(h_sum, ref_s, 0.01 * ref_s + slack);
  // The task's stall is direct + memcg + softlimit (reclaim_report.h).
  const double ref_task_s = ref_s + static_cast<double>(direct.stall_us) * 1e-6;
  EXPECT_NEAR(task_s, ref_task_s, 0.01 * ref_task_s + slack);
  EXPECT_EQ(ss.out_of_order, 0u);
  EXPECT_EQ(sampleValue(text, "memcg_trace_events_out_of_order_total"), 0);
  // Nothing unpaired for any reason an ordering bug or a loss would cause
  // (end_before_any_begin: passes in flight on the host when tracing began).
  ASSERT_NE(text.find("memcg_vmscan_unpaired_events_total{"), std::string::npos);
  EXPECT_EQ(unpairedEvents, 0) << "memcg_vmscan_unpaired_events_total";
  EXPECT_EQ(sampleValue(text, "memcg_trace_events_lost_total"), 0);

  collector.reset();
  svc.tracer.reset();
}

}  // namespace
}  // namespace memcg::tracing
