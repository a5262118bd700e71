#include "cgroupfs/readers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "cgroupfs/cgroup_dir.h"
#include "cgroupfs/usage_limit.h"
#include "common/file.h"

#include <fstream>
#include "tests/support/temp_tree.h"

namespace memcg::cgroupfs {
namespace {

TEST(ParseSingle, Value) {
  auto v = parseSingle("268435456\n", "f");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 268435456u);
}

TEST(ParseSingle, MalformedNamesPathAndLine) {
  auto v = parseSingle("12ab\n", "/cg/memory.failcnt");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().err, EINVAL);
  EXPECT_NE(v.error().message().find("/cg/memory.failcnt"), std::string::npos);
  EXPECT_NE(v.error().message().find("12ab"), std::string::npos);
  EXPECT_FALSE(parseSingle("", "f").ok());
  EXPECT_FALSE(parseSingle("-1\n", "f").ok());
}

TEST(ParseLimit, V2Max) {
  auto l = parseLimit("max\n", "memory.max");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->unlimited);
  EXPECT_TRUE(std::isinf(l->asDouble()));
}

TEST(ParseLimit, V1UnlimitedIsNotAFakeNumber) {
  auto l = parseLimit(std::to_string(v1UnlimitedBytes()) + "\n", "memory.limit_in_bytes");
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->unlimited);
  EXPECT_EQ(v1UnlimitedBytes(), 9223372036854771712ull);  // 4 KiB pages
}

TEST(ParseLimit, Bytes) {
  auto l = parseLimit("67108864\n", "memory.max");
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->unlimited);
  EXPECT_EQ(l->bytes, 67108864u);
  EXPECT_EQ(l->asDouble(), 67108864.0);
  EXPECT_FALSE(parseLimit("maximum\n", "memory.max").ok());
}

TEST(ParseFlatKeyed, KeysInOrderUnknownPassedThrough) {
  std::vector<std::pair<std::string, uint64_t>> got;
  auto st = parseFlatKeyed("cache 4096\nrss 0\nbrand_new_key 7\n", "memory.stat",
                           [&](std::string_view k, uint64_t v) { got.emplace_back(k, v); });
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].first, "brand_new_key");
  EXPECT_EQ(got[2].second, 7u);
}

TEST(ParseFlatKeyed, NegativeV1DriftClampsToZero) {
  uint64_t v = 99;
  ASSERT_TRUE(parseFlatKeyed("dirty -4096\n", "f", [&](std::string_view, uint64_t x) { v = x; }).ok());
  EXPECT_EQ(v, 0u);
}

TEST(ParseFlatKeyed, MalformedLineIsAnError) {
  auto st = parseFlatKeyed("cache 4096\nrss\n", "/x/memory.stat", [](auto, auto) {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("\"rss\""), std::string::npos);
  EXPECT_FALSE(parseFlatKeyed("file twenty\n", "f", [](auto, auto) {}).ok());
  EXPECT_FALSE(parseFlatKeyed(" 5\n", "f", [](auto, auto) {}).ok());
}

TEST(ParseNestedKeyed, Pressure) {
  std::map<std::string, std::string> got;
  auto st = parseNestedKeyed(
      "some avg10=0.12 avg60=0.00 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 "
      "avg300=0.00 total=789\n",
      "memory.pressure", [&](std::string_view l, std::string_view k, std::string_view v) {
        got[std::string(l) + "." + std::string(k)] = std::string(v);
      });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(got["some.total"], "123456");
  EXPECT_EQ(got["full.total"], "789");
  EXPECT_EQ(got["some.avg10"], "0.12");
  EXPECT_FALSE(parseNestedKeyed("some avg10\n", "f", [](auto, auto, auto) {}).ok());
}

// CgroupDir on a temp tree: present, absent (file missing in a live cgroup),
// gone (the cgroup removed), and a buffer smaller than the file.
TEST(CgroupDir, PresentAbsentGone) {
  test::TempTree t;
  t.write("cg/cgroup.procs", "");
  t.write("cg/memory.current", "123\n");
  auto dir = CgroupDir::open(t.path("cg"));
  ASSERT_TRUE(dir.ok());
  std::string buf;
  std::string_view out;
  EXPECT_EQ((*dir)->read(FileId::kV2Current, buf, out), ReadStatus::kOk);
  EXPECT_EQ(out, "123\n");
  EXPECT_EQ((*dir)->read(FileId::kV2Max, buf, out), ReadStatus::kAbsent);
  EXPECT_EQ((*dir)->read(FileId::kV2Max, buf, out), ReadStatus::kAbsent);  // remembered
  t.remove("cg");
  EXPECT_EQ((*dir)->read(FileId::kV2High, buf, out), ReadStatus::kGone);
  EXPECT_FALSE((*dir)->alive());
}

TEST(CgroupDir, GrowsBufferForLargeFiles) {
  auto keep = std::make_shared<FdBudget>(1000);  // keep descriptors open, as the daemon does
  test::TempTree t;
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "key" + std::to_string(i) + " " + std::to_string(i) + "\n";
  t.write("cg/cgroup.procs", "");
  t.write("cg/memory.stat", big);
  auto dir = CgroupDir::open(t.path("cg"), keep);
  ASSERT_TRUE(dir.ok());
  std::string buf;
  std::string_view out;
  ASSERT_EQ((*dir)->read(FileId::kMemoryStat, buf, out), ReadStatus::kOk);
  EXPECT_EQ(out, big);
  // Re-read through the kept-open descriptor sees new content.
  t.write("cg/memory.stat", "cache 1\n");
  ASSERT_EQ((*dir)->read(FileId::kMemoryStat, buf, out), ReadStatus::kOk);
  EXPECT_EQ(out, "cache 1\n");
}

// Past the descriptor budget a file is opened, read and closed on every read
// (counted); with room again, the next read keeps its descriptor.
TEST(CgroupDir, FdBudgetSpentReadsUncachedAndCounts) {
  test::TempTree t;
  t.write("cg/cgroup.procs", "");
  t.write("cg/memory.current", "123\n");
  t.write("cg/memory.max", "max\n");
  auto budget = std::make_shared<FdBudget>(0);
  auto dir = CgroupDir::open(t.path("cg"), budget);
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(budget->kept(), 1);  // the directory, always kept
  budget->setBudget(budget->kept());  // no room left
  std::string buf;
  std::string_view out;
  const uint64_t before = budget->uncachedReads();
  const long kept = budget->kept();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ((*dir)->read(FileId::kV2Current, buf, out), ReadStatus::kOk);
    EXPECT_EQ(out, "123\n");
  }
  EXPECT_EQ(budget->uncachedReads(), before + 3);
  EXPECT_EQ(budget->kept(), kept);  // nothing kept, nothing leaked
  t.write("cg/memory.current", "456\n");  // each read opens the file anew
  ASSERT_EQ((*dir)->read(FileId::kV2Current, buf, out), ReadStatus::kOk);
  EXPECT_EQ(out, "456\n");
  budget->setBudget(kept + 1);  // room for one
  ASSERT_EQ((*dir)->read(FileId::kV2Current, buf, out), ReadStatus::kOk);
  ASSERT_EQ((*dir)->read(FileId::kV2Max, buf, out), ReadStatus::kOk);
  EXPECT_EQ(budget->kept(), kept + 1);
  EXPECT_EQ(budget->uncachedReads(), before + 5);  // memory.max found no room
  dir->reset();  // its descriptors are given back
  EXPECT_EQ(budget->kept(), 0);
  EXPECT_EQ(cgroupfs::defaultFdBudget(20000, 4096), 15648);
  EXPECT_EQ(cgroupfs::defaultFdBudget(1024, 4096), 0);
}

// The one usage/limit reader: v1 limit_in_bytes; v2 memory.max, else
// memory.high; a missing file is an error, not a vanished cgroup.
TEST(UsageLimit, V1AndV2MaxThenHigh) {
  // A fixture file removed below must read as absent: no descriptor kept
  // open (on cgroupfs a kept one reads ENODEV; a regular file's still reads),
  // as with no FdBudget.
  test::TempTree t;
  t.write("v1/cgroup.procs", "");
  t.write("v1/memory.usage_in_bytes", "100\n");
  t.write("v1/memory.limit_in_bytes", std::to_string(v1UnlimitedBytes()) + "\n");
  t.write("v2/cgroup.procs", "");
  t.write("v2/memory.current", "200\n");
  t.write("v2/memory.max", "max\n");
  t.write("v2/memory.high", "4096\n");
  std::string buf;
  auto v1 = CgroupDir::open(t.path("v1"));
  auto v2 = CgroupDir::open(t.path("v2"));
  ASSERT_TRUE(v1.ok() && v2.ok());
  auto a = readUsageLimit(**v1, false, buf);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->usage, 100u);
  EXPECT_TRUE(a->limit.unlimited);
  t.write("v1/memory.limit_in_bytes", "8192\n");
  a = readUsageLimit(**v1, false, buf);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->limit, (Limit{false, 8192}));

  auto b = readUsageLimit(**v2, true, buf);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(b->usage, 200u);
  EXPECT_EQ(b->limit, (Limit{false, 4096}));  // max is "max": high stands in
  t.write("v2/memory.max", "1024\n");
  b = readUsageLimit(**v2, true, buf);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->limit, (Limit{false, 1024}));  // max wins when set
  t.write("v2/memory.max", "max\n");
  t.write("v2/memory.high", "max\n");
  b = readUsageLimit(**v2, true, buf);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->limit.unlimited);

  t.write("v2/memory.current", "bogus\n");
  b = readUsageLimit(**v2, true, buf);
  ASSERT_FALSE(b.ok());
  EXPECT_FALSE(b.error().gone());
  t.remove("v1/memory.usage_in_bytes");
  a = readUsageLimit(**v1, false, buf);
  ASSERT_FALSE(a.ok());
  EXPECT_FALSE(a.error().gone());  // absent file, the cgroup is still there
  t.remove("v2");
  b = readUsageLimit(**v2, true, buf);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.error().gone());
}

}  // namespace
}  // namespace memcg::cgroupfs

namespace memcg {
namespace {

// A seq_file of many records hands back about a page per read whatever the
// buffer: the whole-file reader must read on to end of file.
TEST(ReadWholeFile, MultiRecordSeqFileIsReadToTheEnd) {
  std::ifstream f("/proc/kallsyms");
  if (!f) GTEST_SKIP() << "no /proc/kallsyms";
  std::string want((std::istreambuf_iterator<char>(f)), {});
  ASSERT_GT(want.size(), 65536u);
  auto got = readWholeFile("/proc/kallsyms");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), want.size());
  EXPECT_EQ(*got, want);
}

}  // namespace
}  // namespace memcg
