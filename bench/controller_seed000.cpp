// Seed 000 on this machine: a streaming reader (cat-like, 128 KiB reads) of a
// file 4x its memcg's limit (default 1 GiB through 256 MiB), protection off vs
// on, interleaved runs, in one process; idle host, then with a CPU hog on
// every core. Prints one line per run and the medians per mode.
//
// Columns: failcnt = the reader memcg's memory.failcnt (limit hits of the
// workload; the controller's own limit writes do not count), wall = reader
// wall time, rd_cpu = reader on-CPU time (schedstat; its own reclaim is in there), p99/max =
// per-read() latency, slow = total time in reads > 1 ms (stall proxy),
// ctl_cpu = this process's CPU during the run (the controller's waiter and
// worker threads; the main thread only waits), actions/reclaimed from the
// controller's metrics, lat = mean trigger-to-reclaim.
//
// Needs root and cgroup v1 memory. Usage:
//   controller_seed000 [--file PATH] [--size-mib 1024] [--limit-mib 256]
//                      [--runs 5] [--start-mib 64] [--target-mib 128]
//                      [--no-hog] [--hog-only] [--sched other|batch|idle] [--keep-file]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "controller/controller.h"
#include "tests/live/controller_live_support.h"
#include "tests/unit/controller_fixture.h"

using namespace memcg;
using namespace memcg::controller;
namespace lv = memcg::controller::live;

namespace {

struct Row {
  uint64_t failcnt = 0;
  double wall = 0, sys = 0, p99 = 0, max = 0, slow = 0, ctlCpu = 0, actions = 0, reclaimed = 0,
         lat = 0;
};

double metric(const metrics::Sink& s, const std::string& name, bool histSum = false) {
  double v = 0;
  for (const auto& f : s.families()) {
    if (f.desc->name != name) continue;
    for (const auto& x : f.samples) v += x.value;
    for (const auto& h : f.histograms) v += histSum ? h.sum : static_cast<double>(h.count);
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void printRow(const char* mode, int run, const Row& r) {
  std::printf("%-4s %3d %8llu %7.3f %7.3f %7.2f %8.2f %8.1f %8.3f %7.0f %9.0f %7.2f\n", mode, run,
              (unsigned long long)r.failcnt, r.wall, r.sys, r.p99, r.max, r.slow, r.ctlCpu,
              r.actions, r.reclaimed / (1 << 20), r.lat * 1000);
}

void header() {
  std::printf("%-4s %3s %8s %7s %7s %7s %8s %8s %8s %7s %9s %7s\n", "mode", "run", "failcnt",
              "wall_s", "rd_cpu", "p99_ms", "max_ms", "slow_ms", "ctl_cpu", "actions", "recl_MiB",
              "lat_ms");
}

}  // namespace

int main(int argc, char** argv) {
  std::string file = "/var/tmp/memcg_exporter_seed000.dat";
  uint64_t sizeMiB = 1024, limitMiB = 256, startMiB = 64, targetMiB = 128;
  int runs = 5;
  bool hog = true, hogOnly = false, keep = false;
  std::string sched = "other";
  std::string auditPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--file") file = next();
    else if (a == "--size-mib") sizeMiB = std::stoull(next());
    else if (a == "--limit-mib") limitMiB = std::stoull(next());
    else if (a == "--runs") runs = std::stoi(next());
    else if (a == "--start-mib") startMiB = std::stoull(next());
    else if (a == "--target-mib") targetMiB = std::stoull(next());
    else if (a == "--no-hog") hog = false;
    else if (a == "--hog-only") hogOnly = true;
    else if (a == "--sched") sched = next();
    else if (a == "--keep-file") keep = true;
    else if (a == "--audit") auditPath = next();
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::string why = lv::skipReason();
  if (!why.empty()) {
    std::fprintf(stderr, "skipped: %s\n", why.c_str());
    return 0;
  }
  memcg::log::setLevel(memcg::log::Level::kWarn);
  const uint64_t MiB = 1 << 20;
  if (!lv::ensureFile(file, sizeMiB * MiB)) {
    std::fprintf(stderr, "cannot create %s\n", file.c_str());
    return 1;
  }
  lv::TestCgroup cg("seed000", limitMiB * MiB);
  if (!cg.ok()) return 1;
  Discovery discovery(DiscoveryOptions{});
  (void)discovery.refresh();
  memcg::controller::testing::TempTree tmp;
  ControllerOptions opts;
  opts.enable = true;
  opts.allow = cg.label();
  opts.journal = tmp.path("journal");
  opts.auditLog = auditPath.empty() ? tmp.path("audit.jsonl") : auditPath;
  opts.schedPolicy = sched;

  std::printf("seed 000: %llu MiB file %s through a %llu MiB memcg, margins start %llu / target "
              "%llu MiB, %d interleaved runs per mode, controller threads sched=%s\n",
              (unsigned long long)sizeMiB, file.c_str(), (unsigned long long)limitMiB,
              (unsigned long long)startMiB, (unsigned long long)targetMiB, runs, sched.c_str());

  auto one = [&](bool protect) {
    Row row;
    std::unique_ptr<Controller> c;
    if (protect) {
      c = std::make_unique<Controller>(opts, discovery);
      c->start();
      if (auto e = c->protect({cg.label(), startMiB * MiB, targetMiB * MiB, 0})) {
        std::fprintf(stderr, "protect: %s\n", e->message.c_str());
        std::exit(1);
      }
    }
    lv::dropCache(file);
    cg.resetCounters();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    double cpu0 = lv::processCpuSeconds();
    auto r = lv::runReader(cg.path(), file);
    double cpu1 = lv::processCpuSeconds();
    row.failcnt = cg.u64("memory.failcnt");
    row.wall = r.wallSeconds;
    row.sys = r.cpuSeconds;
    row.p99 = r.p99ReadMs;
    row.max = r.maxReadMs;
    row.slow = r.slowReadsMs;
    row.ctlCpu = cpu1 - cpu0;
    if (c) {
      metrics::Sink s;
      c->collect(s);
      row.actions = metric(s, "memcg_controller_actions_total");
      row.reclaimed = metric(s, "memcg_controller_reclaimed_bytes_total");
      double n = metric(s, "memcg_controller_trigger_to_reclaim_seconds");
      row.lat = n > 0 ? metric(s, "memcg_controller_trigger_to_reclaim_seconds", true) / n : 0;
      c->stop();
    }
    if (!r.ok) std::fprintf(stderr, "reader failed\n");
    return row;
  };

  auto scenario = [&](const char* title) {
    std::printf("\n== %s ==\n", title);
    header();
    std::vector<Row> off, on;
    for (int i = 0; i < runs; ++i) {
      off.push_back(one(false));
      printRow("off", i, off.back());
      on.push_back(one(true));
      printRow("on", i, on.back());
    }
    auto med = [&](const std::vector<Row>& v) {
      Row m;
      std::vector<double> a;
      auto col = [&](auto get) {
        a.clear();
        for (const auto& r : v) a.push_back(get(r));
        return median(a);
      };
      m.failcnt = static_cast<uint64_t>(col([](const Row& r) { return double(r.failcnt); }));
      m.wall = col([](const Row& r) { return r.wall; });
      m.sys = col([](const Row& r) { return r.sys; });
      m.p99 = col([](const Row& r) { return r.p99; });
      m.max = col([](const Row& r) { return r.max; });
      m.slow = col([](const Row& r) { return r.slow; });
      m.ctlCpu = col([](const Row& r) { return r.ctlCpu; });
      m.actions = col([](const Row& r) { return r.actions; });
      m.reclaimed = col([](const Row& r) { return r.reclaimed; });
      m.lat = col([](const Row& r) { return r.lat; });
      return m;
    };
    Row mo = med(off), mn = med(on);
    std::printf("---- medians\n");
    printRow("off", -1, mo);
    printRow("on", -1, mn);
    double cut = mo.failcnt ? 100.0 * (1.0 - double(mn.failcnt) / double(mo.failcnt)) : 0;
    double sysSaved = mo.sys - mn.sys;
    std::printf("failcnt %llu -> %llu (-%.1f%%); reader CPU %.3f -> %.3f s (saved %.3f s); "
                "controller CPU %.3f s (%.2fx the reader CPU saved)\n",
                (unsigned long long)mo.failcnt, (unsigned long long)mn.failcnt, cut, mo.sys,
                mn.sys, sysSaved, mn.ctlCpu, sysSaved > 0 ? mn.ctlCpu / sysSaved : NAN);
  };

  if (!hogOnly) scenario("idle host");
  if (hog || hogOnly) {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    lv::CpuHogs hogs(n);
    std::string title = "CPU hog on every core (" + std::to_string(n) + " spinners outside the memcg)";
    scenario(title.c_str());
  }
  if (!keep) ::unlink(file.c_str());
  return 0;
}
