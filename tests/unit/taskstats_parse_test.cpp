// TASKSTATS parsing on replies captured from Linux 6.18 (TASKSTATS v16) and on
// synthesized edge cases; the per-cgroup ledger on captured exit records; the
// pid-list reader, the delayacct sysctl and the JSON table renderer.
#include <gtest/gtest.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "collectors/taskstats/cgroup_delays.h"
#include "collectors/taskstats/delay_ledger.h"
#include "collectors/taskstats/delay_table.h"
#include "collectors/taskstats/delayacct_sysctl.h"
#include "collectors/taskstats/taskstats_format.h"

namespace memcg::taskstats {
namespace {

namespace fs = std::filesystem;

// Family id of TASKSTATS on the machine the fixtures were captured on.
constexpr uint16_t kFamily = 31;
constexpr size_t kV16Len = 560;  // sizeof(struct taskstats) at version 16

std::vector<uint8_t> fixture(const std::string& name) {
  std::ifstream f(std::string(MEMCG_TASKSTATS_FIXTURES) + "/" + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// --- message builders for synthesized cases ---------------------------------

std::vector<uint8_t> attr(uint16_t type, const std::vector<uint8_t>& payload) {
  nlattr h{static_cast<uint16_t>(NLA_HDRLEN + payload.size()), type};
  std::vector<uint8_t> b(NLA_ALIGN(NLA_HDRLEN + payload.size()), 0);
  std::memcpy(b.data(), &h, sizeof(h));
  if (!payload.empty())
    std::memcpy(b.data() + NLA_HDRLEN, payload.data(), payload.size());
  return b;
}

std::vector<uint8_t> u32attr(uint16_t type, uint32_t v) {
  return attr(type, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&v),
                                         reinterpret_cast<uint8_t*>(&v) + 4));
}

std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> b;
  for (const auto& p : parts) b.insert(b.end(), p.begin(), p.end());
  return b;
}

std::vector<uint8_t> message(uint16_t type, uint8_t cmd,
                             const std::vector<uint8_t>& attrs, uint32_t seq = 7) {
  std::vector<uint8_t> b(NLMSG_HDRLEN + GENL_HDRLEN, 0);
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(b.size() + attrs.size());
  h.nlmsg_type = type;
  h.nlmsg_seq = seq;
  genlmsghdr g{cmd, 1, 0};
  std::memcpy(b.data(), &h, sizeof(h));
  std::memcpy(b.data() + NLMSG_HDRLEN, &g, sizeof(g));
  b.insert(b.end(), attrs.begin(), attrs.end());
  return b;
}

// A struct taskstats of `len` bytes with version `version`, each u64 at
// offset `off` set by the caller.
struct StructBuilder {
  std::vector<uint8_t> b;
  StructBuilder(uint16_t version, size_t len) : b(len, 0) {
    std::memcpy(b.data(), &version, 2);
  }
  StructBuilder& u64(size_t off, uint64_t v) {
    std::memcpy(b.data() + off, &v, 8);
    return *this;
  }
};

std::vector<uint8_t> pidReply(uint32_t pid, const std::vector<uint8_t>& stats) {
  return message(
      kFamily, TASKSTATS_CMD_NEW,
      attr(TASKSTATS_TYPE_AGGR_PID, concat({u32attr(TASKSTATS_TYPE_PID, pid),
                                            attr(TASKSTATS_TYPE_STATS, stats)})));
}

// Offsets of the standard layout (v1-v14, v16, v17) as published in the UAPI header.
constexpr size_t kCpuCount = offsetof(struct ::taskstats, cpu_count);
constexpr size_t kCpuTotal = offsetof(struct ::taskstats, cpu_delay_total);
constexpr size_t kFreepagesCount = offsetof(struct ::taskstats, freepages_count);
constexpr size_t kFreepagesTotal = offsetof(struct ::taskstats, freepages_delay_total);
constexpr size_t kWpcopyTotal = offsetof(struct ::taskstats, wpcopy_delay_total);
constexpr size_t kV13Len = kWpcopyTotal + 8;
constexpr size_t kV14Len = kV13Len + 16;              // + irq_count, irq_delay_total
constexpr size_t kFreepagesMaxV16 = kV14Len + 6 * 8;  // cpu/blkio/swapin max+min first

// --- captured replies --------------------------------------------------------

TEST(TaskstatsParse, CapturedPidReply) {
  auto raw = fixture("reply_pid_1.bin");
  auto m = parseTaskstatsMessage(raw, kFamily);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->error, 0);
  ASSERT_TRUE(m->pid.has_value());
  EXPECT_EQ(*m->pid, 1u);
  ASSERT_TRUE(m->pid_stats.has_value());
  EXPECT_FALSE(m->tgid_stats.has_value());
  const TaskStats& ts = *m->pid_stats;
  EXPECT_EQ(ts.version, 16);
  EXPECT_EQ(ts.struct_len, kV16Len);
  EXPECT_EQ(ts.ac_pid, 1u);
  EXPECT_EQ(ts.ac_tgid, 1u);
  EXPECT_FALSE(ts.comm.empty());
  EXPECT_EQ(ts.has_total, 0xff);  // all eight classes
  EXPECT_EQ(ts.has_max, 0xff);
  EXPECT_GT(ts[DelayClass::kCpu].count, 0u);
  EXPECT_GT(ts[DelayClass::kCpu].total_ns, 0u);
  EXPECT_GE(ts[DelayClass::kCpu].total_ns, ts[DelayClass::kCpu].max_ns);
  EXPECT_GT(ts.cpu_run_real_total_ns, 0u);
  EXPECT_FALSE(ts.groupDead());
}

TEST(TaskstatsParse, CapturedReplyOfAReclaimingTask) {
  auto m = parseTaskstatsMessage(fixture("reply_pid_reclaim.bin"), kFamily);
  ASSERT_TRUE(m.ok()) << m.error().message();
  const TaskStats& ts = *m->pid_stats;
  EXPECT_EQ(ts.comm, "python3");
  EXPECT_EQ(ts[DelayClass::kFreepages].count, 219u);
  EXPECT_EQ(ts[DelayClass::kFreepages].total_ns, 30058419u);
  EXPECT_EQ(ts[DelayClass::kFreepages].max_ns, 4655392u);
  EXPECT_EQ(ts[DelayClass::kBlkio].count, 35u);
  EXPECT_EQ(ts[DelayClass::kIrq].count, 0u);
}

TEST(TaskstatsParse, CapturedTgidReplyHasNoBasicAccounting) {
  auto raw = fixture("reply_tgid_1.bin");
  auto m = parseTaskstatsMessage(raw, kFamily);
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_TRUE(m->tgid.has_value());
  EXPECT_EQ(*m->tgid, 1u);
  ASSERT_TRUE(m->tgid_stats.has_value());
  EXPECT_FALSE(m->pid_stats.has_value());
  EXPECT_EQ(m->tgid_stats->version, 16);
  EXPECT_TRUE(m->tgid_stats->comm.empty());  // fill_stats_for_tgid skips bacct
  EXPECT_GT((*m->tgid_stats)[DelayClass::kCpu].count, 0u);
}

TEST(TaskstatsParse, CapturedErrorReply) {
  auto raw = fixture("reply_esrch.bin");
  auto m = parseTaskstatsMessage(raw, kFamily);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->error, ESRCH);
  EXPECT_FALSE(m->pid_stats.has_value());
}

// An NLMSG_ERROR whose code is no negative errno (or 0) is a corrupt message,
// not an errno: the fuzzer's INT32_MIN made the negation overflow.
TEST(TaskstatsParse, ErrorCodeOutOfRangeIsAnError) {
  auto errorMessage = [](int32_t code) {
    std::vector<uint8_t> raw(NLMSG_HDRLEN + sizeof(int32_t) + sizeof(nlmsghdr), 0);
    nlmsghdr h{};
    h.nlmsg_len = static_cast<uint32_t>(raw.size());
    h.nlmsg_type = NLMSG_ERROR;
    std::memcpy(raw.data(), &h, sizeof h);
    std::memcpy(raw.data() + NLMSG_HDRLEN, &code, sizeof code);
    return raw;
  };
  for (int32_t code : {INT32_MIN, -4096, 1, INT32_MAX})
    EXPECT_FALSE(parseTaskstatsMessage(errorMessage(code), kFamily).ok()) << code;
  for (int32_t code : {0, -ESRCH, -4095}) {
    auto m = parseTaskstatsMessage(errorMessage(code), kFamily);
    ASSERT_TRUE(m.ok()) << code << ": " << m.error().message();
    EXPECT_EQ(m->error, -code);
  }
  // The family query's error reply likewise: EINVAL for a corrupt code.
  auto f = parseFamilyReply(errorMessage(INT32_MIN));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().err, EINVAL);
  f = parseFamilyReply(errorMessage(-EPERM));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().err, EPERM);
}

TEST(TaskstatsParse, CapturedExitOfSingleThreadedProcess) {
  auto raw = fixture("exit_single_0.bin");
  auto m = parseTaskstatsMessage(raw, kFamily);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->port, 0u);
  ASSERT_TRUE(m->pid_stats.has_value());
  EXPECT_FALSE(m->tgid_stats.has_value());
  EXPECT_TRUE(m->pid_stats->groupDead());
  EXPECT_EQ(m->pid_stats->exitcode, 3u << 8);  // _exit(3)
  EXPECT_EQ(m->pid_stats->ac_pid, *m->pid);
  EXPECT_EQ(m->pid_stats->ac_tgid, *m->pid);
}

TEST(TaskstatsParse, CapturedExitsOfThreeThreadProcess) {
  auto thread = parseTaskstatsMessage(fixture("exit_multi_1.bin"), kFamily);
  ASSERT_TRUE(thread.ok());
  EXPECT_FALSE(thread->pid_stats->groupDead());
  EXPECT_FALSE(thread->tgid_stats.has_value());

  auto last = parseTaskstatsMessage(fixture("exit_multi_3.bin"), kFamily);
  ASSERT_TRUE(last.ok()) << last.error().message();
  ASSERT_TRUE(last->pid_stats && last->tgid_stats && last->tgid);
  EXPECT_TRUE(last->pid_stats->groupDead());
  EXPECT_EQ(*last->tgid, last->pid_stats->ac_tgid);
  // The process total covers its three threads, so it is at least the last one's.
  EXPECT_GE((*last->tgid_stats)[DelayClass::kCpu].count,
            (*last->pid_stats)[DelayClass::kCpu].count);
}

TEST(TaskstatsParse, DatagramSplitting) {
  auto a = fixture("reply_pid_1.bin");
  auto b = fixture("reply_esrch.bin");
  auto both = concat({a, b});
  int n = 0;
  Status s = forEachNetlinkMessage(both, [&](std::span<const uint8_t>) { ++n; });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(n, 2);
  both.resize(both.size() - 10);
  EXPECT_FALSE(forEachNetlinkMessage(both, [](std::span<const uint8_t>) {}).ok());
}

// --- synthesized edge cases ------------------------------------------------

TEST(TaskstatsParse, ShortStructIsAnError) {
  auto r = parseTaskstatsStruct(std::vector<uint8_t>(40, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EINVAL);
  auto m = parseTaskstatsMessage(pidReply(5, std::vector<uint8_t>(20, 0)), kFamily);
  EXPECT_FALSE(m.ok());
}

TEST(TaskstatsParse, TruncatedMessagesAreErrors) {
  auto raw = fixture("reply_pid_1.bin");
  // Shorter than the header says.
  EXPECT_FALSE(parseTaskstatsMessage(std::span(raw).first(300), kFamily).ok());
  // An attribute claiming more than the message holds.
  auto bad = raw;
  uint16_t huge = 0xfff0;
  std::memcpy(bad.data() + NLMSG_HDRLEN + GENL_HDRLEN, &huge, 2);
  EXPECT_FALSE(parseTaskstatsMessage(bad, kFamily).ok());
  EXPECT_FALSE(parseTaskstatsMessage(std::span(raw).first(10), kFamily).ok());
}

TEST(TaskstatsParse, WrongFamilyOrCommandIsAnError) {
  auto raw = fixture("reply_pid_1.bin");
  EXPECT_FALSE(parseTaskstatsMessage(raw, kFamily + 1).ok());
  auto get = message(kFamily, TASKSTATS_CMD_GET, {});
  EXPECT_FALSE(parseTaskstatsMessage(get, kFamily).ok());
}

TEST(TaskstatsParse, VersionOneHasOnlyTheFirstThreeClasses) {
  StructBuilder s(1, 64);  // version 1 ends after cpu_run_virtual_total
  s.u64(kCpuCount, 4).u64(kCpuTotal, 4000);
  auto r = parseTaskstatsStruct(s.b);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->has(DelayClass::kCpu));
  EXPECT_TRUE(r->has(DelayClass::kSwapin));
  EXPECT_FALSE(r->has(DelayClass::kFreepages));
  EXPECT_FALSE(r->has(DelayClass::kIrq));
  EXPECT_EQ(r->has_max, 0);
  EXPECT_EQ((*r)[DelayClass::kCpu].total_ns, 4000u);
  EXPECT_TRUE(r->comm.empty());
}

TEST(TaskstatsParse, Version13HasWpcopyButNoIrqNorMax) {
  StructBuilder s(13, kV13Len);
  s.u64(kFreepagesCount, 9).u64(kFreepagesTotal, 9000).u64(kWpcopyTotal, 77);
  auto r = parseTaskstatsStruct(s.b);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->has(DelayClass::kWpcopy));
  EXPECT_FALSE(r->has(DelayClass::kIrq));
  EXPECT_EQ(r->has_max, 0);
  EXPECT_EQ((*r)[DelayClass::kFreepages].count, 9u);
  EXPECT_EQ((*r)[DelayClass::kFreepages].total_ns, 9000u);
  EXPECT_EQ((*r)[DelayClass::kWpcopy].total_ns, 77u);
}

TEST(TaskstatsParse, Version14HasIrqButNoMax) {
  StructBuilder s(14, kV14Len);
  auto r = parseTaskstatsStruct(s.b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->has_total, 0xff);
  EXPECT_EQ(r->has_max, 0);
}

TEST(TaskstatsParse, Version16MaxAtTheEnd) {
  StructBuilder s(16, kV16Len);
  s.u64(kFreepagesCount, 3).u64(kFreepagesTotal, 3000).u64(kFreepagesMaxV16, 1500);
  auto r = parseTaskstatsStruct(s.b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->has_max, 0xff);
  EXPECT_EQ((*r)[DelayClass::kFreepages].max_ns, 1500u);
}

TEST(TaskstatsParse, Version15MaxInTheMiddle) {
  // Version 15 put max/min right after each total, moving everything after
  // cpu_delay_total: cpu count,total,max,min, blkio x4, swapin x4, run real...
  StructBuilder s(15, kV16Len);
  ASSERT_EQ(kCpuCount, 16u);
  s.u64(16, 5).u64(24, 500).u64(32, 200);  // cpu count, total, max (min at 40)
  s.u64(48, 6).u64(56, 600).u64(64, 300);  // blkio
  auto r = parseTaskstatsStruct(s.b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[DelayClass::kCpu].count, 5u);
  EXPECT_EQ((*r)[DelayClass::kCpu].max_ns, 200u);
  EXPECT_EQ((*r)[DelayClass::kBlkio].count, 6u);
  EXPECT_EQ((*r)[DelayClass::kBlkio].total_ns, 600u);
  EXPECT_EQ((*r)[DelayClass::kBlkio].max_ns, 300u);
  EXPECT_EQ(r->has_max, 0xff);
}

TEST(TaskstatsParse, NewerLongerStructStillParses) {
  auto raw = fixture("reply_pid_1.bin");
  auto m = parseTaskstatsMessage(raw, kFamily);
  ASSERT_TRUE(m.ok());
  // Rebuild the reply as a future version with 200 more bytes.
  auto captured = parseTaskstatsStruct(
      std::span(raw).subspan(raw.size() - kV16Len, kV16Len));  // STATS is last
  ASSERT_TRUE(captured.ok());
  std::vector<uint8_t> longer(raw.end() - kV16Len, raw.end());
  longer.resize(kV16Len + 200, 0xab);
  uint16_t v = 18;
  std::memcpy(longer.data(), &v, 2);
  auto r = parseTaskstatsStruct(longer);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->version, 18);
  EXPECT_EQ((*r)[DelayClass::kCpu].count, (*captured)[DelayClass::kCpu].count);
  EXPECT_EQ(r->has_max, 0xff);
}

TEST(TaskstatsParse, UnknownAndPaddingAttributesAreSkipped) {
  StructBuilder s(16, kV16Len);
  s.u64(kFreepagesCount, 2).u64(kFreepagesTotal, 20);
  auto nested = concat({attr(TASKSTATS_TYPE_NULL, {}), u32attr(TASKSTATS_TYPE_PID, 42),
                        attr(99, {1, 2, 3}), attr(TASKSTATS_TYPE_STATS, s.b)});
  auto msg =
      message(kFamily, TASKSTATS_CMD_NEW,
              concat({attr(77, {9, 9, 9, 9, 9}), attr(TASKSTATS_TYPE_AGGR_PID, nested),
                      attr(TASKSTATS_TYPE_NULL, {})}));
  auto m = parseTaskstatsMessage(msg, kFamily);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(*m->pid, 42u);
  EXPECT_EQ((*m->pid_stats)[DelayClass::kFreepages].total_ns, 20u);
}

TEST(TaskstatsParse, MisalignedBufferIsFine) {
  auto raw = fixture("reply_pid_1.bin");
  std::vector<uint8_t> shifted(raw.size() + 1);
  std::memcpy(shifted.data() + 1, raw.data(), raw.size());
  auto m = parseTaskstatsMessage(std::span(shifted).subspan(1), kFamily);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pid_stats->version, 16);
}

TEST(TaskstatsParse, FamilyReply) {
  std::vector<uint8_t> name = {'T', 'A', 'S', 'K', 'S', 'T', 'A', 'T', 'S', 0};
  uint16_t id = 31;
  auto msg = message(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY,
                     concat({attr(CTRL_ATTR_FAMILY_NAME, name),
                             attr(CTRL_ATTR_FAMILY_ID, {static_cast<uint8_t>(id), 0})}));
  auto r = parseFamilyReply(msg);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, 31);
  auto none =
      message(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, attr(CTRL_ATTR_FAMILY_NAME, name));
  EXPECT_FALSE(parseFamilyReply(none).ok());
}

TEST(TaskstatsParse, ClassTableIsInKernelOrder) {
  for (size_t i = 0; i < kDelayClassCount; ++i) {
    EXPECT_EQ(static_cast<size_t>(kDelayClasses[i].cls), i);
  }
  EXPECT_EQ(delayClassInfo(DelayClass::kFreepages).metric_name, "reclaim");
  EXPECT_EQ(delayClassInfo(DelayClass::kFreepages).getdelays, "RECLAIM");
}

// --- ledger ----------------------------------------------------------------

TaskStats stats(uint64_t reclaim_count, uint64_t reclaim_ns, uint64_t max_ns = 0) {
  TaskStats ts;
  ts.version = 16;
  ts.has_total = 0xff;
  ts.has_max = 0xff;
  ts[DelayClass::kFreepages] = {reclaim_count, reclaim_ns, max_ns};
  return ts;
}

TaskstatsMessage exitOf(uint32_t tgid, const TaskStats& fin, bool group_dead = true) {
  TaskstatsMessage m;
  m.pid = tgid;
  m.pid_stats = fin;
  m.pid_stats->ac_pid = tgid;
  m.pid_stats->ac_tgid = tgid;
  m.pid_stats->ac_flag = group_dead ? 0x20 : 0;  // AGROUP
  return m;
}

const DelayCounter& reclaim(const CgroupDelays& d) { return d[DelayClass::kFreepages]; }

TEST(DelayLedger, SumsLiveProcesses) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10, 11};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(2, 200, 150));
  l.observe("/cg", 11, stats(3, 300, 100));
  auto d = l.end("/cg");
  EXPECT_EQ(reclaim(d).count, 5u);
  EXPECT_EQ(reclaim(d).total_ns, 500u);
  EXPECT_EQ(reclaim(d).max_ns, 150u);
  EXPECT_EQ(d.live_processes, 2u);
  EXPECT_TRUE(d.has(DelayClass::kFreepages));
}

TEST(DelayLedger, ExitRecordKeepsTheFinalTotals) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10, 11};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(2, 200));
  l.observe("/cg", 11, stats(3, 300));
  l.end("/cg");
  // 10 does more reclaim, then exits: its exit record carries the final figure.
  l.onExit(exitOf(10, stats(7, 900)));
  std::vector<uint32_t> after = {11};
  l.begin("/cg", 1, after);
  l.observe("/cg", 11, stats(4, 400));
  auto d = l.end("/cg");
  EXPECT_EQ(reclaim(d).count, 11u);
  EXPECT_EQ(reclaim(d).total_ns, 1300u);
  EXPECT_EQ(d.exited_processes, 1u);
  EXPECT_EQ(l.stats().exits_folded, 1u);
  EXPECT_EQ(l.stats().exits_without_record, 0u);
}

TEST(DelayLedger, ThreadExitDoesNotEndTheProcess) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(2, 200));
  l.end("/cg");
  l.onExit(exitOf(10, stats(1, 100), /*group_dead=*/false));
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(3, 300));
  auto d = l.end("/cg");
  EXPECT_EQ(reclaim(d).count, 3u);
  EXPECT_EQ(d.exited_processes, 0u);
}

TEST(DelayLedger, CapturedExitRecordsOfAThreeThreadProcess) {
  auto last = parseTaskstatsMessage(fixture("exit_multi_3.bin"), kFamily);
  ASSERT_TRUE(last.ok());
  const uint32_t tgid = *last->tgid;
  DelayLedger l;
  std::vector<uint32_t> ids = {tgid};
  l.begin("/cg", 1, ids);
  l.observe("/cg", tgid, TaskStats{});  // seen early with zero delays
  l.end("/cg");
  for (const char* f : {"exit_multi_1.bin", "exit_multi_2.bin", "exit_multi_3.bin"}) {
    auto m = parseTaskstatsMessage(fixture(f), kFamily);
    ASSERT_TRUE(m.ok());
    l.onExit(*m);
  }
  std::vector<uint32_t> none;
  l.begin("/cg", 1, none);
  auto d = l.end("/cg");
  EXPECT_EQ(d.exited_processes, 1u);
  EXPECT_EQ(d[DelayClass::kCpu].count, (*last->tgid_stats)[DelayClass::kCpu].count);
  EXPECT_EQ(d[DelayClass::kCpu].total_ns, (*last->tgid_stats)[DelayClass::kCpu].total_ns);
}

TEST(DelayLedger, VanishedWithoutRecordKeepsLastValues) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10, 11};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(2, 200));
  l.observe("/cg", 11, stats(3, 300));
  l.end("/cg");
  std::vector<uint32_t> after = {11};
  l.begin("/cg", 1, after);
  l.observe("/cg", 11, stats(3, 300));
  auto d = l.end("/cg");
  EXPECT_EQ(reclaim(d).count, 5u);
  EXPECT_EQ(l.stats().exits_without_record, 1u);
  EXPECT_EQ(l.stats().tracked_processes, 1u);
}

TEST(DelayLedger, QueryRacingTheExitIsNotLost) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(2, 200));
  l.end("/cg");
  l.begin("/cg", 1, ids);               // still listed...
  l.observeError("/cg", 10, ESRCH);     // ...but gone when queried
  l.onExit(exitOf(10, stats(4, 450)));  // its record drained afterwards
  auto d = l.end("/cg");
  EXPECT_EQ(reclaim(d).count, 4u);
  EXPECT_EQ(reclaim(d).total_ns, 450u);
  EXPECT_EQ(d.query_errors, 0u);
  EXPECT_EQ(l.stats().query_errors, 0u);
}

TEST(DelayLedger, PidReuseBanksTheOldProcess) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(5, 500));
  l.end("/cg");
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(1, 10));  // a new process under the same tgid
  auto d = l.end("/cg");
  EXPECT_EQ(reclaim(d).count, 6u);
  EXPECT_EQ(reclaim(d).total_ns, 510u);
  EXPECT_EQ(l.stats().pid_reuse, 1u);
}

TEST(DelayLedger, NeverGoesBackwardsAndRecreatedCgroupStartsOver) {
  DelayLedger l;
  std::vector<uint32_t> ids = {10};
  l.begin("/cg", 1, ids);
  l.observe("/cg", 10, stats(5, 500));
  EXPECT_EQ(reclaim(l.end("/cg")).count, 5u);
  // Same path, new inode: a new cgroup.
  l.begin("/cg", 2, ids);
  l.observe("/cg", 10, stats(1, 100));
  EXPECT_EQ(reclaim(l.end("/cg")).count, 1u);
  l.forget("/cg");
  EXPECT_EQ(l.stats().tracked_processes, 0u);
}

TEST(DelayLedger, ExitOfUntrackedTaskIsIgnored) {
  DelayLedger l;
  l.onExit(exitOf(99, stats(1, 1)));
  EXPECT_EQ(l.stats().exit_messages, 1u);
  EXPECT_EQ(l.stats().exits_folded, 0u);
}

// --- files -----------------------------------------------------------------

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/taskstats_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

using IdListTest = TempDir;

TEST_F(IdListTest, ReadsIds) {
  write("cgroup.procs", "1\n22\n333\n");
  auto r = readIdList(dir_ / "cgroup.procs");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<uint32_t>{1, 22, 333}));
  write("empty", "");
  EXPECT_TRUE(readIdList(dir_ / "empty")->empty());
}

TEST_F(IdListTest, MalformedAndMissing) {
  write("bad", "1\nx2\n");
  auto r = readIdList(dir_ / "bad");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_NE(r.error().detail.find("x2"), std::string::npos);
  auto m = readIdList(dir_ / "missing");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.error().gone());
}

using DelayacctSysctlTest = TempDir;

TEST_F(DelayacctSysctlTest, ReadWriteEnsure) {
  write(kTaskDelayacctFile, "0\n");
  auto r = readTaskDelayacct(dir_);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  auto off = ensureTaskDelayacct(false, dir_);
  EXPECT_TRUE(off.known);
  EXPECT_FALSE(off.enabled);
  auto on = ensureTaskDelayacct(true, dir_);
  EXPECT_TRUE(on.enabled);
  EXPECT_TRUE(on.enabled_by_exporter);
  EXPECT_GT(on.enabled_at_unix, 0);
  EXPECT_NE(on.note.find("from now on"), std::string::npos);
  EXPECT_TRUE(*readTaskDelayacct(dir_));
  auto again = ensureTaskDelayacct(true, dir_);
  EXPECT_TRUE(again.enabled);
  EXPECT_FALSE(again.enabled_by_exporter);  // it was on already
}

TEST_F(DelayacctSysctlTest, MissingAndMalformed) {
  auto st = ensureTaskDelayacct(true, dir_);
  EXPECT_FALSE(st.known);
  EXPECT_FALSE(st.enabled);
  EXPECT_TRUE(readTaskDelayacct(dir_).error().gone());
  write(kTaskDelayacctFile, "7\n");
  EXPECT_EQ(readTaskDelayacct(dir_).error().err, EINVAL);
}

// --- JSON table ------------------------------------------------------------

TEST(DelayTableJson, RendersTheGetdelaysColumns) {
  DelayTable t;
  t.cgroup = "/sys/fs/cgroup/memory/a";
  t.listed = 1;
  DelayTableRow row;
  row.pid = 10;
  row.tgid = 10;
  row.comm = "dd";
  row.stats = stats(4, 2'000'000'000, 900'000'000);
  row.stats.has_total = 0x0f;  // cpu..freepages only
  row.stats.has_max = 0;
  t.rows.push_back(row);
  DelayAcctStatus st;
  st.known = st.enabled = true;
  auto j = delayTableToJson(t, &st);
  EXPECT_EQ(j["cgroup"], t.cgroup);
  EXPECT_TRUE(j["delay_accounting"]["enabled"].get<bool>());
  ASSERT_EQ(j["tasks"].size(), 1u);
  const auto& r = j["tasks"][0];
  EXPECT_EQ(r["comm"], "dd");
  EXPECT_EQ(r["delays"]["reclaim"]["count"], 4);
  EXPECT_DOUBLE_EQ(r["delays"]["reclaim"]["total_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["delays"]["reclaim"]["average_seconds"].get<double>(), 0.5);
  EXPECT_FALSE(r["delays"]["reclaim"].contains("max_seconds"));
  EXPECT_FALSE(r["delays"].contains("irq"));
  EXPECT_DOUBLE_EQ(r["delays"]["cpu"]["average_seconds"].get<double>(), 0.0);
}

}  // namespace
}  // namespace memcg::taskstats
