// The vmscan collector's bpf backend (tracing/bpf/bpf_tracer.h) on the
// running kernel, against an independent trace and the tracefs backend on
// the same workload. Root, cgroup v1 memory, tracefs and a build with the
// backend; skipped with the reason otherwise.
//
// Workload (as tracing_vmscan_live_test.cpp): a child in a fresh 64 MiB
// memcg streams a 256 MiB file whose page cache was dropped first. All three
// observers (a second private tracefs instance read as text, the tracefs
// backend, the bpf backend) are on before the child starts. The bpf maps are
// written by the traced task itself, so once the child is reaped they hold
// every event: its reclaim count and pages must EQUAL the reference; its
// stall sum must be within 1% of the tracefs backend's (both time begin ->
// end on CLOCK_MONOTONIC, taken at slightly different points of the
// tracepoint).
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "collectors/collector.h"
#include "collectors/discovery.h"
#include "collectors/vmscan.h"
#include "metrics/text_format.h"
#include "tests/support/tracing_live_support.h"
#include "tracing/bpf/bpf_tracer.h"
#include "tracing/tracer.h"

namespace memcg::tracing {
namespace {

using namespace live;  // NOLINT

std::string bpfSkipReason() {
  if (!skipReason.empty()) return skipReason;
  bpf::Availability a = bpf::probe(bpf::BpfTracerOptions{});
  return a.ok ? std::string() : "bpf backend unavailable: " + a.reason;
}

bpf::BpfTracerOptions liveBpfOptions() {
  bpf::BpfTracerOptions o;
  o.memory_root = kMemcgRoot;
  o.memory_v2 = false;
  return o;
}

std::string scrapeText(Collector& c, Discovery& d) {
  auto tree = d.refresh();
  EXPECT_TRUE(tree.ok());
  if (!tree.ok()) return {};
  ScrapeContext ctx(**tree);
  metrics::Sink sink;
  c.collect(ctx, sink);
  std::string out;
  metrics::writeText(sink.families(), out);
  EXPECT_EQ(ctx.errors.size(), 0u);
  return out;
}

TEST(BpfLive, ReclaimCountsEqualIndependentTraceStallsAgreeWithTracefs) {
  if (auto why = bpfSkipReason(); !why.empty()) GTEST_SKIP() << why;
  Discovery discovery{DiscoveryOptions{}};
  ASSERT_EQ(discovery.layout().memoryRoot, kMemcgRoot);

  RefInstance ref(uniq("bpf_ref", 1));
  ASSERT_TRUE(ref.ok) << "mkdir " << ref.dir << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(ref.dir + "/buffer_size_kb", "16384"));
  ASSERT_TRUE(ref.enable("vmscan", "mm_vmscan_memcg_reclaim_end"));
  Cgroup cg(uniq("bpf", 1));
  ASSERT_TRUE(cg.ok) << cg.path << ": " << strerror(errno);
  ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(64 * kMiB)));
  DataFile file("/var/tmp/" + uniq("bpf_file", 1), 256 * kMiB);
  ASSERT_TRUE(file.ok) << "cannot write " << file.path;

  VmscanOptions cfg;
  cfg.instance = uniq("bpf_tracefs", 1);
  TracingService tfs = startVmscanBackend(VmscanBackendChoice::kTracefs,
                                          tracerOptions(cfg, discovery.layout(), "/proc"),
                                          bpfTracerOptions(cfg, discovery.layout(), "/proc"));
  ASSERT_NE(tfs.tracer, nullptr) << tfs.down.message();
  TracingService bsvc = startVmscanBackend(VmscanBackendChoice::kBpf,
                                           tracerOptions(cfg, discovery.layout(), "/proc"),
                                           bpfTracerOptions(cfg, discovery.layout(), "/proc"));
  ASSERT_NE(bsvc.bpf, nullptr) << bsvc.down.message();
  EXPECT_EQ(bsvc.tracer, nullptr);
  auto tcol = makeVmscanCollector(tfs.tracer.get(), tfs.down, tfs.info());
  auto bcol = makeVmscanCollector(nullptr, bsvc.down, bsvc.info());

  ASSERT_TRUE(writeStr(ref.dir + "/tracing_on", "1"));
  Child kid(file.path);
  ASSERT_GT(kid.pid, 0);
  ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(kid.pid)));
  const pid_t child = kid.pid;
  kid.start();
  ASSERT_EQ(kid.wait(), 0);
  writeStr(ref.dir + "/tracing_on", "0");

  auto text = readWholeFile(ref.dir + "/trace");
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(ref.lost(), 0u) << "reference instance lost events; enlarge its buffer";
  const RefCount only = parseRefTrace(*text)[child];
  ASSERT_GT(only.reclaims, 10u) << "workload did not cause memcg reclaim";

  const std::string rel = "/" + cg.path.substr(kMemcgRoot.size() + 1);
  const std::string sel = "{cgroup=\"" + rel + "\",kind=\"memcg\"}";
  // bpf: complete now (the child wrote its own events into the maps).
  const std::string b = scrapeText(*bcol, discovery);
  // tracefs: its reader drains at its own pace; scrape until it has the
  // reference's count (60 s at most).
  std::string t;
  for (int i = 0; i < 120; ++i) {
    t = scrapeText(*tcol, discovery);
    if (sampleValue(t, "memcg_vmscan_reclaim_total" + sel) >= static_cast<double>(only.reclaims))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const double b_n = sampleValue(b, "memcg_vmscan_reclaim_total" + sel);
  const double b_pages = sampleValue(b, "memcg_vmscan_reclaimed_pages_total" + sel);
  const double b_stalls = sampleValue(b, "memcg_vmscan_reclaim_stall_seconds_count" + sel);
  const double b_sum = sampleValue(b, "memcg_vmscan_reclaim_stall_seconds_sum" + sel);
  const double t_n = sampleValue(t, "memcg_vmscan_reclaim_total" + sel);
  const double t_sum = sampleValue(t, "memcg_vmscan_reclaim_stall_seconds_sum" + sel);
  std::printf(
      "[ live ] %s: reference reclaims %lu pages %lu | bpf %.0f pages %.0f stalls %.0f sum %.6f s "
      "| tracefs %.0f sum %.6f s (diff %.3f%%)\n",
      rel.c_str(), static_cast<unsigned long>(only.reclaims),
      static_cast<unsigned long>(only.pages), b_n, b_pages, b_stalls, b_sum, t_n, t_sum,
      t_sum > 0 ? 100.0 * (b_sum - t_sum) / t_sum : 0.0);
  EXPECT_EQ(b_n, static_cast<double>(only.reclaims));
  EXPECT_EQ(b_pages, static_cast<double>(only.pages));
  EXPECT_EQ(b_stalls, b_n);  // tracing was on before any reclaim began
  EXPECT_EQ(sampleValue(b, "memcg_vmscan_reclaim_stall_seconds_bucket{cgroup=\"" + rel +
                               "\",kind=\"memcg\",le=\"+Inf\"}"),
            b_stalls);
  EXPECT_EQ(t_n, b_n);
  ASSERT_GT(t_sum, 0);
  EXPECT_NEAR(b_sum, t_sum, 0.01 * t_sum);
  // The same histogram layout: every bucket line of the tracefs series
  // exists in the bpf one.
  EXPECT_GE(sampleValue(b, "memcg_vmscan_reclaim_stall_seconds_bucket{cgroup=\"" + rel +
                               "\",kind=\"memcg\",le=\"0.001\"}"),
            0);
  // LRU scans by context: the limit reclaim's scans, in the same place.
  EXPECT_GT(sampleValue(b, "memcg_vmscan_reclaim_stat_scanned_pages_total{cgroup=\"" + rel +
                               "\",context=\"limit\"}"),
            0);
  EXPECT_EQ(sampleValue(b, "memcg_vmscan_reclaim_stat_freed_pages_total{cgroup=\"" + rel +
                               "\",context=\"limit\"}"),
            b_pages);
  EXPECT_EQ(sampleValue(b, "memcg_trace_up"), 1);
  EXPECT_EQ(sampleValue(b, "memcg_trace_events_lost_total"), 0);
  EXPECT_EQ(sampleValue(b, "memcg_trace_backend_info{backend=\"bpf\",reason=\"\"}"), 1) << b;
  EXPECT_EQ(sampleValue(t, "memcg_trace_backend_info{backend=\"tracefs\",reason=\"\"}"), 1);
  const double entries = sampleValue(b, "memcg_trace_bpf_map_entries{map=\"cgroups\"}");
  EXPECT_GE(entries, 2);  // ours and the overflow series at least
  EXPECT_GT(sampleValue(b, "memcg_trace_bpf_map_max_entries{map=\"cgroups\"}"), entries);

  // rmdir drops the cgroup's series in the kernel (bounded maps).
  auto before = bsvc.bpf->snapshot();
  ASSERT_NE(findCgroup(before, rel), nullptr);
  const uint64_t removed0 = before.aggregator.cgroups_removed;
  for (int i = 0; i < 50 && ::rmdir(cg.path.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto after = bsvc.bpf->snapshot();
  EXPECT_EQ(findCgroup(after, rel), nullptr);
  EXPECT_EQ(after.aggregator.cgroups_removed, removed0 + 1);
  const double entries_after =
      sampleValue(scrapeText(*bcol, discovery), "memcg_trace_bpf_map_entries{map=\"cgroups\"}");
  EXPECT_LT(entries_after, entries);
}

TEST(BpfLive, AutoPicksBpfWhereAllowed) {
  if (auto why = bpfSkipReason(); !why.empty()) GTEST_SKIP() << why;
  VmscanOptions cfg;
  cfg.instance = uniq("bpf_auto", 2);
  TracingService svc = startVmscanBackend(VmscanBackendChoice::kAuto,
                                          tracerOptions(cfg, MountLayout{}, "/proc"),
                                          liveBpfOptions());
  EXPECT_EQ(svc.backend, "bpf");
  EXPECT_EQ(svc.reason, "bpf available");
  EXPECT_NE(svc.bpf, nullptr);
  EXPECT_EQ(svc.tracer, nullptr);
}

// Drops CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN from this (child) process.
bool dropBpfCaps() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2]{};
  if (::syscall(SYS_capget, &hdr, d) != 0) return false;
  for (int cap : {CAP_SYS_ADMIN, 38 /* CAP_PERFMON */, 39 /* CAP_BPF */}) {
    d[cap / 32].effective &= ~(1u << (cap % 32));
    d[cap / 32].permitted &= ~(1u << (cap % 32));
    d[cap / 32].inheritable &= ~(1u << (cap % 32));
  }
  return ::syscall(SYS_capset, &hdr, d) == 0;
}

TEST(BpfLive, AutoPicksTracefsWhenBpfIsRefused) {
  if (!skipReason.empty()) GTEST_SKIP() << skipReason;
  if (!bpf::built()) GTEST_SKIP() << "built without the bpf backend";
  // In a child that lost the capabilities BPF needs: auto must fall back to
  // tracefs, say why in its log line and in memcg_trace_backend_info.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  int errp[2];
  ASSERT_EQ(::pipe(errp), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(p[0]);
    ::close(errp[0]);
    ::dup2(errp[1], STDERR_FILENO);  // the exporter's log goes to stderr
    if (!dropBpfCaps()) ::_exit(3);
    VmscanOptions cfg;
    cfg.instance = uniq("bpf_nocap", 3);
    TracingService svc = startVmscanBackend(VmscanBackendChoice::kAuto,
                                            tracerOptions(cfg, MountLayout{}, "/proc"),
                                            liveBpfOptions());
    auto c = makeVmscanCollector(svc.tracer.get(), svc.down, svc.info());
    CgroupTree tree;
    ScrapeContext ctx(tree);
    metrics::Sink sink;
    c->collect(ctx, sink);
    std::string out = svc.backend + "\n" + (svc.bpf ? "bpf-running" : "bpf-off") + "\n";
    metrics::writeText(sink.families(), out);
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  ::close(errp[1]);
  auto drain = [](int fd) {
    std::string s;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return s;
  };
  const std::string out = drain(p[0]);
  const std::string log = drain(errp[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  std::printf("[ live ] child without CAP_BPF/CAP_PERFMON/CAP_SYS_ADMIN:\n%s", log.c_str());
  EXPECT_EQ(out.rfind("tracefs\nbpf-off\n", 0), 0u) << out;
  const std::string reason = "missing CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)";
  EXPECT_EQ(sampleValue(out, "memcg_trace_backend_info{backend=\"tracefs\",reason=\"" + reason +
                                 "\"}"),
            1)
      << out;
  EXPECT_NE(log.find("vmscan backend auto: using tracefs"), std::string::npos) << log;
  EXPECT_NE(log.find(reason), std::string::npos) << log;
}

}  // namespace
}  // namespace memcg::tracing
