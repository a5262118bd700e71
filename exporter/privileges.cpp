#include "exporter/privileges.h"

#include <dirent.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

namespace memcg {
namespace {

const metrics::Desc kEffective = nodeGauge("memcg_exporter_capability_effective",
                                           "1 for each capability the exporter's serving "
                                           "thread has (the rest were dropped after "
                                           "start-up; README \"Privileges\").",
                                           {"capability"});
const metrics::Desc kDropped = nodeGauge(
    "memcg_exporter_capabilities_dropped",
    "1 if the capabilities the enabled parts do not need were dropped after start-up "
    "(0 with --no-capabilities.drop).");

/// Every capability's name, by number: made once, never changed (the
/// metric's label values are views into it).
const std::vector<std::string>& capNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (cap_value_t c = 0; c < cap_max_bits(); ++c) {
      char* n = cap_to_name(c);
      v.push_back(n ? n : std::to_string(c));
      cap_free(n);
    }
    return v;
  }();
  return names;
}

std::string capName(int c) {
  const auto& n = capNames();
  return c >= 0 && static_cast<size_t>(c) < n.size() ? n[c] : std::to_string(c);
}

/// Numbers of the calling thread's effective capabilities.
std::vector<int> effectiveNumbers() {
  std::vector<int> out;
  cap_t now = cap_get_proc();
  if (!now) return out;
  for (int c = 0; c < static_cast<int>(cap_max_bits()); ++c) {
    cap_flag_value_t v = CAP_CLEAR;
    if (cap_get_flag(now, static_cast<cap_value_t>(c), CAP_EFFECTIVE, &v) == 0 &&
        v == CAP_SET)
      out.push_back(c);
  }
  cap_free(now);
  return out;
}

// capset(2) changes the calling thread only, and the threads already
// running (HTTP front and workers, tracing reader, controller, history,
// rules) keep what they had. libpsx would broadcast it, but only to threads
// made through its pthread_create wrapper, and std::thread calls
// pthread_create from inside libstdc++, where a link-time wrap does not
// reach. So this does what glibc does for setuid(): a signal to every other
// thread, whose handler makes the same capset call, then a check of each
// thread's CapPrm/CapEff in /proc/self/task.

/// The raw capset arguments the handler applies, set only while a broadcast
/// runs (a signal handler can reach nothing else).
struct CapsetCall {
  __user_cap_header_struct header{};
  __user_cap_data_struct data[2]{};
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
};
std::atomic<CapsetCall*> gCapsetCall{nullptr};

void onCapsetSignal(int) {
  CapsetCall* c = gCapsetCall.load();
  if (!c) return;
  int saved = errno;
  __user_cap_header_struct h = c->header;
  if (::syscall(SYS_capset, &h, c->data) != 0) c->failed.fetch_add(1);
  c->done.fetch_add(1);
  errno = saved;
}

/// CapPrm and CapEff of one thread, from /proc/self/task/<tid>/status.
bool threadCaps(const std::string& tid, uint64_t& prm, uint64_t& eff) {
  std::ifstream f("/proc/self/task/" + tid + "/status");
  std::string line;
  int got = 0;
  while (std::getline(f, line)) {
    if (line.rfind("CapPrm:", 0) == 0)
      prm = std::strtoull(line.c_str() + 7, nullptr, 16), ++got;
    if (line.rfind("CapEff:", 0) == 0)
      eff = std::strtoull(line.c_str() + 7, nullptr, 16), ++got;
  }
  return got == 2;
}

std::vector<std::string> threadIds() {
  std::vector<std::string> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

/// Gives every other thread the calling thread's capability sets.
Status capsetAllThreads() {
  auto call = std::make_unique<CapsetCall>();
  call->header.version = _LINUX_CAPABILITY_VERSION_3;
  call->header.pid = 0;
  if (::syscall(SYS_capget, &call->header, call->data) != 0)
    return makeError(errno, "", "capget");
  call->header.pid = 0;
  const uint64_t wantPrm =
      call->data[0].permitted | (uint64_t{call->data[1].permitted} << 32);
  const uint64_t wantEff =
      call->data[0].effective | (uint64_t{call->data[1].effective} << 32);
  const int sig = SIGRTMAX - 3;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = onCapsetSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(sig, &sa, &old) != 0) return makeError(errno, "", "sigaction");
  gCapsetCall.store(call.get());
  const pid_t pid = ::getpid();
  const std::string self = std::to_string(::syscall(SYS_gettid));
  std::string pending;
  // Rounds: a thread started by one not yet done would begin with the old sets.
  for (int round = 0; round < 5; ++round) {
    pending.clear();
    int sent = 0;
    call->done.store(0);
    for (const auto& tid : threadIds()) {
      uint64_t prm = 0, eff = 0;
      if (tid == self || !threadCaps(tid, prm, eff)) continue;  // gone: fine
      if (prm == wantPrm && eff == wantEff) continue;
      if (::syscall(SYS_tgkill, pid, std::atoi(tid.c_str()), sig) == 0) ++sent;
      pending += (pending.empty() ? "" : ",") + tid;
    }
    if (sent == 0 && pending.empty()) break;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (call->done.load() < sent && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  gCapsetCall.store(nullptr);
  ::sigaction(sig, &old, nullptr);
  if (call->failed.load() > 0) return makeError(EPERM, "", "capset failed in a thread");
  if (!pending.empty())
    return makeError(EAGAIN, "", "threads kept their capabilities: " + pending);
  return Ok{};
}

class PrivilegesCollector final : public metrics::Collectable {
 public:
  explicit PrivilegesCollector(const std::atomic<bool>& dropped) : dropped_(dropped) {}
  std::shared_ptr<const void> collect(metrics::Sink& sink, const metrics::Filter*) override {
    const auto& names = capNames();
    for (int c : effectiveNumbers()) {
      if (static_cast<size_t>(c) < names.size()) sink.add(kEffective, {names[c]}, 1);
    }
    sink.add(kDropped, {}, dropped_.load() ? 1 : 0);
    return nullptr;
  }
  std::vector<const metrics::Desc*> describe() const override {
    return {&kEffective, &kDropped};
  }

 private:
  const std::atomic<bool>& dropped_;
};

}  // namespace

std::vector<KeptCapability> neededCapabilities(const PrivilegeNeeds& n) {
  std::map<int, std::string> keep;
  auto add = [&keep](int c, const std::string& why) {
    auto& w = keep[c];
    w += (w.empty() ? "" : ", ") + why;
  };
  if (n.tracefsVisibleMount)
    add(CAP_SYS_ADMIN, "vmscan: unmount the tracefs it mounted, at exit");
  if (n.tracefsInstanceNotOwned)
    add(CAP_DAC_OVERRIDE, "vmscan: remove its tracefs instance at exit (not root)");
  if (n.lockSymbols) add(CAP_SYSLOG, "vmscan locks: kernel addresses in /proc/kallsyms");
  if (n.taskstats) add(CAP_NET_ADMIN, "taskstats: netlink queries");
  if (n.delayacctRestore)
    add(CAP_SYS_ADMIN, "taskstats: kernel.task_delayacct back off at exit");
  if (n.controller) {
    add(CAP_DAC_OVERRIDE, "controller: limits of cgroups owned by other users");
    add(CAP_SYS_RESOURCE, "controller: v2 PSI trigger windows under 2 s");
  }
  std::vector<KeptCapability> out;
  for (auto& [c, why] : keep) out.push_back({c, why});
  return out;
}

Result<std::vector<std::string>> dropCapabilities(
    const std::vector<KeptCapability>& keep) {
  cap_t now = cap_get_proc();
  if (!now) return makeError(errno, "/proc/self/status", "cap_get_proc");
  std::vector<cap_value_t> have;
  for (const auto& k : keep) {
    cap_flag_value_t v = CAP_CLEAR;
    if (cap_get_flag(now, static_cast<cap_value_t>(k.cap), CAP_PERMITTED, &v) == 0 &&
        v == CAP_SET)
      have.push_back(static_cast<cap_value_t>(k.cap));
  }
  cap_free(now);
  cap_t want = cap_init();  // all clear
  if (!want) return makeError(errno, "", "cap_init");
  if (!have.empty()) {
    cap_set_flag(want, CAP_PERMITTED, static_cast<int>(have.size()), have.data(),
                 CAP_SET);
    cap_set_flag(want, CAP_EFFECTIVE, static_cast<int>(have.size()), have.data(),
                 CAP_SET);
  }
  // Ambient capabilities would survive an exec; none is wanted.
  (void)cap_reset_ambient();
  int rc = cap_set_proc(want);  // this thread
  int err = errno;
  cap_free(want);
  if (rc != 0) return makeError(err, "", "capset");
  if (auto all = capsetAllThreads(); !all) return all.error();
  std::vector<std::string> names;
  for (auto c : have) names.push_back(capName(c));
  return names;
}

std::vector<std::string> effectiveCapabilities() {
  std::vector<std::string> out;
  for (int c : effectiveNumbers()) out.push_back(capName(c));
  return out;
}

std::unique_ptr<metrics::Collectable> makePrivilegesCollector(const std::atomic<bool>& dropped) {
  return std::make_unique<PrivilegesCollector>(dropped);
}

}  // namespace memcg
