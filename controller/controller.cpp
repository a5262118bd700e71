#include "controller/controller.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "collectors/cgroupfs/readers.h"
#include "collectors/cgroupfs/usage_limit.h"
#include "collectors/collector.h"
#include "common/log.h"
#include "common/parse.h"

namespace memcg::controller {
namespace {

using cgroupfs::FileId;
using cgroupfs::ReadStatus;

const std::vector<double> kLatencyBounds = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                            0.05,   0.1,   0.25,  0.5,   1.0,  2.5};
constexpr uint64_t kWakeId = 0;
// epoll data of a protection's fds: id * 2 + 1 for its PSI trigger, id * 2
// for the other (v1 threshold eventfd / v2 memory.events); ids start at 1.
constexpr uint64_t epollKey(uint64_t id, bool psi) { return id * 2 + (psi ? 1 : 0); }

// Wake sources (the "trigger" label and audit field).
constexpr const char* kSrcThreshold = "threshold";
constexpr const char* kSrcEvents = "memory.events";
constexpr const char* kSrcPsi = "psi";
constexpr const char* kSrcPoll = "poll";

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double threadCpuSeconds() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string kv(std::string_view k, std::string_view v) {
  return std::string(k) + "=" + log::quote(v);
}

}  // namespace

struct Controller::Prot {
  uint64_t id = 0;
  Protection p;
  std::shared_ptr<const cgroupfs::CgroupDir> dir;
  int64_t sinceMs = 0;
  // Waiter-owned.
  Fd eventFd;                  // v1 threshold eventfd, or v2 memory.events fd
  uint64_t armedFor = 0;       // the limit the threshold was armed for
  bool armFailed = false;      // polling only (fixture, no event_control)
  Fd psiFd;                    // v2 PSI trigger on memory.pressure
  bool psiFailed = false;      // no PSI for this cgroup: the other sources only
  const char* firedBy = nullptr;   // this wake's source, if an fd fired
  std::atomic<bool> armed{false};  // for state(): eventFd is registered
  std::atomic<bool> psiArmed{false};
  // Guarded by Controller::mu_.
  bool queued = false;
  bool busy = false;
  bool removed = false;
  Clock::time_point triggerAt{};
  std::string triggerSource;
  // The first wake that found the margin short but could not queue (cooldown):
  // the episode's trigger, so the latency counts the wait.
  Clock::time_point pendingAt{};
  const char* pendingSource = nullptr;
  Clock::time_point cooldownUntil{};
  uint64_t lastUsage = 0;
  uint64_t lastLimit = 0;
  bool lastUnlimited = true;
  uint64_t episodes = 0;
  uint64_t actions = 0;
  uint64_t reclaimed = 0;
  std::string lastOutcome;
  std::string lastDetail;
  int64_t lastActionMs = 0;
};

namespace {

uint64_t percentOf(uint64_t limit, double pct) {
  return static_cast<uint64_t>(std::floor(static_cast<double>(limit) * pct / 100.0));
}

/// A percent margin field: 0 (unused) or finite in (0, 100).
bool percentOk(double v) { return v == 0 || (std::isfinite(v) && v > 0 && v < 100); }

}  // namespace

uint64_t Protection::startBytes(uint64_t limit) const {
  return startMarginPercent > 0 ? percentOf(limit, startMarginPercent) : startMarginBytes;
}

uint64_t Protection::targetBytes(uint64_t limit) const {
  return targetMarginPercent > 0 ? percentOf(limit, targetMarginPercent) : targetMarginBytes;
}

std::string_view errorKindName(ErrorKind k) {
  switch (k) {
    case ErrorKind::kBadInput: return "bad_input";
    case ErrorKind::kForbidden: return "forbidden";
    case ErrorKind::kNotFound: return "not_found";
    case ErrorKind::kConflict: return "conflict";
    case ErrorKind::kDisabled: return "disabled";
    case ErrorKind::kInternal: return "internal";
  }
  return "internal";
}

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

Controller::Controller(ControllerOptions opts, Discovery& discovery, ActuatorOptions seams,
                       tracing::ReclaimAttribution* attribution)
    : opts_(std::move(opts)), discovery_(discovery), attribution_(attribution) {
  v2_ = discovery_.layout().mode == CgroupMode::kV2;
  if (!opts_.allow.empty()) {
    try {
      allow_.emplace(opts_.allow, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("--controller.allow: bad regex: " + std::string(e.what()));
    }
  }
  if (opts_.pollIntervalMs <= 0) throw std::invalid_argument("controller poll interval must be > 0");
  if (opts_.cpuBudget <= 0) throw std::invalid_argument("controller CPU budget must be > 0");
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
    journalRestores_ = recovery_.restored;
    if (recovery_.pending > 0) {
      log::info("controller: journal replayed",
                "pending=" + std::to_string(recovery_.pending) +
                    " restored=" + std::to_string(recovery_.restored) +
                    " conflicts=" + std::to_string(recovery_.conflicts) +
                    " failed=" + std::to_string(recovery_.failed));
    }
  }
  if (!v2_) {
    wakeSources_ = {kSrcThreshold, kSrcPoll};
  } else {
    wakeSources_ = {kSrcEvents, kSrcPsi, kSrcPoll};
    if (opts_.v2WakePsi) {
      auto t = parsePsiTrigger(opts_.psiTrigger);
      if (!t) throw std::invalid_argument("--controller.psi-trigger: " + t.error().message());
    }
  }
  for (const char* src : wakeSources_) latency_[src].buckets.assign(kLatencyBounds.size() + 1, 0);

  dProtected_ = nodeGauge("memcg_controller_protected_cgroups",
                          "Cgroups under controller protection.");
  dReclaimed_ = cgroupCounter("memcg_controller_reclaimed_bytes_total",
                              "Bytes reclaimed by the controller, by actuator (v1: usage before "
                              "minus the lowered limit; v2: the larger of what memory.reclaim "
                              "was asked for and the usage drop across the write; both lower bounds).",
                              {"actuator"});
  dActions_ = cgroupCounter("memcg_controller_actions_total",
                            "Controller actuations by actuator and result (ok, partial, busy, "
                            "conflict, nothing, denied, gone, error).",
                            {"actuator", "result"});
  dLatency_ = metrics::Desc{"memcg_controller_trigger_to_reclaim_seconds",
                            "Time from the controller's wake that found the margin short to the "
                            "return of the episode's first reclaiming write, by what woke it "
                            "(trigger: threshold (v1 eventfd), memory.events, psi (v2), poll).",
                            metrics::Type::kHistogram,
                            {"trigger"},
                            kLatencyBounds};
  dCpu_ = nodeCounter("memcg_controller_cpu_seconds_total",
                      "CPU time of the controller's waiter and worker threads.");
  dDryRun_ = nodeCounter("memcg_controller_dry_run_actions_total",
                         "Actuations the controller would have done in dry-run mode.");
  dRestores_ = nodeCounter("memcg_controller_journal_restores_total",
                           "Limits a crash left lowered that the journal replay restored.");
  dThrottled_ = nodeCounter("memcg_controller_throttled_total",
                            "Episodes cut short by a budget (reason: cpu, rate).", {"reason"});
  dEnabled_ = nodeGauge("memcg_controller_dry_run", "1 if the controller is in dry-run mode.");
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
  tokensAt_ = Clock::now();
  tokens_ = static_cast<double>(opts_.maxBytesPerSecond);
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
  auto d = discovery_.find(cgroup);
  if (d && d->alive()) return d;
  (void)discovery_.refresh();
  d = discovery_.find(cgroup);
  return d && d->alive() ? d : nullptr;
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
  if (p.cgroup.empty() || p.cgroup.front() != '/')
    return OpError{ErrorKind::kBadInput, "cgroup must be a label starting with '/'"};
  if (!percentOk(p.startMarginPercent) || !percentOk(p.targetMarginPercent))
    return OpError{ErrorKind::kBadInput,
                   "start_margin_percent and target_margin_percent must be above 0 and below 100"};
  if (p.startMarginPercent > 0 && p.startMarginBytes > 0)
    return OpError{ErrorKind::kBadInput,
                   "give start_margin_bytes or start_margin_percent, not both"};
  if (p.targetMarginPercent > 0 && p.targetMarginBytes > 0)
    return OpError{ErrorKind::kBadInput,
                   "give target_margin_bytes or target_margin_percent, not both"};
  const bool startPct = p.startMarginPercent > 0, targetPct = p.targetMarginPercent > 0;
  if (!startPct && p.startMarginBytes == 0)
    return OpError{ErrorKind::kBadInput, "start_margin_bytes (or start_margin_percent) must be > 0"};
  if (!targetPct && p.targetMarginBytes == 0)
    return OpError{ErrorKind::kBadInput,
                   "target_margin_bytes (or target_margin_percent) must be > 0"};
  if (!startPct && !targetPct && p.targetMarginBytes <= p.startMarginBytes)
    return OpError{ErrorKind::kBadInput, "target_margin_bytes must exceed start_margin_bytes"};
  if (startPct && targetPct && p.targetMarginPercent <= p.startMarginPercent)
    return OpError{ErrorKind::kBadInput,
                   "target_margin_percent must exceed start_margin_percent"};
  if (p.cgroup == "/") return OpError{ErrorKind::kForbidden, "the root cgroup is never written"};
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
  const uint64_t startB = p.startBytes(r.limit), targetB = p.targetBytes(r.limit);
  if (startB == 0)
    return OpError{ErrorKind::kBadInput, "the start margin is 0 bytes at the limit (" +
                                             std::to_string(r.limit) + ")"};
  if (targetB <= startB)
    return OpError{ErrorKind::kBadInput,
                   "the target margin must exceed the start margin; at the limit (" +
                       std::to_string(r.limit) + ") the target is " + std::to_string(targetB) +
                       " bytes, the start " + std::to_string(startB)};
  if (targetB >= r.limit)
    return OpError{ErrorKind::kBadInput, "target_margin_bytes must be below the limit (" +
                                             std::to_string(r.limit) + ")"};
  {
    std::lock_guard<std::mutex> g(mu_);
    if (prots_.count(p.cgroup))
      return OpError{ErrorKind::kConflict, "cgroup is already protected"};
    prot->id = nextId_++;
    prot->lastUsage = r.usage;
    prot->lastLimit = r.limit;
    prot->lastUnlimited = false;
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
    p->removed = true;
    prots_.erase(it);
    idle = !p->busy;
    // byId_ is cleaned by the waiter, which owns the eventfd (closing it
    // unregisters the v1 threshold).
  }
  // A busy worker releases the armed journal entry after its nudge.
  if (idle) actuator_->releaseJournal(*p->dir);
  audit_->write("unprotect", {{"cgroup", cgroup}});
  wakeWaiter();
  return std::nullopt;
}

void Controller::updateCpu(std::atomic<double>& slot) { slot.store(threadCpuSeconds()); }

std::string Controller::wakeName(const Prot& p) const {
  std::string w;
  if (p.armed.load()) w = v2_ ? kSrcEvents : kSrcThreshold;
  if (p.psiArmed.load()) w += w.empty() ? kSrcPsi : std::string("+") + kSrcPsi;
  return w.empty() ? kSrcPoll : w + "+" + kSrcPoll;
}

Result<PsiTrigger> parsePsiTrigger(std::string_view text) {
  PsiTrigger t;
  std::string_view rest = text, kind, stall, window, extra;
  auto word = [&](std::string_view& out) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t n = rest.find(' ');
    out = rest.substr(0, n);
    rest = n == std::string_view::npos ? std::string_view{} : rest.substr(n);
    return !out.empty();
  };
  const char* want = "want \"some|full <stall us> <window us>\", e.g. \"some 1000 500000\"";
  if (!word(kind) || !word(stall) || !word(window) || word(extra) ||
      (kind != "some" && kind != "full")) {
    return makeError(EINVAL, std::string(text), want);
  }
  t.full = kind == "full";
  auto s = parseU64(stall), w = parseU64(window);
  if (!s || !w) return makeError(EINVAL, std::string(text), want);
  // The kernel's limits (kernel/sched/psi.c): 500 ms <= window <= 10 s,
  // 0 < stall <= window.
  if (*w < 500000 || *w > 10000000)
    return makeError(EINVAL, std::string(text), "the window must be 500000..10000000 us");
  if (*s == 0 || *s > *w)
    return makeError(EINVAL, std::string(text), "the stall must be > 0 and at most the window");
  t.stallUs = *s;
  t.windowUs = *w;
  return t;
}

void Controller::rearm(const std::shared_ptr<Prot>& p, uint64_t limit) {
  if (p->armFailed && p->armedFor == limit) return;
  if (p->eventFd.valid()) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p->eventFd.get(), nullptr);
    p->eventFd.reset();
  }
  p->armedFor = limit;
  p->armFailed = false;
  struct epoll_event ev {};
  ev.data.u64 = epollKey(p->id, false);
  if (!v2_) {
    uint64_t start = p->p.startBytes(limit);
    uint64_t threshold = limit > start ? limit - start : 1;
    auto efd = actuator_->armV1Threshold(*p->dir, p->p.cgroup, threshold);
    if (!efd) {
      p->armFailed = true;
      log::debug("controller: no usage threshold, polling only",
                 kv("cgroup", p->p.cgroup) + " " + kv("err", efd.error().message()));
      return;
    }
    p->eventFd = std::move(*efd);
    ev.events = EPOLLIN;
  } else {
    // memory.events notifies (POLLPRI) when a key changes: "high"/"max"
    // hits wake us at once; the poll covers the approach.
    if (!opts_.v2WakeEvents) {
      p->armFailed = true;
      return;
    }
    std::string n(cgroupfs::fileName(FileId::kV2Events));
    Fd fd(::openat(p->dir->fd(), n.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      p->armFailed = true;
      return;
    }
    p->eventFd = std::move(fd);
    ev.events = EPOLLPRI;
  }
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p->eventFd.get(), &ev) != 0) {
    p->eventFd.reset();
    p->armFailed = true;
  }
}

void Controller::armPsi(const std::shared_ptr<Prot>& p) {
  auto fd = actuator_->armV2PressureTrigger(*p->dir, p->p.cgroup, opts_.psiTrigger);
  struct epoll_event ev {};
  ev.events = EPOLLPRI;
  ev.data.u64 = epollKey(p->id, true);
  if (fd && ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd->get(), &ev) == 0) {
    p->psiFd = std::move(*fd);
    p->psiArmed = true;
    return;
  }
  p->psiFailed = true;
  std::string why = fd ? std::string("epoll: ") + std::strerror(errno) : fd.error().message();
  log::info("controller: no PSI trigger, waking on memory.events and the poll",
            kv("cgroup", p->p.cgroup) + " " + kv("err", why));
}

void Controller::check(const std::shared_ptr<Prot>& p, Clock::time_point now,
                       const char* firedBy, std::string& buf, bool& retrySoon) {
  bool busyBefore;
  {
    std::lock_guard<std::mutex> g(mu_);
    busyBefore = p->busy;
  }
  Reading r = readUsage(*p, buf);
  if (r.gone) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (p->removed) return;
      p->removed = true;
      prots_.erase(p->p.cgroup);
    }
    actuator_->releaseJournal(*p->dir);
    audit_->write("unprotect", {{"cgroup", p->p.cgroup}, {"reason", "cgroup removed"}});
    return;
  }
  if (!r.ok) return;
  bool busyAfter;
  {
    std::lock_guard<std::mutex> g(mu_);
    busyAfter = p->busy;
  }
  // Not while a v1 nudge may be in flight: the limit read may be the lowered
  // one, and re-arming for it (then back) would leave a window with no
  // threshold at the right place.
  if (!r.unlimited && !busyBefore && !busyAfter &&
      (!p->eventFd.valid() || p->armedFor != r.limit)) {
    rearm(p, r.limit);
    p->armed = p->eventFd.valid();
  }
  if (v2_ && opts_.v2WakePsi && !p->psiFd.valid() && !p->psiFailed) armPsi(p);
  std::lock_guard<std::mutex> g(mu_);
  p->lastUsage = r.usage;
  p->lastLimit = r.limit;
  p->lastUnlimited = r.unlimited;
  if (r.unlimited || p->removed) return;
  uint64_t margin = r.limit > r.usage ? r.limit - r.usage : 0;
  if (margin >= p->p.startBytes(r.limit)) {
    p->pendingSource = nullptr;
    return;
  }
  if (p->queued || p->busy) return;
  const char* source = firedBy ? firedBy : kSrcPoll;
  if (now < p->cooldownUntil) {
    retrySoon = true;
    if (!p->pendingSource) {
      p->pendingAt = now;
      p->pendingSource = source;
    }
    return;
  }
  p->queued = true;
  p->triggerAt = p->pendingSource ? p->pendingAt : now;
  p->triggerSource = p->pendingSource ? p->pendingSource : source;
  p->pendingSource = nullptr;
  queue_.push_back(p);
  cv_.notify_one();
}

void Controller::waiterLoop() {
  setThreadPolicy(opts_.schedPolicy);
  pthread_setname_np(pthread_self(), "memcg-ctl-wait");
  std::string buf;
  struct epoll_event evs[32];
  bool retrySoon = false;
  while (!stop_) {
    int timeout = retrySoon ? std::max(1, opts_.cooldownMs) : opts_.pollIntervalMs;
    int n = ::epoll_wait(epoll_.get(), evs, 32, timeout);
    Clock::time_point now = Clock::now();
    if (stop_) break;
    std::vector<std::shared_ptr<Prot>> list;
    std::vector<std::shared_ptr<Prot>> dead;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto it = byId_.begin(); it != byId_.end();) {
        if (it->second->removed) {
          dead.push_back(it->second);
          it = byId_.erase(it);
        } else {
          list.push_back(it->second);
          ++it;
        }
      }
    }
    for (auto& d : dead) {
      for (Fd* f : {&d->eventFd, &d->psiFd}) {
        if (f->valid()) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, f->get(), nullptr);
        f->reset();  // closing the eventfd drops the threshold; the PSI fd, the trigger
      }
    }
    for (int i = 0; i < n; ++i) {
      uint64_t key = evs[i].data.u64;
      if (key == kWakeId) {
        uint64_t v;
        (void)!::read(wake_.get(), &v, sizeof v);
        continue;
      }
      const bool psi = key % 2 == 1;
      for (auto& p : list) {
        if (p->id != key / 2) continue;
        const char* src;
        if (psi) {
          // POLLPRI = the trigger fired (epoll's poll call consumed it);
          // POLLERR = the trigger is gone (cgroup removed): stop polling it.
          if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
            ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p->psiFd.get(), nullptr);
            p->psiFd.reset();
            p->psiFailed = true;
            p->psiArmed = false;
            continue;
          }
          src = kSrcPsi;
        } else if (!v2_) {
          uint64_t v;
          (void)!::read(p->eventFd.get(), &v, sizeof v);
          src = kSrcThreshold;
        } else {
          char tmp[512];
          (void)!::pread(p->eventFd.get(), tmp, sizeof tmp, 0);  // re-arms POLLPRI
          src = kSrcEvents;
        }
        if (!p->firedBy) p->firedBy = src;  // the first source of this wake
      }
    }
    retrySoon = false;
    for (auto& p : list) {
      check(p, now, p->firedBy, buf, retrySoon);
      p->firedBy = nullptr;
    }
    updateCpu(waiterCpu_);
  }
  // Unregister all thresholds on the way out.
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [_, p] : byId_) {
    p->eventFd.reset();
    p->psiFd.reset();
  }
}

void Controller::workerLoop() {
  setThreadPolicy(opts_.schedPolicy);
  pthread_setname_np(pthread_self(), "memcg-ctl-act");
  // The reclaim this thread causes (a v1 limit nudge reclaims in the writer;
  // a v2 memory.reclaim write too) is traced under its tid: mark it as ours,
  // so the vmscan metrics tell it apart from the workload's own reclaim.
  const auto tid = static_cast<int32_t>(::gettid());
  if (attribution_) attribution_->markReclaimer(tid);
  windowAt_ = Clock::now();
  cpuWindowStart_ = threadCpuSeconds();
  for (;;) {
    std::shared_ptr<Prot> p;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      p = queue_.front();
      queue_.pop_front();
      p->queued = false;
      if (p->removed) continue;
      p->busy = true;
    }
    // The episode's reclaim is charged to its cgroup (kind proactive), not ours.
    if (attribution_) attribution_->beginEpisode(tid, p->p.cgroup);
    episode(p);
    if (attribution_) attribution_->endEpisode(tid);
    bool removed;
    {
      std::lock_guard<std::mutex> g(mu_);
      p->busy = false;
      removed = p->removed;
      int cd = opts_.dryRun ? std::max(opts_.cooldownMs, 1000) : opts_.cooldownMs;
      p->cooldownUntil = Clock::now() + std::chrono::milliseconds(cd);
    }
    if (removed) actuator_->releaseJournal(*p->dir);
    updateCpu(workerCpu_);
  }
  updateCpu(workerCpu_);
  if (attribution_) attribution_->unmarkReclaimer(tid);
}

void Controller::record(const Prot& p, const ReclaimResult& r, bool first) {
  std::string act(actuatorName(r.actuator));
  std::string res(outcomeName(r.outcome));
  {
    std::lock_guard<std::mutex> g(mu_);
    Counters& c = counters_[p.p.cgroup];
    c.actions[{act, res}]++;
    c.reclaimed[act] += r.reclaimed;
    auto& mp = const_cast<Prot&>(p);
    mp.actions++;
    mp.reclaimed += r.reclaimed;
    mp.lastOutcome = res;
    mp.lastDetail = r.detail;
    mp.lastActionMs = unixMs();
    if (first && (r.outcome == Outcome::kOk || r.outcome == Outcome::kPartial)) {
      double s = std::chrono::duration<double>(r.reclaimedAt - p.triggerAt).count();
      if (s < 0) s = 0;
      size_t b = 0;
      while (b < kLatencyBounds.size() && s > kLatencyBounds[b]) ++b;
      auto it = latency_.find(p.triggerSource);
      if (it != latency_.end()) {
        it->second.buckets[b]++;
        it->second.count++;
        it->second.sum += s;
      }
    }
  }
  nlohmann::json a = {{"cgroup", p.p.cgroup},
                      {"actuator", act},
                      {"result", res},
                      {"requested_bytes", r.requested},
                      {"reclaimed_bytes", r.reclaimed},
                      {"usage_before_bytes", r.usageBefore},
                      {"usage_after_bytes", r.usageAfter},
                      {"write_seconds", r.writeSeconds},
                      {"trigger", p.triggerSource}};
  if (r.actuator == ActuatorKind::kV1LimitNudge) {
    a["original_limit"] = r.original.unlimited ? nlohmann::json("unlimited")
                                               : nlohmann::json(r.original.bytes);
    a["lowered_limit"] = r.lowered;
    a["pair_seconds"] = r.pairSeconds;
  }
  if (!r.detail.empty()) a["detail"] = r.detail;
  audit_->write("reclaim", std::move(a));
}

void Controller::episode(const std::shared_ptr<Prot>& p) {
  std::string buf;
  {
    std::lock_guard<std::mutex> g(mu_);
    p->episodes++;
  }
  for (int i = 0; i < opts_.maxNudgesPerEpisode && !stop_; ++i) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (p->removed) return;
    }
    Reading r = readUsage(*p, buf);
    if (!r.ok || r.unlimited) return;
    uint64_t margin = r.limit > r.usage ? r.limit - r.usage : 0;
    // A limit changed since protect() can make a percent target fall below a
    // bytes start margin: then reclaim to the start margin.
    uint64_t target = std::max(p->p.targetBytes(r.limit), p->p.startBytes(r.limit));
    if (margin >= target) return;
    uint64_t need = target - margin;
    if (opts_.dryRun) {
      {
        std::lock_guard<std::mutex> g(mu_);
        dryRunActions_++;
        p->lastOutcome = "dry_run";
        p->lastActionMs = unixMs();
      }
      audit_->write("dry_run", {{"cgroup", p->p.cgroup},
                                {"actuator", std::string(actuatorName(
                                                 v2_ ? ActuatorKind::kV2MemoryReclaim
                                                     : ActuatorKind::kV1LimitNudge))},
                                {"would_reclaim_bytes", need},
                                {"usage_bytes", r.usage},
                                {"limit_bytes", r.limit},
                                {"trigger", p->triggerSource}});
      return;
    }
    // Budgets: bytes per second (token bucket, 1 s burst) and CPU per 1 s window.
    Clock::time_point now = Clock::now();
    double rate = static_cast<double>(opts_.maxBytesPerSecond);
    tokens_ = std::min(rate, tokens_ + rate * std::chrono::duration<double>(now - tokensAt_).count());
    tokensAt_ = now;
    if (now - windowAt_ >= std::chrono::seconds(1)) {
      windowAt_ = now;
      cpuWindowStart_ = threadCpuSeconds();
    }
    std::string throttle;
    if (threadCpuSeconds() - cpuWindowStart_ >= opts_.cpuBudget) {
      throttle = "cpu";
    } else if (tokens_ < 1 << 20) {
      throttle = "rate";
    }
    if (!throttle.empty()) {
      std::lock_guard<std::mutex> g(mu_);
      throttled_[throttle]++;
      p->lastOutcome = "throttled_" + throttle;
      return;
    }
    need = std::min<uint64_t>(need, static_cast<uint64_t>(tokens_));
    ReclaimRequest req{p->p.cgroup, need, p->p.floorBytes, opts_.maxStepBytes};
    ReclaimResult res = v2_ ? actuator_->v2Reclaim(*p->dir, req) : actuator_->v1Nudge(*p->dir, req);
    tokens_ -= static_cast<double>(res.reclaimed);
    record(*p, res, i == 0);
    if (res.outcome != Outcome::kOk) return;
  }
}

nlohmann::json Controller::state() const {
  nlohmann::json prots = nlohmann::json::array();
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [label, p] : prots_) {
    uint64_t margin = p->lastLimit > p->lastUsage ? p->lastLimit - p->lastUsage : 0;
    nlohmann::json j = {{"cgroup", label},
                        {"start_margin_bytes", p->p.startBytes(p->lastLimit)},
                        {"target_margin_bytes", p->p.targetBytes(p->lastLimit)},
                        {"floor_bytes", p->p.floorBytes},
                        {"usage_bytes", p->lastUsage},
                        {"limit_bytes", p->lastUnlimited ? nlohmann::json(nullptr)
                                                         : nlohmann::json(p->lastLimit)},
                        {"margin_bytes", margin},
                        {"wake", wakeName(*p)},
                        {"busy", p->busy},
                        {"episodes", p->episodes},
                        {"actions", p->actions},
                        {"reclaimed_bytes", p->reclaimed},
                        {"last_result", p->lastOutcome},
                        {"protected_since_ms", p->sinceMs}};
    if (p->p.startMarginPercent > 0) j["start_margin_percent"] = p->p.startMarginPercent;
    if (p->p.targetMarginPercent > 0) j["target_margin_percent"] = p->p.targetMarginPercent;
    if (!p->lastDetail.empty()) j["last_detail"] = p->lastDetail;
    if (p->lastActionMs) j["last_action_ms"] = p->lastActionMs;
    prots.push_back(std::move(j));
  }
  nlohmann::json s = {
      {"enabled", true},
      {"dry_run", opts_.dryRun},
      {"mode", std::string(modeName(discovery_.layout().mode))},
      {"actuator", std::string(actuatorName(v2_ ? ActuatorKind::kV2MemoryReclaim
                                                : ActuatorKind::kV1LimitNudge))},
      {"allow", opts_.allow},
      {"protections", std::move(prots)},
      {"journal",
       {{"path", journal_ ? journal_->path() : ""},
        {"pending", journal_ ? journal_->pending().size() : 0},
        {"restores", journalRestores_}}},
      {"cpu_seconds", waiterCpu_.load() + workerCpu_.load()},
      {"dry_run_actions", dryRunActions_},
  };
  if (v2_) {
    s["v2_swappiness_supported"] = actuator_->v2SwappinessSupported();
    s["psi_trigger"] = opts_.v2WakePsi ? nlohmann::json(opts_.psiTrigger) : nlohmann::json(nullptr);
  }
  return s;
}

void Controller::collect(metrics::Sink& sink) const {
  std::lock_guard<std::mutex> g(mu_);
  sink.add(dProtected_, {}, static_cast<double>(prots_.size()));
  for (const auto& [label, c] : counters_) {
    std::string_view l = sink.keep(label);
    for (const auto& [act, bytes] : c.reclaimed) {
      sink.add(dReclaimed_, {l, sink.keep(act)}, static_cast<double>(bytes));
    }
    for (const auto& [k, n] : c.actions) {
      sink.add(dActions_, {l, sink.keep(k.first), sink.keep(k.second)}, static_cast<double>(n));
    }
  }
  for (const char* src : wakeSources_) {
    const Latency& h = latency_.at(src);
    std::vector<uint64_t> cum(kLatencyBounds.size());
    uint64_t run = 0;
    for (size_t i = 0; i < kLatencyBounds.size(); ++i) {
      run += h.buckets[i];
      cum[i] = run;
    }
    sink.family(dLatency_).addHistogram({src}, h.count, h.sum, std::move(cum));
  }
  sink.add(dCpu_, {}, waiterCpu_.load() + workerCpu_.load());
  sink.add(dDryRun_, {}, static_cast<double>(dryRunActions_));
  sink.add(dRestores_, {}, static_cast<double>(journalRestores_));
  for (const char* reason : {"cpu", "rate"}) {
    auto it = throttled_.find(reason);
    sink.add(dThrottled_, {reason}, it == throttled_.end() ? 0.0 : static_cast<double>(it->second));
  }
  sink.add(dEnabled_, {}, opts_.dryRun ? 1.0 : 0.0);
}

std::vector<const metrics::Desc*> Controller::describe() const {
  return {&dProtected_, &dReclaimed_, &dActions_,    &dLatency_, &dCpu_,
          &dDryRun_,    &dRestores_,  &dThrottled_, &dEnabled_};
}

}  // namespace memcg::controller
