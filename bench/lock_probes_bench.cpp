// Cost of the lock contention probes (--collector.vmscan.locks and
// --collector.vmscan.lock-callers): interleaved runs of one workload with the
// vmscan tracer in three modes,
//   off      the default event set (lock probes not enabled),
//   locks    + lock:contention_*, cgroup_rstat_*, memcg_flush_stats,
//   callers  + the stacktrace trigger (64 stacks/s at most),
// and per mode the medians of: the workload's own sys time (wait4 rusage of
// its tasks), the reader thread's CPU, records read and lock records read.
// Derived: reader CPU per record and per lock record (extra over off), and
// the workload's extra sys time over off per lock record.
//
// Workloads, each in two 64 MiB memcgs:
//  stream  (tests/support/stream_workload.h) in each memcg two writers on the
//          two halves of a 768 MiB file on a loop-mounted ext4 image, then
//          read back: reclaim-bound, a few hundred contentions per second;
//  small   the same with four writers per file and 4 KiB writes: i_rwsem
//          contention at a higher rate, so the per-event cost stands out of
//          the run-to-run noise. (Threads doing mmap/munmap contend faster on
//          mmap_lock, but their TLB-shootdown IPIs crawl on an overcommitted
//          VM.)
// Root and cgroup v1 memory; prints SKIPPED otherwise.
//
// usage: lock_probes_bench [rounds=5] [stream|small|all]
#include <sys/resource.h>
#include <unistd.h>


#include <signal.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/file.h"
#include "tests/support/stream_workload.h"
#include "tracing/tracer.h"

namespace {

using namespace memcg;           // NOLINT
using namespace memcg::tracing;  // NOLINT

const std::string kMemcgRoot = "/sys/fs/cgroup/memory";
// SIGINT/SIGTERM end the bench after the current run, so that everything it
// made (memcgs, instance, loop mount) is removed by the destructors.
std::atomic<bool> g_stop{false};

struct Run {
  double wall_s = 0, sys_s = 0, reader_ms = 0;
  double records = 0, lock_records = 0;
};

double tv(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; }

uint64_t lockRecords(const LockSnapshot& l) {
  // Every record the probes produce, from what was folded: contention pairs
  // (2 each) + unpaired ends + ignored re-begins, rstat (contended, locked and
  // unlock per hold), flushes and stack samples.
  uint64_t n = l.unpaired_ends + l.nested_begins + l.stacks_sampled + l.rstat_unpaired;
  for (const auto& k : l.node) n += 2 * k.count;
  for (const auto& c : l.cgroups) {
    for (const auto& k : c.contention) n += 2 * k.count;
    n += c.rstat.contended + 2 * c.rstat.hold.count + c.rstat.flushes + c.rstat.flushes_skipped;
  }
  return n;
}

bool runOnce(int mode, int seq, const std::string& fsdir, Run& out, bool small) {
  const std::string tag = "memcg_exporter_test_lockbench_" + std::to_string(::getpid()) + "_" +
                          std::to_string(seq);
  std::vector<std::string> cgs;
  for (int i = 0; i < 2; ++i) {
    cgs.push_back(kMemcgRoot + "/" + tag + "_" + std::to_string(i));
    if (::mkdir(cgs.back().c_str(), 0755) != 0) return false;
    if (!writeWholeFile(cgs.back() + "/memory.limit_in_bytes", std::to_string(64 << 20)).ok())
      return false;
  }
  bool ok = true;
  {
    std::vector<std::unique_ptr<memcg::testing::StreamChild>> kids;
    const int writers = small ? 4 : 2;
    const uint64_t mib = 768 / writers;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < writers; ++j) {
        kids.push_back(std::make_unique<memcg::testing::StreamChild>(
            cgs[i], fsdir + "/f" + std::to_string(i), mib, mib * j,
            small ? 4096 : (1 << 20)));
      }
    }
    TracerOptions o;
    o.session.instance_name = tag;
    o.session.buffer_kb_per_cpu = 16384;
    o.memory_root = kMemcgRoot;
    o.locks = mode >= 1;
    o.lock_callers = mode == 2;
    auto t = Tracer::start(o);
    if (!t.ok()) {
      std::fprintf(stderr, "tracer: %s\n", t.error().message().c_str());
      return false;
    }
    ::usleep(100000);  // children have joined their memcgs
    auto t0 = std::chrono::steady_clock::now();
    for (auto& k : kids) k->start();
    out.sys_s = 0;
    for (auto& k : kids) {
      struct rusage ru {};
      ok = k->wait(&ru) == 0 && ok;
      out.sys_s += tv(ru.ru_stime);
    }
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (*t)->stop();
    TraceSnapshot s = (*t)->snapshot();
    out.reader_ms = static_cast<double>(s.reader_cpu_ns) / 1e6;
    out.records = static_cast<double>(s.events_read);
    out.lock_records = static_cast<double>(lockRecords(s.locks));
    if (s.events_lost) std::fprintf(stderr, "run %d lost %lu events\n", seq, (unsigned long)s.events_lost);
  }
  for (int i = 0; i < 2; ++i) {
    ::unlink((fsdir + "/f" + std::to_string(i)).c_str());
    for (int k = 0; k < 50 && ::rmdir(cgs[i].c_str()) != 0 && errno == EBUSY; ++k) ::usleep(20000);
  }
  return ok;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool bench(int rounds, const std::string& fsdir, bool small) {
  const char* names[3] = {"off", "locks", "callers"};
  std::vector<Run> runs[3];
  static int seq = 0;
  Run warm;
  runOnce(0, seq++, fsdir, warm, small);  // first allocation of the image's blocks
  for (int r = 0; r < rounds; ++r) {
    for (int m = 0; m < 3; ++m) {
      if (g_stop) return false;
      Run x;
      if (!runOnce(m, seq++, fsdir, x, small)) {
        std::fprintf(stderr, "run failed (mode %s)\n", names[m]);
        return false;
      }
      std::printf("round %d %-7s wall %.2f s  sys %.3f s  reader %.1f ms  records %.0f  lock %.0f\n",
                  r + 1, names[m], x.wall_s, x.sys_s, x.reader_ms, x.records, x.lock_records);
      runs[m].push_back(x);
    }
  }
  auto med = [&](int m, double Run::*f) {
    std::vector<double> v;
    for (const Run& x : runs[m]) v.push_back(x.*f);
    return median(v);
  };
  std::printf("\nmedians of %d interleaved rounds\n", rounds);
  std::printf("%-8s %8s %10s %10s %10s %10s %12s %14s %16s\n", "mode", "wall_s", "sys_s",
              "reader_ms", "records", "lock_recs", "us/record", "+reader us/lk", "+sys us/lk");
  for (int m = 0; m < 3; ++m) {
    const double recs = med(m, &Run::records), lk = med(m, &Run::lock_records);
    const double rd = med(m, &Run::reader_ms), sys = med(m, &Run::sys_s);
    const double rd0 = med(0, &Run::reader_ms), sys0 = med(0, &Run::sys_s);
    std::printf("%-8s %8.2f %10.3f %10.1f %10.0f %10.0f %12.3f", names[m], med(m, &Run::wall_s),
                sys, rd, recs, lk, recs > 0 ? rd * 1e3 / recs : 0.0);
    if (m > 0 && lk > 0) {
      std::printf(" %14.3f %16.2f\n", (rd - rd0) * 1e3 / lk, (sys - sys0) * 1e6 / lk);
    } else {
      std::printf(" %14s %16s\n", "-", "-");
    }
  }
  std::printf("sys ratio vs off: locks %.3f, callers %.3f\n",
              med(1, &Run::sys_s) / med(0, &Run::sys_s), med(2, &Run::sys_s) / med(0, &Run::sys_s));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  if (::geteuid() != 0 || ::access((kMemcgRoot + "/memory.limit_in_bytes").c_str(), F_OK) != 0) {
    std::printf("lock_probes_bench: SKIPPED: needs root and cgroup v1 memory at %s\n",
                kMemcgRoot.c_str());
    return 0;
  }
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);  // every thread started later inherits it
  std::thread([sigs] {
    int sig = 0;
    sigwait(&sigs, &sig);
    std::fprintf(stderr, "signal %d: stopping after this run\n", sig);
    g_stop = true;
  }).detach();
  memcg::testing::LoopFs fs("/var/tmp/memcg_exporter_test_lockbench_" +
                                std::to_string(::getpid()),
                            2048);
  if (!fs.ok()) {
    std::printf("lock_probes_bench: SKIPPED: cannot loop-mount an ext4 image in /var/tmp\n");
    return 0;
  }
  const std::string which = argc > 2 ? argv[2] : "all";
  for (const char* w : {"stream", "small"}) {
    if (which != "all" && which != w) continue;
    std::printf("== workload %s\n", w);
    if (!bench(rounds, fs.dir(), std::string(w) == "small")) return 1;
  }
  return 0;
}
