// Idle cost of the tracing reader: system calls and CPU per second
// of the reader thread while no event comes, the older loop
// ("old": SessionOptions::Wait::kInterval, every CPU read every 200 ms, every
// CPU's stats file every second) against the poll loop ("new": kPoll, one
// epoll_wait over the CPUs, idle_wake 1 s), printed side by side.
//
//  measured   a real TracefsSession on this host's CPUs: an instance of its
//             own with one event enabled, sched_process_fork filtered to
//             this process (no other process can fill it). Per mode, D
//             seconds idle; the reader's own counters (SessionStats::syscalls,
//             reader_cpu_ns) and, counted by the kernel, its thread's read
//             calls (/proc/self/task/<tid>/io syscr: read and pread) and
//             voluntary context switches (sleeps). Then the latency from a
//             fork to its record being handed out (median of 7 forks, spaced
//             so that each finds the reader idle).
//  simulated  N = 2, 64, 256 CPUs, this host having fewer: N empty
//             O_NONBLOCK pipes stand in for the trace_pipe_raw files and N
//             memfds for the stats files. Each loop makes the calls the
//             session's run() makes at idle (tracefs_session.cpp):
//               old  every 200 ms: N reads (EAGAIN), the thread CPU clock, a
//                    futex wait; every second N preads of the stats files;
//               new  the session's CpuPoller over the N pipes; per idle_wake:
//                    ready() (one poll), the CPU clock, a futex wait of
//                    poll_interval, wait(0) and wait(idle_wake) (two
//                    epoll_wait).
//             Not simulated: what an empty trace_pipe_raw read costs beyond
//             an empty pipe's, and poll over ring buffers instead of pipes
//             (the measured rows at this host's CPU count give both).
// Root; prints SKIPPED without tracefs.
//
// usage: tracing_idle_cost [seconds=3] [runs=3] (medians of interleaved runs)
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "common/file.h"
#include "common/parse.h"
#include "tracing/cpu_poller.h"
#include "tracing/tracefs_session.h"

namespace {

using namespace memcg;           // NOLINT
using namespace memcg::tracing;  // NOLINT
using Clock = std::chrono::steady_clock;

constexpr auto kInterval = std::chrono::milliseconds(200);  // SessionOptions' default
constexpr auto kIdleWake = std::chrono::milliseconds(1000);

uint64_t threadCpuNs() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(t.tv_nsec);
}

// CPU time of thread `tid` of this process: its kernel CPU clock
// (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), what pthread_getcpuclockid
// returns), readable from any thread.
uint64_t cpuNsOf(pid_t tid) {
  const clockid_t id = static_cast<clockid_t>((~static_cast<unsigned>(tid)) << 3) | 6;
  timespec t{};
  if (::clock_gettime(id, &t) != 0) return 0;
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(t.tv_nsec);
}

// A field of /proc/self/task/<tid>/{io,status} ("syscr: N"), or 0.
uint64_t procField(const std::string& file, std::string_view key) {
  auto text = readWholeFile(file);
  if (!text.ok()) return 0;
  std::string_view t = *text, line;
  while (nextLine(t, line)) {
    if (!line.starts_with(key)) continue;
    std::string_view v = line.substr(key.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == ':'))
      v.remove_prefix(1);
    if (auto n = parseU64(trimRight(v))) return *n;
  }
  return 0;
}

struct Kernel {  // what the kernel counted for one thread
  uint64_t syscr = 0, sleeps = 0;
  static Kernel of(const std::string& task_dir) {
    return {procField(task_dir + "/io", "syscr"),
            procField(task_dir + "/status", "voluntary_ctxt_switches")};
  }
};

struct Row {
  double syscalls = 0;  // per second, counted by the loop
  double syscr = -1;    // per second, counted by the kernel (-1: not measured)
  double sleeps = -1;   // voluntary context switches per second
  double cpu_us = 0;    // thread CPU, us per second
};

std::string taskOf(const char* comm) {
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return {};
  std::string found;
  while (dirent* de = ::readdir(d)) {
    if (de->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + de->d_name;
    auto c = readWholeFile(dir + "/comm");
    if (c.ok() && trimRight(*c) == comm) found = dir;
  }
  ::closedir(d);
  return found;
}

// --- measured -----------------------------------------------------------------
struct Measured {
  Row row;
  double latency_ms = -1;  // median fork -> record handed out
  size_t cpus = 0;
  bool poll = false;  // the mode in effect (kPoll may fall back)
};

class Counter : public RecordSink {
 public:
  void onRecord(const void*, uint32_t, uint64_t, int) override {}
  void onRoundEnd() override {}
};

bool measure(SessionOptions::Wait wait, int seconds, int n, bool latency, Measured& out) {
  SessionOptions o;
  o.instance_name =
      "memcg_exporter_bench_idle_" + std::to_string(::getpid()) + "_" + std::to_string(n);
  o.buffer_kb_per_cpu = 1024;
  o.wait = wait;
  o.poll_interval = kInterval;
  o.idle_wake = kIdleWake;
  auto s = TracefsSession::open(o);
  if (!s.ok()) {
    std::printf("SKIPPED: %s\n", s.error().message().c_str());
    return false;
  }
  TracefsSession& session = **s;
  // The bench's main thread forks: parent_pid is its tid (== pid).
  auto st = session.enableEvent("sched", "sched_process_fork",
                                "parent_pid==" + std::to_string(::getpid()));
  if (!st.ok()) {
    std::printf("SKIPPED: %s\n", st.error().message().c_str());
    return false;
  }
  Counter sink;
  if (auto r = session.start(&sink); !r.ok()) {
    std::printf("SKIPPED: %s\n", r.error().message().c_str());
    return false;
  }
  out.cpus = session.cpuCount();
  out.poll = session.waitMode() == SessionOptions::Wait::kPoll;
  std::string task;
  for (int i = 0; i < 100 && task.empty(); ++i) {
    task = taskOf("memcg-trace");
    if (task.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Let the start-up round pass, then measure a window of idle.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  if (task.empty()) {
    std::printf("SKIPPED: reader thread memcg-trace not found\n");
    return false;
  }
  const pid_t tid = static_cast<pid_t>(std::atoi(task.c_str() + task.rfind('/') + 1));
  const SessionStats a = session.stats();
  const Kernel ka = Kernel::of(task);
  const uint64_t c0 = cpuNsOf(tid);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const SessionStats b = session.stats();
  const Kernel kb = Kernel::of(task);
  const uint64_t c1 = cpuNsOf(tid);
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  // The session publishes its count after each round: over a window of a
  // few idle_wakes that is a round or so short of the window at most.
  out.row.syscalls = static_cast<double>(b.syscalls - a.syscalls) / dt;
  out.row.cpu_us = static_cast<double>(c1 - c0) / 1e3 / dt;
  out.row.syscr = static_cast<double>(kb.syscr - ka.syscr) / dt;
  out.row.sleeps = static_cast<double>(kb.sleeps - ka.sleeps) / dt;

  // Latency: fork a child that exits at once, wait until its record is out.
  std::vector<double> lat;
  for (int i = 0; latency && i < 7; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(700 + 97 * i));
    const uint64_t before = session.stats().records;
    const auto f0 = Clock::now();
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    if (pid < 0) break;
    int status = 0;
    ::waitpid(pid, &status, 0);
    bool seen = false;
    while (Clock::now() - f0 < std::chrono::seconds(10)) {
      if (session.stats().records > before) {
        seen = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (seen)
      lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - f0).count());
  }
  if (!lat.empty()) {
    std::sort(lat.begin(), lat.end());
    out.latency_ms = lat[lat.size() / 2];
  }
  session.stop();
  return true;
}

// --- simulated ------------------------------------------------------------------
struct Sim {
  std::vector<Fd> pipes_r, pipes_w, stats;
  explicit Sim(int n) {
    for (int i = 0; i < n; ++i) {
      int p[2];
      if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) std::abort();
      pipes_r.emplace_back(p[0]);
      pipes_w.emplace_back(p[1]);
      int m = ::memfd_create("stats", MFD_CLOEXEC);
      const char text[] =
          "entries: 0\noverrun: 0\ncommit overrun: 0\ndropped events: 0\n";
      if (m < 0 || ::write(m, text, sizeof text - 1) < 0) std::abort();
      stats.emplace_back(m);
    }
  }
};

// Runs `loop(calls, stop)` on a thread for `seconds` and measures it from
// this one: its CPU clock, the kernel's counters, and the calls it counted.
template <class Loop, class Stop>
Row runSim(int seconds, Loop loop, Stop stop) {
  std::atomic<pid_t> tid{0};
  std::atomic<uint64_t> calls{0};
  std::thread t([&] {
    tid.store(static_cast<pid_t>(::gettid()));
    loop(calls);
  });
  while (tid.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its first rounds
  const std::string task = "/proc/self/task/" + std::to_string(tid.load());
  const Kernel ka = Kernel::of(task);
  const uint64_t c0 = cpuNsOf(tid.load()), n0 = calls.load();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const Kernel kb = Kernel::of(task);
  const uint64_t c1 = cpuNsOf(tid.load()), n1 = calls.load();
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  stop();
  t.join();
  Row row;
  row.syscalls = static_cast<double>(n1 - n0) / dt;
  row.cpu_us = static_cast<double>(c1 - c0) / 1e3 / dt;
  row.syscr = static_cast<double>(kb.syscr - ka.syscr) / dt;
  row.sleeps = static_cast<double>(kb.sleeps - ka.sleeps) / dt;
  return row;
}

// The old loop at idle (tracefs_session.cpp run() before it polled).
Row simOld(int n, int seconds) {
  Sim sim(n);
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  auto loop = [&](std::atomic<uint64_t>& calls) {
    auto last_stats = Clock::now() - std::chrono::seconds(10);
    char buf[4096];
    for (;;) {
      for (auto& p : sim.pipes_r) {
        calls.fetch_add(1, std::memory_order_relaxed);
        if (::read(p.get(), buf, sizeof buf) > 0) std::abort();
      }
      if (Clock::now() - last_stats >= std::chrono::seconds(1)) {
        for (auto& s : sim.stats) {
          calls.fetch_add(1, std::memory_order_relaxed);
          if (::pread(s.get(), buf, sizeof buf, 0) < 0) std::abort();
        }
        last_stats = Clock::now();
      }
      calls.fetch_add(2, std::memory_order_relaxed);  // the CPU clock, the futex wait
      (void)threadCpuNs();
      std::unique_lock<std::mutex> lk(mu);
      if (cv.wait_for(lk, kInterval, [&] { return stop; })) break;
    }
  };
  return runSim(seconds, loop, [&] {
    {
      std::lock_guard<std::mutex> g(mu);
      stop = true;
    }
    cv.notify_all();
  });
}

// The new loop at idle (run() + waitForRound() in kPoll), on CpuPoller.
Row simNew(int n, int seconds) {
  Sim sim(n);
  std::vector<int> fds;
  for (auto& p : sim.pipes_r) fds.push_back(p.get());
  auto poller = CpuPoller::create(fds);
  if (!poller.ok()) {
    std::printf("CpuPoller: %s\n", poller.error().message().c_str());
    std::exit(1);
  }
  CpuPoller& p = *poller;
  auto loop = [&](std::atomic<uint64_t>& calls) {
    std::vector<uint8_t> ready;
    char buf[4096];
    for (;;) {
      calls.fetch_add(1, std::memory_order_relaxed);
      p.ready(ready);  // the round: read only the CPUs that hold data
      for (size_t i = 0; i < ready.size(); ++i) {
        if (!ready[i]) continue;
        calls.fetch_add(1, std::memory_order_relaxed);
        (void)!::read(fds[i], buf, sizeof buf);
      }
      calls.fetch_add(2, std::memory_order_relaxed);  // the CPU clock, the epoll_wait
      (void)threadCpuNs();
      if (p.wait(kIdleWake) == CpuPoller::Wake::kWoken) break;
    }
  };
  return runSim(seconds, loop, [&] { p.wake(); });
}

void printRow(const char* what, size_t cpus, const Row& o, const Row& n) {
  auto opt = [](double v, char* b, size_t len) {
    if (v < 0) {
      std::snprintf(b, len, "%9s", "-");
    } else {
      std::snprintf(b, len, "%9.1f", v);
    }
    return b;
  };
  char b1[32], b2[32], b3[32], b4[32];
  std::printf("%-10s %5zu | %9.1f %9.1f %7.1fx | %s %s | %s %s | %9.1f %9.1f %7.1fx\n",
              what, cpus, o.syscalls, n.syscalls,
              n.syscalls > 0 ? o.syscalls / n.syscalls : 0.0, opt(o.syscr, b1, sizeof b1),
              opt(n.syscr, b2, sizeof b2), opt(o.sleeps, b3, sizeof b3),
              opt(n.sleeps, b4, sizeof b4), o.cpu_us, n.cpu_us,
              n.cpu_us > 0 ? o.cpu_us / n.cpu_us : 0.0);
}

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Medians per field of rows of repeated runs.
Row medianRow(const std::vector<Row>& rows) {
  std::vector<double> a, b, c, d;
  for (const Row& r : rows) {
    a.push_back(r.syscalls);
    b.push_back(r.syscr);
    c.push_back(r.sleeps);
    d.push_back(r.cpu_us);
  }
  return Row{median(a), median(b), median(c), median(d)};
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  std::printf(
      "tracing reader idle cost: old = read every CPU every %lld ms, new = epoll_wait"
      " (idle_wake %lld ms); medians of %d interleaved runs of %d s\n",
      static_cast<long long>(kInterval.count()),
      static_cast<long long>(kIdleWake.count()), rounds, seconds);
  bool real = ::geteuid() == 0;
  if (!real) std::printf("SKIPPED measured rows: needs root\n");
  std::vector<Row> ro, rn;
  Measured mo, mn;
  for (int r = 0; real && r < rounds; ++r) {
    Measured o, n;
    real = measure(SessionOptions::Wait::kInterval, seconds, 2 * r + 1, r == 0, o) &&
           measure(SessionOptions::Wait::kPoll, seconds, 2 * r + 2, r == 0, n);
    if (!real) break;
    if (r == 0) {
      mo = o;
      mn = n;
    }
    ro.push_back(o.row);
    rn.push_back(n.row);
  }
  if (real) {
    mo.row = medianRow(ro);
    mn.row = medianRow(rn);
  }
  if (real && !mn.poll)
    std::printf("note: this kernel refused kPoll; the new row is kInterval\n");
  const int sizes[] = {2, 64, 256};
  std::vector<Row> so[3], sn[3];
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 3; ++k) {
      so[k].push_back(simOld(sizes[k], seconds));
      sn[k].push_back(simNew(sizes[k], seconds));
    }
  }

  std::printf("\n%-10s %5s | %-29s | %-19s | %-19s | %-29s\n", "", "",
              "syscalls/s (counted)", "syscr/s (kernel)", "sleeps/s (kernel)",
              "reader CPU us/s");
  std::printf("%-10s %5s | %9s %9s %8s | %9s %9s | %9s %9s | %9s %9s %8s\n", "", "CPUs",
              "old", "new", "old/new", "old", "new", "old", "new", "old", "new",
              "old/new");
  if (real) printRow("measured", mo.cpus, mo.row, mn.row);
  for (int k = 0; k < 3; ++k) {
    printRow("simulated", static_cast<size_t>(sizes[k]), medianRow(so[k]),
             medianRow(sn[k]));
  }
  if (real) {
    std::printf(
        "\nlatency fork -> record handed out (median of 7, idle reader): old %.1f ms, "
        "new %.1f ms (bound: poll_interval + commit_slack = 250 ms + a round)\n",
        mo.latency_ms, mn.latency_ms);
  }
  return 0;
}
