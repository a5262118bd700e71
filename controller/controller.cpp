#include "controller/controller.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "cgroupfs/usage_limit.h"
#include "common/log.h"
#include "controller/prot.h"

namespace memcg::controller {

namespace {

RecoveryReport replay(Journal& journal, Actuator& act, AuditLog& audit) {
  RecoveryReport rep;
  auto pending = journal.pending();
  rep.pending = pending.size();
  bool keep = false;
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
        keep = true;
        log::error("controller: journal restore failed; kept for the next start",
                   kv("cgroup", e.cgroup) + " " + kv("detail", detail));
    }
  }
  (void)keep;
  if (auto st = journal.compact(); !st) {
    log::warn("controller: journal compact failed", kv("err", st.error().message()));
  }
  return rep;
}

}  // namespace

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
  return replay(**j, act, *a);
}

Controller::Controller(ControllerOptions opts, WalkScheduler& walks, ActuatorOptions seams,
                       tracing::ReclaimAttribution* attribution, BudgetClock budgetClock)
    : opts_(std::move(opts)),
      walks_(walks),
      discovery_(walks.discovery()),
      attribution_(attribution),
      budgetClock_(std::move(budgetClock)) {
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
    recovery_ = replay(*journal_, *actuator_, *audit_);
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
}

Controller::~Controller() { stop(); }

bool Controller::allowed(std::string_view cgroup) const {
  if (cgroup.empty() || cgroup == "/" || cgroup.front() != '/') return false;
  if (!allow_) return false;
  return std::regex_match(cgroup.begin(), cgroup.end(), *allow_);
}

void Controller::start() {
  if (started_) return;
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_.valid() || !wake_.valid()) throw std::runtime_error("controller: epoll/eventfd failed");
  struct epoll_event ev {};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
  stop_ = false;
  tokens_ = TokenBucket(static_cast<double>(opts_.maxBytesPerSecond), budgetClock_.readNow());
  cpu_ = CpuBudget(opts_.cpuBudget);
  waiter_ = std::thread([this] { waiterLoop(); });
  worker_ = std::thread([this] { workerLoop(); });
  started_ = true;
}

void Controller::stop() {
  if (!started_) return;
  stop_ = true;
  wakeWaiter();
  {
    std::lock_guard<std::mutex> g(mu_);
    cv_.notify_all();
  }
  waiter_.join();
  worker_.join();
  started_ = false;
  // Limits are restored after every nudge; drop the armed journal entries.
  std::vector<std::shared_ptr<Prot>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [_, p] : byId_) all.push_back(p);
  }
  for (auto& p : all) actuator_->releaseJournal(*p->dir);
}

void Controller::wakeWaiter() {
  if (!wake_.valid()) return;
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
}

std::shared_ptr<const cgroupfs::CgroupDir> Controller::resolve(const std::string& cgroup) {
  return walks_.findOrWalk(cgroup);
}

Controller::Reading Controller::readUsage(const Prot& p, std::string& buf) const {
  Reading r;
  auto ul = cgroupfs::readUsageLimit(*p.dir, v2_, buf);
  if (!ul.ok()) {
    r.gone = ul.error().gone();
    return r;
  }
  r.usage = ul->usage;
  r.unlimited = ul->limit.unlimited;
  r.limit = ul->limit.bytes;
  r.ok = true;
  return r;
}

std::optional<OpError> Controller::protect(const Protection& in) {
  Protection p = in;
  if (auto e = checkProtection(p)) return e;
  const bool startPct = p.startMarginPercent > 0, targetPct = p.targetMarginPercent > 0;
  if (!allowed(p.cgroup))
    return OpError{ErrorKind::kForbidden, "cgroup does not match --controller.allow"};
  if (p.floorBytes == 0) p.floorBytes = opts_.floorBytes;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = prots_.find(p.cgroup);
    if (it != prots_.end()) {
      const Protection& o = it->second->p;
      if (o.startMarginBytes == p.startMarginBytes &&
          o.targetMarginBytes == p.targetMarginBytes &&
          o.startMarginPercent == p.startMarginPercent &&
          o.targetMarginPercent == p.targetMarginPercent && o.floorBytes == p.floorBytes)
        return std::nullopt;  // idempotent
      return OpError{ErrorKind::kConflict,
                     "cgroup is already protected with other margins; unprotect it first"};
    }
  }
  auto dir = resolve(p.cgroup);
  if (!dir) return OpError{ErrorKind::kNotFound, "unknown cgroup " + p.cgroup};
  auto prot = std::make_shared<Prot>();
  prot->p = p;
  prot->dir = dir;
  prot->sinceMs = unixMs();
  std::string buf;
  Reading r = readUsage(*prot, buf);
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
  {
    std::lock_guard<std::mutex> g(mu_);
    if (prots_.count(p.cgroup))
      return OpError{ErrorKind::kConflict, "cgroup is already protected"};
    prot->id = nextId_++;
    prot->locked.lastUsage = r.usage;
    prot->locked.lastLimit = r.limit;
    prot->locked.lastUnlimited = false;
    prots_[p.cgroup] = prot;
    byId_[prot->id] = prot;
  }
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
  wakeWaiter();
  return std::nullopt;
}

std::optional<OpError> Controller::unprotect(const std::string& cgroup) {
  if (cgroup.empty() || cgroup.front() != '/')
    return OpError{ErrorKind::kBadInput, "cgroup must be a label starting with '/'"};
  std::shared_ptr<Prot> p;
  bool idle = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = prots_.find(cgroup);
    if (it == prots_.end()) return OpError{ErrorKind::kNotFound, "cgroup is not protected"};
    p = it->second;
    p->locked.removed = true;
    prots_.erase(it);
    idle = !p->locked.busy;
    // byId_ is cleaned by the waiter, which owns the eventfd (closing it
    // unregisters the v1 threshold).
  }
  // A busy worker releases the armed journal entry after its nudge.
  if (idle) actuator_->releaseJournal(*p->dir);
  audit_->write("unprotect", {{"cgroup", cgroup}});
  wakeWaiter();
  return std::nullopt;
}

bool Controller::isProtected(const std::string& cgroup) const {
  std::lock_guard<std::mutex> g(mu_);
  return prots_.count(cgroup) != 0;
}


}  // namespace memcg::controller
