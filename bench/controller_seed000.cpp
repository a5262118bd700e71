// Seed 000 on this machine: a streaming reader (cat-like, 128 KiB reads) of a
// file 4x its memcg's limit (default 1 GiB through 256 MiB), protection off vs
// on, interleaved runs, in one process. Four setups: two readers x two hosts.
//   readers  disk  the file on the root filesystem (virtio disk here);
//            fast  the file on ext4 in an image on a loop device over /dev/shm
//                  (~3 GB/s: a 64 MiB margin is gone in ~20 ms);
//   hosts    idle, and with a CPU hog (a spinner) outside the memcg on every core.
// Prints one line per run, then per setup the seed-like table (medians) and
// the verdict against the targets.
//
// Columns: failcnt = the reader memcg's memory.failcnt (limit hits of the
// workload; the controller's own limit writes do not count); rcl_n / rcl_ms =
// the reader's own taskstats RECLAIM delay (freepages: count and total; the
// controller's reclaim is accounted to its own thread), the seed's stall
// figure; wall = reader wall time; rd_cpu = reader on-CPU time (schedstat);
// p99/max = per-read() latency; ctl_cpu = this process's WHOLE CPU during the
// run (the controller's waiter and worker, and the main thread that only
// waits); actions/reclaimed from the controller's metrics; lat = mean
// trigger-to-reclaim; minm = the smallest free margin (limit - usage) any
// reclaim of the run started from (how far past the start threshold the wake
// came; 0 = at the limit).
//
// Targets: the reader's own reclaim count and stall down >= 95%
// (medians), the controller's CPU <= 1.5x the stall removed.
//
// Needs root and cgroup v1 memory; the fast reader also mkfs.ext4, losetup and
// /dev/shm. Switches kernel.task_delayacct on for the run and back off at exit
// if it was off (as the exporter's --collector.taskstats.enable-delayacct
// does). Usage:
//   controller_seed000 [--readers disk,fast] [--hosts idle,hog] [--file PATH]
//                      [--size-mib 1024] [--limit-mib 256] [--runs 5]
//                      [--start-mib 64] [--target-mib 128]
//                      [--sched other|batch|idle] [--keep-file] [--audit PATH]
//   (--no-hog = --hosts idle; --hog-only = --hosts hog)
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectors/taskstats/delayacct_sysctl.h"
#include "collectors/taskstats/taskstats_client.h"
#include "common/log.h"
#include "controller/controller.h"
#include "tests/support/controller_fixture.h"
#include "tests/support/controller_live_support.h"

using namespace memcg;
using namespace memcg::controller;
namespace lv = memcg::controller::live;

namespace {

constexpr uint64_t kMiB = 1 << 20;

struct Row {
  uint64_t failcnt = 0;
  double rclCount = 0, rclMs = 0;
  bool rclKnown = false;
  double wall = 0, cpu = 0, p99 = 0, max = 0, ctlCpu = 0, actions = 0, reclaimed = 0,
         lat = 0;
  double minMargin =
      0;  ///< smallest limit - usage seen by a reclaim of the run (audit log)
};

double metric(const metrics::Sink& s, const std::string& name, bool histSum = false) {
  double v = 0;
  for (const auto& f : s.families()) {
    if (f.desc->name != name) continue;
    for (const auto& x : f.samples) v += x.value;
    for (const auto& h : f.histograms)
      v += histSum ? h.sum : static_cast<double>(h.count);
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void header() {
  std::printf("%-4s %3s %8s %7s %9s %7s %7s %7s %8s %8s %7s %9s %7s %8s\n", "mode", "run",
              "failcnt", "rcl_n", "rcl_ms", "wall_s", "rd_cpu", "p99_ms", "max_ms",
              "ctl_cpu", "actions", "recl_MiB", "lat_ms", "minm_MiB");
}

void printRow(const char* mode, int run, const Row& r) {
  std::printf(
      "%-4s %3d %8llu %7.0f %9.2f %7.3f %7.3f %7.2f %8.2f %8.3f %7.0f %9.0f %7.2f "
      "%8.1f\n",
      mode, run, (unsigned long long)r.failcnt, r.rclCount, r.rclMs, r.wall, r.cpu, r.p99,
      r.max, r.ctlCpu, r.actions, r.reclaimed / kMiB, r.lat * 1000, r.minMargin / kMiB);
}

Row medianRow(const std::vector<Row>& v) {
  Row m;
  auto col = [&](auto get) {
    std::vector<double> a;
    for (const auto& r : v) a.push_back(get(r));
    return median(a);
  };
  m.failcnt = static_cast<uint64_t>(col([](const Row& r) { return double(r.failcnt); }));
  m.rclCount = col([](const Row& r) { return r.rclCount; });
  m.rclMs = col([](const Row& r) { return r.rclMs; });
  m.rclKnown = !v.empty() && v.front().rclKnown;
  m.wall = col([](const Row& r) { return r.wall; });
  m.cpu = col([](const Row& r) { return r.cpu; });
  m.p99 = col([](const Row& r) { return r.p99; });
  m.max = col([](const Row& r) { return r.max; });
  m.ctlCpu = col([](const Row& r) { return r.ctlCpu; });
  m.actions = col([](const Row& r) { return r.actions; });
  m.reclaimed = col([](const Row& r) { return r.reclaimed; });
  m.lat = col([](const Row& r) { return r.lat; });
  m.minMargin = col([](const Row& r) { return r.minMargin; });
  return m;
}

/// The smallest free margin (original limit - usage before) of the "reclaim"
/// records appended to the audit log after `offset`: how far past the start
/// threshold the controller got to act (the wake's lateness in bytes).
double minMarginSince(const std::string& audit, std::streamoff offset) {
  std::ifstream f(audit);
  f.seekg(offset);
  std::string line;
  double m = NAN;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("event", "") != "reclaim") continue;
    if (!j.contains("original_limit") || !j["original_limit"].is_number()) continue;
    double v = j["original_limit"].get<double>() - j.value("usage_before_bytes", 0.0);
    if (std::isnan(m) || v < m) m = v;
  }
  return m;
}

std::streamoff fileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// Owned here so a signal can undo them (exit() runs static destructors).
std::unique_ptr<lv::FastFs> gFast;
std::unique_ptr<lv::TestCgroup> gCg;
std::unique_ptr<lv::CpuHogs> gHogs;
std::string gDiskFile;
bool gKeep = false;
bool gDelayacctSwitched = false;  // we turned kernel.task_delayacct on

void cleanup() {
  if (gDelayacctSwitched) {
    (void)taskstats::writeTaskDelayacct(false);
    gDelayacctSwitched = false;
  }
  gHogs.reset();
  gCg.reset();
  gFast.reset();
  if (!gKeep && !gDiskFile.empty()) ::unlink(gDiskFile.c_str());
}

void onSignal(int) {
  cleanup();
  std::_Exit(130);
}

/// In the reader, after its last read: its own taskstats RECLAIM delay.
void reclaimDelay(lv::ReaderResult& r) {
  auto c = taskstats::TaskstatsClient::open();
  if (!c) return;
  auto ts = c->query(static_cast<uint32_t>(::getpid()), taskstats::IdKind::kPid);
  if (!ts || !ts->has(taskstats::DelayClass::kFreepages)) return;
  const auto& d = (*ts)[taskstats::DelayClass::kFreepages];
  r.reclaimDelayKnown = true;
  r.reclaimDelayCount = d.count;
  r.reclaimDelayNs = d.total_ns;
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

struct Verdict {
  std::string name;
  Row off, on;
};

double pctDown(double off, double on) { return off > 0 ? 100.0 * (1.0 - on / off) : NAN; }

void printVerdict(const Verdict& v) {
  const Row& a = v.off;
  const Row& b = v.on;
  std::printf("\n%s: medians of the interleaved runs\n", v.name.c_str());
  std::printf(
      "| mode | failcnt | RECLAIM count | RECLAIM total ms | avg us | wall s | reader "
      "CPU s "
      "| controller CPU ms |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto* r : {&a, &b}) {
    double avg = r->rclCount > 0 ? r->rclMs * 1000 / r->rclCount : 0;
    std::printf("| %s | %llu | %.0f | %.1f | %.1f | %.3f | %.3f | %.1f |\n",
                r == &a ? "off" : "on", (unsigned long long)r->failcnt, r->rclCount,
                r->rclMs, avg, r->wall, r->cpu, r == &a ? 0.0 : r->ctlCpu * 1000);
  }
  double removedMs = a.rclMs - b.rclMs;
  double ratio = removedMs > 0 ? b.ctlCpu * 1000 / removedMs : NAN;
  double fc = pctDown(double(a.failcnt), double(b.failcnt));
  double rc = pctDown(a.rclCount, b.rclCount);
  double st = pctDown(a.rclMs, b.rclMs);
  bool ok = a.rclKnown && rc >= 95 && st >= 95 && ratio <= 1.5;
  std::printf(
      "failcnt -%.1f%%, RECLAIM count -%.1f%%, stall -%.1f%% (%.1f ms removed); "
      "controller CPU %.1f ms = %.2fx the stall removed; reader CPU saved %.1f ms; "
      "target (>= 95%% / <= 1.5x): %s\n",
      fc, rc, st, removedMs, b.ctlCpu * 1000, ratio, (a.cpu - b.cpu) * 1000,
      !a.rclKnown ? "UNKNOWN (no taskstats RECLAIM delay)"
      : ok        ? "MET"
                  : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  std::string file = "/var/tmp/memcg_exporter_seed000.dat";
  uint64_t sizeMiB = 1024, limitMiB = 256, startMiB = 64, targetMiB = 128;
  int runs = 5;
  std::string readers = "disk,fast", hosts = "idle,hog";
  std::string sched = "other";
  std::string auditPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--file")
      file = next();
    else if (a == "--size-mib")
      sizeMiB = std::stoull(next());
    else if (a == "--limit-mib")
      limitMiB = std::stoull(next());
    else if (a == "--runs")
      runs = std::stoi(next());
    else if (a == "--start-mib")
      startMiB = std::stoull(next());
    else if (a == "--target-mib")
      targetMiB = std::stoull(next());
    else if (a == "--readers")
      readers = next();
    else if (a == "--hosts")
      hosts = next();
    else if (a == "--no-hog")
      hosts = "idle";
    else if (a == "--hog-only")
      hosts = "hog";
    else if (a == "--sched")
      sched = next();
    else if (a == "--keep-file")
      gKeep = true;
    else if (a == "--audit")
      auditPath = next();
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
  std::atexit(cleanup);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::signal(s, onSignal);

  auto acct = taskstats::ensureTaskDelayacct(true);
  gDelayacctSwitched = acct.enabled_by_exporter;
  std::printf("taskstats delay accounting: %s\n", acct.note.c_str());

  std::vector<std::pair<std::string, std::string>> files;  // (reader, path)
  for (const auto& r : splitComma(readers)) {
    if (r == "disk") {
      gDiskFile = file;
      if (!lv::ensureFile(file, sizeMiB * kMiB)) {
        std::fprintf(stderr, "cannot create %s\n", file.c_str());
        return 1;
      }
      files.emplace_back("disk", file);
    } else if (r == "fast") {
      gFast = std::make_unique<lv::FastFs>("seed000", sizeMiB * kMiB + 256 * kMiB);
      if (!gFast->ok() || !lv::ensureFile(gFast->file(), sizeMiB * kMiB)) {
        std::fprintf(stderr, "fast reader unavailable: skipped\n");
        gFast.reset();
        continue;
      }
      files.emplace_back("fast", gFast->file());
    } else {
      std::fprintf(stderr, "unknown reader %s (disk, fast)\n", r.c_str());
      return 2;
    }
  }
  gCg = std::make_unique<lv::TestCgroup>("seed000", limitMiB * kMiB);
  const lv::TestCgroup& cg = *gCg;
  if (!cg.ok()) return 1;
  Discovery discovery(DiscoveryOptions{});
  WalkScheduler walks(discovery);
  (void)discovery.refresh();
  memcg::controller::testing::TempTree tmp;
  ControllerOptions opts;
  opts.enable = true;
  opts.allow = cg.label();
  opts.journal = tmp.path("journal");
  opts.auditLog = auditPath.empty() ? tmp.path("audit.jsonl") : auditPath;
  opts.schedPolicy = sched;

  std::printf(
      "2011 async-reclaim workload: %llu MiB file through a %llu MiB memcg, margins start %llu / target "
      "%llu MiB, %d interleaved runs per mode, controller threads sched=%s\n",
      (unsigned long long)sizeMiB, (unsigned long long)limitMiB,
      (unsigned long long)startMiB, (unsigned long long)targetMiB, runs, sched.c_str());

  auto one = [&](const std::string& path, bool protect) {
    Row row;
    std::unique_ptr<Controller> c;
    if (protect) {
      c = std::make_unique<Controller>(opts, walks);
      c->start();
      if (auto e = c->protect({cg.label(), startMiB * kMiB, targetMiB * kMiB, 0})) {
        std::fprintf(stderr, "protect: %s\n", e->message.c_str());
        std::exit(1);
      }
    }
    lv::dropCache(path);
    cg.resetCounters();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::streamoff auditAt = fileSize(opts.auditLog);
    double cpu0 = lv::processCpuSeconds();
    auto r = lv::runReader(cg.path(), path, reclaimDelay);
    double cpu1 = lv::processCpuSeconds();
    row.failcnt = cg.u64("memory.failcnt");
    row.rclKnown = r.reclaimDelayKnown;
    row.rclCount = static_cast<double>(r.reclaimDelayCount);
    row.rclMs = static_cast<double>(r.reclaimDelayNs) * 1e-6;
    row.wall = r.wallSeconds;
    row.cpu = r.cpuSeconds;
    row.p99 = r.p99ReadMs;
    row.max = r.maxReadMs;
    row.ctlCpu = cpu1 - cpu0;
    if (c) {
      metrics::Sink s;
      c->collect(s);
      row.actions = metric(s, "memcg_controller_actions_total");
      row.reclaimed = metric(s, "memcg_controller_reclaimed_bytes_total");
      double n = metric(s, "memcg_controller_trigger_to_reclaim_seconds");
      row.lat =
          n > 0 ? metric(s, "memcg_controller_trigger_to_reclaim_seconds", true) / n : 0;
      c->stop();
      row.minMargin = minMarginSince(opts.auditLog, auditAt);
    }
    if (!r.ok) std::fprintf(stderr, "reader failed\n");
    return row;
  };

  std::vector<Verdict> verdicts;
  auto setup = [&](const std::string& reader, const std::string& path,
                   const std::string& host) {
    std::string title =
        reader + " reader, " +
        (host == "idle" ? std::string("idle host")
                        : "CPU hog on every core (" +
                              std::to_string(std::thread::hardware_concurrency()) +
                              " spinners outside the memcg)");
    std::printf("\n== %s ==\n", title.c_str());
    header();
    std::vector<Row> off, on;
    for (int i = 0; i < runs; ++i) {
      off.push_back(one(path, false));
      printRow("off", i, off.back());
      on.push_back(one(path, true));
      printRow("on", i, on.back());
      std::fflush(stdout);
    }
    Verdict v{title, medianRow(off), medianRow(on)};
    std::printf("---- medians\n");
    printRow("off", -1, v.off);
    printRow("on", -1, v.on);
    printVerdict(v);
    verdicts.push_back(v);
  };

  for (const auto& host : splitComma(hosts)) {
    if (host != "idle" && host != "hog") {
      std::fprintf(stderr, "unknown host setup %s (idle, hog)\n", host.c_str());
      return 2;
    }
    if (host == "hog")
      gHogs = std::make_unique<lv::CpuHogs>(std::thread::hardware_concurrency());
    for (const auto& [reader, path] : files) setup(reader, path, host);
    gHogs.reset();
  }
  std::printf("\n==== summary (medians; command: %s", argv[0]);
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf(")\n");
  for (const auto& v : verdicts) printVerdict(v);
  return 0;
}
