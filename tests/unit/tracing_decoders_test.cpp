// Decoders against the committed 6.18 format files (tests/fixtures/tracefs),
// with records synthesised byte by byte from the offsets in those files.
// No root, no tracefs needed.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/trace_records.h"
#include "tracing/decoders.h"
#include "tracing/event_formats.h"

namespace memcg::tracing {
namespace {

const std::string kFixtures = MEMCG_TRACEFS_FIXTURES;

// Event ids as recorded in the fixture format files (6.18).
constexpr uint16_t kIdMemcgBegin = 636;
constexpr uint16_t kIdMemcgEnd = 633;
constexpr uint16_t kIdDirectBegin = 637;
constexpr uint16_t kIdWakeupKswapd = 638;
constexpr uint16_t kIdKswapdWake = 639;
constexpr uint16_t kIdKswapdSleep = 640;
constexpr uint16_t kIdLruShrinkInactive = 626;
constexpr uint16_t kIdAttach = 538;
constexpr uint16_t kIdFork = 366;
constexpr uint16_t kIdExit = 369;

using Rec = memcg::testing::RawRecord;

class DecoderTest : public memcg::testing::FormatFixtureTest {
 protected:
  DecoderTest() : FormatFixtureTest(kFixtures) {}
};

TEST_F(DecoderTest, AllFixtureEventsSupported) {
  EXPECT_TRUE(formats_->missing().empty());
  for (const auto& en : kEventNames) {
    EXPECT_TRUE(dec_->supports(en.type)) << en.name;
  }
  EXPECT_EQ(dec_->eventId(EventType::kMemcgReclaimEnd), kIdMemcgEnd);
  EXPECT_EQ(dec_->eventId(EventType::kLruShrinkInactive), kIdLruShrinkInactive);
}

TEST_F(DecoderTest, FieldOffsetsResolvedFromFormat) {
  struct Row {
    EventType type;
    Decoder::FieldSlot slot;
    uint16_t offset;
    uint8_t size;
  };
  const Row rows[] = {
      {EventType::kMemcgReclaimBegin, Decoder::kOrder, 8, 4},
      {EventType::kMemcgReclaimEnd, Decoder::kNrReclaimed, 8, 8},
      {EventType::kWakeupKswapd, Decoder::kOrder, 16, 4},
      {EventType::kLruShrinkInactive, Decoder::kNrScanned, 16, 8},
      {EventType::kLruShrinkInactive, Decoder::kNrReclaimed, 24, 8},
      {EventType::kLruShrinkInactive, Decoder::kReclaimFlags, 92, 4},
      {EventType::kCgroupAttach, Decoder::kDstId, 16, 8},
      {EventType::kCgroupAttach, Decoder::kTargetPid, 24, 4},
      {EventType::kCgroupAttach, Decoder::kDstPath, 28, 4},
      {EventType::kProcessFork, Decoder::kTargetPid, 20, 4},
      {EventType::kProcessExit, Decoder::kTargetPid, 24, 4},
  };
  for (const Row& r : rows) {
    const auto& f = dec_->field(r.type, r.slot);
    EXPECT_TRUE(f.present) << eventName(r.type)->name;
    EXPECT_EQ(f.offset, r.offset) << eventName(r.type)->name;
    EXPECT_EQ(f.size, r.size) << eventName(r.type)->name;
  }
  EXPECT_EQ(dec_->commonPid().offset, 4);
  EXPECT_EQ(dec_->commonType().size, 2);
}

TEST_F(DecoderTest, TableOfRecords) {
  struct Row {
    const char* name;
    Rec rec;
    EventType type;
    int32_t order, nid;
    uint64_t reclaimed, scanned;
  };
  std::vector<Row> rows;
  rows.push_back({"memcg begin",
                  Rec(24, kIdMemcgBegin, 42).put(8, 3, 4).put(16, 0xcc0, 8),
                  EventType::kMemcgReclaimBegin, 3, 0, 0, 0});
  rows.push_back({"memcg end", Rec(16, kIdMemcgEnd, 42).put(8, 32, 8),
                  EventType::kMemcgReclaimEnd, 0, 0, 32, 0});
  rows.push_back({"direct begin", Rec(24, kIdDirectBegin, 7).put(8, 0, 4),
                  EventType::kDirectReclaimBegin, 0, 0, 0, 0});
  rows.push_back({"wakeup_kswapd", Rec(32, kIdWakeupKswapd, 9).put(8, 1, 4).put(16, 2, 4),
                  EventType::kWakeupKswapd, 2, 1, 0, 0});
  rows.push_back({"kswapd wake", Rec(20, kIdKswapdWake, 55).put(8, 0, 4).put(16, 9, 4),
                  EventType::kKswapdWake, 9, 0, 0, 0});
  rows.push_back({"kswapd sleep", Rec(12, kIdKswapdSleep, 55).put(8, 1, 4),
                  EventType::kKswapdSleep, 0, 1, 0, 0});
  rows.push_back({"lru",
                  Rec(96, kIdLruShrinkInactive, 42)
                      .put(8, 0, 4)
                      .put(16, 64, 8)
                      .put(24, 30, 8)
                      .put(32, 5, 8)
                      .put(40, 2, 8)
                      .put(92, 0x2 | 0x8, 4),
                  EventType::kLruShrinkInactive, 0, 0, 30, 64});
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    Event e = decode(r.rec, 12345);
    EXPECT_EQ(e.type, r.type);
    EXPECT_EQ(e.ts, 12345u);
    EXPECT_EQ(e.order, r.order);
    EXPECT_EQ(e.nid, r.nid);
    EXPECT_EQ(e.nr_reclaimed, r.reclaimed);
    EXPECT_EQ(e.nr_scanned, r.scanned);
  }
  Event lru = decode(rows.back().rec);
  EXPECT_EQ(lru.pid, 42);
  EXPECT_EQ(lru.nr_dirty, 5u);
  EXPECT_EQ(lru.nr_writeback, 2u);
  EXPECT_EQ(lru.reclaim_flags, 0xau);
}

TEST_F(DecoderTest, CgroupAttachDataLocString) {
  const std::string path = "/memcg_exporter_test_x";
  const std::string comm = "cat";
  // Fixed part is 36 bytes; strings follow, each NUL-terminated.
  Rec r(36 + path.size() + 1 + comm.size() + 1, kIdAttach, 1);
  uint32_t poff = 36, plen = static_cast<uint32_t>(path.size() + 1);
  uint32_t coff = poff + plen, clen = static_cast<uint32_t>(comm.size() + 1);
  r.put(8, 4, 4).put(12, 1, 4).put(16, 9876, 8).put(24, 4242, 4);
  r.put(28, (plen << 16) | poff, 4).put(32, (clen << 16) | coff, 4);
  std::memcpy(r.b.data() + poff, path.c_str(), plen);
  std::memcpy(r.b.data() + coff, comm.c_str(), clen);
  Event e = decode(r);
  EXPECT_EQ(e.type, EventType::kCgroupAttach);
  EXPECT_EQ(e.dst_root, 4);
  EXPECT_EQ(e.dst_id, 9876u);
  EXPECT_EQ(e.target_pid, 4242);
  EXPECT_EQ(e.dst_path, path);

  // A data_loc pointing past the record is rejected, not read.
  r.put(28, (200u << 16) | poff, 4);
  Event bad;
  EXPECT_FALSE(dec_->decode(r.b.data(), static_cast<uint32_t>(r.b.size()), 1, bad));
}

TEST_F(DecoderTest, ForkAndExit) {
  Rec fork(24, kIdFork, 100);
  fork.put(12, 100, 4).put(20, 101, 4);
  Event f = decode(fork);
  EXPECT_EQ(f.type, EventType::kProcessFork);
  EXPECT_EQ(f.pid, 100);
  EXPECT_EQ(f.target_pid, 101);
  Rec exit(36, kIdExit, 101);
  exit.put(24, 101, 4);
  Event x = decode(exit);
  EXPECT_EQ(x.type, EventType::kProcessExit);
  EXPECT_EQ(x.target_pid, 101);
}

TEST_F(DecoderTest, UnknownAndShortRecords) {
  Event e;
  Rec unknown(16, 1, 1);
  EXPECT_FALSE(dec_->decode(unknown.b.data(), 16, 1, e));
  EXPECT_EQ(e.type, EventType::kUnknown);
  Rec big_id(16, 60000, 1);
  EXPECT_FALSE(dec_->decode(big_id.b.data(), 16, 1, e));
  Rec short_end(12, kIdMemcgEnd, 1);  // nr_reclaimed needs bytes 8..16
  EXPECT_FALSE(dec_->decode(short_end.b.data(), 12, 1, e));
  EXPECT_FALSE(dec_->decode(short_end.b.data(), 3, 1, e));
}

TEST(EventFormatsTest, MissingRootIsAnError) {
  auto f = EventFormats::load("/nonexistent/tracefs");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().err, ENOENT);
  EXPECT_NE(f.error().path.find("header_page"), std::string::npos);
}

TEST(EventFormatsTest, MissingEventIsSkipped) {
  namespace fs = std::filesystem;
  fs::path tmp =
      fs::temp_directory_path() / ("tracing_formats_" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixtures, tmp, fs::copy_options::recursive);
  fs::remove_all(tmp / "events/vmscan/mm_vmscan_memcg_softlimit_reclaim_begin");
  auto f = EventFormats::load(tmp.string());
  fs::remove_all(tmp);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_FALSE(f->has(EventType::kSoftlimitReclaimBegin));
  EXPECT_TRUE(f->has(EventType::kMemcgReclaimBegin));
  ASSERT_EQ(f->missing().size(), 1u);
  auto d = Decoder::create(*f);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->supports(EventType::kSoftlimitReclaimBegin));
}

TEST(EventFormatsTest, MalformedFormatIsAnError) {
  namespace fs = std::filesystem;
  fs::path tmp =
      fs::temp_directory_path() / ("tracing_formats_bad_" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixtures, tmp, fs::copy_options::recursive);
  {
    FILE* fp = fopen((tmp / "events/vmscan/mm_vmscan_kswapd_sleep/format").c_str(), "w");
    fputs("name: mm_vmscan_kswapd_sleep\nID: abc\nformat:\n\tgarbage\n", fp);
    fclose(fp);
  }
  auto f = EventFormats::load(tmp.string());
  fs::remove_all(tmp);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().err, EINVAL);
}


// --- LRU/writeback/slab detail events and cgroup_rmdir (6.18 fixtures) -------

constexpr uint16_t kIdLruIsolate = 629;
constexpr uint16_t kIdLruShrinkActive = 625;
constexpr uint16_t kIdWriteFolio = 628;
constexpr uint16_t kIdThrottled = 622;
constexpr uint16_t kIdSlabStart = 631;
constexpr uint16_t kIdSlabEnd = 630;
constexpr uint16_t kIdReclaimPages = 627;
constexpr uint16_t kIdRmdir = 543;

TEST_F(DecoderTest, ScanDetailEventIds) {
  EXPECT_EQ(dec_->eventId(EventType::kLruIsolate), kIdLruIsolate);
  EXPECT_EQ(dec_->eventId(EventType::kLruShrinkActive), kIdLruShrinkActive);
  EXPECT_EQ(dec_->eventId(EventType::kWriteFolio), kIdWriteFolio);
  EXPECT_EQ(dec_->eventId(EventType::kThrottled), kIdThrottled);
  EXPECT_EQ(dec_->eventId(EventType::kShrinkSlabStart), kIdSlabStart);
  EXPECT_EQ(dec_->eventId(EventType::kShrinkSlabEnd), kIdSlabEnd);
  EXPECT_EQ(dec_->eventId(EventType::kReclaimPages), kIdReclaimPages);
  EXPECT_EQ(dec_->eventId(EventType::kCgroupRmdir), kIdRmdir);
  EXPECT_EQ(std::string(formats_->nameOf(EventType::kWriteFolio)), "mm_vmscan_write_folio");
}

TEST_F(DecoderTest, LruIsolateAndShrinkActive) {
  // isolate: nr_requested@16 nr_scanned@24 nr_skipped@32 nr_taken@40 lru@48
  Rec iso(52, kIdLruIsolate, 77);
  iso.put(8, 2, 4).put(16, 32, 8).put(24, 40, 8).put(32, 3, 8).put(40, 31, 8).put(48, 3, 4);
  Event i = decode(iso);
  EXPECT_EQ(i.type, EventType::kLruIsolate);
  EXPECT_EQ(i.pid, 77);
  EXPECT_EQ(i.nr_scanned, 40u);
  EXPECT_EQ(i.nr_taken, 31u);
  EXPECT_EQ(i.lru, 3);  // active_file
  // shrink_active: nid@8 nr_taken@16 nr_active@24 nr_deactivated@32 reclaim_flags@52
  Rec act(56, kIdLruShrinkActive, 78);
  act.put(8, 1, 4).put(16, 32, 8).put(24, 20, 8).put(32, 12, 8).put(40, 5, 8);
  act.put(48, 12, 4).put(52, kReclaimWbFile | kReclaimWbAsync, 4);
  Event a = decode(act);
  EXPECT_EQ(a.type, EventType::kLruShrinkActive);
  EXPECT_EQ(a.nid, 1);
  EXPECT_EQ(a.nr_taken, 32u);
  EXPECT_EQ(a.nr_deactivated, 12u);
  EXPECT_EQ(a.reclaim_flags, kReclaimWbFile | kReclaimWbAsync);
}

TEST_F(DecoderTest, WriteFolioThrottledReclaimPages) {
  Rec w(24, kIdWriteFolio, 5);
  w.put(8, 0x12345, 8).put(16, kReclaimWbAnon | kReclaimWbSync, 4);
  Event we = decode(w);
  EXPECT_EQ(we.type, EventType::kWriteFolio);
  EXPECT_EQ(we.reclaim_flags, kReclaimWbAnon | kReclaimWbSync);

  // throttled: nid@8 usec_timeout@12 usec_delayed@16 reason@20
  Rec t(24, kIdThrottled, 6);
  t.put(8, 0, 4).put(12, 100000, 4).put(16, 2500, 4).put(20, 1u << 2, 4);
  Event te = decode(t);
  EXPECT_EQ(te.type, EventType::kThrottled);
  EXPECT_EQ(te.delayed_us, 2500u);
  EXPECT_EQ(te.reason, 4u);
  t.put(16, static_cast<uint32_t>(-1), 4);  // a negative delay is read as 0
  EXPECT_EQ(decode(t).delayed_us, 0u);

  // reclaim_pages: nid@8 nr_scanned@16 nr_reclaimed@24 nr_dirty@32 nr_writeback@40
  Rec rp(88, kIdReclaimPages, 7);
  rp.put(8, 0, 4).put(16, 512, 8).put(24, 500, 8).put(32, 4, 8).put(40, 2, 8);
  Event r = decode(rp);
  EXPECT_EQ(r.type, EventType::kReclaimPages);
  EXPECT_EQ(r.nr_scanned, 512u);
  EXPECT_EQ(r.nr_reclaimed, 500u);
  EXPECT_EQ(r.nr_dirty, 4u);
  EXPECT_EQ(r.nr_writeback, 2u);
}

TEST_F(DecoderTest, ShrinkSlabStartEnd) {
  Rec st(80, kIdSlabStart, 9);
  st.put(24, 1, 4).put(32, 128, 8);
  Event s = decode(st);
  EXPECT_EQ(s.type, EventType::kShrinkSlabStart);
  EXPECT_EQ(s.nid, 1);
  // end: nid@16 retval@48 (int)
  Rec en(64, kIdSlabEnd, 9);
  en.put(16, 1, 4).put(48, 77, 4);
  Event e = decode(en);
  EXPECT_EQ(e.type, EventType::kShrinkSlabEnd);
  EXPECT_EQ(e.freed, 77);
  en.put(48, static_cast<uint32_t>(-2), 4);
  EXPECT_EQ(decode(en).freed, -2);
}

TEST_F(DecoderTest, CgroupRmdir) {
  const std::string path = "/memcg_exporter_test_gone";
  // root@8 level@12 id@16 path(data_loc)@24; string after the 28-byte fixed part.
  Rec r(28 + path.size() + 1, kIdRmdir, 1);
  uint32_t len = static_cast<uint32_t>(path.size() + 1);
  r.put(8, 4, 4).put(12, 1, 4).put(16, 5555, 8).put(24, (len << 16) | 28u, 4);
  std::memcpy(r.b.data() + 28, path.c_str(), len);
  Event e = decode(r);
  EXPECT_EQ(e.type, EventType::kCgroupRmdir);
  EXPECT_EQ(e.dst_root, 4);
  EXPECT_EQ(e.dst_id, 5555u);
  EXPECT_EQ(e.dst_path, path);
}

TEST(EventFormatsTest, OlderNameOfWriteFolioIsUsed) {
  // 6.1 has mm_vmscan_writepage (same pfn/reclaim_flags fields) instead.
  namespace fs = std::filesystem;
  fs::path tmp = fs::temp_directory_path() / ("tracing_formats_old_" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixtures, tmp, fs::copy_options::recursive);
  fs::path vm = tmp / "events/vmscan";
  fs::create_directories(vm / "mm_vmscan_writepage");
  {
    std::string text;
    {
      FILE* in = fopen((vm / "mm_vmscan_write_folio/format").c_str(), "r");
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, n);
      fclose(in);
    }
    text.replace(text.find("mm_vmscan_write_folio"), 21, "mm_vmscan_writepage");
    FILE* out = fopen((vm / "mm_vmscan_writepage/format").c_str(), "w");
    fputs(text.c_str(), out);
    fclose(out);
  }
  fs::remove_all(vm / "mm_vmscan_write_folio");
  fs::remove_all(vm / "mm_vmscan_throttled");  // absent before 5.16: just missing
  auto f = EventFormats::load(tmp.string());
  fs::remove_all(tmp);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_TRUE(f->has(EventType::kWriteFolio));
  EXPECT_EQ(std::string(f->nameOf(EventType::kWriteFolio)), "mm_vmscan_writepage");
  EXPECT_FALSE(f->has(EventType::kThrottled));
  auto d = Decoder::create(*f);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->supports(EventType::kWriteFolio));
  EXPECT_EQ(d->eventId(EventType::kWriteFolio), kIdWriteFolio);
  EXPECT_FALSE(d->supports(EventType::kThrottled));
}

}  // namespace
}  // namespace memcg::tracing
