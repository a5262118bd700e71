#include "controller/controller.h"

#include <cerrno>
#include <stdexcept>

#include "common/log.h"
#include "controller/prot.h"

namespace memcg::controller {

Controller::Controller(ControllerOptions opts, WalkScheduler& walks, ActuatorOptions seams,
                       tracing::ReclaimAttribution* attribution, BudgetClock budgetClock)
    : opts_(std::move(opts)), walks_(walks), discovery_(walks.discovery()) {
  v2_ = discovery_.layout().mode == CgroupMode::kV2;
  if (!opts_.allow.empty()) {
    try {
      allow_.emplace(opts_.allow, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("--controller.allow: bad regex: " + std::string(e.what()));
    }
  }
  if (opts_.pollIntervalMs <= 0) throw std::invalid_argument("controller poll interval must be > 0");
  if (auto why = checkBudgets(opts_); !why.empty()) throw std::invalid_argument(why);
  if (opts_.schedPolicy != "other" && opts_.schedPolicy != "batch" && opts_.schedPolicy != "idle")
    throw std::invalid_argument("controller sched policy must be other, batch or idle");
  auto audit = AuditLog::open(opts_.auditLog);
  if (!audit) throw std::runtime_error(audit.error().message());
  audit_ = std::move(*audit);
  if (!v2_ || !opts_.journal.empty()) {
    if (opts_.journal.empty()) throw std::invalid_argument("--controller.journal is required on cgroup v1");
    auto j = Journal::open(opts_.journal);
    if (!j) throw std::runtime_error(j.error().message());
    journal_ = std::move(*j);
  }
  seams.allowed = [this](std::string_view c) { return allowed(c); };
  if (seams.v2Swappiness < 0) seams.v2Swappiness = opts_.v2Swappiness;
  seams.keepArmed = opts_.journalKeepArmed;
  actuator_ = std::make_unique<Actuator>(std::move(seams), journal_.get());
  if (journal_) {
    recovery_ = replayJournal(*journal_, *actuator_, *audit_);
    if (recovery_.pending > 0) {
      log::info("controller: journal replayed",
                "pending=" + std::to_string(recovery_.pending) +
                    " restored=" + std::to_string(recovery_.restored) +
                    " conflicts=" + std::to_string(recovery_.conflicts) +
                    " failed=" + std::to_string(recovery_.failed));
    }
  }
  if (!v2_) {
    stats_ = std::make_unique<ControllerStats>(std::vector<const char*>{kSrcThreshold, kSrcPoll});
  } else {
    stats_ = std::make_unique<ControllerStats>(
        std::vector<const char*>{kSrcEvents, kSrcPsi, kSrcPoll});
    if (opts_.v2WakePsi) {
      auto t = parsePsiTrigger(opts_.psiTrigger);
      if (!t) throw std::invalid_argument("--controller.psi-trigger: " + t.error().message());
    }
  }
  stats_->setJournalRestores(recovery_.restored);
  const ThreadParts parts{opts_, v2_, queue_, *stats_};
  waiter_ = std::make_unique<Waiter>(parts, table_, *actuator_, [this](const Prot& p) {
    ended(p, true, {{"cgroup", p.p.cgroup}, {"reason", "cgroup removed"}});
  });
  worker_ = std::make_unique<Worker>(parts, *actuator_, *audit_, attribution,
                                     std::move(budgetClock));
}

Controller::~Controller() { stop(); }

bool Controller::allowed(std::string_view cgroup) const {
  if (cgroup.empty() || cgroup == "/" || cgroup.front() != '/') return false;
  if (!allow_) return false;
  return std::regex_match(cgroup.begin(), cgroup.end(), *allow_);
}

void Controller::start() {
  if (started_) return;
  waiter_->start();
  worker_->start();
  started_ = true;
}

void Controller::stop() {
  if (!started_) return;
  // The waiter first: once it is joined nothing is queued any more.
  waiter_->stop();
  worker_->stop();
  started_ = false;
  // Limits are restored after every nudge; drop the armed journal entries.
  for (auto& p : table_.byId()) actuator_->releaseJournal(*p->dir);
}

void Controller::ended(const Prot& p, bool idle, nlohmann::json audit) {
  // A busy worker releases the armed journal entry after its nudge.
  if (idle) actuator_->releaseJournal(*p.dir);
  audit_->write("unprotect", std::move(audit));
}

std::optional<OpError> Controller::protect(const Protection& in) {
  Protection p = in;
  if (auto e = checkProtection(p)) return e;
  const bool startPct = p.startMarginPercent > 0, targetPct = p.targetMarginPercent > 0;
  if (!allowed(p.cgroup))
    return OpError{ErrorKind::kForbidden, "cgroup does not match --controller.allow"};
  if (p.floorBytes == 0) p.floorBytes = opts_.floorBytes;
  if (auto existing = table_.find(p.cgroup)) {
    const Protection& o = existing->p;  // fixed once published
    if (o.startMarginBytes == p.startMarginBytes && o.targetMarginBytes == p.targetMarginBytes &&
        o.startMarginPercent == p.startMarginPercent &&
        o.targetMarginPercent == p.targetMarginPercent && o.floorBytes == p.floorBytes)
      return std::nullopt;  // idempotent
    return OpError{ErrorKind::kConflict,
                   "cgroup is already protected with other margins; unprotect it first"};
  }
  auto dir = walks_.findOrWalk(p.cgroup);
  if (!dir) return OpError{ErrorKind::kNotFound, "unknown cgroup " + p.cgroup};
  auto prot = std::make_shared<Prot>();
  prot->p = p;
  prot->dir = dir;
  prot->sinceMs = unixMs();
  std::string buf;
  Reading r = readUsage(*prot, v2_, buf);
  if (!r.ok) {
    return r.gone ? OpError{ErrorKind::kNotFound, "cgroup vanished " + p.cgroup}
                  : OpError{ErrorKind::kInternal, "cannot read usage and limit of " + p.cgroup};
  }
  if (r.unlimited)
    return OpError{ErrorKind::kConflict,
                   "cgroup has no memory limit (v1 memory.limit_in_bytes / v2 memory.max or "
                   "memory.high): no margin to keep"};
  if (auto e = checkAtLimit(p, r.limit)) return e;
  const uint64_t startB = p.startBytes(r.limit), targetB = p.targetBytes(r.limit);
  // Not published yet: nobody else sees these fields.
  prot->locked.lastUsage = r.usage;
  prot->locked.lastLimit = r.limit;
  prot->locked.lastUnlimited = false;
  if (!table_.add(prot)) return OpError{ErrorKind::kConflict, "cgroup is already protected"};
  nlohmann::json a = {{"cgroup", p.cgroup},
                      {"start_margin_bytes", startB},
                      {"target_margin_bytes", targetB},
                      {"floor_bytes", p.floorBytes},
                      {"limit_bytes", r.limit},
                      {"usage_bytes", r.usage},
                      {"dry_run", opts_.dryRun}};
  if (startPct) a["start_margin_percent"] = p.startMarginPercent;
  if (targetPct) a["target_margin_percent"] = p.targetMarginPercent;
  audit_->write("protect", std::move(a));
  waiter_->wake();
  return std::nullopt;
}

std::optional<OpError> Controller::unprotect(const std::string& cgroup) {
  if (cgroup.empty() || cgroup.front() != '/')
    return OpError{ErrorKind::kBadInput, "cgroup must be a label starting with '/'"};
  bool idle = false;
  // The waiter drops it from the table's id index: it owns the eventfd
  // (closing it unregisters the v1 threshold).
  auto p = table_.remove(cgroup, idle);
  if (!p) return OpError{ErrorKind::kNotFound, "cgroup is not protected"};
  ended(*p, idle, {{"cgroup", cgroup}});
  waiter_->wake();
  return std::nullopt;
}

bool Controller::isProtected(const std::string& cgroup) const { return table_.contains(cgroup); }


}  // namespace memcg::controller
