// Regression, on the real kernel: the reclaim report's window
// (?window=, subtractSnapshot) matched cgroups by label, so a cgroup removed
// and recreated under the same name inside the window was subtracted
// against the old cgroup's counters. The first cgroup reclaims more than the
// second, so label matching shows 0 for the window; identity must show the
// second cgroup's own reclaims.
#include <sys/stat.h>
#include <sys/vfs.h>

#include "tests/support/tracing_live_support.h"
#include "tracing/reclaim_report.h"

namespace memcg::tracing::live {
namespace {

uint64_t memcgReclaims(const TraceSnapshot& s, const std::string& label) {
  const CgroupTraceStats* c = findCgroup(s, label);
  return c ? c->reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total : 0;
}

TEST(ReportWindowLive, CgroupRecreatedInsideTheWindowIsNotSubtractedAgainstTheOldOne) {
  if (!skipReason.empty()) GTEST_SKIP() << skipReason;
  struct statfs fs {};
  if (::statfs("/var/tmp", &fs) == 0 && fs.f_type == 0x01021994)
    GTEST_SKIP() << "/var/tmp is tmpfs: no reclaim";
  auto t = Tracer::start(liveTracerOptions("rwin", 1));
  ASSERT_TRUE(t.ok()) << t.error().message();
  const std::string name = uniq("tracing_rwin", 1);
  const std::string label = "/" + name;
  DataFile big("/var/tmp/" + uniq("tracing_rwin_big", 1), 96 * kMiB);
  DataFile small("/var/tmp/" + uniq("tracing_rwin_small", 1), 40 * kMiB);
  auto reclaimIn = [&](const Cgroup& cg, const DataFile& f) {
    ASSERT_TRUE(writeStr(cg.path + "/memory.limit_in_bytes", std::to_string(16 * kMiB)));
    Child c(f.path);
    ASSERT_GT(c.pid, 0);
    ASSERT_TRUE(writeStr(cg.path + "/cgroup.procs", std::to_string(c.pid)));
    c.start();
    EXPECT_EQ(c.wait(), 0);
  };
  // The reader drains at its own pace (100 ms polls, later on a loaded
  // machine): a fixed 400 ms sleep could snapshot before the workload's
  // reclaims were read, and `first` then fell below `second`. Instead the
  // snapshot is taken once the cgroup's count (this cgroup's, by inode: the
  // label is shared) is non-zero and unchanged over ten polls (1 s), 60 s
  // at most.
  auto settled = [&](const Cgroup& cg) {
    struct stat st {};
    EXPECT_EQ(::stat(cg.path.c_str(), &st), 0);
    auto count = [&](const TraceSnapshot& s) -> uint64_t {
      for (const auto& c : s.cgroups)
        if (!c.unknown && !c.overflow && c.id == st.st_ino)
          return c.reclaim[static_cast<size_t>(ReclaimKind::kMemcg)].total;
      return 0;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    TraceSnapshot s = (*t)->snapshot();
    uint64_t prev = count(s);
    for (int same = 0; same < 10 && std::chrono::steady_clock::now() < deadline;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      s = (*t)->snapshot();
      const uint64_t v = count(s);
      same = (v == prev && v > 0) ? same + 1 : 0;
      prev = v;
    }
    return s;
  };
  TraceSnapshot base;
  uint64_t first = 0;
  {
    Cgroup cg(name);
    ASSERT_TRUE(cg.ok) << strerror(errno);
    reclaimIn(cg, big);
    base = settled(cg);
    first = memcgReclaims(base, label);
  }  // rmdir: inside the window
  Cgroup again(name);  // the same name, another inode
  ASSERT_TRUE(again.ok) << strerror(errno);
  reclaimIn(again, small);
  const TraceSnapshot now = settled(again);
  const uint64_t second = memcgReclaims(now, label);
  const uint64_t window = memcgReclaims(subtractSnapshot(now, base), label);
  std::printf("[ live ] first cgroup %lu memcg reclaims, recreated one %lu, window shows %lu\n",
              static_cast<unsigned long>(first), static_cast<unsigned long>(second),
              static_cast<unsigned long>(window));
  ASSERT_GT(second, 0u);
  ASSERT_GT(first, second);  // label matching would show 0
  EXPECT_EQ(window, second);
  const nlohmann::json report = reclaimReport(now, &base, 60.0);
  bool found = false;
  for (const auto& row : report["cgroups"]) {
    if (row["cgroup"] != label) continue;
    found = true;
    EXPECT_EQ(row["memcg_reclaims"], second);
  }
  EXPECT_TRUE(found) << report["cgroups"].dump();
}

}  // namespace
}  // namespace memcg::tracing::live
