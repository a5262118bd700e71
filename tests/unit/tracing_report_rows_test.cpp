// ReportRows (tracing/report_rows.h): the report's bounded per-task rows.
#include "tracing/report_rows.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace memcg::tracing {
namespace {

class Comms : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t) override { return std::nullopt; }
  std::string comm(int32_t tid) override { return tid == 3 ? "" : "t" + std::to_string(tid); }
};

struct Fixture {
  Comms comms;
  SeriesTable series{8, nullptr};
  uint32_t a = series.intern("/a", 1);
  uint32_t b = series.intern("/b", 2);
  std::vector<ProcessTraceStats> copy(const ReportRows& r) {
    std::vector<ProcessTraceStats> out;
    r.copyTo(out, series);
    return out;
  }
};

TEST(ReportRows, OneRowPerTaskLabelledWithItsLastSeries) {
  Fixture f;
  ReportRows rows(4, 2);
  uint32_t i1 = ReportRows::kNoRow, i2 = ReportRows::kNoRow;
  rows.row(i1, 1, f.a, &f.comms).stall_ns += 5;
  rows.row(i1, 1, f.b, &f.comms).stall_ns += 7;  // moved: charged to /b now
  rows.row(i2, 2, f.a, &f.comms).scanned_pages = 9;
  EXPECT_NE(i1, i2);
  auto out = f.copy(rows);
  ASSERT_EQ(out.size(), 3u);  // two live rows, then "other"
  EXPECT_EQ(out[0].pid, 1);
  EXPECT_EQ(out[0].comm, "t1");
  EXPECT_EQ(out[0].stall_ns, 12u);
  EXPECT_EQ(out[0].cgroup, "/b");
  EXPECT_EQ(out[1].cgroup, "/a");
  EXPECT_TRUE(out[2].other);
  EXPECT_EQ(rows.liveRows(), 2u);
}

TEST(ReportRows, PastTheCapAndTidZeroShareOther) {
  Fixture f;
  ReportRows rows(1, 2);
  uint32_t i1 = ReportRows::kNoRow, i2 = ReportRows::kNoRow, i0 = ReportRows::kNoRow;
  rows.row(i1, 1, f.a, &f.comms);
  rows.row(i2, 2, f.a, &f.comms).wake_requests = 3;
  rows.row(i0, 0, f.a, &f.comms).wake_requests += 4;
  EXPECT_EQ(i2, ReportRows::kNoRow);
  auto out = f.copy(rows);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.back().wake_requests, 7u);  // tid 2 (past the cap) and tid 0 both got "other"
}

TEST(ReportRows, ExitedKeepsTheMostStalledAndFoldsTheRest) {
  Fixture f;
  ReportRows rows(8, 2);
  uint32_t idx[4] = {};
  const uint64_t stall[4] = {30, 10, 20, 40};
  for (int t = 0; t < 4; ++t) rows.row(idx[t], t + 1, f.a, &f.comms).stall_ns = stall[t];
  rows.nameIfUnnamed(idx[2], "ignored");  // has a name already
  for (int t = 0; t < 4; ++t) rows.drop(idx[t], f.series);
  for (uint32_t i : idx) EXPECT_EQ(i, ReportRows::kNoRow);
  auto out = f.copy(rows);
  ASSERT_EQ(out.size(), 3u);  // two kept exited rows, "other"
  std::vector<uint64_t> kept = {out[0].stall_ns, out[1].stall_ns};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<uint64_t>{30, 40}));
  EXPECT_TRUE(out[0].exited);
  EXPECT_EQ(out[0].cgroup, "/a");
  EXPECT_EQ(out[2].stall_ns, 30u);  // 10 + 20 folded
  EXPECT_EQ(rows.liveRows(), 0u);
}

// The bpf backend's exited rows come from the kernel already labelled:
// kept by the same rule as dropped live rows, beside the live ones.
TEST(ReportRows, KeepExitedTakesLabelledRowsBesideDroppedOnes) {
  Fixture f;
  ReportRows rows(8, 2);
  uint32_t live = ReportRows::kNoRow;
  rows.row(live, 7, f.b, &f.comms).stall_ns = 50;
  const uint64_t stall[3] = {5, 60, 15};
  for (int t = 0; t < 3; ++t) {
    ProcessTraceStats p;
    p.pid = 100 + t;
    p.comm = "x";
    p.cgroup = "/bpf";
    p.stall_ns = stall[t];
    p.reclaims[0] = 1;
    rows.keepExited(std::move(p));
  }
  std::vector<ProcessTraceStats> exited;
  rows.copyExitedTo(exited);
  ASSERT_EQ(exited.size(), 3u);  // the two most stalled, then "other"
  std::vector<uint64_t> kept = {exited[0].stall_ns, exited[1].stall_ns};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<uint64_t>{15, 60}));
  EXPECT_TRUE(exited[0].exited);
  EXPECT_EQ(exited[0].cgroup, "/bpf");
  EXPECT_TRUE(exited[2].other);
  EXPECT_EQ(exited[2].stall_ns, 5u);
  EXPECT_EQ(exited[2].reclaims[0], 1u);
  // copyTo: the live row first, then the same exited rows and "other".
  auto out = f.copy(rows);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].pid, 7);
  EXPECT_EQ(out[0].cgroup, "/b");
  EXPECT_TRUE(out[3].other);
}

TEST(ReportRows, NamesFromTheExitAndRetiredSeries) {
  Fixture f;
  ReportRows rows(8, 2);
  uint32_t i = ReportRows::kNoRow;
  rows.row(i, 3, f.a, &f.comms);  // /proc/3/comm already gone
  rows.nameIfUnnamed(i, "short");
  rows.dropSlot(f.a);
  auto out = f.copy(rows);
  EXPECT_EQ(out[0].comm, "short");
  EXPECT_EQ(out[0].cgroup, "_unknown");
}

}  // namespace
}  // namespace memcg::tracing
