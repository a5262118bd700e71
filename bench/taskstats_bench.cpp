// Scrape cost of the taskstats delay collector for a cgroup with many tasks.
//
// Spawns N (default 1,000; --tasks=N) sleeping processes into a fresh v1 memcg
// memcg_exporter_bench_delay_<pid>, then times one collect() of that cgroup
// (read cgroup.procs, one TASKSTATS query per process, drain exits, sum), with
// 64 queries per sendmsg() and, for comparison, one per sendmsg(); plus the
// building blocks and the /api/v1/delays table. Removes the processes and the
// cgroup at the end (children also die with the benchmark: PR_SET_PDEATHSIG).
// Needs root; prints a note and exits 0 otherwise.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectors/taskstats/cgroup_delays.h"
#include "collectors/taskstats/delay_table.h"

using namespace memcg::taskstats;

namespace {

std::string g_cgroup;
std::vector<pid_t> g_children;
size_t g_tasks = 1000;

bool spawn(size_t n) {
  g_cgroup =
      "/sys/fs/cgroup/memory/memcg_exporter_bench_delay_" + std::to_string(getpid());
  if (mkdir(g_cgroup.c_str(), 0755) != 0) {
    std::fprintf(stderr, "mkdir %s: %s\n", g_cgroup.c_str(), std::strerror(errno));
    return false;
  }
  std::ofstream procs(g_cgroup + "/cgroup.procs");
  for (size_t i = 0; i < n; ++i) {
    pid_t p = fork();
    if (p < 0) return false;
    if (p == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (;;) pause();
    }
    g_children.push_back(p);
    procs << p << std::endl;  // one write per pid
    if (!procs) return false;
  }
  return true;
}

void cleanup() {
  for (pid_t p : g_children) kill(p, SIGKILL);
  for (pid_t p : g_children) waitpid(p, nullptr, 0);
  g_children.clear();
  if (!g_cgroup.empty()) {
    for (int i = 0; i < 50 && rmdir(g_cgroup.c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void perTask(benchmark::State& st, size_t n) {
  st.counters["tasks"] = static_cast<double>(n);
  st.counters["per_task"] = benchmark::Counter(
      static_cast<double>(n),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Collect(benchmark::State& st) {
  CgroupDelayAggregator::Options o;
  o.batch = static_cast<size_t>(st.range(0));
  auto a = CgroupDelayAggregator::create(o);
  if (!a.ok()) {
    st.SkipWithError(a.error().message().c_str());
    return;
  }
  size_t live = 0;
  for (auto _ : st) {
    auto r = (*a)->collect(g_cgroup);
    if (!r.ok()) {
      st.SkipWithError(r.error().message().c_str());
      return;
    }
    live = r->live_processes;
  }
  perTask(st, live);
}
BENCHMARK(BM_Collect)->Arg(64)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_ReadProcs(benchmark::State& st) {
  size_t n = 0;
  for (auto _ : st) {
    auto r = readIdList(g_cgroup + "/cgroup.procs");
    n = r.ok() ? r->size() : 0;
    benchmark::DoNotOptimize(n);
  }
  perTask(st, n);
}
BENCHMARK(BM_ReadProcs)->Unit(benchmark::kMicrosecond);

void BM_QueryOnly(benchmark::State& st) {
  auto c = TaskstatsClient::open();
  auto ids = readIdList(g_cgroup + "/cgroup.procs");
  if (!c.ok() || !ids.ok()) {
    st.SkipWithError("setup");
    return;
  }
  const IdKind kind = st.range(1) ? IdKind::kTgid : IdKind::kPid;
  for (auto _ : st) {
    uint64_t sum = 0;
    (void)c->queryMany(
        *ids, kind,
        [&](uint32_t, memcg::Result<TaskStats>&& r) {
          if (r.ok()) sum += (*r)[DelayClass::kCpu].count;
        },
        static_cast<size_t>(st.range(0)));
    benchmark::DoNotOptimize(sum);
  }
  perTask(st, ids->size());
}
BENCHMARK(BM_QueryOnly)
    ->ArgNames({"batch", "tgid"})
    ->Args({64, 1})
    ->Args({64, 0})
    ->Args({16, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

void BM_Table(benchmark::State& st) {
  auto c = TaskstatsClient::open();
  if (!c.ok()) {
    st.SkipWithError("setup");
    return;
  }
  size_t rows = 0;
  for (auto _ : st) {
    auto t = readDelayTable(*c, g_cgroup);
    auto j = delayTableToJson(*t);
    rows = t->rows.size();
    benchmark::DoNotOptimize(j.dump());
  }
  perTask(st, rows);
}
BENCHMARK(BM_Table)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--tasks=", 8) == 0) g_tasks = std::stoul(argv[i] + 8);
  }
  benchmark::Initialize(&argc, argv);
  if (geteuid() != 0 || !TaskstatsClient::open().ok()) {
    std::printf("taskstats_bench: needs root and TASKSTATS; skipped\n");
    return 0;
  }
  if (!spawn(g_tasks)) {
    cleanup();
    return 1;
  }
  std::printf("cgroup %s with %zu sleeping processes\n", g_cgroup.c_str(), g_tasks);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  cleanup();
  return 0;
}
