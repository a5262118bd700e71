#include "collectors/taskstats/taskstats_format.h"

#include <linux/acct.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>

#include <cstring>

namespace memcg::taskstats {

const std::array<DelayClassInfo, kDelayClassCount> kDelayClasses = {{
    {DelayClass::kCpu, "cpu", "cpu", "CPU", "waiting for a CPU while runnable"},
    {DelayClass::kBlkio, "blkio", "blkio", "IO", "waiting for synchronous block I/O"},
    {DelayClass::kSwapin, "swapin", "swapin", "SWAP", "waiting for swap-in page faults"},
    {DelayClass::kFreepages, "freepages", "reclaim", "RECLAIM",
     "in direct memory reclaim (taskstats freepages)"},
    {DelayClass::kThrashing, "thrashing", "thrashing", "THRASHING",
     "waiting for refaulting (thrashing) pages"},
    {DelayClass::kCompact, "compact", "compact", "COMPACT", "in memory compaction"},
    {DelayClass::kWpcopy, "wpcopy", "wpcopy", "WPCOPY", "copying write-protected pages"},
    {DelayClass::kIrq, "irq", "irq", "IRQ", "in IRQ/softirq handling"},
}};

namespace {

// Mirror of the kernel's struct taskstats at version 17 (the layout shared by
// versions 1-14, 16 and 17). Only offsets are taken from it; bytes are copied
// field by field, so the reply's alignment and length do not matter.
struct LayoutV17 {
  uint16_t version;
  uint32_t ac_exitcode;
  uint8_t ac_flag;
  uint8_t ac_nice;
  alignas(8) uint64_t cpu_count;
  uint64_t cpu_delay_total;
  uint64_t blkio_count;
  uint64_t blkio_delay_total;
  uint64_t swapin_count;
  uint64_t swapin_delay_total;
  uint64_t cpu_run_real_total;
  uint64_t cpu_run_virtual_total;
  char ac_comm[32];
  alignas(8) uint8_t ac_sched;
  uint8_t ac_pad[3];
  alignas(8) uint32_t ac_uid;
  uint32_t ac_gid;
  uint32_t ac_pid;
  uint32_t ac_ppid;
  uint32_t ac_btime;
  alignas(8) uint64_t ac_etime;
  uint64_t ac_utime, ac_stime, ac_minflt, ac_majflt;
  uint64_t coremem, virtmem, hiwater_rss, hiwater_vm;
  uint64_t read_char, write_char, read_syscalls, write_syscalls;
  uint64_t read_bytes, write_bytes, cancelled_write_bytes;
  uint64_t nvcsw, nivcsw;
  uint64_t ac_utimescaled, ac_stimescaled, cpu_scaled_run_real_total;
  uint64_t freepages_count, freepages_delay_total;  // v7
  uint64_t thrashing_count, thrashing_delay_total;  // v9
  uint64_t ac_btime64;                              // v10
  uint64_t compact_count, compact_delay_total;      // v11
  uint32_t ac_tgid;                                 // v12
  alignas(8) uint64_t ac_tgetime;
  uint64_t ac_exe_dev, ac_exe_inode;
  uint64_t wpcopy_count, wpcopy_delay_total;  // v13
  uint64_t irq_count, irq_delay_total;        // v14
  uint64_t cpu_delay_max, cpu_delay_min;      // v16 (moved here from v15)
  uint64_t blkio_delay_max, blkio_delay_min;
  uint64_t swapin_delay_max, swapin_delay_min;
  uint64_t freepages_delay_max, freepages_delay_min;
  uint64_t thrashing_delay_max, thrashing_delay_min;
  uint64_t compact_delay_max, compact_delay_min;
  uint64_t wpcopy_delay_max, wpcopy_delay_min;
  uint64_t irq_delay_max, irq_delay_min;
  uint64_t delay_max_ts[8][2];  // v17 __kernel_timespec
};

// Version 15 only: max/min right after each class's total.
struct LayoutV15 {
  uint16_t version;
  uint32_t ac_exitcode;
  uint8_t ac_flag;
  uint8_t ac_nice;
  alignas(8) uint64_t cpu_count;
  uint64_t cpu_delay_total, cpu_delay_max, cpu_delay_min;
  uint64_t blkio_count, blkio_delay_total, blkio_delay_max, blkio_delay_min;
  uint64_t swapin_count, swapin_delay_total, swapin_delay_max, swapin_delay_min;
  uint64_t cpu_run_real_total;
  uint64_t cpu_run_virtual_total;
  char ac_comm[32];
  alignas(8) uint8_t ac_sched;
  uint8_t ac_pad[3];
  alignas(8) uint32_t ac_uid;
  uint32_t ac_gid;
  uint32_t ac_pid;
  uint32_t ac_ppid;
  uint32_t ac_btime;
  alignas(8) uint64_t ac_etime;
  uint64_t ac_utime, ac_stime, ac_minflt, ac_majflt;
  uint64_t coremem, virtmem, hiwater_rss, hiwater_vm;
  uint64_t read_char, write_char, read_syscalls, write_syscalls;
  uint64_t read_bytes, write_bytes, cancelled_write_bytes;
  uint64_t nvcsw, nivcsw;
  uint64_t ac_utimescaled, ac_stimescaled, cpu_scaled_run_real_total;
  uint64_t freepages_count, freepages_delay_total, freepages_delay_max,
      freepages_delay_min;
  uint64_t thrashing_count, thrashing_delay_total, thrashing_delay_max,
      thrashing_delay_min;
  uint64_t ac_btime64;
  uint64_t compact_count, compact_delay_total, compact_delay_max, compact_delay_min;
  uint32_t ac_tgid;
  alignas(8) uint64_t ac_tgetime;
  uint64_t ac_exe_dev, ac_exe_inode;
  uint64_t wpcopy_count, wpcopy_delay_total, wpcopy_delay_max, wpcopy_delay_min;
  uint64_t irq_count, irq_delay_total, irq_delay_max, irq_delay_min;
};

// The installed UAPI header must agree with the mirror on what it has.
#define MEMCG_SAME_OFFSET(f) \
  static_assert(offsetof(struct ::taskstats, f) == offsetof(LayoutV17, f), #f)
MEMCG_SAME_OFFSET(cpu_count);
MEMCG_SAME_OFFSET(swapin_delay_total);
MEMCG_SAME_OFFSET(ac_comm);
MEMCG_SAME_OFFSET(ac_uid);
MEMCG_SAME_OFFSET(ac_etime);
MEMCG_SAME_OFFSET(freepages_delay_total);
MEMCG_SAME_OFFSET(thrashing_delay_total);
MEMCG_SAME_OFFSET(compact_delay_total);
MEMCG_SAME_OFFSET(ac_tgid);
MEMCG_SAME_OFFSET(ac_tgetime);
MEMCG_SAME_OFFSET(wpcopy_delay_total);
#if TASKSTATS_VERSION >= 14
MEMCG_SAME_OFFSET(irq_delay_total);
#endif
#if TASKSTATS_VERSION >= 16
MEMCG_SAME_OFFSET(freepages_delay_max);
MEMCG_SAME_OFFSET(irq_delay_min);
#endif
#undef MEMCG_SAME_OFFSET

struct ClassOffsets {
  size_t count, total, max;
};

template <typename L>
constexpr std::array<ClassOffsets, kDelayClassCount> classOffsets() {
  return {{
      {offsetof(L, cpu_count), offsetof(L, cpu_delay_total), offsetof(L, cpu_delay_max)},
      {offsetof(L, blkio_count), offsetof(L, blkio_delay_total),
       offsetof(L, blkio_delay_max)},
      {offsetof(L, swapin_count), offsetof(L, swapin_delay_total),
       offsetof(L, swapin_delay_max)},
      {offsetof(L, freepages_count), offsetof(L, freepages_delay_total),
       offsetof(L, freepages_delay_max)},
      {offsetof(L, thrashing_count), offsetof(L, thrashing_delay_total),
       offsetof(L, thrashing_delay_max)},
      {offsetof(L, compact_count), offsetof(L, compact_delay_total),
       offsetof(L, compact_delay_max)},
      {offsetof(L, wpcopy_count), offsetof(L, wpcopy_delay_total),
       offsetof(L, wpcopy_delay_max)},
      {offsetof(L, irq_count), offsetof(L, irq_delay_total), offsetof(L, irq_delay_max)},
  }};
}

constexpr auto kOffsetsV17 = classOffsets<LayoutV17>();
constexpr auto kOffsetsV15 = classOffsets<LayoutV15>();
constexpr size_t kMinStructLen = offsetof(LayoutV17, cpu_run_real_total);  // v1 delays

template <typename T>
bool readAt(std::span<const uint8_t> b, size_t off, T& out) {
  if (off + sizeof(T) > b.size()) return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}

template <typename L>
void readCommon(std::span<const uint8_t> p, TaskStats& ts) {
  readAt(p, offsetof(L, ac_exitcode), ts.exitcode);
  readAt(p, offsetof(L, ac_flag), ts.ac_flag);
  readAt(p, offsetof(L, cpu_run_real_total), ts.cpu_run_real_total_ns);
  readAt(p, offsetof(L, cpu_run_virtual_total), ts.cpu_run_virtual_total_ns);
  if (offsetof(L, ac_comm) + sizeof(LayoutV17::ac_comm) <= p.size()) {
    const char* c = reinterpret_cast<const char*>(p.data() + offsetof(L, ac_comm));
    ts.comm.assign(c, strnlen(c, sizeof(LayoutV17::ac_comm)));
  }
  readAt(p, offsetof(L, ac_uid), ts.ac_uid);
  readAt(p, offsetof(L, ac_pid), ts.ac_pid);
  readAt(p, offsetof(L, ac_ppid), ts.ac_ppid);
  readAt(p, offsetof(L, ac_btime64), ts.ac_btime64);
  readAt(p, offsetof(L, ac_tgid), ts.ac_tgid);
}

// Netlink attribute walking over bytes (no reliance on alignment of `b`).
struct Attr {
  uint16_t type;
  std::span<const uint8_t> payload;
};

// Calls fn for each attribute; false if an attribute header or length is bad.
template <typename F>
bool forEachAttr(std::span<const uint8_t> b, F&& fn) {
  size_t off = 0;
  while (off + NLA_HDRLEN <= b.size()) {
    nlattr h;
    std::memcpy(&h, b.data() + off, sizeof(h));
    if (h.nla_len < NLA_HDRLEN || off + h.nla_len > b.size()) return false;
    fn(Attr{static_cast<uint16_t>(h.nla_type & NLA_TYPE_MASK),
            b.subspan(off + NLA_HDRLEN, h.nla_len - NLA_HDRLEN)});
    off += NLA_ALIGN(h.nla_len);
  }
  // Trailing bytes shorter than an attribute header are padding.
  return true;
}

Error bad(std::string detail) {
  return makeError(EINVAL, "netlink:TASKSTATS", std::move(detail));
}

// Parses TASKSTATS_TYPE_AGGR_PID / _AGGR_TGID: an id attribute plus the stats.
Status parseAggregate(std::span<const uint8_t> b, uint16_t id_type,
                      std::optional<uint32_t>& id, std::optional<TaskStats>& stats) {
  std::optional<Error> err;
  bool ok = forEachAttr(b, [&](const Attr& a) {
    if (a.type == id_type) {
      uint32_t v;
      if (!readAt(a.payload, 0, v)) {
        err = bad("short id attribute");
        return;
      }
      id = v;
    } else if (a.type == TASKSTATS_TYPE_STATS) {
      auto r = parseTaskstatsStruct(a.payload);
      if (!r.ok()) {
        err = r.error();
        return;
      }
      stats = std::move(r.value());
    }  // TASKSTATS_TYPE_NULL (alignment padding) and unknown types: skip
  });
  if (!ok) return bad("malformed nested attribute");
  if (err) return *err;
  return Ok{};
}

}  // namespace

bool TaskStats::groupDead() const { return ac_flag & AGROUP; }

Result<TaskStats> parseTaskstatsStruct(std::span<const uint8_t> p) {
  if (p.size() < kMinStructLen) {
    return bad("struct taskstats too short: " + std::to_string(p.size()) + " bytes");
  }
  TaskStats ts;
  readAt(p, 0, ts.version);
  ts.struct_len = static_cast<uint32_t>(p.size());
  const bool v15 = ts.version == 15;
  if (v15) {
    readCommon<LayoutV15>(p, ts);
  } else {
    readCommon<LayoutV17>(p, ts);
  }
  const auto& offs = v15 ? kOffsetsV15 : kOffsetsV17;
  for (size_t i = 0; i < kDelayClassCount; ++i) {
    DelayCounter& d = ts.delay[i];
    if (readAt(p, offs[i].count, d.count) && readAt(p, offs[i].total, d.total_ns)) {
      ts.has_total |= 1u << i;
    } else {
      d = {};
    }
    // Max fields exist from v15 on; older replies long enough to cover the
    // offsets (impossible today) must not be misread.
    if (ts.version >= 15 && readAt(p, offs[i].max, d.max_ns)) ts.has_max |= 1u << i;
  }
  return ts;
}

Status forEachNetlinkMessage(std::span<const uint8_t> buf,
                             const std::function<void(std::span<const uint8_t>)>& fn) {
  size_t off = 0;
  while (off + NLMSG_HDRLEN <= buf.size()) {
    nlmsghdr h;
    std::memcpy(&h, buf.data() + off, sizeof(h));
    if (h.nlmsg_len < NLMSG_HDRLEN || off + h.nlmsg_len > buf.size()) {
      return bad("truncated netlink message");
    }
    fn(buf.subspan(off, h.nlmsg_len));
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  if (off < buf.size() && buf.size() - off >= 4)
    return bad("trailing bytes after message");
  return Ok{};
}

namespace {
// The positive errno of an NLMSG_ERROR (0: an ack); nothing if the message
// is too short or its code is no negative errno: the kernel sends
// -4095..0, anything else is a corrupt message (and -INT32_MIN does not
// exist as an int).
std::optional<int> nlmsgErrno(std::span<const uint8_t> msg) {
  int32_t e;
  if (!readAt(msg, NLMSG_HDRLEN, e) || e > 0 || e < -4095) return std::nullopt;
  return -e;
}
}  // namespace

Result<TaskstatsMessage> parseTaskstatsMessage(std::span<const uint8_t> msg,
                                               uint16_t family) {
  nlmsghdr h;
  if (!readAt(msg, 0, h) || h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > msg.size()) {
    return bad("short netlink header");
  }
  msg = msg.first(h.nlmsg_len);
  TaskstatsMessage m;
  m.seq = h.nlmsg_seq;
  m.port = h.nlmsg_pid;
  if (h.nlmsg_type == NLMSG_ERROR) {
    auto e = nlmsgErrno(msg);
    if (!e) return bad("short NLMSG_ERROR, or its code no errno");
    m.error = *e;
    return m;
  }
  if (h.nlmsg_type != family) {
    return bad("unexpected netlink message type " + std::to_string(h.nlmsg_type));
  }
  genlmsghdr g;
  if (!readAt(msg, NLMSG_HDRLEN, g)) return bad("short genetlink header");
  if (g.cmd != TASKSTATS_CMD_NEW) {
    return bad("unexpected TASKSTATS command " + std::to_string(g.cmd));
  }
  auto attrs = msg.subspan(NLMSG_HDRLEN + GENL_HDRLEN);
  std::optional<Error> err;
  bool ok = forEachAttr(attrs, [&](const Attr& a) {
    if (err) return;
    Status s = Ok{};
    if (a.type == TASKSTATS_TYPE_AGGR_PID) {
      s = parseAggregate(a.payload, TASKSTATS_TYPE_PID, m.pid, m.pid_stats);
    } else if (a.type == TASKSTATS_TYPE_AGGR_TGID) {
      s = parseAggregate(a.payload, TASKSTATS_TYPE_TGID, m.tgid, m.tgid_stats);
    }
    if (!s.ok()) err = s.error();
  });
  if (!ok) return bad("malformed attribute");
  if (err) return *err;
  if (!m.pid_stats && !m.tgid_stats) return bad("reply without TASKSTATS_TYPE_STATS");
  return m;
}

Result<uint16_t> parseFamilyReply(std::span<const uint8_t> msg) {
  nlmsghdr h;
  if (!readAt(msg, 0, h) || h.nlmsg_len > msg.size()) return bad("short netlink header");
  msg = msg.first(h.nlmsg_len);
  if (h.nlmsg_type == NLMSG_ERROR) {
    return makeError(nlmsgErrno(msg).value_or(EINVAL), "netlink:nlctrl",
                     "CTRL_CMD_GETFAMILY TASKSTATS failed");
  }
  if (h.nlmsg_type != GENL_ID_CTRL) return bad("unexpected reply to CTRL_CMD_GETFAMILY");
  if (msg.size() < NLMSG_HDRLEN + GENL_HDRLEN) return bad("short genetlink header");
  std::optional<uint16_t> id;
  bool ok = forEachAttr(msg.subspan(NLMSG_HDRLEN + GENL_HDRLEN), [&](const Attr& a) {
    uint16_t v;
    if (a.type == CTRL_ATTR_FAMILY_ID && readAt(a.payload, 0, v)) id = v;
  });
  if (!ok || !id) return bad("CTRL_CMD_GETFAMILY reply without CTRL_ATTR_FAMILY_ID");
  return *id;
}

}  // namespace memcg::taskstats
