// The journal's replay: at start-up, every limit a crash left lowered (a v1
// nudge's journal entry still pending) is put back, unless someone changed it
// since or the cgroup was recreated; each restore goes to the audit log.
#pragma once

#include <cstddef>

#include "controller/actuator.h"
#include "controller/audit_log.h"
#include "controller/journal.h"
#include "controller/options.h"

namespace memcg::controller {

/// What a journal replay did.
struct RecoveryReport {
  size_t pending = 0;
  size_t restored = 0;
  size_t conflicts = 0;  ///< limit changed since, or cgroup recreated: left alone
  size_t failed = 0;     ///< kept in the journal for the next start
};

/// Restores through `act` what `journal` holds pending, clears what is done
/// with (restored, already back, gone, conflicting) and compacts it; a
/// failed restore stays for the next start.
RecoveryReport replayJournal(Journal& journal, Actuator& act, AuditLog& audit);

/// Replays the journal at `opts.journal` if it exists (restoring every limit
/// a crash left lowered) and compacts it. For start-up when the controller is
/// disabled; the Controller does the same itself. Never throws.
RecoveryReport recoverJournal(const ControllerOptions& opts);

}  // namespace memcg::controller
