// The actuator on fixture trees: v1 limit nudge (EBUSY, EINTR, concurrent
// limit change, unlimited original, floor, reclaimable clamp, crash + journal
// replay), v2 memory.reclaim (EAGAIN, partial progress, swappiness probe),
// and the allow-list / root refusal.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <vector>

#include "cgroupfs/readers.h"
#include "controller/actuator.h"
#include "tests/support/controller_fixture.h"

namespace memcg::controller {
namespace {

using testing::MiB;
using testing::TempTree;

struct Write {
  std::string file, text;
};

class V1ActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::makeV1(t_, "a", 256 * MiB, 250 * MiB, 200 * MiB);
    auto j = Journal::open(t_.path("journal"));
    ASSERT_TRUE(j.ok()) << j.error().message();
    journal_ = std::move(*j);
    auto d = cgroupfs::CgroupDir::open(t_.path("memory/a"));
    ASSERT_TRUE(d.ok());
    dir_ = *d;
  }
  ActuatorOptions opts() {
    ActuatorOptions o;
    o.allowed = [](std::string_view c) { return c == "/a"; };
    o.faultInjector = [this](std::string_view f, std::string_view text) {
      int e = 0;
      if (!faults_.empty()) {
        e = faults_.front();
        faults_.erase(faults_.begin());
      }
      if (e == 0) writes_.push_back({std::string(f), std::string(text)});
      return e;
    };
    return o;
  }
  std::string limitFile() { return t_.read("memory/a/memory.limit_in_bytes"); }

  TempTree t_;
  std::unique_ptr<Journal> journal_;
  std::shared_ptr<cgroupfs::CgroupDir> dir_;
  std::vector<int> faults_;
  std::vector<Write> writes_;
};

TEST_F(V1ActuatorTest, NudgeLowersThenRestoresAndJournals) {
  Actuator a(opts(), journal_.get());
  std::string seenDuring;
  ActuatorOptions o = opts();
  o.afterLower = [&] { seenDuring = limitFile(); };
  Actuator b(o, journal_.get());
  auto r = b.v1Nudge(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.detail;
  EXPECT_EQ(r.lowered, 186 * MiB);
  EXPECT_EQ(r.reclaimed, 64 * MiB);
  EXPECT_EQ(seenDuring, std::to_string(186 * MiB));
  ASSERT_EQ(writes_.size(), 2u);
  EXPECT_EQ(writes_[0].file, "memory.limit_in_bytes");
  EXPECT_EQ(writes_[0].text, std::to_string(186 * MiB));
  EXPECT_EQ(writes_[1].text, std::to_string(256 * MiB));
  EXPECT_EQ(limitFile(), std::to_string(256 * MiB));
  EXPECT_TRUE(journal_->pending().empty());
  // The journal holds a synced "lower" and a "clear".
  std::string j = t_.read("journal");
  EXPECT_NE(j.find("\"op\":\"lower\""), std::string::npos);
  EXPECT_NE(j.find("\"op\":\"clear\""), std::string::npos);
  EXPECT_NE(j.find("\"lowered\":" + std::to_string(186 * MiB)), std::string::npos);
}

TEST_F(V1ActuatorTest, EbusyLeavesTheLimitAndClearsTheJournal) {
  faults_ = {EBUSY};
  Actuator a(opts(), journal_.get());
  auto r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kBusy);
  EXPECT_EQ(r.reclaimed, 0u);
  EXPECT_TRUE(writes_.empty());  // no restore: nothing was lowered
  EXPECT_EQ(limitFile(), std::to_string(256 * MiB) + "\n");
  EXPECT_TRUE(journal_->pending().empty());
}

TEST_F(V1ActuatorTest, EintrIsRetried) {
  faults_ = {EINTR, EINTR, 0, EINTR};
  Actuator a(opts(), journal_.get());
  auto r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.detail;
  ASSERT_EQ(writes_.size(), 2u);
  EXPECT_EQ(limitFile(), std::to_string(256 * MiB));
}

TEST_F(V1ActuatorTest, ConcurrentLimitChangeIsNotOverwritten) {
  ActuatorOptions o = opts();
  o.afterLower = [&] { t_.write("memory/a/memory.limit_in_bytes", std::to_string(300 * MiB)); };
  Actuator a(o, journal_.get());
  auto r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kConflict);
  ASSERT_EQ(writes_.size(), 1u);  // the lowering only
  EXPECT_EQ(limitFile(), std::to_string(300 * MiB));
  EXPECT_TRUE(journal_->pending().empty());
}

TEST_F(V1ActuatorTest, UnlimitedOriginalIsRestoredAsMinusOne) {
  t_.write("memory/a/memory.limit_in_bytes", std::to_string(cgroupfs::v1UnlimitedBytes()) + "\n");
  Actuator a(opts(), journal_.get());
  auto r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.detail;
  EXPECT_TRUE(r.original.unlimited);
  ASSERT_EQ(writes_.size(), 2u);
  EXPECT_EQ(writes_[1].text, "-1");
}

TEST_F(V1ActuatorTest, FloorAndReclaimableClampTheTarget) {
  Actuator a(opts(), journal_.get());
  // Floor: usage 250 MiB, floor 240 MiB -> lowered to 240 MiB only.
  auto r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 240 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(r.lowered, 240 * MiB);
  // Only 8 MiB of page cache: never lower below what can be given back.
  t_.write("memory/a/memory.stat", "total_inactive_file 4194304\ntotal_active_file 4194304\n");
  writes_.clear();
  r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(r.lowered, 242 * MiB);
  // Max step.
  t_.write("memory/a/memory.stat", "total_inactive_file 209715200\n");
  r = a.v1Nudge(*dir_, {"/a", 128 * MiB, 16 * MiB, 32 * MiB});
  EXPECT_EQ(r.lowered, 218 * MiB);
  // At the floor: nothing, no write.
  writes_.clear();
  r = a.v1Nudge(*dir_, {"/a", 64 * MiB, 250 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kNothing);
  EXPECT_TRUE(writes_.empty());
}

TEST_F(V1ActuatorTest, RootAndDisallowedAreNeverWritten) {
  Actuator a(opts(), journal_.get());
  auto root = cgroupfs::CgroupDir::open(t_.path("memory"));
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(a.v1Nudge(**root, {"/", 64 * MiB, 0, 256 * MiB}).outcome, Outcome::kDenied);
  EXPECT_EQ(a.v1Nudge(*dir_, {"/b", 64 * MiB, 0, 256 * MiB}).outcome, Outcome::kDenied);
  ActuatorOptions none;
  none.faultInjector = opts().faultInjector;
  Actuator n(none, journal_.get());  // no allow predicate: nothing allowed
  EXPECT_EQ(n.v1Nudge(*dir_, {"/a", 64 * MiB, 0, 256 * MiB}).outcome, Outcome::kDenied);
  EXPECT_FALSE(n.armV1Threshold(*dir_, "/a", 1).ok());
  EXPECT_TRUE(writes_.empty());
  EXPECT_TRUE(journal_->pending().empty());
}

TEST_F(V1ActuatorTest, ThresholdIsRegisteredOnEventControl) {
  Actuator a(opts(), journal_.get());
  auto efd = a.armV1Threshold(*dir_, "/a", 192 * MiB);
  EXPECT_FALSE(efd.ok());  // a regular file never signals: polling only
  ASSERT_EQ(writes_.size(), 1u);
  EXPECT_EQ(writes_[0].file, "cgroup.event_control");
  // "<eventfd> <usage fd> <threshold>"
  std::string_view text = writes_[0].text;
  EXPECT_EQ(text.substr(text.rfind(' ') + 1), std::to_string(192 * MiB));
  EXPECT_EQ(std::count(text.begin(), text.end(), ' '), 2);
}

TEST_F(V1ActuatorTest, CrashBetweenLowerAndRestoreIsUndoneByTheJournal) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ActuatorOptions o;
    o.allowed = [](std::string_view) { return true; };
    o.afterLower = [] { _exit(42); };  // "kill -9" between lower and restore
    auto j = Journal::open(t_.path("journal"));
    auto d = cgroupfs::CgroupDir::open(t_.path("memory/a"));
    Actuator a(o, j->get());
    (void)a.v1Nudge(**d, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
    _exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 42);
  EXPECT_EQ(limitFile(), std::to_string(186 * MiB));  // left lowered

  auto j = Journal::open(t_.path("journal"));
  ASSERT_TRUE(j.ok());
  auto pending = (*j)->pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].original, 256 * MiB);
  EXPECT_EQ(pending[0].lowered, 186 * MiB);
  Actuator a(ActuatorOptions{}, j->get());  // restores need no allow predicate
  std::string detail;
  EXPECT_EQ(a.restoreFromJournal(pending[0], &detail), Outcome::kOk) << detail;
  EXPECT_EQ(limitFile(), std::to_string(256 * MiB));
  // Replaying again is a no-op.
  EXPECT_EQ(a.restoreFromJournal(pending[0], &detail), Outcome::kNothing);
  // Someone changed it since: left alone.
  t_.write("memory/a/memory.limit_in_bytes", std::to_string(100 * MiB));
  EXPECT_EQ(a.restoreFromJournal(pending[0], &detail), Outcome::kConflict);
  EXPECT_EQ(limitFile(), std::to_string(100 * MiB));
  // Recreated cgroup (new inode) with the lowered value: left alone.
  JournalEntry e = pending[0];
  e.inode += 1;
  t_.write("memory/a/memory.limit_in_bytes", std::to_string(186 * MiB));
  EXPECT_EQ(a.restoreFromJournal(e, &detail), Outcome::kConflict);
  EXPECT_EQ(limitFile(), std::to_string(186 * MiB));
}

class V2ActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::makeV2(t_, "a", 256 * MiB, 200 * MiB);
    auto d = cgroupfs::CgroupDir::open(t_.path("a"));
    ASSERT_TRUE(d.ok());
    dir_ = *d;
  }
  ActuatorOptions opts() {
    ActuatorOptions o;
    o.allowed = [](std::string_view c) { return c == "/a"; };
    o.faultInjector = [this](std::string_view f, std::string_view text) {
      writes_.push_back({std::string(f), std::string(text)});
      return fault_ ? fault_(text) : 0;
    };
    return o;
  }
  TempTree t_;
  std::shared_ptr<cgroupfs::CgroupDir> dir_;
  std::vector<Write> writes_;
  std::function<int(std::string_view)> fault_;
};

TEST_F(V2ActuatorTest, WritesMemoryReclaim) {
  Actuator a(opts(), nullptr);
  auto r = a.v2Reclaim(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kOk) << r.detail;
  EXPECT_EQ(r.reclaimed, 64 * MiB);
  ASSERT_EQ(writes_.size(), 1u);
  EXPECT_EQ(writes_[0].file, "memory.reclaim");
  EXPECT_EQ(t_.read("a/memory.reclaim"), std::to_string(64 * MiB));
  // Floor: usage 200 MiB, floor 180 MiB -> 20 MiB asked.
  r = a.v2Reclaim(*dir_, {"/a", 64 * MiB, 180 * MiB, 256 * MiB});
  EXPECT_EQ(r.requested, 20 * MiB);
}

TEST_F(V2ActuatorTest, EagainWithPartialProgress) {
  fault_ = [this](std::string_view) {
    t_.write("a/memory.current", std::to_string(180 * MiB));
    return EAGAIN;
  };
  Actuator a(opts(), nullptr);
  auto r = a.v2Reclaim(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kPartial);
  EXPECT_EQ(r.reclaimed, 20 * MiB);
  fault_ = [](std::string_view) { return EAGAIN; };
  r = a.v2Reclaim(*dir_, {"/a", 64 * MiB, 16 * MiB, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kBusy);
  EXPECT_EQ(r.reclaimed, 0u);
}

TEST_F(V2ActuatorTest, SwappinessProbedOnce) {
  ActuatorOptions o = opts();
  o.v2Swappiness = 10;
  fault_ = [](std::string_view t) { return t.find("swappiness") != std::string_view::npos ? EINVAL : 0; };
  Actuator old(o, nullptr);
  EXPECT_EQ(old.v2Reclaim(*dir_, {"/a", 8 * MiB, 0, 256 * MiB}).outcome, Outcome::kOk);
  EXPECT_EQ(old.v2Reclaim(*dir_, {"/a", 8 * MiB, 0, 256 * MiB}).outcome, Outcome::kOk);
  ASSERT_EQ(writes_.size(), 3u);  // probe, then plain writes
  EXPECT_EQ(writes_[0].text, "0 swappiness=10");
  EXPECT_EQ(writes_[1].text, std::to_string(8 * MiB));
  EXPECT_FALSE(old.v2SwappinessSupported());

  writes_.clear();
  fault_ = nullptr;
  Actuator neu(o, nullptr);
  EXPECT_EQ(neu.v2Reclaim(*dir_, {"/a", 8 * MiB, 0, 256 * MiB}).outcome, Outcome::kOk);
  ASSERT_EQ(writes_.size(), 2u);
  EXPECT_EQ(writes_[1].text, std::to_string(8 * MiB) + " swappiness=10");
  EXPECT_TRUE(neu.v2SwappinessSupported());
}

TEST_F(V2ActuatorTest, PsiTriggerIsWrittenToMemoryPressure) {
  Actuator a(opts(), nullptr);
  // No memory.pressure (no PSI in this kernel): ENOENT, nothing written.
  auto none = a.armV2PressureTrigger(*dir_, "/a", "some 1000 500000");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().err, ENOENT);
  EXPECT_TRUE(writes_.empty());
  t_.write("a/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  auto fd = a.armV2PressureTrigger(*dir_, "/a", "some 1000 500000");
  EXPECT_FALSE(fd.ok());  // a regular file never signals: polling only
  EXPECT_EQ(fd.error().err, ENOTSUP);
  ASSERT_EQ(writes_.size(), 1u);
  EXPECT_EQ(writes_[0].file, "memory.pressure");
  // The kernel overwrites the last byte written with a NUL, so it is sent.
  EXPECT_EQ(writes_[0].text, std::string("some 1000 500000\0", 17));
  // PSI off for this cgroup (cgroup.pressure 0): the write fails.
  fault_ = [](std::string_view) { return EOPNOTSUPP; };
  auto off = a.armV2PressureTrigger(*dir_, "/a", "some 1000 500000");
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.error().err, EOPNOTSUPP);
  // Outside the allow-list: never written.
  writes_.clear();
  EXPECT_EQ(a.armV2PressureTrigger(*dir_, "/b", "some 1000 500000").error().err, EPERM);
  EXPECT_TRUE(writes_.empty());
}

TEST_F(V2ActuatorTest, MissingMemoryReclaimIsAnError) {
  ::unlink(t_.path("a/memory.reclaim").c_str());
  Actuator a(opts(), nullptr);
  auto r = a.v2Reclaim(*dir_, {"/a", 8 * MiB, 0, 256 * MiB});
  EXPECT_EQ(r.outcome, Outcome::kError);
  EXPECT_NE(r.detail.find("not supported"), std::string::npos);
}

}  // namespace
}  // namespace memcg::controller
