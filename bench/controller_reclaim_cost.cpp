// Workloads where the workload's own (in-path) reclaim is expensive, each run
// with protection off vs on, interleaved, the same margins for every
// workload. One process; the controller runs in it, as in
// controller_seed000.
//   anon   an in-process cache: anonymous memory twice the memcg limit on a
//          zram swap device set up for the run (hot_add, disksize, mkswap,
//          swapon; swapoff, reset, hot_remove at exit, also on a signal), so a
//          charge in the request path may have to compress pages out;
//          a request touches 8 random pages of the cache (a write each).
//   dirty  a writer (logs, uploads): a request is one 64 KiB pwrite, cycling
//          over a file 4x the limit on the root filesystem, faster than
//          writeback, so a charge in the request path meets dirty pages.
// Requests are issued open-loop at a fixed rate (--rate per second): the
// latency of a request counts from its scheduled time, so a stall delays the
// ones behind it too (no coordinated omission).
//
// Columns: p50/p99/p99.9/max request latency (ms); rps = requests done per
// second of the run; failcnt = the memcg's memory.failcnt (limit hits of the
// workload; the controller's own limit writes do not count) over the
// request phase (after the cache is filled) = the workload's own limit
// reclaim entries; rcl_n/rcl_ms = the workload's own
// taskstats RECLAIM (freepages) delay count and total; swin_ms = its swap-in
// delay; ctl_ms = the controller's CPU (memcg_controller_cpu_seconds_total);
// eff_mib = the start margin in force at the end of the run.
//
// Needs root, cgroup v1 memory; anon also zram (/sys/class/zram-control),
// mkswap and swapon. Usage:
//   controller_reclaim_cost [--workloads anon,dirty] [--runs 3] [--seconds 8]
//       [--rate 2000] [--limit-mib 256] [--start-mib 64] [--target-mib 128]
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
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

/// A zram swap device of our own (hot_add), removed again on destruction.
class ZramSwap {
 public:
  explicit ZramSwap(uint64_t bytes) {
    std::string id = lv::readText("/sys/class/zram-control/hot_add");
    if (id.empty()) return;
    id_ = id;
    dev_ = "/dev/zram" + id_;
    const std::string sys = "/sys/block/zram" + id_;
    if (!lv::writeText(sys + "/disksize", std::to_string(bytes))) return;
    if (!lv::sh("mkswap " + dev_ + " >/dev/null 2>&1")) return;
    if (!lv::sh("swapon -p 32000 " + dev_)) return;
    on_ = true;
  }
  ~ZramSwap() {
    if (on_) lv::sh("swapoff " + dev_);
    if (!id_.empty()) {
      lv::writeText("/sys/block/zram" + id_ + "/reset", "1");
      lv::writeText("/sys/class/zram-control/hot_remove", id_);
    }
  }
  ZramSwap(const ZramSwap&) = delete;
  ZramSwap& operator=(const ZramSwap&) = delete;
  bool ok() const { return on_; }
  const std::string& device() const { return dev_; }

 private:
  std::string id_, dev_;
  bool on_ = false;
};

std::unique_ptr<ZramSwap> gZram;
std::unique_ptr<lv::TestCgroup> gCg;
std::string gDirtyFile;
bool gDelayacctSwitched = false;

void cleanup() {
  gCg.reset();  // kills the workload first: its swap must go before swapoff
  gZram.reset();
  if (!gDirtyFile.empty()) ::unlink(gDirtyFile.c_str());
  gDirtyFile.clear();
  if (gDelayacctSwitched) {
    (void)taskstats::writeTaskDelayacct(false);
    gDelayacctSwitched = false;
  }
}

void onSignal(int) {
  cleanup();
  std::_Exit(130);
}

struct WorkResult {
  bool ok = false;
  double p50 = 0, p99 = 0, p999 = 0, max = 0, rps = 0;
  uint64_t requests = 0;
  uint64_t failcnt = 0;  ///< memory.failcnt over the requests (not the prepare phase)
  bool delaysKnown = false;
  double rclCount = 0, rclMs = 0, swapinMs = 0;
};

struct Row {
  WorkResult r;
  uint64_t failcnt = 0;
  double ctlMs = 0, effMiB = 0;
};

double pct(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  size_t i =
      std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

struct Delays {
  bool known = false;
  double rclCount = 0, rclMs = 0, swapinMs = 0;
};

/// The calling process's own taskstats delays (RECLAIM = freepages, swap-in).
Delays ownDelays() {
  Delays d;
  auto c = taskstats::TaskstatsClient::open();
  if (!c) return d;
  auto ts = c->query(static_cast<uint32_t>(::getpid()), taskstats::IdKind::kPid);
  if (!ts || !ts->has(taskstats::DelayClass::kFreepages)) return d;
  d.known = true;
  const auto& f = (*ts)[taskstats::DelayClass::kFreepages];
  d.rclCount = static_cast<double>(f.count);
  d.rclMs = static_cast<double>(f.total_ns) * 1e-6;
  if (ts->has(taskstats::DelayClass::kSwapin))
    d.swapinMs =
        static_cast<double>((*ts)[taskstats::DelayClass::kSwapin].total_ns) * 1e-6;
  return d;
}

/// Forks the workload into the memcg; prepare() once, then request() at
/// `rate` per second for `seconds`; returns its latency figures.
template <typename Prepare, typename Request>
WorkResult runWorkload(const std::string& cgPath, double rate, double seconds,
                       Prepare prepare, Request request) {
  int p[2];
  WorkResult res;
  if (::pipe2(p, O_CLOEXEC) != 0) return res;
  pid_t pid = ::fork();
  if (pid < 0) return res;
  if (pid == 0) {
    ::close(p[0]);
    if (!lv::writeText(cgPath + "/cgroup.procs", std::to_string(::getpid()))) _exit(2);
    if (!prepare()) _exit(3);
    // Only the request phase counts: limit hits and delays from here on.
    const uint64_t fail0 = lv::readU64(cgPath + "/memory.failcnt");
    const Delays d0 = ownDelays();
    using C = std::chrono::steady_clock;
    std::vector<float> lat;
    lat.reserve(static_cast<size_t>(rate * seconds) + 16);
    const auto period = std::chrono::duration<double>(1.0 / rate);
    const C::time_point t0 = C::now();
    const C::time_point end = t0 + std::chrono::duration_cast<C::duration>(
                                       std::chrono::duration<double>(seconds));
    uint64_t i = 0;
    for (;; ++i) {
      C::time_point due =
          t0 + std::chrono::duration_cast<C::duration>(period * static_cast<double>(i));
      if (due >= end) break;
      if (C::now() < due) std::this_thread::sleep_until(due);
      request(i);
      lat.push_back(std::chrono::duration<float, std::milli>(C::now() - due).count());
    }
    double wall = std::chrono::duration<double>(C::now() - t0).count();
    WorkResult r;
    r.ok = true;
    r.requests = lat.size();
    r.rps = static_cast<double>(lat.size()) / wall;
    std::sort(lat.begin(), lat.end());
    r.p50 = pct(lat, 0.5);
    r.p99 = pct(lat, 0.99);
    r.p999 = pct(lat, 0.999);
    r.max = lat.empty() ? 0 : lat.back();
    r.failcnt = lv::readU64(cgPath + "/memory.failcnt") - fail0;
    const Delays d1 = ownDelays();
    r.delaysKnown = d0.known && d1.known;
    r.rclCount = d1.rclCount - d0.rclCount;
    r.rclMs = d1.rclMs - d0.rclMs;
    r.swapinMs = d1.swapinMs - d0.swapinMs;
    (void)!::write(p[1], &r, sizeof r);
    _exit(0);
  }
  ::close(p[1]);
  WorkResult got;
  ssize_t n = ::read(p[0], &got, sizeof got);
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (n != sizeof got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return res;
  return got;
}

double metric(const metrics::Sink& s, const std::string& name,
              std::string_view label = {}) {
  double v = 0;
  for (const auto& f : s.families()) {
    if (f.desc->name != name) continue;
    for (const auto& x : f.samples) {
      if (!label.empty() && x.values[1] != label) continue;
      v += x.value;
    }
  }
  return v;
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    size_t b = s.find(',', a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string workloads = "anon,dirty";
  int runs = 3;
  double seconds = 8, rate = 2000;
  uint64_t limitMiB = 256, startMiB = 64, targetMiB = 128;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--workloads")
      workloads = next();
    else if (a == "--runs")
      runs = std::stoi(next());
    else if (a == "--seconds")
      seconds = std::stod(next());
    else if (a == "--rate")
      rate = std::stod(next());
    else if (a == "--limit-mib")
      limitMiB = std::stoull(next());
    else if (a == "--start-mib")
      startMiB = std::stoull(next());
    else if (a == "--target-mib")
      targetMiB = std::stoull(next());
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::string why = lv::skipReason();
  if (!why.empty()) {
    std::fprintf(stderr, "skipped: %s\n", why.c_str());
    return 77;
  }
  memcg::log::setLevel(memcg::log::Level::kWarn);
  std::atexit(cleanup);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::signal(s, onSignal);
  auto acct = taskstats::ensureTaskDelayacct(true);
  gDelayacctSwitched = acct.enabled_by_exporter;

  const uint64_t limit = limitMiB * kMiB;
  gCg = std::make_unique<lv::TestCgroup>("ctlbench", limit);
  if (!gCg->ok()) return 1;
  const lv::TestCgroup& cg = *gCg;
  Discovery discovery(DiscoveryOptions{});
  WalkScheduler walks(discovery);
  (void)discovery.refresh();
  memcg::controller::testing::TempTree tmp;
  ControllerOptions opts;
  opts.enable = true;
  opts.allow = cg.label();
  opts.journal = tmp.path("journal");
  opts.auditLog = tmp.path("audit.jsonl");
  std::printf(
      "workloads in a %llu MiB memcg, margins start %llu / target %llu MiB (the same "
      "for all), %g requests/s for %g s, %d interleaved runs per mode\n",
      (unsigned long long)limitMiB, (unsigned long long)startMiB,
      (unsigned long long)targetMiB, rate, seconds, runs);

  for (const auto& w : splitComma(workloads)) {
    std::function<WorkResult()> run;
    if (w == "anon") {
      gZram = std::make_unique<ZramSwap>(4 * limit);
      if (!gZram->ok()) {
        std::fprintf(stderr, "anon: no zram swap (hot_add/mkswap/swapon): skipped\n");
        gZram.reset();
        continue;
      }
      lv::writeText(cg.path() + "/memory.swappiness", "60");
      const uint64_t ws = 2 * limit;
      run = [&, ws] {
        char* mem = nullptr;
        std::mt19937_64 rng(42);
        return runWorkload(
            cg.path(), rate, seconds,
            [&] {
              void* m = ::mmap(nullptr, ws, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
              if (m == MAP_FAILED) return false;
              mem = static_cast<char*>(m);
              for (uint64_t o = 0; o < ws; o += 4096) mem[o] = static_cast<char>(o >> 12);
              return true;
            },
            [&](uint64_t) {
              for (int k = 0; k < 8; ++k) {
                uint64_t page = rng() % (ws / 4096);
                mem[page * 4096 + (rng() & 4095)]++;
              }
            });
      };
    } else if (w == "dirty") {
      gDirtyFile =
          "/var/tmp/memcg_exporter_test_ctlbench_" + std::to_string(::getpid()) + ".dat";
      const uint64_t span = 4 * limit;
      run = [&, span] {
        int fd = -1;
        std::vector<char> buf(64 << 10, 'x');
        return runWorkload(
            cg.path(), rate, seconds,
            [&] {
              fd = ::open(gDirtyFile.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
              return fd >= 0;
            },
            [&](uint64_t i) {
              off_t off = static_cast<off_t>((i * buf.size()) % span);
              (void)!::pwrite(fd, buf.data(), buf.size(), off);
            });
      };
    } else {
      std::fprintf(stderr, "unknown workload %s (anon, dirty)\n", w.c_str());
      return 2;
    }
    std::printf("\n== %s%s%s\n", w.c_str(), gZram ? " (swap on " : "",
                gZram ? (gZram->device() + ")").c_str() : "");
    std::printf(
        "mode run | p50 ms | p99 ms | p99.9 ms | max ms | rps | failcnt | rcl_n | "
        "rcl_ms | swin_ms | ctl_ms | eff_mib\n");
    std::vector<Row> rows[2];
    for (int i = 0; i < runs; ++i) {
      for (int on = 0; on < 2; ++on) {
        std::unique_ptr<Controller> c;
        if (on) {
          c = std::make_unique<Controller>(opts, walks);
          c->start();
          if (auto e = c->protect({cg.label(), startMiB * kMiB, targetMiB * kMiB, 0})) {
            std::fprintf(stderr, "protect: %s\n", e->message.c_str());
            return 1;
          }
        }
        // Each run starts from an empty memcg: no cache or swap of the last.
        lv::writeText(cg.path() + "/memory.force_empty", "0");
        cg.resetCounters();
        Row row;
        row.r = run();
        row.failcnt = row.r.failcnt;
        if (c) {
          metrics::Sink s;
          c->collect(s);
          row.ctlMs = metric(s, "memcg_controller_cpu_seconds_total") * 1e3;
          row.effMiB =
              metric(s, "memcg_controller_margin_bytes", "start_effective") / kMiB;
          c->stop();
        }
        if (!row.r.ok) {
          std::fprintf(stderr, "%s run failed\n", w.c_str());
          return 1;
        }
        std::printf(
            "%-3s %d | %.3f | %.2f | %.2f | %.1f | %.0f | %llu | %.0f | %.1f | %.1f | "
            "%.1f | "
            "%.1f\n",
            on ? "on" : "off", i, row.r.p50, row.r.p99, row.r.p999, row.r.max, row.r.rps,
            (unsigned long long)row.failcnt, row.r.rclCount, row.r.rclMs, row.r.swapinMs,
            row.ctlMs, row.effMiB);
        std::fflush(stdout);
        rows[on].push_back(row);
      }
    }
    auto med = [&](int on, auto f) {
      std::vector<double> v;
      for (const auto& r : rows[on]) v.push_back(f(r));
      return median(v);
    };
    std::printf("-- %s medians | off | on | change\n", w.c_str());
    auto line = [&](const char* name, auto f) {
      double a = med(0, f), b = med(1, f);
      std::printf(
          "%s | %.3f | %.3f | %s\n", name, a, b,
          a > 0 ? (std::to_string(static_cast<int>(std::lround((b - a) / a * 100))) + "%")
                      .c_str()
                : "n/a");
    };
    line("p50 ms", [](const Row& r) { return r.r.p50; });
    line("p99 ms", [](const Row& r) { return r.r.p99; });
    line("p99.9 ms", [](const Row& r) { return r.r.p999; });
    line("max ms", [](const Row& r) { return r.r.max; });
    line("rps", [](const Row& r) { return r.r.rps; });
    line("failcnt", [](const Row& r) { return static_cast<double>(r.failcnt); });
    line("rcl_n", [](const Row& r) { return r.r.rclCount; });
    line("rcl_ms", [](const Row& r) { return r.r.rclMs; });
    line("ctl_ms", [](const Row& r) { return r.ctlMs; });
    if (w == "anon") gZram.reset();
    if (w == "dirty" && !gDirtyFile.empty()) {
      ::unlink(gDirtyFile.c_str());
      gDirtyFile.clear();
    }
  }
  std::printf("\ncommand:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  return 0;
}
