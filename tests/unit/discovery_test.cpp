#include "cgroupfs/discovery.h"
#include "cgroupfs/walk_scheduler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "tests/support/temp_tree.h"

namespace memcg {
namespace {

std::vector<std::string> paths(const CgroupTree& t) {
  std::vector<std::string> out;
  for (const auto& c : t.cgroups) out.push_back(c.path);
  return out;
}

TEST(Mountinfo, ParsesCgroupMountsAndEscapes) {
  const char* text =
      "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
      "41 30 0:38 / /mnt/with\\040space rw - ext4 /dev/sda1 rw\n";
  auto m = parseMountinfo(text, "mountinfo");
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[1].fsType, "cgroup");
  EXPECT_EQ((*m)[1].superOptions, "rw,memory");
  EXPECT_EQ((*m)[2].fsType, "cgroup2");
  EXPECT_EQ((*m)[3].mountPoint, "/mnt/with space");
  EXPECT_FALSE(parseMountinfo("30 22 0:27 / /x rw\n", "mountinfo").ok());
}

TEST(Layout, FixtureTrees) {
  const std::string noProc = test::fixturePath("procfs");  // has no self/mountinfo
  auto v1 = detectLayout(test::fixturePath("cgroupfs/v1"), noProc);
  ASSERT_TRUE(v1.ok()) << v1.error().message();
  EXPECT_EQ(v1->mode, CgroupMode::kV1);
  EXPECT_EQ(v1->memoryRoot, test::fixturePath("cgroupfs/v1/memory"));
  auto v2 = detectLayout(test::fixturePath("cgroupfs/v2"), noProc);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->mode, CgroupMode::kV2);
  auto hy = detectLayout(test::fixturePath("cgroupfs/hybrid"), noProc);
  ASSERT_TRUE(hy.ok());
  EXPECT_EQ(hy->mode, CgroupMode::kHybrid);
  EXPECT_EQ(hy->unifiedRoot, test::fixturePath("cgroupfs/hybrid/unified"));
  test::TempTree empty;
  EXPECT_FALSE(detectLayout(empty.root(), noProc).ok());
}

TEST(Layout, FromMountinfo) {
  // A procfs whose mountinfo names the mounts: v1 memory + cgroup2 without it.
  test::TempTree t;
  t.copyFixture("cgroupfs/hybrid", "cg");
  t.write("proc/self/mountinfo",
          "34 30 0:31 / " + t.path("cg/memory") + " rw - cgroup cgroup rw,memory\n" +
              "40 30 0:37 / " + t.path("cg/unified") + " rw - cgroup2 cgroup2 rw\n" +
              "41 30 0:38 / /elsewhere rw - cgroup cgroup rw,memory\n");
  auto l = detectLayout(t.path("cg"), t.path("proc"));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->mode, CgroupMode::kHybrid);
  EXPECT_EQ(l->memoryRoot, t.path("cg/memory"));
}

TEST(Discovery, WalksBreadthFirstInNameOrder) {
  DiscoveryOptions o;
  o.cgroupfsRoot = test::fixturePath("cgroupfs/v1");
  o.procfsRoot = test::fixturePath("procfs");
  Discovery d(o);
  auto t = d.refresh();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(paths(**t), (std::vector<std::string>{"/", "/system.slice", "/web", "/web/frontend"}));
  EXPECT_EQ((*t)->cgroups[3].depth, 2);
}

TEST(Discovery, IncludeExcludeDepthLimit) {
  DiscoveryOptions o;
  o.cgroupfsRoot = test::fixturePath("cgroupfs/v1");
  o.procfsRoot = test::fixturePath("procfs");
  o.exclude = "/system\\.slice(/.*)?";
  {
    Discovery d(o);
    EXPECT_EQ(paths(**d.refresh()), (std::vector<std::string>{"/", "/web", "/web/frontend"}));
  }
  o.exclude.clear();
  o.include = "/web.*";
  {
    Discovery d(o);
    EXPECT_EQ(paths(**d.refresh()), (std::vector<std::string>{"/web", "/web/frontend"}));
  }
  o.include = ".*";
  o.maxDepth = 1;
  {
    Discovery d(o);
    EXPECT_EQ(paths(**d.refresh()), (std::vector<std::string>{"/", "/system.slice", "/web"}));
  }
  o.maxDepth = 8;
  o.limit = 2;
  {
    Discovery d(o);
    auto t = *d.refresh();
    EXPECT_EQ(paths(*t), (std::vector<std::string>{"/", "/system.slice"}));
    EXPECT_EQ(t->dropped, 1u);  // /web; nothing deeper is walked once full
  }
}

TEST(Discovery, BadOptionsThrowAtStartup) {
  DiscoveryOptions o;
  o.cgroupfsRoot = test::fixturePath("cgroupfs/v1");
  o.procfsRoot = test::fixturePath("procfs");
  o.include = "(";
  EXPECT_THROW(Discovery{o}, std::invalid_argument);
  o.include = ".*";
  o.cgroupfsRoot = "/nonexistent/memcg_exporter_test";
  EXPECT_THROW(Discovery{o}, std::invalid_argument);
}

TEST(Discovery, HybridJoinsPressureByPath) {
  DiscoveryOptions o;
  o.cgroupfsRoot = test::fixturePath("cgroupfs/hybrid");
  o.procfsRoot = test::fixturePath("procfs");
  Discovery d(o);
  auto t = *d.refresh();
  ASSERT_EQ(t->cgroups.size(), 4u);
  EXPECT_TRUE(t->cgroups[0].psiDir);   // /
  EXPECT_TRUE(t->cgroups[2].psiDir);   // /web
  EXPECT_FALSE(t->cgroups[3].psiDir);  // /web/frontend has no cgroup2 twin
}

// A cgroup removed and recreated under the same name is a new cgroup: new
// inode, new descriptors; the old CgroupDir reads as gone.
TEST(Discovery, RecreatedCgroupIsNotConfusedWithTheOld) {
  test::TempTree t;
  t.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  t.write("memory/cgroup.procs", "");
  t.write("memory/a/cgroup.procs", "");
  t.write("memory/a/memory.usage_in_bytes", "111\n");
  DiscoveryOptions o;
  o.cgroupfsRoot = t.root();
  o.procfsRoot = test::fixturePath("procfs");
  Discovery d(o);
  auto first = *d.refresh();
  ASSERT_EQ(first->cgroups.size(), 2u);
  auto oldDir = first->cgroups[1].dir;
  ino_t oldIno = first->cgroups[1].inode;

  // Keep something else holding the old inode number so it cannot be reused.
  t.write("memory/keep/cgroup.procs", "");
  t.remove("memory/a");
  t.write("memory/a/cgroup.procs", "");
  t.write("memory/a/memory.usage_in_bytes", "222\n");
  auto second = *d.refresh();
  const Cgroup* a = nullptr;
  for (const auto& c : second->cgroups) {
    if (c.path == "/a") a = &c;
  }
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->inode, oldIno);
  EXPECT_NE(a->dir.get(), oldDir.get());
  std::string buf;
  std::string_view out;
  EXPECT_EQ(a->dir->read(cgroupfs::FileId::kV1Usage, buf, out), cgroupfs::ReadStatus::kOk);
  EXPECT_EQ(out, "222\n");
  EXPECT_EQ(oldDir->read(cgroupfs::FileId::kV1Usage, buf, out), cgroupfs::ReadStatus::kGone);
}

TEST(Discovery, RemovedCgroupDisappearsFromTheNextWalk) {
  test::TempTree t;
  t.copyFixture("cgroupfs/v2", "cg");
  DiscoveryOptions o;
  o.cgroupfsRoot = t.path("cg");
  o.procfsRoot = test::fixturePath("procfs");
  Discovery d(o);
  EXPECT_EQ((*d.refresh())->cgroups.size(), 4u);
  t.remove("cg/kubepods");
  EXPECT_EQ(paths(**d.refresh()), (std::vector<std::string>{"/", "/system.slice"}));
  EXPECT_EQ(d.find("/kubepods"), nullptr);
  EXPECT_NE(d.find("/system.slice"), nullptr);
}


// Discovery off the scrape path (discovery.h): a scrape takes the last walk's
// tree; new cgroups appear at the next walk, removed ones read as gone at once.
namespace off_path {

using namespace std::chrono_literals;

struct Tree {
  test::TempTree t;
  Tree() {
    t.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
    t.write("memory/cgroup.procs", "");
    t.write("memory/a/cgroup.procs", "");
    t.write("memory/a/memory.usage_in_bytes", "111\n");
  }
  DiscoveryOptions options(std::chrono::milliseconds interval) const {
    DiscoveryOptions o;
    o.cgroupfsRoot = t.root();
    o.procfsRoot = test::fixturePath("procfs");
    o.refreshInterval = interval;
    return o;
  }
};

const Cgroup* byPath(const CgroupTree& tree, const std::string& path) {
  for (const auto& c : tree.cgroups) {
    if (c.path == path) return &c;
  }
  return nullptr;
}

// Polls until pred(tree) holds; the bound is generous (it returns as soon as
// pred holds), the walker's interval tiny.
template <typename Pred>
std::shared_ptr<const CgroupTree> waitFor(WalkScheduler& w, Pred pred) {
  for (int i = 0; i < 6000; ++i) {  // >= 60 s: a loaded machine may stall the walker
    auto tree = w.tree();
    if (tree.ok() && pred(**tree)) return *tree;
    std::this_thread::sleep_for(10ms);
  }
  return nullptr;
}

TEST(DiscoveryOffScrapePath, ScrapesTakeTheLastWalkUntilTheNextOne) {
  Tree f;
  Discovery d(f.options(1h));
  WalkScheduler w(d);  // asked, never started: walks only on demand
  auto first = *w.tree();  // no walk yet: walks now
  EXPECT_EQ(paths(*first), (std::vector<std::string>{"/", "/a"}));
  f.t.write("memory/b/cgroup.procs", "");
  auto again = *w.tree();
  EXPECT_EQ(again.get(), first.get()) << "a scrape walked although the last walk is fresh";
  EXPECT_EQ(again->generation, first->generation);
  auto walked = *w.walkNow();  // on demand
  EXPECT_EQ(paths(*walked), (std::vector<std::string>{"/", "/a", "/b"}));
  EXPECT_EQ((*w.tree()).get(), walked.get());
}

TEST(DiscoveryOffScrapePath, IntervalZeroWalksOnEveryScrape) {
  Tree f;
  Discovery d(f.options(0ms));
  WalkScheduler w(d);  // asked, never started: walks only on demand
  auto first = *w.tree();
  f.t.write("memory/b/cgroup.procs", "");
  auto second = *w.tree();
  EXPECT_GT(second->generation, first->generation);
  EXPECT_EQ(paths(*second), (std::vector<std::string>{"/", "/a", "/b"}));
}

TEST(DiscoveryOffScrapePath, ConcurrentScrapesShareOneWalk) {
  Tree f;
  Discovery d(f.options(1h));
  WalkScheduler w(d);  // asked, never started: walks only on demand
  ASSERT_TRUE(d.refresh().ok());
  const uint64_t gen = d.current()->generation;
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 100; ++k) {
        auto t = w.tree();
        if (t.ok() && (*t)->generation == gen) same.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(same.load(), 800);
  EXPECT_EQ(d.current()->generation, gen);
}

TEST(DiscoveryOffScrapePath, WalkerFindsNewVanishedAndRecreatedCgroups) {
  Tree f;
  Discovery d(f.options(20ms));
  ASSERT_TRUE(d.refresh().ok());
  WalkScheduler walker(d);
  walker.start();

  // New: exported once the walker has walked.
  f.t.write("memory/b/cgroup.procs", "");
  auto withB = waitFor(walker, [](const CgroupTree& t) { return byPath(t, "/b") != nullptr; });
  ASSERT_NE(withB, nullptr) << "a new cgroup never showed up";
  // The walker counts a walk after the tree it published: wait for the count.
  for (int i = 0; i < 6000 && walker.cadenceWalks() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_GT(walker.cadenceWalks(), 0u);

  // Vanished: the tree a scrape still holds reads it as gone at once, before
  // any walk (files not yet opened: ENOENT and no cgroup.procs).
  const Cgroup* b = byPath(*withB, "/b");
  auto oldB = b->dir;
  const ino_t oldIno = b->inode;
  f.t.write("memory/keep/cgroup.procs", "");  // holds an inode so /b's is not reused
  f.t.remove("memory/b");
  std::string buf;
  std::string_view out;
  EXPECT_EQ(oldB->read(cgroupfs::FileId::kV1Usage, buf, out), cgroupfs::ReadStatus::kGone);
  auto withoutB = waitFor(walker, [](const CgroupTree& t) { return byPath(t, "/b") == nullptr; });
  ASSERT_NE(withoutB, nullptr) << "a removed cgroup stayed in the tree";

  // Recreated under the same name: a new cgroup (inode, descriptors).
  f.t.write("memory/b/cgroup.procs", "");
  f.t.write("memory/b/memory.usage_in_bytes", "333\n");
  auto again = waitFor(walker, [](const CgroupTree& t) { return byPath(t, "/b") != nullptr; });
  ASSERT_NE(again, nullptr);
  const Cgroup* nb = byPath(*again, "/b");
  EXPECT_NE(nb->inode, oldIno);
  EXPECT_NE(nb->dir.get(), oldB.get());
  EXPECT_EQ(nb->dir->read(cgroupfs::FileId::kV1Usage, buf, out), cgroupfs::ReadStatus::kOk);
  EXPECT_EQ(out, "333\n");
  EXPECT_EQ(oldB->read(cgroupfs::FileId::kV1Usage, buf, out), cgroupfs::ReadStatus::kGone);
}

TEST(DiscoveryOffScrapePath, AFailedWalkIsReportedToScrapes) {
  Tree f;
  Discovery d(f.options(1h));
  WalkScheduler w(d);  // asked, never started: walks only on demand
  ASSERT_TRUE(d.refresh().ok());
  f.t.remove("memory");
  EXPECT_FALSE(d.refresh().ok());
  EXPECT_FALSE(w.tree().ok()) << "a scrape was handed the tree of before the failure";
}

TEST(DiscoveryOffScrapePath, WalkerWithIntervalZeroStartsNoThread) {
  Tree f;
  Discovery d(f.options(0ms));
  WalkScheduler walker(d);
  walker.start();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(walker.cadenceWalks(), 0u);
}

// The history's sampler asks for a tree at most so old: a recent walk (by
// anyone) is reused, an older one is replaced by a walk now.
TEST(DiscoveryOffScrapePath, WithinReusesARecentWalkAndWalksAnOlderOne) {
  Tree f;
  Discovery d(f.options(1h));
  WalkScheduler w(d);
  auto first = *w.walkNow();
  f.t.write("memory/b/cgroup.procs", "");
  EXPECT_EQ((*w.within(1h)).get(), first.get()) << "walked although the last walk is recent";
  auto walked = *w.within(0ms);
  EXPECT_GT(walked->generation, first->generation);
  EXPECT_EQ(paths(*walked), (std::vector<std::string>{"/", "/a", "/b"}));
  std::this_thread::sleep_for(20ms);
  EXPECT_GT((*w.within(10ms))->generation, walked->generation);
}

// The controller and the rules ask for a cgroup made since the last walk.
TEST(DiscoveryOffScrapePath, FindOrWalkWalksOnceForAnUnknownCgroup) {
  Tree f;
  Discovery d(f.options(1h));
  WalkScheduler w(d);
  ASSERT_TRUE(w.walkNow().ok());
  EXPECT_NE(w.findOrWalk("/a"), nullptr);
  const uint64_t gen = w.current()->generation;
  EXPECT_NE(w.findOrWalk("/a"), nullptr);
  EXPECT_EQ(w.current()->generation, gen) << "walked for a cgroup the last walk saw";
  f.t.write("memory/b/cgroup.procs", "");
  EXPECT_NE(w.findOrWalk("/b"), nullptr);
  EXPECT_GT(w.current()->generation, gen);
  EXPECT_EQ(w.findOrWalk("/nope"), nullptr);
}

}  // namespace off_path

}  // namespace
}  // namespace memcg
