// Live tests of the LRU/writeback/slab detail events, the report's per-task
// rows, cgroup removal and proactive episodes, on the running kernel (root,
// cgroup v1 memory controller, tracefs). Skipped with a reason otherwise.
//
// Workload (as tracing_live_test.cpp): a child in a fresh memcg
// memcg_exporter_test_trace_<pid>_<n> with a 64 MiB limit reads the first
// 32 MiB of a 256 MiB file twice (activating those pages), reads its
// memory.stat (a stats flush: reclaim judges "inactive is low" from the
// flushed LRU sizes, and without the flush a fresh cgroup's active list reads
// as empty and is never aged) and then streams the rest, so
// mm_vmscan_lru_shrink_active runs; a second child in the same memcg maps
// 32 MiB of the file, touches it and madvise(MADV_PAGEOUT)s it
// (mm_vmscan_reclaim_pages). The independent count is a second private
// instance memcg_exporter_test_ref_<pid>_<n> with the same events, read as
// text and summed per pid by this file's parser.
// Tolerance: equality (both instances are on before the workload starts and
// drained after it exits; nothing is lost: asserted), except 1% slack where
// noted for events of other tasks racing the reference's tracing_on=0.
// Every comparison first requires that the reference saw the event (> 0, or
// the minimum stated beside it): a 0 = 0 match proves nothing.
// (The reader also looks up 2048 names that do not exist first: negative
// dentries charged to its memcg, so memcg reclaim calls the dentry shrinker.)
//
// mm_vmscan_write_folio: memcg (and direct) reclaim never writes dirty file
// folios (only kswapd does, vmscan.c), so the file workload above cannot make
// it fire; WriteFolioMatchesIndependentCount swaps anonymous memory out to a
// zram device of its own instead (hot_add, removed after, also on failure).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/swap.h>
#include <sys/syscall.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "tests/support/tracing_live_support.h"
#include "tests/support/zram_swap.h"
#include "tracing/reclaim_report.h"
#include "tracing/trace_metrics.h"
#include "tracing/tracer.h"

namespace memcg::tracing {
namespace {

using namespace live;  // NOLINT

class TracingScanLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!skipReason.empty()) GTEST_SKIP() << skipReason;
  }
  TracerOptions options(int n) {
    TracerOptions o = liveTracerOptions("tracer_scan", n);
    o.lru_detail = true;
    o.shrink_slab = true;
    return o;
  }
};

struct RefSum {
  uint64_t n = 0;
  uint64_t sum = 0;
};

// Lines "<comm>-<pid> [cpu] flags ts: <event>: ... <key>N ..." summed per pid
// (count of lines, sum of the number after `key`, if given).
std::map<int, RefSum> refSums(std::string_view text, const std::string& event,
                              const std::string& key) {
  std::map<int, RefSum> out;
  const std::string tag = ": " + event + ": ";
  std::string_view line;
  while (nextLine(text, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t t = line.find(tag);
    if (t == std::string_view::npos) continue;
    auto pid = refLinePid(line);
    if (!pid) continue;
    RefSum& r = out[static_cast<int>(*pid)];
    ++r.n;
    if (key.empty()) continue;
    size_t k = line.find(key, t + tag.size());
    if (k == std::string_view::npos) continue;
    std::string_view num = line.substr(k + key.size());
    num = num.substr(0, num.find(' '));
    r.sum += parseU64(trimRight(num)).value_or(0);
  }
  return out;
}

// A child that waits for a go byte, renames itself `comm`, then runs `fn`.
template <class Fn>
pid_t forkWorker(int& go, const char* comm, Fn fn) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    char c;
    ::close(p[1]);
    if (::read(p[0], &c, 1) != 1) ::_exit(2);
    ::prctl(PR_SET_NAME, comm);
    ::_exit(fn());
  }
  ::close(p[0]);
  go = p[1];
  return pid;
}

int streamWithReuse(const std::string& file, const std::string& memcg_dir) {
  // 2048 negative dentries charged to this memcg (lookups of names that do
  // not exist; nothing to clean up): the dentry shrinker then has objects of
  // this memcg, so its reclaim calls it (mm_shrink_slab_*). Without them the
  // memcg may own no shrinkable slab and shrink_slab is never called for it.
  struct stat st {};
  for (int i = 0; i < 2048; ++i) {
    const std::string neg = "/var/tmp/memcg_exporter_test_neg_" + std::to_string(::getpid()) +
                            "_" + std::to_string(i);
    (void)::stat(neg.c_str(), &st);
  }
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return 3;
  static char buf[1 << 20];
  for (int pass = 0; pass < 2; ++pass) {  // 32 MiB twice: activated
    for (uint64_t off = 0; off < 32 * kMiB; off += sizeof buf) {
      if (::pread(fd, buf, sizeof buf, static_cast<off_t>(off)) <= 0) return 4;
    }
  }
  // Flush the cgroup's stats (see the file comment) so reclaim sees the
  // active list it must age.
  if (!readWholeFile(memcg_dir + "/memory.stat").ok()) return 6;
  while (::read(fd, buf, sizeof buf) > 0) {
  }
  ::close(fd);
  return 0;
}

int waitChild(pid_t& pid) {
  int st = 0;
  if (pid <= 0 || ::waitpid(pid, &st, 0) != pid) return -1;
  pid = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

struct Kill {  // kills a child left running by a failed assertion
  pid_t& pid;
  ~Kill() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// A zram swap device of our own (tests/support/zram_swap.h: removed after,
// also on failure; one a killed earlier run left is removed first).
using test::ZramSwap;

TEST_F(TracingScanLive, DetailEventsAndReportRowsMatchIndependentCount) {
  RefInstance ref(uniq("ref_scan", 1));
  ASSERT_TRUE(ref.ok) << "mkdir " << ref.dir << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(ref.dir + "/buffer_size_kb", "32768"));
  for (const char* e : {"mm_vmscan_memcg_reclaim_end", "mm_vmscan_lru_isolate",
                        "mm_vmscan_lru_shrink_active", "mm_shrink_slab_end",
                        "mm_vmscan_reclaim_pages", "mm_vmscan_write_folio"}) {
    ASSERT_TRUE(ref.enable("vmscan", e)) << e;
  }
  Cgroup cg(uniq("trace", 1));
  ASSERT_TRUE(cg.ok) << cg.path << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(64 * kMiB)));
  DataFile f("/var/tmp/" + uniq("file", 1), 256 * kMiB);
  ASSERT_TRUE(f.ok) << "cannot write " << f.path;

  auto tracer = Tracer::start(options(1));
  ASSERT_TRUE(tracer.ok()) << tracer.error().message();
  ASSERT_TRUE(writeStr(ref.dir + "/tracing_on", "1"));
  int go1 = -1, go2 = -1;
  pid_t reader = forkWorker(go1, "memcg_test_rd", [&] { return streamWithReuse(f.path, cg.path); });
  Kill k1{reader};
  pid_t pager = forkWorker(go2, "memcg_test_po", [&] { return pageOut(f.path); });
  Kill k2{pager};
  ASSERT_GT(reader, 0);
  ASSERT_GT(pager, 0);
  const pid_t reader_pid = reader, pager_pid = pager;
  ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(reader)));
  ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(pager)));
  char c = 1;
  ASSERT_EQ(::write(go1, &c, 1), 1);
  ::close(go1);
  EXPECT_EQ(waitChild(reader), 0);
  ASSERT_EQ(::write(go2, &c, 1), 1);  // after the stream: the mapping is charged anew
  ::close(go2);
  EXPECT_EQ(waitChild(pager), 0);
  writeStr(ref.dir + "/tracing_on", "0");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  (*tracer)->stop();
  TraceSnapshot snap = (*tracer)->snapshot();
  ASSERT_EQ(ref.lost(), 0u) << "reference instance lost events; enlarge its buffer";
  EXPECT_EQ(snap.events_lost, 0u);
  auto text = readWholeFile(ref.dir + "/trace");
  ASSERT_TRUE(text.ok());

  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);
  const CgroupTraceStats* cs = findCgroup(snap, rel);
  ASSERT_NE(cs, nullptr) << "no series for " << rel;
  const ScanDetail& d = cs->detail;
  uint64_t iso_taken = 0, iso_scanned = 0, act_taken = 0, slab = 0, writes = 0;
  for (const auto& x : d.isolate)
    for (const auto& l : x)
      for (const auto& li : l) {
        iso_taken += li.taken_pages;
        iso_scanned += li.scanned_pages;
      }
  for (const auto& x : d.active)
    for (const auto& l : x) act_taken += l.taken_pages;
  for (const auto& s : d.slab) slab += s.calls;
  for (const auto& x : d.write_folios) writes += x[0] + x[1];

  // Both children are the only tasks of the cgroup: the reference summed
  // over their pids is the cgroup's count.
  auto sumOf = [&](const std::string& ev, const std::string& key, bool count) {
    auto m = refSums(*text, ev, key);
    uint64_t v = 0;
    for (pid_t p : {reader_pid, pager_pid}) v += count ? m[p].n : m[p].sum;
    return v;
  };
  const uint64_t ref_iso = sumOf("mm_vmscan_lru_isolate", "nr_taken=", false);
  const uint64_t ref_iso_scanned = sumOf("mm_vmscan_lru_isolate", "nr_scanned=", false);
  const uint64_t ref_act = sumOf("mm_vmscan_lru_shrink_active", "nr_taken=", false);
  const uint64_t ref_slab = sumOf("mm_shrink_slab_end", "", true);
  const uint64_t ref_po = sumOf("mm_vmscan_reclaim_pages", "nr_reclaimed=", false);
  const uint64_t ref_writes = sumOf("mm_vmscan_write_folio", "", true);
  const uint64_t ref_iso_events = sumOf("mm_vmscan_lru_isolate", "", true);
  const uint64_t ref_act_events = sumOf("mm_vmscan_lru_shrink_active", "", true);
  auto ref_memcg = refSums(*text, "mm_vmscan_memcg_reclaim_end", "nr_reclaimed=");
  uint64_t inactive_scanned = 0;
  for (const auto& l : cs->lru[static_cast<size_t>(ReclaimContext::kMemcg)])
    inactive_scanned += l.scanned_pages;
  std::printf(
      "[ live ] %s: isolate taken %lu (ref %lu) scanned %lu (ref %lu) in %lu events; "
      "shrink_active taken %lu (ref %lu) in %lu events; slab calls %lu (ref %lu); "
      "write_folio %lu (ref %lu); pageout reclaimed %lu (ref %lu); memcg reclaims %lu "
      "(ref %lu, of which the reader's %lu); lru_shrink_inactive scanned %lu pages\n",
      rel.c_str(), (unsigned long)iso_taken, (unsigned long)ref_iso, (unsigned long)iso_scanned,
      (unsigned long)ref_iso_scanned, (unsigned long)ref_iso_events, (unsigned long)act_taken,
      (unsigned long)ref_act, (unsigned long)ref_act_events, (unsigned long)slab,
      (unsigned long)ref_slab, (unsigned long)writes, (unsigned long)ref_writes,
      (unsigned long)d.pageout_reclaimed_pages, (unsigned long)ref_po,
      (unsigned long)cs->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total,
      (unsigned long)(ref_memcg[reader_pid].n + ref_memcg[pager_pid].n),
      (unsigned long)ref_memcg[reader_pid].n, (unsigned long)inactive_scanned);
  ASSERT_GT(ref_iso, 1000u) << "workload did not isolate LRU pages";
  EXPECT_EQ(iso_taken, ref_iso);
  EXPECT_EQ(iso_scanned, ref_iso_scanned);
  EXPECT_GT(ref_act_events, 0u) << "the workload did not age the active list "
                                   "(no mm_vmscan_lru_shrink_active in the reference)";
  EXPECT_GT(ref_act, 0u) << "shrink_active took no pages in the reference";
  EXPECT_EQ(act_taken, ref_act);
  EXPECT_GT(ref_slab, 0u) << "no shrinker call in the reference";
  EXPECT_EQ(slab, ref_slab);
  // (write_folio: printed only; file reclaim in a memcg writes nothing, see
  // the file comment. WriteFolioMatchesIndependentCount compares it.)
  ASSERT_GT(ref_po, 0u) << "MADV_PAGEOUT reclaimed nothing";
  EXPECT_EQ(d.pageout_reclaimed_pages, ref_po);
  EXPECT_EQ(cs->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total,
            ref_memcg[reader_pid].n + ref_memcg[pager_pid].n);

  // The report's per-task rows: the reader with its comm and exactly the
  // memcg reclaims the reference saw for its pid.
  nlohmann::json rep = reclaimReport(snap);
  const nlohmann::json* row = nullptr;
  for (const auto& r : rep["processes"]) {
    if (r["pid"] == reader_pid) row = &r;
  }
  ASSERT_NE(row, nullptr) << "reader pid " << reader_pid << " has no row";
  std::printf("[ live ] report row: %s\n", row->dump().c_str());
  EXPECT_EQ((*row)["comm"], "memcg_test_rd");
  EXPECT_EQ((*row)["cgroup"], rel);
  // (exited may still be false: exits are folded one read round late)
  ASSERT_GT(ref_memcg[reader_pid].n, 10u);
  EXPECT_EQ((*row)["memcg_reclaims"], ref_memcg[reader_pid].n);
  EXPECT_EQ((*row)["direct_reclaims"], 0);
  EXPECT_GT((*row)["time_stalled_seconds"].get<double>(), 0.0);
  EXPECT_GT((*row)["pages_scanned"].get<uint64_t>(), 0u);
}

// mm_vmscan_write_folio: a child faults in 96 MiB of anonymous memory in a
// 64 MiB memcg (swappiness 100) with a zram swap device on, so memcg reclaim
// pages anonymous folios out (pageout(): one write_folio per folio). Ours
// per cgroup and I/O mode against the reference's lines of the child's pid
// (flags RECLAIM_WB_SYNC / RECLAIM_WB_ASYNC), equal; the reference must have
// seen at least 1000 (>= 32 MiB must leave a 64 MiB limit: 8192 pages).
TEST_F(TracingScanLive, WriteFolioMatchesIndependentCount) {
  ZramSwap swap(256 * kMiB);
  if (!swap.on) GTEST_SKIP() << "no swap device for anonymous pageout: " << swap.why;
  RefInstance ref(uniq("ref_scan", 4));
  ASSERT_TRUE(ref.ok) << "mkdir " << ref.dir << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(ref.dir + "/buffer_size_kb", "32768"));
  ASSERT_TRUE(ref.enable("vmscan", "mm_vmscan_write_folio"));
  Cgroup cg(uniq("trace", 4));
  ASSERT_TRUE(cg.ok) << cg.path << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(64 * kMiB)));
  ASSERT_TRUE(writeStr(cg.path + "/memory.swappiness", "100"));
  TracerOptions o = options(4);
  o.lru_detail = false;
  o.shrink_slab = false;
  auto tracer = Tracer::start(o);
  ASSERT_TRUE(tracer.ok()) << tracer.error().message();
  ASSERT_TRUE(writeStr(ref.dir + "/tracing_on", "1"));
  int go = -1;
  pid_t kid = forkWorker(go, "memcg_test_an", [] { return touchAnon(96 * kMiB); });
  Kill k{kid};
  ASSERT_GT(kid, 0);
  const pid_t kid_pid = kid;
  ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(kid)));
  char c = 1;
  ASSERT_EQ(::write(go, &c, 1), 1);
  ::close(go);
  EXPECT_EQ(waitChild(kid), 0);
  writeStr(ref.dir + "/tracing_on", "0");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  (*tracer)->stop();
  TraceSnapshot snap = (*tracer)->snapshot();
  ASSERT_EQ(ref.lost(), 0u) << "reference instance lost events; enlarge its buffer";
  EXPECT_EQ(snap.events_lost, 0u);
  auto text = readWholeFile(ref.dir + "/trace");
  ASSERT_TRUE(text.ok());
  uint64_t ref_sync = 0, ref_async = 0;
  {
    std::string_view t = *text, line;
    const std::string me = "-" + std::to_string(kid_pid) + " ";
    while (nextLine(t, line)) {
      if (line.find(": mm_vmscan_write_folio: ") == std::string_view::npos) continue;
      size_t br = line.find(" [");
      if (br == std::string_view::npos || line.substr(0, br + 1).rfind(me) == std::string_view::npos)
        continue;
      if (line.find("RECLAIM_WB_SYNC") != std::string_view::npos) ++ref_sync;
      if (line.find("RECLAIM_WB_ASYNC") != std::string_view::npos) ++ref_async;
    }
  }
  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);
  const CgroupTraceStats* cs = findCgroup(snap, rel);
  ASSERT_NE(cs, nullptr) << "no series for " << rel;
  uint64_t sync = 0, async = 0;
  for (const auto& x : cs->detail.write_folios) {
    sync += x[0];
    async += x[1];
  }
  std::printf("[ live ] %s: write_folio sync %lu (ref %lu) async %lu (ref %lu); swap %s\n",
              rel.c_str(), (unsigned long)sync, (unsigned long)ref_sync, (unsigned long)async,
              (unsigned long)ref_async, swap.dev.c_str());
  ASSERT_GE(ref_sync + ref_async, 1000u) << "anonymous pageout wrote under 1000 folios";
  EXPECT_EQ(sync, ref_sync);
  EXPECT_EQ(async, ref_async);
}

TEST_F(TracingScanLive, RmdirDropsTheSeries) {
  TracerOptions o = options(2);
  o.lru_detail = false;
  o.shrink_slab = false;
  auto tracer = Tracer::start(o);
  ASSERT_TRUE(tracer.ok()) << tracer.error().message();
  Cgroup cg(uniq("trace", 2));
  ASSERT_TRUE(cg.ok);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(16 * kMiB)));
  DataFile f("/var/tmp/" + uniq("file", 2), 64 * kMiB);
  ASSERT_TRUE(f.ok);
  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);
  {
    Child k(f.path);
    ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(k.pid)));
    k.start();
    EXPECT_EQ(k.wait(), 0);
  }
  auto waitFor = [&](bool present) {
    for (int i = 0; i < 50; ++i) {
      if ((findCgroup((*tracer)->snapshot(), rel) != nullptr) == present) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  ASSERT_TRUE(waitFor(true)) << "no series for " << rel;
  const uint64_t removed0 = (*tracer)->snapshot().aggregator.cgroups_removed;
  bool gone = false;
  for (int i = 0; i < 50 && !(gone = ::rmdir(cg.path.c_str()) == 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(gone) << "rmdir " << cg.path << ": " << strerror(errno);
  EXPECT_TRUE(waitFor(false)) << "series of the removed cgroup still there";
  // At least ours: the counter is the whole host's (any cgroup with a series
  // removed meanwhile counts too; a CI run saw 7 more under parallel load).
  EXPECT_GE((*tracer)->snapshot().aggregator.cgroups_removed, removed0 + 1);
}

TEST_F(TracingScanLive, ProactiveEpisodeIsChargedToItsTarget) {
  // As the controller's worker does around a v1 limit nudge: this thread is
  // the registered reclaimer; its reclaim inside the episode is the target's.
  RefInstance ref(uniq("ref_scan", 3));
  ASSERT_TRUE(ref.ok);
  ASSERT_TRUE(writeStr(ref.dir + "/buffer_size_kb", "8192"));
  ASSERT_TRUE(ref.enable("vmscan", "mm_vmscan_memcg_reclaim_end"));
  Cgroup cg(uniq("trace", 3));
  ASSERT_TRUE(cg.ok);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(64 * kMiB)));
  DataFile f("/var/tmp/" + uniq("file", 3), 48 * kMiB);
  ASSERT_TRUE(f.ok);
  {  // fill the cgroup with 48 MiB of cache, no reclaim yet
    Child k(f.path);
    ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(k.pid)));
    k.start();
    EXPECT_EQ(k.wait(), 0);
  }
  auto tracer = Tracer::start(options(3));
  ASSERT_TRUE(tracer.ok()) << tracer.error().message();
  ASSERT_EQ((*tracer)->session().traceClock(), "mono");
  ASSERT_TRUE(writeStr(ref.dir + "/tracing_on", "1"));
  const auto tid = static_cast<int32_t>(::syscall(SYS_gettid));
  Aggregator& agg = (*tracer)->aggregator();
  agg.registerProactiveReclaimer(tid);
  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);
  ASSERT_TRUE(agg.beginProactiveTarget(tid, rel));
  EXPECT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(16 * kMiB)));
  EXPECT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(64 * kMiB)));
  agg.endProactiveTarget(tid);
  writeStr(ref.dir + "/tracing_on", "0");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  (*tracer)->stop();
  agg.unregisterProactiveReclaimer(tid);
  TraceSnapshot snap = (*tracer)->snapshot();
  auto text = readWholeFile(ref.dir + "/trace");
  ASSERT_TRUE(text.ok());
  RefSum want = refSums(*text, "mm_vmscan_memcg_reclaim_end", "nr_reclaimed=")[tid];
  const CgroupTraceStats* c = findCgroup(snap, rel);
  ASSERT_NE(c, nullptr);
  const ReclaimStats& p = c->reclaim[static_cast<size_t>(ReclaimKind::kProactive)];
  std::printf("[ live ] nudge of %s: proactive reclaims %lu pages %lu | reference %lu pages %lu\n",
              rel.c_str(), (unsigned long)p.total, (unsigned long)p.reclaimed_pages,
              (unsigned long)want.n, (unsigned long)want.sum);
  ASSERT_GT(want.n, 0u) << "the nudge did not reclaim";
  EXPECT_EQ(p.total, want.n);
  EXPECT_EQ(p.reclaimed_pages, want.sum);
  EXPECT_EQ(c->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total, 0u);
  uint64_t margin_scanned = 0;
  for (const auto& l : c->lru[static_cast<size_t>(ReclaimContext::kProactive)])
    margin_scanned += l.scanned_pages;
  EXPECT_GT(margin_scanned, 0u);
  // Nothing of it is left in this process's own cgroup.
  for (const auto& s : snap.cgroups) {
    if (&s == c) continue;
    EXPECT_EQ(s.reclaim[static_cast<size_t>(ReclaimKind::kProactive)].total, 0u)
        << traceCgroupLabel(s);
  }
}

}  // namespace
}  // namespace memcg::tracing
