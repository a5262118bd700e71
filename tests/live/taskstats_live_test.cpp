// Real-kernel test of per-cgroup reclaim delay (root, cgroup v1 memory).
//
// With kernel.task_delayacct on, a child in a 64 MiB memcg streams a 256 MiB
// file from /var/tmp (a real filesystem: its page cache is charged to the
// reader and must be reclaimed within the limit). The cgroup's freepages
// (reclaim) delay count and total must be > 0 and equal to what a minimal
// netlink query written here independently reads for the child's pid; after
// the child exits, the cgroup's figures must stay (folded from the exit record).
// Everything created is removed in TearDown, also on failure.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/genetlink.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/taskstats/cgroup_delays.h"
#include "collectors/taskstats/delay_table.h"
#include "collectors/taskstats/delayacct_sysctl.h"

namespace memcg::taskstats {
namespace {

constexpr const char* kMemcgRoot = "/sys/fs/cgroup/memory";
constexpr size_t kLimit = 64ull << 20;
constexpr size_t kFileSize = 256ull << 20;
constexpr int kPasses = 3;

// ---- independent minimal TASKSTATS query (does not use the library) --------

struct Independent {
  uint64_t freepages_count = 0;
  uint64_t freepages_delay_total = 0;
};

// Appends one attribute; returns the aligned size written.
size_t putAttr(char* p, uint16_t type, const void* data, uint16_t len) {
  auto* a = reinterpret_cast<nlattr*>(p);
  a->nla_type = type;
  a->nla_len = NLA_HDRLEN + len;
  std::memcpy(p + NLA_HDRLEN, data, len);
  return NLA_ALIGN(a->nla_len);
}

// Sends one generic-netlink request and returns the reply datagram.
std::vector<char> roundTrip(int fd, uint16_t type, uint8_t cmd, uint16_t attr,
                            const void* data, uint16_t len) {
  alignas(8) char req[256] = {};
  auto* h = reinterpret_cast<nlmsghdr*>(req);
  auto* g = reinterpret_cast<genlmsghdr*>(req + NLMSG_HDRLEN);
  g->cmd = cmd;
  g->version = 1;
  size_t n = NLMSG_HDRLEN + GENL_HDRLEN;
  n += putAttr(req + n, attr, data, len);
  h->nlmsg_len = n;
  h->nlmsg_type = type;
  h->nlmsg_flags = NLM_F_REQUEST;
  h->nlmsg_seq = 1;
  sockaddr_nl k{};
  k.nl_family = AF_NETLINK;
  if (sendto(fd, req, n, 0, reinterpret_cast<sockaddr*>(&k), sizeof(k)) < 0) return {};
  std::vector<char> buf(16384);
  ssize_t r = recv(fd, buf.data(), buf.size(), 0);
  buf.resize(r > 0 ? r : 0);
  return buf;
}

// Finds attribute `type` in [p, p+len).
const nlattr* findAttr(const char* p, size_t len, uint16_t type) {
  while (len >= NLA_HDRLEN) {
    auto* a = reinterpret_cast<const nlattr*>(p);
    if (a->nla_len < NLA_HDRLEN || a->nla_len > len) return nullptr;
    if ((a->nla_type & NLA_TYPE_MASK) == type) return a;
    size_t step = NLA_ALIGN(a->nla_len);
    if (step >= len) return nullptr;
    p += step;
    len -= step;
  }
  return nullptr;
}

std::optional<Independent> independentQuery(uint32_t pid) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
  if (fd < 0) return std::nullopt;
  std::optional<Independent> out;
  auto fam = roundTrip(fd, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME,
                       TASKSTATS_GENL_NAME, sizeof(TASKSTATS_GENL_NAME));
  const size_t hdr = NLMSG_HDRLEN + GENL_HDRLEN;
  if (fam.size() > hdr) {
    auto* id = findAttr(fam.data() + hdr, fam.size() - hdr, CTRL_ATTR_FAMILY_ID);
    if (id) {
      uint16_t family;
      std::memcpy(&family, reinterpret_cast<const char*>(id) + NLA_HDRLEN, 2);
      auto rep =
          roundTrip(fd, family, TASKSTATS_CMD_GET, TASKSTATS_CMD_ATTR_PID, &pid, 4);
      auto* h = reinterpret_cast<const nlmsghdr*>(rep.data());
      if (rep.size() > hdr && h->nlmsg_type == family) {
        auto* aggr =
            findAttr(rep.data() + hdr, rep.size() - hdr, TASKSTATS_TYPE_AGGR_PID);
        if (aggr) {
          auto* st = findAttr(reinterpret_cast<const char*>(aggr) + NLA_HDRLEN,
                              aggr->nla_len - NLA_HDRLEN, TASKSTATS_TYPE_STATS);
          // The installed header's struct is a prefix of the kernel's (v13 ⊂ v16).
          if (st && static_cast<size_t>(st->nla_len - NLA_HDRLEN) >=
                        offsetof(struct taskstats, freepages_delay_total) + 8) {
            const char* s = reinterpret_cast<const char*>(st) + NLA_HDRLEN;
            Independent v;
            std::memcpy(&v.freepages_count,
                        s + offsetof(struct taskstats, freepages_count), 8);
            std::memcpy(&v.freepages_delay_total,
                        s + offsetof(struct taskstats, freepages_delay_total), 8);
            out = v;
          }
        }
      }
    }
  }
  close(fd);
  return out;
}

// ---- fixture -----------------------------------------------------------------

bool writeFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

class TaskstatsLive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root (CAP_NET_ADMIN for TASKSTATS, cgroupfs)";
    struct statfs sfs;
    if (statfs(kMemcgRoot, &sfs) != 0 || sfs.f_type != CGROUP_SUPER_MAGIC) {
      GTEST_SKIP() << "no cgroup v1 memory hierarchy at " << kMemcgRoot;
    }
    auto client = TaskstatsClient::open();
    if (!client.ok()) GTEST_SKIP() << "no TASKSTATS: " << client.error().message();
    auto prev = readTaskDelayacct();
    if (!prev.ok())
      GTEST_SKIP() << "no kernel.task_delayacct: " << prev.error().message();
    prev_delayacct_ = *prev;
    ASSERT_TRUE(writeTaskDelayacct(true).ok());

    const std::string tag = "memcg_exporter_test_delay_" + std::to_string(getpid());
    cgroup_ = std::string(kMemcgRoot) + "/" + tag;
    ASSERT_EQ(mkdir(cgroup_.c_str(), 0755), 0) << strerror(errno);
    made_cgroup_ = true;
    ASSERT_TRUE(writeFile(cgroup_ + "/memory.limit_in_bytes", std::to_string(kLimit)));

    // The data file on a real filesystem, written from outside the memcg.
    file_ = "/var/tmp/" + tag + ".dat";
    struct statfs ffs;
    ASSERT_EQ(statfs("/var/tmp", &ffs), 0);
    if (ffs.f_type == TMPFS_MAGIC) GTEST_SKIP() << "/var/tmp is tmpfs: no reclaim";
    int fd = open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    made_file_ = true;
    std::vector<char> chunk(1 << 20, 'x');
    for (size_t done = 0; done < kFileSize; done += chunk.size()) {
      ASSERT_EQ(write(fd, chunk.data(), chunk.size()),
                static_cast<ssize_t>(chunk.size()));
    }
    ASSERT_EQ(fsync(fd), 0);
    ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);  // start cold
    close(fd);
  }

  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    if (made_cgroup_) {
      // An exited task leaves the cgroup asynchronously; retry (30 s at most:
      // a loaded machine reaps it late, and 5 s failed the teardown).
      for (int i = 0; i < 300 && rmdir(cgroup_.c_str()) != 0 && errno == EBUSY; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      struct stat st;
      EXPECT_NE(stat(cgroup_.c_str(), &st), 0) << "could not remove " << cgroup_;
    }
    if (made_file_) unlink(file_.c_str());
    if (prev_delayacct_) (void)writeTaskDelayacct(*prev_delayacct_);
  }

  // Forks the reader: it joins the memcg, streams the file kPasses times,
  // reports, and waits for a byte on the pipe before exiting. Only
  // async-signal-safe calls after fork (the aggregator has a thread).
  void startReader() {
    int down[2], up[2];
    ASSERT_EQ(pipe2(down, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(up, O_CLOEXEC), 0);
    const std::string procs = cgroup_ + "/cgroup.procs";
    child_ = fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      close(down[1]);
      close(up[0]);
      int p = open(procs.c_str(), O_WRONLY);
      if (p < 0 || write(p, "0", 1) != 1) _exit(10);  // "0": the writer itself
      close(p);
      static char buf[1 << 20];
      for (int pass = 0; pass < kPasses; ++pass) {
        int f = open(file_.c_str(), O_RDONLY);
        if (f < 0) _exit(11);
        while (read(f, buf, sizeof(buf)) > 0) {
        }
        close(f);
      }
      char c = 'd';
      if (write(up[1], &c, 1) != 1) _exit(12);
      if (read(down[0], &c, 1) < 0) _exit(13);
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    to_child_ = down[1];
    from_child_ = up[0];
  }

  std::optional<bool> prev_delayacct_;
  std::string cgroup_, file_;
  bool made_cgroup_ = false, made_file_ = false;
  pid_t child_ = -1;
  int to_child_ = -1, from_child_ = -1;
};

TEST_F(TaskstatsLive, ReclaimDelayOfAStreamingProcessInItsCgroup) {
  auto agg = CgroupDelayAggregator::create();
  ASSERT_TRUE(agg.ok()) << agg.error().message();
  CgroupDelayAggregator& a = **agg;
  ASSERT_TRUE(a.stats().listening);

  auto empty = a.collect(cgroup_);
  ASSERT_TRUE(empty.ok()) << empty.error().message();
  EXPECT_EQ(empty->live_processes, 0u);

  const auto t0 = std::chrono::steady_clock::now();
  startReader();
  char c;
  ASSERT_EQ(read(from_child_, &c, 1), 1) << "reader failed";
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // The reader is now idle (blocked on the pipe): its figures are stable.
  auto before = independentQuery(child_);
  ASSERT_TRUE(before.has_value());
  auto live = a.collect(cgroup_);
  ASSERT_TRUE(live.ok()) << live.error().message();
  auto after = independentQuery(child_);
  ASSERT_TRUE(after.has_value());
  const DelayCounter& r = (*live)[DelayClass::kFreepages];
  std::printf(
      "[ live ] streamed %d x %zu MiB through a %zu MiB memcg in %.2f s\n"
      "[ live ] cgroup reclaim: count=%llu total=%.6f s max=%.6f s (avg %.3f ms)\n"
      "[ live ] independent pid query: count=%llu total=%.6f s (before) / count=%llu "
      "total=%.6f s (after)\n",
      kPasses, kFileSize >> 20, kLimit >> 20, secs, (unsigned long long)r.count,
      r.total_ns / 1e9, r.max_ns / 1e9, r.count ? r.total_ns / 1e6 / r.count : 0.0,
      (unsigned long long)before->freepages_count, before->freepages_delay_total / 1e9,
      (unsigned long long)after->freepages_count, after->freepages_delay_total / 1e9);

  EXPECT_EQ(live->live_processes, 1u);
  EXPECT_TRUE(live->has(DelayClass::kFreepages));
  EXPECT_GT(r.count, 0u);
  EXPECT_GT(r.total_ns, 0u);
  EXPECT_LE(r.max_ns, r.total_ns);
  // Tolerance: none needed for an idle single-threaded task, but allow the
  // window between the two independent reads.
  EXPECT_GE(r.count, before->freepages_count);
  EXPECT_LE(r.count, after->freepages_count);
  EXPECT_GE(r.total_ns, before->freepages_delay_total);
  EXPECT_LE(r.total_ns, after->freepages_delay_total);

  // The getdelays table shows the same row.
  auto table =
      a.withClient([&](TaskstatsClient& cl) { return readDelayTable(cl, cgroup_); });
  ASSERT_TRUE(table.ok()) << table.error().message();
  ASSERT_EQ(table->rows.size(), 1u);
  EXPECT_EQ(table->rows[0].pid, static_cast<uint32_t>(child_));
  EXPECT_EQ(table->rows[0].stats[DelayClass::kFreepages].count, r.count);
  auto j = delayTableToJson(*table);
  EXPECT_EQ(j["tasks"][0]["delays"]["reclaim"]["count"].get<uint64_t>(), r.count);

  // Let the reader exit: the cgroup keeps its figures (from the exit record).
  ASSERT_EQ(write(to_child_, "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child_, &status, 0), child_);
  child_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  auto gone = a.collect(cgroup_);
  ASSERT_TRUE(gone.ok()) << gone.error().message();
  const DelayCounter& g = (*gone)[DelayClass::kFreepages];
  std::printf(
      "[ live ] after exit: count=%llu total=%.6f s, exited=%llu, folded from "
      "exit records=%llu\n",
      (unsigned long long)g.count, g.total_ns / 1e9,
      (unsigned long long)gone->exited_processes,
      (unsigned long long)a.stats().exits_folded);
  EXPECT_EQ(gone->live_processes, 0u);
  EXPECT_EQ(gone->exited_processes, 1u);
  EXPECT_EQ(a.stats().exits_folded, 1u);
  EXPECT_EQ(a.stats().exits_without_record, 0u);
  EXPECT_EQ(g.count, after->freepages_count);
  EXPECT_EQ(g.total_ns, after->freepages_delay_total);
}

TEST(TaskstatsLiveCgroup, VanishedCgroupIsGone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_NET_ADMIN for TASKSTATS)";
  if (!TaskstatsClient::open().ok()) GTEST_SKIP() << "no TASKSTATS";
  CgroupDelayAggregator::Options opts;
  opts.listen_exits = false;
  auto agg = CgroupDelayAggregator::create(opts);
  ASSERT_TRUE(agg.ok()) << agg.error().message();
  auto r = (*agg)->collect(std::string(kMemcgRoot) + "/memcg_exporter_no_such_cgroup");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().gone());
}

}  // namespace
}  // namespace memcg::taskstats
