// Capabilities after start-up (libcap). Once the App has opened what every
// enabled part needs (cgroup directories, the tracefs instance and its
// per-CPU files, the taskstats socket, the listening socket, the journal), it
// keeps only the capabilities those parts still use while running and drops
// every other one from the permitted, effective, inheritable and ambient
// sets of every thread (capset changes one thread: the others are signalled
// to make the same call and then checked in /proc/self/task, so the HTTP
// workers, the tracing reader and the controller's threads lose them too). A
// dropped permitted capability cannot come back: nothing is ever exec'd.
//
// What is kept, and why (README "Privileges" has the same table):
//   read-only (cgroupfs, procfs, PSI)   none: root-owned files are read as
//                                       their owner; nothing is written
//   vmscan                              none, but CAP_SYS_ADMIN when this
//                                       process mounted tracefs where others
//                                       see it (unmounted at exit), and
//                                       CAP_SYSLOG with --collector.vmscan.locks
//                                       (/proc/kallsyms is read on first use)
//   taskstats                           CAP_NET_ADMIN (every TASKSTATS_CMD_GET
//                                       is GENL_ADMIN_PERM), and CAP_SYS_ADMIN
//                                       with --collector.taskstats.enable-
//                                       delayacct (switched off again at exit)
//   controller                          CAP_DAC_OVERRIDE (limits of cgroups
//                                       delegated to other users),
//                                       CAP_SYS_RESOURCE (a v2 PSI trigger
//                                       window under 2 s, opened on protect)
// A run that does not have a capability it would keep (not root, a bounding
// set) keeps what it has; the part that needs it reports itself down.
// --no-capabilities.drop keeps everything (to diagnose).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "metrics/registry.h"
#include "common/result.h"

namespace memcg {

/// What the enabled parts do after start-up.
struct PrivilegeNeeds {
  bool tracefsVisibleMount = false;  ///< we mounted tracefs visibly: umount at exit
  bool lockSymbols = false;          ///< --collector.vmscan.locks: /proc/kallsyms
  /// The tracer made its tracefs instance as a non-root user (the systemd
  /// unit's User= with ambient CAP_DAC_OVERRIDE): removing it at exit needs
  /// the override again, tracefs being root's.
  bool tracefsInstanceNotOwned = false;
  bool taskstats = false;
  bool delayacctRestore = false;  ///< --collector.taskstats.enable-delayacct
  bool controller = false;
};

struct KeptCapability {
  int cap;          ///< CAP_*
  std::string why;  ///< the part that uses it
};

/// The table above, for `n`. Sorted by capability, each once.
std::vector<KeptCapability> neededCapabilities(const PrivilegeNeeds& n);

/// Keeps only `keep` (those of them the process has) in the permitted and
/// effective sets of every thread; clears inheritable and ambient. Returns
/// the names kept, e.g. "cap_net_admin".
Result<std::vector<std::string>> dropCapabilities(
    const std::vector<KeptCapability>& keep);

/// Names of the calling thread's effective capabilities ("cap_net_admin").
std::vector<std::string> effectiveCapabilities();

/// memcg_exporter_capability_effective{capability}: 1 per capability the
/// serving thread has at scrape time, and memcg_exporter_capabilities_dropped
/// (1 once the drop ran).
std::unique_ptr<metrics::Collectable> makePrivilegesCollector(const std::atomic<bool>& dropped);

}  // namespace memcg
