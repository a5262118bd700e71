// Real-kernel test (root, cgroup v1 memory): a cgroup tree laid out as kubelet
// lays it out, with both drivers' shapes, below
// /sys/fs/cgroup/memory/memcg_exporter_test_deploy_kubepods_<pid>, and a task in
// one container. The exporter's walk must export memcg_cgroup_info for exactly
// the pod and container cgroups, and the container's memory series under the
// same `cgroup` label (the join key). Everything is removed, also on failure.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/support/test_cgroup.h"
#include "tests/support/scrape_test_util.h"

namespace memcg {
namespace {

constexpr const char* kUidA = "11111111-2222-4333-8444-555555555555";
constexpr const char* kUidASystemd = "11111111_2222_4333_8444_555555555555";
constexpr const char* kUidB = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const std::string kIdA(64, 'a');
const std::string kIdB(64, 'b');
const std::string kIdC(64, 'c');

// Directories made below a test cgroup, removed deepest first when the test
// ends (before the TestCgroupV1 that holds them); a task put into one is
// killed first.
class Subtree {
 public:
  explicit Subtree(std::string root) : root_(std::move(root)) {}
  ~Subtree() {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      for (int attempt = 0; attempt < 100 && ::rmdir(it->c_str()) != 0 && errno == EBUSY;
           ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  Subtree(const Subtree&) = delete;
  Subtree& operator=(const Subtree&) = delete;

  /// mkdir -p of rel ("/a/b") below the root.
  void mkdirs(const std::string& rel) {
    std::string p = root_;
    size_t i = 0;
    while (i < rel.size()) {
      size_t j = rel.find('/', i + 1);
      if (j == std::string::npos) j = rel.size();
      p += rel.substr(i, j - i);
      i = j;
      if (::mkdir(p.c_str(), 0755) == 0) {
        made_.push_back(p);
      } else if (errno != EEXIST) {
        throw std::runtime_error("mkdir " + p + ": " + std::strerror(errno));
      }
    }
  }
  /// A sleeping child in cgroup rel, which touches 8 MiB first.
  void runIn(const std::string& rel) {
    child_ = ::fork();
    if (child_ == 0) {
      std::ofstream(root_ + rel + "/cgroup.procs") << ::getpid() << std::flush;
      std::vector<char> mem(8 << 20, 1);
      for (size_t k = 0; k < mem.size(); k += 4096) mem[k] = static_cast<char>(k);
      ::pause();
      ::_exit(0);
    }
    if (child_ < 0) throw std::runtime_error("fork failed");
    // Wait for the child to have moved itself and touched its memory.
    for (int attempt = 0; attempt < 200; ++attempt) {
      std::ifstream f(root_ + rel + "/memory.usage_in_bytes");
      uint64_t u = 0;
      if (f >> u && u >= (8u << 20)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("the child did not fill its cgroup " + rel);
  }

 private:
  std::string root_;
  std::vector<std::string> made_;
  pid_t child_ = -1;
};

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1))
    ++n;
  return n;
}

TEST(LiveKubepods, KubeletLayoutGetsPodLabels) {
  if (auto why = test::v1SkipReason(); !why.empty()) GTEST_SKIP() << why;
  test::TestCgroupV1 top("deploy_kubepods");
  Subtree t(top.path());
  // systemd driver, containerd: a Burstable pod with one container.
  const std::string sysPod =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
      std::string(kUidASystemd) + ".slice";
  const std::string sysCtr = sysPod + "/cri-containerd-" + kIdA + ".scope";
  // cgroupfs driver: a Guaranteed pod with a containerd and a CRI-O container.
  const std::string fsPod = "/kubepods/pod" + std::string(kUidB);
  const std::string fsCtr = fsPod + "/" + kIdB;
  const std::string fsCrio = fsPod + "/crio-" + kIdC;
  for (const auto& d : {sysCtr, fsCtr, fsCrio, std::string("/kubepods/besteffort"),
                        std::string("/kubepods.slice/kubepods-besteffort.slice")}) {
    t.mkdirs(d);
  }
  t.runIn(sysCtr);

  DiscoveryOptions o;
  o.include = top.label() + "(/.*)?";
  test::FixtureScrape s(o, CollectorInputs{});
  const std::string text = s.text();
  const std::string L = top.label();
  auto info = [&](const std::string& cg, const std::string& uid, const std::string& id,
                  const std::string& qos) {
    return "memcg_cgroup_info{cgroup=\"" + L + cg + "\",pod_uid=\"" + uid +
           "\",container_id=\"" + id + "\",qos_class=\"" + qos + "\"} 1\n";
  };
  EXPECT_NE(text.find(info(sysPod, kUidA, "", "Burstable")), std::string::npos) << text;
  EXPECT_NE(text.find(info(sysCtr, kUidA, kIdA, "Burstable")), std::string::npos);
  EXPECT_NE(text.find(info(fsPod, kUidB, "", "Guaranteed")), std::string::npos);
  EXPECT_NE(text.find(info(fsCtr, kUidB, kIdB, "Guaranteed")), std::string::npos);
  EXPECT_NE(text.find(info(fsCrio, kUidB, kIdC, "Guaranteed")), std::string::npos);
  // Exactly those five: not the top, the kubepods roots or the QoS levels.
  EXPECT_EQ(count(text, "\nmemcg_cgroup_info{"), 5u) << text;
  EXPECT_NE(text.find("memcg_exporter_collector_success{collector=\"kubepods\"} 1"),
            std::string::npos);
  // The join key: the container's own memory series carry the same label,
  // and its usage is the task's 8 MiB or more.
  std::smatch m;
  const std::regex usage(
      "\nmemcg_memory_usage_bytes\\{cgroup=\"" +
      std::regex_replace(L + sysCtr, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
      "\"\\} ([0-9.e+]+)\n");
  ASSERT_TRUE(std::regex_search(text, m, usage)) << text;
  EXPECT_GE(std::stod(m[1]), 8.0 * (1 << 20));
}

}  // namespace
}  // namespace memcg
