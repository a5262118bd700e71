#include "collectors/taskstats/cgroup_delays.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/file.h"
#include "common/log.h"
#include "common/parse.h"

namespace memcg::taskstats {

Result<std::vector<uint32_t>> readIdList(const std::string& file) {
  auto text = readWholeFile(file);
  if (!text.ok()) return text.error();
  return parseIdList(*text, file);
}

Result<std::vector<uint32_t>> parseIdList(std::string_view text, const std::string& file) {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 6);
  std::string_view rest = text, line;
  while (nextLine(rest, line)) {
    if (line.empty()) continue;
    auto v = parseU64(line);
    if (!v || *v == 0 || *v > UINT32_MAX) {
      return makeError(EINVAL, file, "bad line: " + std::string(line));
    }
    ids.push_back(static_cast<uint32_t>(*v));
  }
  return ids;
}

Result<std::unique_ptr<CgroupDelayAggregator>> CgroupDelayAggregator::create(
    Options opts) {
  auto client = TaskstatsClient::open(opts.query_rcvbuf);
  if (!client.ok()) return client.error();
  std::unique_ptr<CgroupDelayAggregator> a(
      new CgroupDelayAggregator(std::move(client.value()), std::move(opts)));
  if (a->opts_.locate_exit) a->ledger_.setExitLocator(a->opts_.locate_exit);
  if (a->opts_.listen_exits) {
    auto l = ExitListener::open(a->client_.familyId(), a->opts_.cpumask,
                                a->opts_.listener_rcvbuf);
    if (l.ok()) {
      a->listener_.emplace(std::move(l.value()));
    } else {
      log::warn(
          "taskstats exit listener unavailable; exited processes keep their last "
          "scraped delays",
          "err=" + log::quote(l.error().message()));
    }
  }
  if (a->listener_ && a->opts_.exit_thread) {
    a->wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!a->wake_fd_.valid()) return makeError(errno, "eventfd");
    a->exit_thread_ = std::thread([p = a.get()] { p->exitLoop(); });
  }
  return a;
}

CgroupDelayAggregator::~CgroupDelayAggregator() {
  if (exit_thread_.joinable()) {
    stop_ = true;
    uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof(one));
    exit_thread_.join();
  }
}

void CgroupDelayAggregator::exitLoop() {
  while (!stop_) {
    // Wakes every 250 ms while exits wait to be placed (delay_ledger.h).
    const bool ready = listener_->waitReadable(250, wake_fd_.get());
    if (stop_) break;
    std::lock_guard lock(mu_);
    if (ready || ledger_.pendingExits() != 0) drainLocked();
    const auto now = std::chrono::steady_clock::now();
    if (opts_.sample_members.count() > 0 && now - sampled_at_ >= opts_.sample_members) {
      sampled_at_ = now;
      sampleLocked();
    }
  }
}

void CgroupDelayAggregator::drainExits() {
  std::lock_guard lock(mu_);
  drainLocked();
}

void CgroupDelayAggregator::drainLocked() {
  if (!listener_) return;
  auto n = listener_->drain([this](const TaskstatsMessage& m) { ledger_.onExit(m); });
  if (!n.ok()) {
    log::debug("taskstats exit drain failed", "err=" + log::quote(n.error().message()));
  }
  logOverrunsLocked();
  // Exits not placed yet (the tracer had not seen the task): a few times a
  // second, not on every drain (collect() drains once per cgroup).
  const auto now = std::chrono::steady_clock::now();
  if (ledger_.pendingExits() != 0 && now - retried_at_ >= std::chrono::milliseconds(200)) {
    retried_at_ = now;
    ledger_.retryPending(now);
  }
}

void CgroupDelayAggregator::logOverrunsLocked() {
  // The first overflow of each socket is logged at once, later ones at most
  // once a minute (the counters in the metrics have every one).
  const auto now = std::chrono::steady_clock::now();
  auto note = [&](OverrunLog& lg, uint64_t total, const char* msg, const char* key) {
    if (total == lg.logged) return;
    if (lg.at && now - *lg.at < std::chrono::minutes(1)) return;
    log::warn(msg, std::string(key) + "=" + std::to_string(total));
    lg.logged = total;
    lg.at = now;
  };
  note(query_overrun_log_, client_.overruns(),
       "taskstats query socket overflowed (ENOBUFS): the lost replies were asked for "
       "again",
       "query_overruns");
  if (listener_) {
    note(listener_overrun_log_, listener_->overruns(),
         "taskstats exit listener overflowed (ENOBUFS): exit records lost, those "
         "processes keep their last scraped delays",
         "exit_listener_overruns");
  }
}

void CgroupDelayAggregator::sampleLocked() {
  bool first = true;
  for (const std::string& key : ledger_.keys()) {
    auto ids = readIdList(key + "/cgroup.procs");
    if (!ids.ok()) continue;  // gone: the next scrape drops it
    ledger_.sampleMembers(key, *ids, first);
    first = false;
  }
}

Result<CgroupDelays> CgroupDelayAggregator::collect(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    Error e = makeError(errno, dir);
    if (e.gone()) forget(dir);
    return e;
  }
  return collect(dir, st.st_ino, [&] { return readIdList(dir + "/cgroup.procs"); });
}

Result<CgroupDelays> CgroupDelayAggregator::collect(
    const std::string& dir, ino_t inode,
    const std::function<Result<std::vector<uint32_t>>()>& tgids) {
  // All under the lock: an exit folded by the exit thread between reading
  // cgroup.procs and tracking its processes would be counted twice.
  std::lock_guard lock(mu_);
  auto ids = tgids();
  if (!ids.ok()) {
    if (ids.error().gone()) ledger_.forget(dir);
    return ids.error();
  }

  ledger_.begin(dir, inode, *ids);
  Status s = client_.queryMany(
      *ids, IdKind::kTgid,
      [&](uint32_t tgid, Result<TaskStats>&& r) {
        if (r.ok()) {
          ledger_.observe(dir, tgid, *r);
        } else {
          ledger_.observeError(dir, tgid, r.error().err);
        }
      },
      opts_.batch);
  // Exit records of processes that left the list are queued by now (the
  // kernel sends them before the task leaves cgroup.procs).
  drainLocked();
  logOverrunsLocked();  // also without a listener (drainLocked returns early then)
  CgroupDelays out = ledger_.end(dir);
  if (!s.ok()) return s.error();
  return out;
}

void CgroupDelayAggregator::forget(const std::string& dir) {
  std::lock_guard lock(mu_);
  ledger_.forget(dir);
}

void CgroupDelayAggregator::retainOnly(const std::vector<std::string>& dirs) {
  std::lock_guard lock(mu_);
  ledger_.retainOnly(dirs);
}

CgroupDelayAggregator::Stats CgroupDelayAggregator::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  static_cast<DelayLedger::Stats&>(s) = ledger_.stats();
  s.listening = listener_.has_value();
  s.listener_overruns = listener_ ? listener_->overruns() : 0;
  s.query_overruns = client_.overruns();
  return s;
}

}  // namespace memcg::taskstats
