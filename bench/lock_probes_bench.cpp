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
// First, the reader's own cost per lock record without the kernel: decode +
// aggregate of synthesised contention_begin/end records (committed 6.18
// formats), 64 tasks, 4096 lock addresses (so the top-K pruning runs), every
// 8th task inside memcg reclaim; thread CPU time per record.
//
// usage: lock_probes_bench [rounds=5] [stream|small|synthetic|all]
#include <sys/resource.h>
#include <unistd.h>


#include <signal.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "common/file.h"
#include "tests/support/stream_workload.h"
#include "tracing/decoders.h"
#include "tracing/event_formats.h"
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

class SlotResolver : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t tid) override {
    return "/bench_" + std::to_string(tid % 8);
  }
};

double threadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// Decode + aggregate cost per lock record (no kernel, no I/O).
bool synthetic() {
  auto f = EventFormats::load(MEMCG_TRACEFS_FIXTURES);
  if (!f.ok()) return false;
  auto d = Decoder::create(*f);
  if (!d.ok()) return false;
  const Decoder& dec = *d;
  auto make = [&](EventType t, int32_t pid, uint64_t addr, uint32_t v) {
    std::vector<uint8_t> r(24, 0);
    uint16_t id = static_cast<uint16_t>(dec.eventId(t));
    std::memcpy(r.data() + dec.commonType().offset, &id, 2);
    std::memcpy(r.data() + dec.commonPid().offset, &pid, 4);
    std::memcpy(r.data() + dec.field(t, Decoder::kLockAddr).offset, &addr, 8);
    const auto& fl = dec.field(t, t == EventType::kLockContentionBegin ? Decoder::kLockFlags
                                                                        : Decoder::kLockRet);
    std::memcpy(r.data() + fl.offset, &v, 4);
    return r;
  };
  std::vector<std::vector<uint8_t>> recs;
  std::vector<uint64_t> ts;
  uint64_t now = 1'000'000;
  for (int i = 0; i < 100000; ++i) {
    const int32_t pid = 1000 + i % 64;
    const uint64_t addr = 0xffff888000000000ull + 64 * static_cast<uint64_t>((i * 7919) % 4096);
    recs.push_back(make(EventType::kLockContentionBegin, pid, addr, i % 3 ? kLcbSpin : kLcbWrite));
    ts.push_back(now += 300);
    recs.push_back(make(EventType::kLockContentionEnd, pid, addr, 0));
    ts.push_back(now += 700);
  }
  AggregatorOptions o;
  Aggregator agg(o, std::make_unique<SlotResolver>());
  // Every 8th task is inside memcg reclaim (its contentions go per cgroup).
  std::vector<Event> setup;
  for (int32_t pid = 1000; pid < 1064; pid += 8) {
    Event e;
    e.type = EventType::kMemcgReclaimBegin;
    e.pid = pid;
    e.ts = 1;
    setup.push_back(e);
  }
  agg.apply(setup);
  std::vector<Event> chunk(1024);
  const int reps = 10;
  const double t0 = threadCpuNs();
  for (int r = 0; r < reps; ++r) {
    size_t used = 0;
    for (size_t i = 0; i < recs.size(); ++i) {
      if (dec.decode(recs[i].data(), 24, ts[i], chunk[used]) && ++used == chunk.size()) {
        agg.apply(std::span<const Event>(chunk.data(), used));
        used = 0;
      }
    }
    agg.apply(std::span<const Event>(chunk.data(), used));
    agg.endRound();
  }
  const double ns = (threadCpuNs() - t0) / (static_cast<double>(reps) * recs.size());
  const double s0 = threadCpuNs();
  LockSnapshot snap = agg.snapshot().locks;
  const double snap_us = (threadCpuNs() - s0) / 1e3;
  std::printf("synthetic: %.0f ns per lock record (decode + aggregate, %zu records x %d); "
              "snapshot %.0f us; top lock count %lu\n",
              ns, recs.size(), reps, snap_us,
              static_cast<unsigned long>(snap.top_locks.empty() ? 0 : snap.top_locks[0].count));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string which = argc > 2 ? argv[2] : "all";
  if ((which == "all" || which == "synthetic") && !synthetic()) {
    std::fprintf(stderr, "synthetic: cannot load %s\n", MEMCG_TRACEFS_FIXTURES);
    return 1;
  }
  if (which == "synthetic") return 0;
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
  for (const char* w : {"stream", "small"}) {
    if (which != "all" && which != w) continue;
    std::printf("== workload %s\n", w);
    if (!bench(rounds, fs.dir(), std::string(w) == "small")) return 1;
  }
  return 0;
}
