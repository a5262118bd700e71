// SeriesTable (tracing/series_table.h): one series per cgroup identity.
#include "tracing/series_table.h"

#include <gtest/gtest.h>

#include <map>

namespace memcg::tracing {
namespace {

class Ids : public CgroupResolver {
 public:
  std::optional<std::string> resolve(int32_t) override { return std::nullopt; }
  uint64_t idOf(const std::string& path) override {
    ++stats;
    auto it = by_path.find(path);
    return it == by_path.end() ? 0 : it->second;
  }
  std::optional<std::string> pathOfId(uint64_t id) override {
    ++walks;
    for (const auto& [p, i] : by_path) {
      if (i == id) return p;
    }
    return std::nullopt;
  }
  std::map<std::string, uint64_t> by_path{{"/a", 11}, {"/b", 12}};
  int stats = 0;
  int walks = 0;
};

TEST(SeriesTable, SlotZeroIsUnknownAndPathsAreInternedOnce) {
  Ids ids;
  SeriesTable t(8, &ids);
  EXPECT_TRUE(t[SeriesTable::kUnknown].unknown);
  EXPECT_EQ(t.labelOf(SeriesTable::kUnknown), "_unknown");
  const uint32_t a = t.intern("/a", 0);
  EXPECT_NE(a, SeriesTable::kUnknown);
  EXPECT_EQ(t[a].id, 11u);  // stat'ed once, on creation
  EXPECT_EQ(t.intern("/a", 0), a);
  EXPECT_EQ(t.intern("/a", 11), a);
  EXPECT_EQ(ids.stats, 1);
  EXPECT_EQ(t.intern("", 0), t.intern("/", 0));  // "" is the root
  EXPECT_EQ(t.labelOf(a), "/a");
  EXPECT_EQ(t.cgroups(), 2u);
}

TEST(SeriesTable, IdentityWinsOverPath) {
  Ids ids;
  SeriesTable t(8, &ids);
  std::vector<uint32_t> retired;
  t.onRetire([&](uint32_t s) { retired.push_back(s); });
  const uint32_t a = t.intern("/a", 11);
  t[a].tasks_attached = 5;
  // Renamed: the same cgroup under a new path keeps its series.
  const uint32_t renamed = t.intern("/a-renamed", 11);
  EXPECT_EQ(renamed, a);
  EXPECT_EQ(t[a].path, "/a-renamed");
  EXPECT_EQ(t[a].tasks_attached, 5u);
  EXPECT_EQ(t.intern("/a-renamed", 0), a);
  // Recreated: the same path, another inode, is another series; the old one
  // is retired (its owner told) and the new one starts from zero.
  const uint32_t again = t.intern("/a-renamed", 99);
  EXPECT_EQ(retired, std::vector<uint32_t>{a});
  EXPECT_EQ(t[again].id, 99u);
  EXPECT_EQ(t[again].tasks_attached, 0u);
  EXPECT_EQ(t.retired(), 1u);
  std::vector<CgroupTraceStats> live;
  t.copyLive(live);
  size_t named = 0;
  for (const auto& c : live) named += c.path == "/a-renamed";
  EXPECT_EQ(named, 1u);  // never two series with one label
}

TEST(SeriesTable, RemoveChecksIdentityAndReusesTheSlot) {
  Ids ids;
  SeriesTable t(8, &ids);
  int told = 0;
  t.onRetire([&](uint32_t) { ++told; });
  const uint32_t a = t.intern("/a", 0);
  t[a].kswapd_wakeup_requests = 3;
  EXPECT_FALSE(t.remove("/a", 12));  // another cgroup's rmdir (recreated)
  EXPECT_FALSE(t.remove("/nope", 0));
  EXPECT_FALSE(t.remove("", 0));
  EXPECT_EQ(told, 0);
  EXPECT_TRUE(t.remove("/a", 11));
  EXPECT_EQ(told, 1);
  EXPECT_FALSE(t.remove("/a", 11));  // once
  std::vector<CgroupTraceStats> live;
  t.copyLive(live);
  EXPECT_EQ(live.size(), 1u);  // only "_unknown"
  // The slot of a removed cgroup is reused, zeroed.
  const uint32_t b = t.intern("/b", 0);
  EXPECT_EQ(b, a);
  EXPECT_EQ(t[b].path, "/b");
  EXPECT_EQ(t[b].id, 12u);
  EXPECT_EQ(t[b].kswapd_wakeup_requests, 0u);
}

TEST(SeriesTable, SlotOfIdWalksOncePerUnknownId) {
  Ids ids;
  SeriesTable t(8, &ids);
  EXPECT_EQ(t.slotOfId(0), SeriesTable::kUnknown);
  const uint32_t b = t.slotOfId(12);
  EXPECT_EQ(t[b].path, "/b");
  EXPECT_EQ(t.slotOfId(12), b);
  EXPECT_EQ(ids.walks, 1);
  EXPECT_EQ(t.slotOfId(777), SeriesTable::kUnknown);
  EXPECT_EQ(t.slotOfId(777), SeriesTable::kUnknown);
  EXPECT_EQ(ids.walks, 2);  // the miss is remembered
  EXPECT_EQ(t.intern("/b", 0), b);
}

TEST(SeriesTable, OverflowSeriesPastTheCap) {
  SeriesTable t(2, nullptr);
  const uint32_t a = t.intern("/a", 1);
  const uint32_t b = t.intern("/b", 2);
  const uint32_t c = t.intern("/c", 3);
  const uint32_t d = t.intern("/d", 0);
  EXPECT_NE(a, b);
  EXPECT_EQ(c, d);
  EXPECT_TRUE(t.isOverflow(c));
  EXPECT_FALSE(t.isOverflow(a));
  EXPECT_EQ(t.labelOf(c), "_overflow");
  EXPECT_EQ(traceCgroupLabel(t[c]), "_overflow");
  EXPECT_EQ(t.intern("/a", 1), a);  // existing series stay
  std::vector<CgroupTraceStats> live;
  t.copyLive(live);
  EXPECT_EQ(live.size(), 4u);  // unknown, /a, /b, overflow
  // A removal makes room again.
  EXPECT_TRUE(t.remove("/a", 1));
  EXPECT_FALSE(t.isOverflow(t.intern("/e", 5)));
}

}  // namespace
}  // namespace memcg::tracing
