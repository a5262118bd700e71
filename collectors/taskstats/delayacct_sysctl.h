// kernel.task_delayacct: whether the kernel accounts per-task delays.
//
// Kernel interface: /proc/sys/kernel/task_delayacct ("0\n" or "1\n"; 5.14+;
// older kernels account always unless booted with `nodelayacct`, and the file
// is absent). Writing needs CAP_SYS_ADMIN. Off by default since 5.14 (or on
// with the `delayacct` boot option).
//
// Why a status matters: the kernel documents that when accounting is switched
// on at run time, only tasks started afterwards are accounted
// (Documentation/accounting/delay-accounting.rst); tasks already running may
// report zeros or partial figures for the blkio/swapin/freepages/thrashing/
// compact/wpcopy/irq classes. The cpu class comes from the scheduler's
// sched_info and is reported either way.
#pragma once

#include <string>

#include "common/result.h"

namespace memcg::taskstats {

inline constexpr const char* kTaskDelayacctFile = "sys/kernel/task_delayacct";

/// Reads <procfs>/sys/kernel/task_delayacct. ENOENT: the kernel predates the
/// switch (accounting follows the boot option) or lacks CONFIG_TASK_DELAY_ACCT.
Result<bool> readTaskDelayacct(const std::string& procfs = "/proc");

/// Writes "1" or "0" to <procfs>/sys/kernel/task_delayacct.
Status writeTaskDelayacct(bool on, const std::string& procfs = "/proc");

/// What the collector exports about accounting (e.g. as
/// memcg_delay_accounting_enabled and memcg_delay_accounting_enabled_by_exporter).
struct DelayAcctStatus {
  bool known = false;                ///< the sysctl could be read
  bool enabled = false;              ///< accounting is on now
  bool enabled_by_exporter = false;  ///< switched on by us at start-up
  int64_t enabled_at_unix = 0;       ///< when we switched it on (0: not by us)
  std::string note;                  ///< one line for logs and the JSON API
};

/// Reads the current state; when `enable` is set and accounting is off,
/// switches it on (the exporter's --collector.taskstats.enable-delayacct flag).
/// Never fails: errors end up in `note` with known=false / enabled=false.
DelayAcctStatus ensureTaskDelayacct(bool enable, const std::string& procfs = "/proc");

}  // namespace memcg::taskstats
