// Discovery off the scrape path on real memcgs (root, cgroup v1 memory): a
// walker walks every few milliseconds, scrapes take its last tree. New,
// vanished and recreated cgroups under memcg_exporter_test_scale_<pid>.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "tests/support/scrape_test_util.h"
#include "tests/support/test_cgroup.h"

namespace memcg {
namespace {

using namespace std::chrono_literals;

// Child memcgs made with mkdir(2), removed (children first) when the test ends.
class Children {
 public:
  explicit Children(std::string parent) : parent_(std::move(parent)) {}
  ~Children() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());
  }
  bool make(const std::string& name) {
    std::string p = parent_ + "/" + name;
    if (::mkdir(p.c_str(), 0755) != 0) return false;
    made_.push_back(p);
    return true;
  }
  bool remove(const std::string& name) { return ::rmdir((parent_ + "/" + name).c_str()) == 0; }

 private:
  std::string parent_;
  std::vector<std::string> made_;
};

bool hasUsage(const std::string& text, const std::string& label) {
  return text.find("\nmemcg_memory_usage_bytes{cgroup=\"" + label + "\"} ") != std::string::npos;
}

ino_t inodeOf(const Discovery& d, const std::string& label) {
  for (const auto& c : d.current()->cgroups) {
    if (c.path == label) return c.inode;
  }
  return 0;
}

DiscoveryOptions optionsFor(const std::string& label, std::chrono::milliseconds interval) {
  DiscoveryOptions o;  // the real mounts and procfs, only our subtree
  o.include = label + "(/.*)?";
  o.refreshInterval = interval;
  return o;
}

TEST(LiveDiscovery, WalkerExportsNewSkipsVanishedAndRenewsRecreated) {
  if (auto why = test::v1SkipReason(); !why.empty()) GTEST_SKIP() << why;
  test::TestCgroupV1 parent("scale_walk");
  Children kids(parent.path());
  const std::string child = parent.label() + "/c1";
  test::FixtureScrape s(optionsFor(parent.label(), 20ms), CollectorInputs{});
  ASSERT_TRUE(s.discovery->refresh().ok());
  s.walks->start();
  auto waitText = [&](bool want) {
    for (int i = 0; i < 300; ++i) {
      std::string t = s.text();
      if (hasUsage(t, child) == want) return t;
      std::this_thread::sleep_for(10ms);
    }
    return std::string();
  };

  std::string t = s.text();
  EXPECT_TRUE(hasUsage(t, parent.label()));
  EXPECT_FALSE(hasUsage(t, child));

  ASSERT_TRUE(kids.make("c1"));
  t = waitText(true);
  ASSERT_FALSE(t.empty()) << "a new memcg was never exported";
  const ino_t first = inodeOf(*s.discovery, child);
  ASSERT_NE(first, 0u);

  ASSERT_TRUE(kids.remove("c1"));
  t = waitText(false);
  ASSERT_FALSE(t.empty()) << "a removed memcg stayed exported";
  EXPECT_NE(t.find("memcg_exporter_collector_success{collector=\"memory_usage\"} 1"),
            std::string::npos);

  ASSERT_TRUE(kids.make("c1"));
  t = waitText(true);
  ASSERT_FALSE(t.empty()) << "a recreated memcg was never exported";
  const ino_t second = inodeOf(*s.discovery, child);
  EXPECT_NE(second, 0u);
  EXPECT_NE(second, first) << "the recreated memcg kept the old identity";
  EXPECT_GT(s.walks->cadenceWalks(), 0u);
}

// With the last walk still fresh (1 h interval), a memcg removed since is
// skipped by the very next scrape: its kept descriptors read ENODEV.
TEST(LiveDiscovery, RemovedSinceTheLastWalkIsSkippedAtOnce) {
  if (auto why = test::v1SkipReason(); !why.empty()) GTEST_SKIP() << why;
  test::TestCgroupV1 parent("scale_gone");
  Children kids(parent.path());
  ASSERT_TRUE(kids.make("c1"));
  const std::string child = parent.label() + "/c1";
  DiscoveryOptions o = optionsFor(parent.label(), 1h);
  o.fdBudget = 1000;  // files kept open, as the daemon does
  test::FixtureScrape s(o, CollectorInputs{});
  std::string before = s.text();  // walks once, opens the files
  ASSERT_TRUE(hasUsage(before, child));
  const uint64_t gen = s.discovery->current()->generation;

  ASSERT_TRUE(kids.remove("c1"));
  std::string after = s.text();
  EXPECT_EQ(s.discovery->current()->generation, gen) << "the scrape walked";
  EXPECT_FALSE(hasUsage(after, child));
  EXPECT_TRUE(hasUsage(after, parent.label()));
  for (const char* c : {"memory_stat", "memory_usage", "memory_events"}) {
    EXPECT_NE(after.find("memcg_exporter_collector_success{collector=\"" + std::string(c) + "\"} 1"),
              std::string::npos)
        << c;
  }
  EXPECT_EQ(after.find("memcg_exporter_cgroups_vanished_total 0\n"), std::string::npos)
      << "the vanished memcg was not counted";

  // Created since the last walk: not exported until a walk (here on demand).
  ASSERT_TRUE(kids.make("c2"));
  EXPECT_FALSE(hasUsage(s.text(), parent.label() + "/c2"));
  ASSERT_TRUE(s.discovery->refresh().ok());
  EXPECT_TRUE(hasUsage(s.text(), parent.label() + "/c2"));
}

}  // namespace
}  // namespace memcg
