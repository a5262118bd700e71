#include "controller/recovery.h"

#include <sys/stat.h>

#include "common/log.h"
#include "controller/prot.h"

namespace memcg::controller {

RecoveryReport replayJournal(Journal& journal, Actuator& act, AuditLog& audit) {
  RecoveryReport rep;
  auto pending = journal.pending();
  rep.pending = pending.size();
  for (const auto& e : pending) {
    std::string detail;
    Outcome o = act.restoreFromJournal(e, &detail);
    audit.write("journal_restore", {{"cgroup", e.cgroup},
                                    {"dir", e.dir},
                                    {"seq", e.seq},
                                    {"original", e.original},
                                    {"original_unlimited", e.originalUnlimited},
                                    {"lowered", e.lowered},
                                    {"result", std::string(outcomeName(o))},
                                    {"detail", detail}});
    switch (o) {
      case Outcome::kOk:
        ++rep.restored;
        (void)journal.clear(e.seq);
        break;
      case Outcome::kConflict:
        ++rep.conflicts;
        (void)journal.clear(e.seq);
        break;
      case Outcome::kNothing:
      case Outcome::kGone:
        (void)journal.clear(e.seq);
        break;
      default:
        ++rep.failed;
        log::error("controller: journal restore failed; kept for the next start",
                   kv("cgroup", e.cgroup) + " " + kv("detail", detail));
    }
  }
  if (auto st = journal.compact(); !st) {
    log::warn("controller: journal compact failed", kv("err", st.error().message()));
  }
  return rep;
}

RecoveryReport recoverJournal(const ControllerOptions& opts) {
  RecoveryReport rep;
  struct stat st {};
  if (opts.journal.empty() || ::stat(opts.journal.c_str(), &st) != 0) return rep;
  auto j = Journal::open(opts.journal);
  if (!j) {
    log::error("controller: cannot open the journal", kv("err", j.error().message()));
    return rep;
  }
  auto audit = AuditLog::open(opts.auditLog);
  std::unique_ptr<AuditLog> a = audit ? std::move(*audit) : std::make_unique<AuditLog>();
  ActuatorOptions ao;  // restores need no allow-list: they put back what we lowered
  Actuator act(ao, j->get());
  return replayJournal(**j, act, *a);
}

}  // namespace memcg::controller
