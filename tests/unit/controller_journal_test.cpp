#include <gtest/gtest.h>

#include "controller/journal.h"
#include "tests/support/controller_fixture.h"

namespace memcg::controller {
namespace {

JournalEntry entry(const std::string& cg, uint64_t lowered) {
  JournalEntry e;
  e.cgroup = cg;
  e.dir = "/sys/fs/cgroup/memory" + cg;
  e.inode = 77;
  e.original = 268435456;
  e.lowered = lowered;
  return e;
}

TEST(ControllerJournal, RecordClearAndReopen) {
  testing::TempTree t;
  std::string p = t.path("j");
  {
    auto j = Journal::open(p);
    ASSERT_TRUE(j.ok());
    auto a = (*j)->record(entry("/a", 100));
    auto b = (*j)->record(entry("/b", 200));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_LT(*a, *b);
    ASSERT_TRUE((*j)->clear(*a).ok());
    ASSERT_EQ((*j)->pending().size(), 1u);
  }
  auto j = Journal::open(p);
  ASSERT_TRUE(j.ok());
  auto pend = (*j)->pending();
  ASSERT_EQ(pend.size(), 1u);
  EXPECT_EQ(pend[0].cgroup, "/b");
  EXPECT_EQ(pend[0].lowered, 200u);
  EXPECT_EQ(pend[0].inode, 77u);
  // New seqs continue after the old ones.
  auto c = (*j)->record(entry("/c", 300));
  ASSERT_TRUE(c.ok());
  EXPECT_GT(*c, pend[0].seq);
}

TEST(ControllerJournal, TornTailIsIgnored) {
  testing::TempTree t;
  std::string p = t.path("j");
  {
    auto j = Journal::open(p);
    ASSERT_TRUE((*j)->record(entry("/a", 100)).ok());
  }
  std::string content = t.read("j");
  t.write("j", content + "{\"op\":\"lower\",\"seq\":9,\"cgr");
  auto j = Journal::open(p);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)->pending().size(), 1u);
  EXPECT_EQ((*j)->skippedLines(), 1u);
}

// Found by fuzzing: a field of the wrong type made Journal::open throw
// (json type_error), so the exporter refused to start, controller on or off.
TEST(ControllerJournal, WrongTypedFieldsAreSkippedLines) {
  testing::TempTree t;
  std::string p = t.path("j");
  {
    auto j = Journal::open(p);
    ASSERT_TRUE((*j)->record(entry("/a", 100)).ok());
  }
  std::string content = t.read("j");
  for (const char* field :
       {R"("cgroup":true)", R"("dir":5)", R"("inode":"x")", R"("original":-1)",
        R"("original_unlimited":1)", R"("lowered":1.5)", R"("ts_ms":null)"}) {
    content +=
        std::string(R"({"op":"lower","seq":7,"dir":"/d","lowered":9,)") + field + "}\n";
  }
  t.write("j", content);
  Result<std::unique_ptr<Journal>> j = makeError(0, "");
  ASSERT_NO_THROW(j = Journal::open(p));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)->pending().size(), 1u);
  EXPECT_EQ((*j)->skippedLines(), 7u);
}

TEST(ControllerJournal, CompactKeepsOnlyPending) {
  testing::TempTree t;
  std::string p = t.path("j");
  auto j = Journal::open(p);
  for (int i = 0; i < 10; ++i) {
    auto s = (*j)->record(entry("/a", 100 + i));
    if (i != 7) {
      ASSERT_TRUE((*j)->clear(*s).ok());
    }
  }
  ASSERT_TRUE((*j)->compact().ok());
  std::string content = t.read("j");
  EXPECT_EQ(std::count(content.begin(), content.end(), '\n'), 1);
  EXPECT_NE(content.find("\"lowered\":107"), std::string::npos);
  // Still appendable after the rename.
  ASSERT_TRUE((*j)->record(entry("/b", 5)).ok());
  auto again = Journal::open(p);
  EXPECT_EQ((*again)->pending().size(), 2u);
}

TEST(ControllerJournal, UnopenablePathIsAnError) {
  auto j = Journal::open("/nonexistent-dir-memcg/j");
  EXPECT_FALSE(j.ok());
}

}  // namespace
}  // namespace memcg::controller
