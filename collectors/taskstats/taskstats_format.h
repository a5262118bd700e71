// Parsing of generic-netlink TASKSTATS replies (pure functions over bytes).
//
// Kernel interface: generic netlink family "TASKSTATS" (kernel/taskstats.c),
// payload `struct taskstats` from <linux/taskstats.h>. Delay fields are
// cumulative nanoseconds (`*_delay_total`, `*_delay_max`) and event counts
// (`*_count`); they are only non-zero while kernel.task_delayacct is on (or the
// kernel was booted with `delayacct`).
//
// The struct only grows at its end, except for version 15 (6.15 and some 6.14
// stable releases), which inserted *_delay_max/min in the middle; version 16
// moved them to the end. A field is taken only if the kernel's reply covers
// it, so a reply from an older kernel (shorter) or a newer one (longer) parses.
//   v1 cpu, blkio, swapin · v7 freepages (reclaim) · v9 thrashing · v11 compact
//   v13 wpcopy · v14 irq · v15/v16 *_delay_max, *_delay_min · v17 *_delay_max_ts
// Minimum kernel: 2.6.19 (TASKSTATS); the installed UAPI header is not used for
// the layout because it may be older than the running kernel.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace memcg::taskstats {

/// The delay classes struct taskstats reports, in kernel order.
enum class DelayClass : uint8_t {
  kCpu = 0,
  kBlkio,
  kSwapin,
  kFreepages,  ///< direct reclaim ("RECLAIM" in getdelays)
  kThrashing,
  kCompact,
  kWpcopy,
  kIrq,
};
inline constexpr size_t kDelayClassCount = 8;

struct DelayClassInfo {
  DelayClass cls;
  std::string_view kernel_name;  ///< field prefix in struct taskstats
  std::string_view metric_name;  ///< <class> in memcg_delay_<class>_seconds_total
  std::string_view getdelays;    ///< column label used by tools/accounting/getdelays
  std::string_view help;         ///< what the task waited for
};

/// One row per DelayClass, indexed by its value.
extern const std::array<DelayClassInfo, kDelayClassCount> kDelayClasses;

inline const DelayClassInfo& delayClassInfo(DelayClass c) {
  return kDelayClasses[static_cast<size_t>(c)];
}

/// Count, cumulative and maximum delay of one class (nanoseconds).
struct DelayCounter {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;  ///< 0 when the kernel does not report it (see TaskStats::has_max)
};

/// The fields of one struct taskstats this exporter uses.
struct TaskStats {
  uint16_t version = 0;     ///< TASKSTATS_VERSION of the running kernel
  uint32_t struct_len = 0;  ///< bytes of struct taskstats in the reply
  uint32_t exitcode = 0;
  uint8_t ac_flag = 0;  ///< AFORK/ASU/.../AGROUP (<linux/acct.h>)
  // Basic accounting: filled for per-pid replies and exit records, zero for tgid replies.
  uint32_t ac_pid = 0;
  uint32_t ac_ppid = 0;
  uint32_t ac_uid = 0;
  uint32_t ac_tgid = 0;  ///< v12+
  std::string comm;
  uint64_t ac_btime64 = 0;  ///< v10+, seconds since the epoch
  uint64_t cpu_run_real_total_ns = 0;
  uint64_t cpu_run_virtual_total_ns = 0;
  std::array<DelayCounter, kDelayClassCount> delay{};
  uint16_t has_total = 0;  ///< bit (1 << DelayClass): count and total present
  uint16_t has_max = 0;    ///< bit (1 << DelayClass): *_delay_max present

  const DelayCounter& operator[](DelayClass c) const {
    return delay[static_cast<size_t>(c)];
  }
  DelayCounter& operator[](DelayClass c) { return delay[static_cast<size_t>(c)]; }
  bool has(DelayClass c) const { return has_total & (1u << static_cast<unsigned>(c)); }
  bool hasMax(DelayClass c) const { return has_max & (1u << static_cast<unsigned>(c)); }
  /// The task was the last of its thread group (exit records, v12+).
  bool groupDead() const;
};

/// Parses the payload of a TASKSTATS_TYPE_STATS attribute. Fails (EINVAL) only
/// if it is too short to hold the version-1 delay fields (48 bytes).
Result<TaskStats> parseTaskstatsStruct(std::span<const uint8_t> payload);

/// One TASKSTATS_CMD_NEW message: a query reply or an exit notification.
struct TaskstatsMessage {
  uint32_t seq = 0;
  uint32_t port = 0;                   ///< nlmsg_pid (0: from the kernel)
  int error = 0;                       ///< positive errno of an NLMSG_ERROR, else 0
  std::optional<uint32_t> pid;         ///< TASKSTATS_TYPE_AGGR_PID's TASKSTATS_TYPE_PID
  std::optional<TaskStats> pid_stats;  ///< its TASKSTATS_TYPE_STATS
  std::optional<uint32_t> tgid;        ///< TASKSTATS_TYPE_AGGR_TGID's TASKSTATS_TYPE_TGID
  std::optional<TaskStats> tgid_stats;  ///< its TASKSTATS_TYPE_STATS
};

/// Parses one netlink message (nlmsghdr included) from the TASKSTATS family
/// `family`. NLMSG_ERROR messages parse to `error` set; unknown attributes
/// are skipped; a truncated message or attribute is an error.
Result<TaskstatsMessage> parseTaskstatsMessage(std::span<const uint8_t> msg,
                                               uint16_t family);

/// Parses a CTRL_CMD_GETFAMILY reply (one netlink message) to the family id.
Result<uint16_t> parseFamilyReply(std::span<const uint8_t> msg);

/// Splits a datagram into netlink messages; fails on a truncated header.
Status forEachNetlinkMessage(std::span<const uint8_t> buf,
                             const std::function<void(std::span<const uint8_t>)>& fn);

}  // namespace memcg::taskstats
