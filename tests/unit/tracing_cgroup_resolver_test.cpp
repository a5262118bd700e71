#include <gtest/gtest.h>

#include "tracing/cgroup_resolver.h"

namespace memcg::tracing {
namespace {

TEST(ParseProcCgroup, V1PicksMemoryLine) {
  const char* text =
      "8:pids:/\n4:memory:/memcg_exporter_test_trace_1\n1:cpu:/x\n0::/unified\n";
  auto p = parseProcCgroup(text, 4);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, "/memcg_exporter_test_trace_1");
  // Co-mounted controllers: the list contains memory.
  auto q = parseProcCgroup("3:cpu,memory:/a/b\n", 9);
  ASSERT_TRUE(q);
  EXPECT_EQ(*q, "/a/b");
}

TEST(ParseProcCgroup, V2UsesTheZeroLine) {
  auto p = parseProcCgroup("0::/system.slice/foo.service\n", 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, "/system.slice/foo.service");
  EXPECT_FALSE(parseProcCgroup("4:memory:/x\n", 0));
  EXPECT_FALSE(parseProcCgroup("", 4));
  EXPECT_FALSE(parseProcCgroup("garbage\nx:y\n", 4));
}

TEST(ParseMemoryHierarchyId, V1V2Disabled) {
  const char* v1 =
      "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t4\t31\t1\n";
  EXPECT_EQ(parseMemoryHierarchyId(v1), 4);
  EXPECT_EQ(parseMemoryHierarchyId("memory\t0\t80\t1\n"), 0);
  EXPECT_FALSE(parseMemoryHierarchyId("memory\t0\t1\t0\n"));
  EXPECT_FALSE(parseMemoryHierarchyId("cpu\t1\t1\t1\n"));
}

TEST(ProcCgroupResolver, ResolvesSelfAndFailsForMissingPid) {
  ProcCgroupResolver r("/proc", 0, "");
  // Whatever hierarchy this host uses, our own task has a line for it or not;
  // a pid that cannot exist must fail cleanly.
  EXPECT_FALSE(r.resolve(-1));
  EXPECT_FALSE(r.resolve(0x3fffffff));
  ProcCgroupResolver bad("/nonexistent", 0, "");
  EXPECT_FALSE(bad.resolve(1));
}

}  // namespace
}  // namespace memcg::tracing
