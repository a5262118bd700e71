// The vmscan collector's two backends and bpftrace side by side, in one run
// (interleaved, medians): what the traced workload pays per event in the
// kernel, and what the exporter pays in user space, in a reclaim storm; then
// the lock probes' lost events in a lock storm.
//
// Workload: READERS children, each in a fresh LIMIT_MIB v1 memcg of its own,
// read a FILE_MIB file PASSES times, dropping its page cache before each pass
// and without readahead: memcg reclaim all the time (the storm). Modes,
// rotated each run:
//   off       nothing traced
//   tracefs   the tracefs backend (tracing/tracer.h) in this process: its
//             instance, reader thread, aggregator; snapshot + render every SCRAPE_MS
//   bpf       the bpf backend (tracing/bpf/bpf_tracer.h): snapshot + render every
//   SCRAPE_MS bpftrace  a bpftrace script counting the same vmscan events, with stall
//             histograms per pid (the tool the issue measured against)
// Figures:
//   sys/ev    (children's sys CPU - median of off) / events the mode counted
//             (system-wide: other users' reclaim is in the counts, as in
//             bench/tracing_overhead.sh). Noisy on a shared machine.
//   prog/ev   bpf and bpftrace: the kernel's own accounting of the BPF
//             programs' run time (kernel.bpf_stats_enabled, switched on for
//             the bench and restored), summed over the programs the events
//             run, divided by the events the mode counted (not by program
//             runs: the programs count the events themselves); the bpf
//             backend's scrape-time task iterator is left out. Without the
//             tracepoint's own dispatch, the same for every mode.
//   user CPU  the exporter-side CPU (thread CPU, user + system) over the
//             storm: the tracefs reader thread's, plus one snapshot + render
//             (measured after the storm) per SCRAPE_MS of the storm's wall
//             time. bpftrace: n/a.
// Lock storm (LOCK_S seconds per backend, locks on): 8 threads reading
// memory.stat of 16 memcgs and the root while 8 readers stream through
// 32 MiB limits; lost events per backend (bpf: the programs' recursion
// misses, less those the lock programs' rescue twins handled, all printed).
// LOCK_HOLD_NS: the bpf main lock programs spin that long per run (the test
// switch that makes contentions nest in them).
// usage: bpf_backend_bench [runs=3]   (root, cgroup v1 memory, tracefs, bpftrace)
// env:   READERS=2 LIMIT_MIB=64 FILE_MIB=256 PASSES=2 SCRAPE_MS=15000 (Prometheus'
//        default interval; a scrape also at the start) LOCK_S=10 LOCK_HOLD_NS=0
#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "metrics/metric.h"
#include "tracing/bpf/bpf_tracer.h"
#include "tracing/trace_metrics.h"
#include "tracing/tracer.h"

using namespace memcg;
using namespace memcg::tracing;

namespace {

const std::string kMemcg = "/sys/fs/cgroup/memory";
const std::string kPrefix = "memcg_exporter_test_bpfbench_" + std::to_string(::getpid());

// Removes what the bench made and restores bpf_stats_enabled (set by main):
// also on a failed mode, which exits early.
std::function<void()> g_cleanup;
[[noreturn]] void fail() {
  if (g_cleanup) g_cleanup();
  std::exit(1);
}

uint64_t envU(const char* n, uint64_t d) {
  const char* v = std::getenv(n);
  return v ? std::strtoull(v, nullptr, 10) : d;
}
bool writeStr(const std::string& p, const std::string& v) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, v.data(), v.size()) == static_cast<ssize_t>(v.size());
  ::close(fd);
  return ok;
}
std::string readStr(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
uint64_t threadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

// Run time and count of every BPF program loaded now, by id (bpf_stats).
std::map<uint32_t, std::string> g_prog_names;
std::map<uint32_t, std::pair<uint64_t, uint64_t>> progStats() {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> out;
  uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
      out[id] = {info.run_time_ns, info.run_cnt};
      g_prog_names[id] = info.name;
    }
    ::close(fd);
  }
  return out;
}
// Per program name, over all runs of a mode: run time and count.
std::map<std::string, std::map<std::string, std::pair<uint64_t, uint64_t>>> g_by_prog;
// Run time and count of the programs in `now` that were not in `before`.
std::pair<uint64_t, uint64_t> newProgs(
    const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& before,
    const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& start,
    const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& now) {
  uint64_t ns = 0, cnt = 0;
  for (const auto& [id, v] : now) {
    if (before.count(id)) continue;
    // The bpf backend's task iterator runs at scrape, not per event.
    if (g_prog_names[id] == "task_scan") continue;
    auto s = start.find(id);
    ns += v.first - (s == start.end() ? 0 : s->second.first);
    cnt += v.second - (s == start.end() ? 0 : s->second.second);
  }
  return {ns, cnt};
}
void addByProg(const std::string& mode,
               const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& before,
               const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& start,
               const std::map<uint32_t, std::pair<uint64_t, uint64_t>>& now) {
  for (const auto& [id, v] : now) {
    if (before.count(id)) continue;
    auto s = start.find(id);
    auto& e = g_by_prog[mode][g_prog_names[id]];
    e.first += v.first - (s == start.end() ? 0 : s->second.first);
    e.second += v.second - (s == start.end() ? 0 : s->second.second);
  }
}

struct Workload {
  double user_s = 0, sys_s = 0, wall_s = 0;
};
// One child in `cg` reading `file` `passes` times, page cache dropped first.
Workload runWorkload(const std::string& cg, const std::string& file, int passes) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!writeStr(cg + "/cgroup.procs", std::to_string(::getpid()))) ::_exit(2);
    static char buf[1 << 20];
    for (int p = 0; p < passes; ++p) {
      int fd = ::open(file.c_str(), O_RDONLY);
      if (fd < 0) ::_exit(3);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // no readahead: per-page reclaim
      while (::read(fd, buf, sizeof buf) > 0) {
      }
      ::close(fd);
    }
    ::_exit(0);
  }
  int st = 0;
  rusage ru{};
  ::wait4(pid, &st, 0, &ru);
  Workload w;
  w.user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  w.sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  w.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "workload failed (status %d)\n", st);
    fail();
  }
  return w;
}

// Scrapes every second on its own thread, counting its CPU.
struct Scraper {
  std::function<TraceSnapshot()> snap;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> cpu_ns{0};
  uint64_t scrape_ms = envU("SCRAPE_MS", 15000);
  std::thread th;
  explicit Scraper(std::function<TraceSnapshot()> f) : snap(std::move(f)) {
    th = std::thread([this] {
      while (!stop) {
        uint64_t c0 = threadCpuNs();
        TraceSnapshot s = snap();
        metrics::Sink sink;
        renderTraceSnapshot(s, sink);
        cpu_ns += threadCpuNs() - c0;
        for (uint64_t i = 0; i < scrape_ms / 10 && !stop; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  ~Scraper() {
    stop = true;
    th.join();
  }
};

struct ModeResult {
  double events = 0, sys_s = 0, wall_s = 0, user_cpu_ms = 0, prog_ns = 0, prog_cnt = 0,
         lost = 0, reader_ms = 0, scrape_ms = 0;
};

const char* kBt = R"(
tracepoint:vmscan:mm_vmscan_direct_reclaim_begin,tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin,tracepoint:vmscan:mm_vmscan_memcg_softlimit_reclaim_begin { @n = count(); @b[tid] = nsecs; }
tracepoint:vmscan:mm_vmscan_direct_reclaim_end,tracepoint:vmscan:mm_vmscan_memcg_reclaim_end,tracepoint:vmscan:mm_vmscan_memcg_softlimit_reclaim_end { @n = count(); $s = @b[tid]; if ($s > 0) { @stall[pid] = hist(nsecs - $s); delete(@b[tid]); } }
tracepoint:vmscan:mm_vmscan_lru_shrink_inactive { @n = count(); @scan[pid] = sum(args->nr_scanned); }
tracepoint:vmscan:mm_vmscan_wakeup_kswapd { @n = count(); @wake[pid] = count(); }
tracepoint:vmscan:mm_vmscan_kswapd_wake,tracepoint:vmscan:mm_vmscan_kswapd_sleep { @n = count(); }
END { clear(@b); clear(@stall); clear(@scan); clear(@wake); }
)";

// The readers, one per cgroup, in parallel: summed CPU, the longest wall.
Workload runReaders(const std::vector<std::string>& cgs, const std::string& file,
                    int passes) {
  std::vector<Workload> ws(cgs.size());
  std::vector<std::thread> th;
  for (size_t i = 0; i < cgs.size(); ++i)
    th.emplace_back([&, i] { ws[i] = runWorkload(cgs[i], file, passes); });
  for (auto& t : th) t.join();
  Workload sum;
  for (const auto& w : ws) {
    sum.user_s += w.user_s;
    sum.sys_s += w.sys_s;
    sum.wall_s = std::max(sum.wall_s, w.wall_s);
  }
  return sum;
}

ModeResult runMode(const std::string& mode, const std::vector<std::string>& cg,
                   const std::string& file, int passes, int n) {
  ModeResult r;
  auto before = progStats();
  std::unique_ptr<Tracer> tr;
  std::unique_ptr<bpf::BpfTracer> bt;
  std::unique_ptr<Scraper> sc;
  pid_t btpid = -1;
  std::string btout = "/tmp/" + kPrefix + "_bt.out";
  if (mode == "tracefs") {
    TracerOptions o;
    o.session.instance_name = kPrefix + "_" + std::to_string(n);
    o.memory_root = kMemcg;
    auto t = Tracer::start(o);
    if (!t.ok()) {
      std::fprintf(stderr, "tracefs: %s\n", t.error().message().c_str());
      fail();
    }
    tr = std::move(*t);
    sc = std::make_unique<Scraper>([&] { return tr->snapshot(); });
  } else if (mode == "bpf") {
    bpf::BpfTracerOptions o;
    o.memory_root = kMemcg;
    auto t = bpf::BpfTracer::start(o);
    if (!t.ok()) {
      std::fprintf(stderr, "bpf: %s\n", t.error().message().c_str());
      fail();
    }
    bt = std::move(*t);
    sc = std::make_unique<Scraper>([&] { return bt->snapshot(); });
  } else if (mode == "bpftrace") {
    btpid = ::fork();
    if (btpid == 0) {
      int fd = ::open(btout.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execlp("bpftrace", "bpftrace", "-e", kBt, (char*)nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 1200 && readStr(btout).find("Attaching") == std::string::npos;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  auto ev = [&]() -> double {
    if (tr) return static_cast<double>(tr->snapshot().events_read);
    if (bt) return static_cast<double>(bt->snapshot().events_read);
    return 0;
  };
  auto reader = [&]() -> double { return tr ? tr->snapshot().reader_cpu_ns / 1e6 : 0; };
  const double e0 = ev(), rc0 = reader();
  const uint64_t sc0 = sc ? sc->cpu_ns.load() : 0;
  auto start = progStats();
  Workload w = runReaders(cg, file, passes);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(600));  // the tracefs reader drains
  auto end = progStats();
  r.events = ev() - e0;
  r.sys_s = w.sys_s;
  r.wall_s = w.wall_s;
  (void)sc0;
  if (sc) {
    // Exporter CPU over the storm: the reader thread's (tracefs) plus the
    // scrapes Prometheus makes in that time at SCRAPE_MS, each costing what
    // one snapshot + render costs now (measured after the storm, state as
    // large as it gets; a storm shorter than one interval is pro-rated).
    const uint64_t c0 = threadCpuNs();
    TraceSnapshot snap = sc->snap();
    metrics::Sink sink;
    renderTraceSnapshot(snap, sink);
    r.scrape_ms = (threadCpuNs() - c0) / 1e6;
    r.reader_ms = reader() - rc0;
    r.user_cpu_ms = r.reader_ms + r.scrape_ms * r.wall_s * 1000.0 /
                                      static_cast<double>(sc->scrape_ms);
  }
  auto [pns, pcnt] = newProgs(before, start, end);
  addByProg(mode, before, start, end);
  r.prog_ns = static_cast<double>(pns);
  r.prog_cnt = static_cast<double>(pcnt);
  if (tr) r.lost = static_cast<double>(tr->snapshot().events_lost);
  if (bt) r.lost = static_cast<double>(bt->snapshot().events_lost);
  sc.reset();
  if (btpid > 0) {
    // SIGINT again each second: a bpftrace run once sat in epoll_wait after
    // its first SIGINT (4 minutes, until a second one came).
    for (int i = 0;; ++i) {
      if (i % 20 == 0) ::kill(btpid, SIGINT);
      if (::waitpid(btpid, nullptr, WNOHANG) == btpid) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string out = readStr(btout);
    size_t p = out.find("@n: ");
    r.events = p == std::string::npos ? 0 : std::strtod(out.c_str() + p + 4, nullptr);
    ::unlink(btout.c_str());
  }
  return r;
}

// Lock storm with one backend's lock probes on: lost events and events seen.
std::pair<double, double> lockStorm(const std::string& backend, int seconds,
                                    const std::vector<std::string>& cgs,
                                    const std::string& file) {
  std::unique_ptr<Tracer> tr;
  std::unique_ptr<bpf::BpfTracer> bt;
  if (backend == "tracefs") {
    TracerOptions o;
    o.session.instance_name = kPrefix + "_locks";
    o.memory_root = kMemcg;
    o.locks = true;
    auto t = Tracer::start(o);
    if (!t.ok()) return {-1, -1};
    tr = std::move(*t);
  } else {
    bpf::BpfTracerOptions o;
    o.memory_root = kMemcg;
    o.locks = true;
    o.test_lock_hold_ns = envU("LOCK_HOLD_NS", 0);
    auto t = bpf::BpfTracer::start(o);
    if (!t.ok()) return {-1, -1};
    bt = std::move(*t);
  }
  const auto progs0 = progStats();
  std::atomic<bool> done{false};
  std::vector<std::thread> th;
  for (int t = 0; t < 8; ++t) {
    th.emplace_back([&] {
      std::vector<int> fds;
      for (const auto& c : cgs)
        fds.push_back(::open((c + "/memory.stat").c_str(), O_RDONLY));
      fds.push_back(::open((kMemcg + "/memory.stat").c_str(), O_RDONLY));
      char buf[8192];
      while (!done)
        for (int fd : fds)
          if (fd >= 0) (void)!::pread(fd, buf, sizeof buf, 0);
      for (int fd : fds) ::close(fd);
    });
  }
  std::vector<std::thread> streamers;
  for (int i = 0; i < 8; ++i)
    streamers.emplace_back([&, i] {
      auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(seconds))
        runWorkload(cgs[static_cast<size_t>(i)], file, 1);
    });
  for (auto& s : streamers) s.join();
  done = true;
  for (auto& t : th) t.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  TraceSnapshot s = tr ? tr->snapshot() : bt->snapshot();
  if (bt) {
    // The lock programs' cost per run (bpf_stats), the rescue twins' too:
    // they run at every contention event, and work only for nested ones.
    const auto progs1 = progStats();
    for (const auto& [id, rt] : progs1) {
      const std::string& name = g_prog_names[id];
      if (name.rfind("contention", 0) != 0 && name.rfind("cont_", 0) != 0) continue;
      auto it = progs0.find(id);
      const uint64_t ns = rt.first - (it == progs0.end() ? 0 : it->second.first);
      const uint64_t runs = rt.second - (it == progs0.end() ? 0 : it->second.second);
      std::printf("lock storm bpf     program %-16s %10lu runs %7.1f ns/run\n", name.c_str(),
                  static_cast<unsigned long>(runs),
                  runs ? static_cast<double>(ns) / static_cast<double>(runs) : 0.0);
    }
  }
  // contention_end events seen: paired waits (node-wide and per cgroup) +
  // unpaired ends; the bpf backend also keeps the plain count.
  uint64_t ends = s.locks.unpaired_ends;
  for (const auto& k : s.locks.node) ends += k.count;
  for (const auto& c : s.locks.cgroups)
    for (const auto& k : c.contention) ends += k.count;
  std::string extra;
  if (bt) {
    // Lost = the main programs' recursion misses less those their rescue
    // twins handled (memcg_trace.bpf.c).
    const bpf::BpfTracer::Misses m = bt->misses();
    std::string by;
    for (const auto& [name, n] : m.by_program) by += " " + name + "=" + std::to_string(n);
    extra = " (kernel count " + std::to_string(bt->contentionEnds()) + "; recursion misses " +
            std::to_string(m.missed) + " (" + by + " ), rescued by the twins " +
            std::to_string(m.rescued) + ", twins' own misses " + std::to_string(m.twins_missed) +
            ")";
  }
  std::printf("lock storm %-7s contention_end %lu%s\n", backend.c_str(),
              static_cast<unsigned long>(ends), extra.c_str());
  return {static_cast<double>(s.events_lost), static_cast<double>(s.events_read)};
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 3;
  if (::geteuid() != 0) {
    std::printf("bpf_backend_bench: SKIPPED: needs root\n");
    return 0;
  }
  if (!bpf::probe(bpf::BpfTracerOptions{}).ok) {
    std::printf("bpf_backend_bench: SKIPPED: %s\n",
                bpf::probe(bpf::BpfTracerOptions{}).reason.c_str());
    return 0;
  }
  if (::access("/sys/kernel/tracing/instances", F_OK) != 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0) {
      std::printf("bpf_backend_bench: SKIPPED: cannot mount tracefs\n");
      return 0;
    }
  }
  const uint64_t limit = envU("LIMIT_MIB", 64), fmib = envU("FILE_MIB", 256);
  const int passes = static_cast<int>(envU("PASSES", 2)),
            lock_s = static_cast<int>(envU("LOCK_S", 10));
  const std::string cg = kMemcg + "/" + kPrefix;
  std::vector<std::string> reader_cgs;
  for (uint64_t i = 0; i < envU("READERS", 2); ++i)
    reader_cgs.push_back(cg + "_r" + std::to_string(i));
  const std::string file = "/var/tmp/" + kPrefix + ".dat";
  const std::string stats_path = "/proc/sys/kernel/bpf_stats_enabled";
  const std::string stats0 = readStr(stats_path);
  std::vector<std::string> lock_cgs;
  auto cleanup = [&] {
    for (auto& c : reader_cgs) ::rmdir(c.c_str());
    for (auto& c : lock_cgs) ::rmdir(c.c_str());
    ::unlink(file.c_str());
    if (!stats0.empty()) writeStr(stats_path, stats0.substr(0, 1));
  };
  for (auto& c : reader_cgs) {
    ::mkdir(c.c_str(), 0755);
    writeStr(c + "/memory.limit_in_bytes", std::to_string(limit << 20));
  }
  for (auto& c : {"/sys/kernel/tracing/instances/" + kPrefix + "_locks"})
    ::rmdir(c.c_str());
  static std::function<void()> on_signal;
  on_signal = [&] { cleanup(); };
  g_cleanup = cleanup;
  for (int sig : {SIGINT, SIGTERM}) {
    ::signal(sig, [](int) {
      if (on_signal) on_signal();
      ::_exit(130);
    });
  }
  {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<char> b(1 << 20, 'x');
    for (uint64_t i = 0; i < fmib; ++i) (void)!::write(fd, b.data(), b.size());
    ::fsync(fd);
    ::close(fd);
  }
  writeStr(stats_path, "1");
  const std::vector<std::string> modes = {"off", "tracefs", "bpf", "bpftrace"};
  std::map<std::string, std::vector<ModeResult>> res;
  for (int i = 0; i < runs; ++i) {
    for (size_t j = 0; j < modes.size(); ++j) {
      const std::string& m = modes[(static_cast<size_t>(i) + j) % modes.size()];
      ModeResult r = runMode(m, reader_cgs, file, passes, i);
      res[m].push_back(r);
      std::fprintf(stderr,
                   "run %d %-8s events %.0f sys %.3f s wall %.2f s user-space %.3f ms "
                   "(reader %.3f ms, one scrape %.3f ms) prog %.0f ns / %.0f runs lost "
                   "%.0f\n",
                   i + 1, m.c_str(), r.events, r.sys_s, r.wall_s, r.user_cpu_ms,
                   r.reader_ms, r.scrape_ms, r.prog_ns, r.prog_cnt, r.lost);
    }
  }
  auto med = [&](const std::string& m, double ModeResult::*f) {
    std::vector<double> v;
    for (const auto& r : res[m]) v.push_back(r.*f);
    return median(v);
  };
  const double off_sys = med("off", &ModeResult::sys_s);
  std::printf(
      "\nbpf_backend_bench: %d runs, %zu readers each %lu MiB x %d through %lu MiB "
      "(memcg reclaim "
      "storm), scrape every %lu ms; medians\n",
      runs, reader_cgs.size(), static_cast<unsigned long>(fmib), passes,
      static_cast<unsigned long>(limit),
      static_cast<unsigned long>(envU("SCRAPE_MS", 15000)));
  std::printf("%-9s %10s %9s %9s %10s %10s %12s %6s\n", "mode", "events", "wall_s",
              "sys_s", "sys/ev_us", "prog/ev_us", "user_cpu_ms", "lost");
  for (const auto& m : modes) {
    std::vector<double> per_ev, prog_ev;
    for (const auto& r : res[m]) {
      if (r.events > 0) per_ev.push_back((r.sys_s - off_sys) * 1e6 / r.events);
      if (r.prog_cnt > 0 && r.events > 0) prog_ev.push_back(r.prog_ns / r.events / 1e3);
    }
    std::printf(
        "%-9s %10.0f %9.2f %9.3f %10s %10s %12s %6.0f\n", m.c_str(),
        med(m, &ModeResult::events), med(m, &ModeResult::wall_s),
        med(m, &ModeResult::sys_s),
        per_ev.empty() ? "-" : std::to_string(median(per_ev)).substr(0, 6).c_str(),
        prog_ev.empty() ? "-" : std::to_string(median(prog_ev)).substr(0, 6).c_str(),
        m == "off" || m == "bpftrace"
            ? "-"
            : std::to_string(med(m, &ModeResult::user_cpu_ms)).substr(0, 7).c_str(),
        med(m, &ModeResult::lost));
  }
  for (const auto& [m, progs] : g_by_prog) {
    std::printf("%s programs, all runs: name runs ns/run share-of-time\n", m.c_str());
    uint64_t tot = 0;
    for (const auto& [name, v] : progs) tot += v.first;
    for (const auto& [name, v] : progs)
      if (v.second > 0)
        std::printf("  %-16s %9lu %8.1f %5.1f%%\n", name.c_str(),
                    static_cast<unsigned long>(v.second),
                    static_cast<double>(v.first) / static_cast<double>(v.second),
                    tot ? 100.0 * static_cast<double>(v.first) / static_cast<double>(tot) : 0);
  }
  const double ut = med("tracefs", &ModeResult::user_cpu_ms),
               ub = med("bpf", &ModeResult::user_cpu_ms);
  std::vector<double> bpf_prog;
  for (const auto& r : res["bpf"])
    if (r.prog_cnt > 0 && r.events > 0) bpf_prog.push_back(r.prog_ns / r.events / 1e3);
  const double pe = median(bpf_prog);
  std::printf("target: bpf program cost per event %.3f us <= 0.2 us: %s\n", pe,
              pe <= 0.2 ? "PASS" : "FAIL");
  std::printf(
      "target: exporter user-space CPU bpf %.2f ms <= tracefs %.2f ms / 10: %s (ratio "
      "%.3f)\n",
      ub, ut, ub <= ut / 10 ? "PASS" : "FAIL", ut > 0 ? ub / ut : 0.0);

  if (lock_s > 0) {
    for (int i = 0; i < 16; ++i) {
      lock_cgs.push_back(cg + "_l" + std::to_string(i));
      ::mkdir(lock_cgs.back().c_str(), 0755);
      writeStr(lock_cgs.back() + "/memory.limit_in_bytes", std::to_string(32u << 20));
    }
    for (const char* b : {"tracefs", "bpf"}) {
      auto [lost, seen] = lockStorm(b, lock_s, lock_cgs, file);
      std::printf("lock storm %-7s %d s: events %.0f (%.0f/s) lost %.0f\n", b, lock_s,
                  seen, seen / lock_s, lost);
    }
  }
  cleanup();
  return 0;
}
