#include "exporter/flags.h"

#include <functional>
#include <sstream>
#include <stdexcept>

#include "common/log.h"
#include "common/parse.h"
#include "controller/controller.h"
#include "tracing/tracefs_session.h"

namespace memcg {
namespace {

struct Flag {
  std::string name;
  std::string help;
  bool isBool;
  std::function<void(Options&, const std::string&)> set;
  std::string defaultText;
};

int parseInt(const std::string& flag, const std::string& v, int lo, int hi) {
  auto n = parseI64(v);
  if (!n || *n < lo || *n > hi) {
    throw std::invalid_argument("--" + flag + " wants a whole number from " + std::to_string(lo) +
                                " to " + std::to_string(hi) + ", got \"" + v + "\"");
  }
  return static_cast<int>(*n);
}

const std::vector<Flag>& flagTable() {
  static const std::vector<Flag> kFlags = {
      {"web.listen-address", "Address to listen on for the web interface and telemetry.", false,
       [](Options& o, const std::string& v) { o.listenAddress = v; }, ":9712"},
      {"web.telemetry-path", "Path under which to expose metrics.", false,
       [](Options& o, const std::string& v) {
         if (v.empty() || v[0] != '/' || v == "/") {
           throw std::invalid_argument("--web.telemetry-path must start with '/' and not be '/'");
         }
         o.telemetryPath = v;
       },
       "/metrics"},
      {"web.gzip-level", "zlib level for gzip-encoded scrapes (1 fastest .. 9 smallest).", false,
       [](Options& o, const std::string& v) { o.gzipLevel = parseInt("web.gzip-level", v, 1, 9); },
       "1"},
      {"web.threads", "HTTP worker threads.", false,
       [](Options& o, const std::string& v) { o.webThreads = parseInt("web.threads", v, 1, 64); },
       "4"},
      {"path.cgroupfs", "cgroupfs mount point (the parent of the hierarchies).", false,
       [](Options& o, const std::string& v) { o.discovery.cgroupfsRoot = v; }, "/sys/fs/cgroup"},
      {"path.procfs", "procfs mount point.", false,
       [](Options& o, const std::string& v) {
         o.discovery.procfsRoot = v;
         o.collector.procfsRoot = v;
       },
       "/proc"},
      {"path.tracefs",
       "tracefs mount point (empty: /sys/kernel/tracing, then /sys/kernel/debug/tracing; "
       "if tracefs is not mounted: mounted at the given path, or without one privately, "
       "visible to no other process).",
       false, [](Options& o, const std::string& v) { o.collector.tracefsPath = v; }, ""},
      {"cgroup.include", "Regex of cgroup paths to export (whole match, e.g. \"/kubepods.*\").",
       false, [](Options& o, const std::string& v) { o.discovery.include = v; }, ".*"},
      {"cgroup.exclude", "Regex of cgroup paths not to export (whole match).", false,
       [](Options& o, const std::string& v) { o.discovery.exclude = v; }, ""},
      {"cgroup.max-depth", "Deepest cgroup level walked (0: the root only).", false,
       [](Options& o, const std::string& v) {
         o.discovery.maxDepth = parseInt("cgroup.max-depth", v, 0, 64);
       },
       "8"},
      {"cgroup.limit", "Most cgroups exported; the rest are counted in memcg_exporter_cgroups_dropped.",
       false,
       [](Options& o, const std::string& v) {
         o.discovery.limit = static_cast<size_t>(parseInt("cgroup.limit", v, 1, 1000000));
       },
       "2000"},
      {"collector.memory_stat.fields",
       "Regex of memory.stat keys to export (whole match; default: a set chosen for reclaim "
       "analysis, see README).",
       false, [](Options& o, const std::string& v) { o.collector.memoryStatFields = v; }, ""},
      {"collector.taskstats.enable-delayacct",
       "Switch kernel.task_delayacct on at start (and off again at exit) for the taskstats collector.",
       true, [](Options& o, const std::string& v) { o.collector.enableDelayacct = v == "true"; },
       "false"},
      {"collector.vmscan.lru-detail",
       "Also trace mm_vmscan_lru_isolate and mm_vmscan_lru_shrink_active (pages isolated, "
       "active-list scans and deactivations; costs the reclaiming tasks ~0.4 us per LRU batch).",
       true, [](Options& o, const std::string& v) { o.collector.vmscanLruDetail = v == "true"; },
       "false"},
      {"collector.vmscan.shrink-slab",
       "Also trace mm_shrink_slab_start/end (slab shrinker calls, objects freed, time; one pair "
       "per shrinker call, the most frequent vmscan events).",
       true, [](Options& o, const std::string& v) { o.collector.vmscanShrinkSlab = v == "true"; },
       "false"},
      {"collector.vmscan.instance",
       "vmscan collector: name of its tracefs instance (must start with memcg_exporter). A "
       "stale instance of this name is removed at start: give a second exporter on the same "
       "host its own name.",
       false,
       [](Options& o, const std::string& v) {
         if (!tracing::isValidInstanceName(v))
           throw std::invalid_argument(
               "--collector.vmscan.instance must start with memcg_exporter and contain no "
               "'/' or spaces, got \"" + v + "\"");
         o.collector.vmscanInstance = v;
       },
       "memcg_exporter"},
      {"collector.vmscan.locks",
       "vmscan collector: also trace kernel lock contention (lock:contention_*), the cgroup "
       "rstat flush lock and memcg stat flushes. Thousands of events per second under "
       "reclaim; off: the events are not enabled at all.",
       true, [](Options& o, const std::string& v) { o.collector.vmscanLocks = v == "true"; },
       "false"},
      {"collector.vmscan.lock-callers",
       "vmscan collector: sample the kernel stacks of lock contentions (at most 64 a second, a "
       "stacktrace trigger in the exporter's tracefs instance), shown in /api/v1/locks. "
       "Implies --collector.vmscan.locks.",
       true,
       [](Options& o, const std::string& v) { o.collector.vmscanLockCallers = v == "true"; },
       "false"},
      {"collector.vmscan.lock-addresses",
       "vmscan collector: show raw kernel addresses in /api/v1/locks (each lock's \"addr\", "
       "hex for stack frames /proc/kallsyms cannot name). Off because the API has no "
       "authentication and kernel addresses defeat KASLR; without it locks get opaque ids.",
       true,
       [](Options& o, const std::string& v) { o.collector.vmscanLockAddresses = v == "true"; },
       "false"},
      {"collector.disable-defaults", "Disable all collectors not enabled explicitly.", true,
       [](Options& o, const std::string& v) { o.disableDefaults = v == "true"; }, "false"},
      {"controller.enable",
       "Run the background-reclaim controller (off: nothing is ever written to cgroupfs).", true,
       [](Options& o, const std::string& v) { o.controller.enable = v == "true"; }, "false"},
      {"controller.dry-run", "Log and count what the controller would do; never write.", true,
       [](Options& o, const std::string& v) { o.controller.dryRun = v == "true"; }, "false"},
      {"controller.allow",
       "Regex of cgroup labels the controller may write to (whole match; the root never).",
       false, [](Options& o, const std::string& v) { o.controller.allow = v; }, ""},
      {"controller.token-file",
       "File whose first line is the bearer token the controller API requires.", false,
       [](Options& o, const std::string& v) { o.controller.tokenFile = v; }, ""},
      {"controller.journal",
       "Journal of limits lowered by the controller (fsync'd; replayed at start).", false,
       [](Options& o, const std::string& v) { o.controller.journal = v; },
       "/var/lib/memcg_exporter/controller.journal"},
      {"controller.audit-log", "JSON-lines audit log of everything the controller did.", false,
       [](Options& o, const std::string& v) { o.controller.auditLog = v; }, ""},
      {"controller.sched-policy",
       "Policy of the controller's threads: other, batch or idle (each limit nudge itself "
       "always runs as SCHED_OTHER).",
       false, [](Options& o, const std::string& v) { o.controller.schedPolicy = v; }, "other"},
      {"controller.poll-interval-ms",
       "Fallback polling period of the controller's waiter, ms (the v1 threshold eventfd and "
       "the v2 memory.events / PSI trigger are the fast path).",
       false,
       [](Options& o, const std::string& v) {
         o.controller.pollIntervalMs = parseInt("controller.poll-interval-ms", v, 1, 600000);
       },
       "50"},
      {"controller.v2-wake",
       "cgroup v2 wake sources besides the poll, comma-separated: events (memory.events), psi "
       "(a PSI trigger on memory.pressure); empty: the poll only.",
       false,
       [](Options& o, const std::string& v) {
         o.controller.v2WakeEvents = o.controller.v2WakePsi = false;
         std::string_view rest = v;
         while (!rest.empty()) {
           size_t n = rest.find(',');
           std::string_view w = rest.substr(0, n);
           rest = n == std::string_view::npos ? std::string_view{} : rest.substr(n + 1);
           if (w == "events") {
             o.controller.v2WakeEvents = true;
           } else if (w == "psi") {
             o.controller.v2WakePsi = true;
           } else if (!w.empty()) {
             throw std::invalid_argument("--controller.v2-wake takes events and/or psi, got \"" +
                                         std::string(w) + "\"");
           }
         }
       },
       "events,psi"},
      {"controller.psi-trigger",
       "PSI trigger the controller writes to a protected v2 cgroup's memory.pressure: "
       "\"some|full <stall us> <window us>\" (window 500000..10000000).",
       false,
       [](Options& o, const std::string& v) {
         // Checked here, not only when the controller starts on a v2 host: a
         // bad value must not wait for the day the exporter runs on one.
         if (auto t = controller::parsePsiTrigger(v); !t) {
           throw std::invalid_argument("--controller.psi-trigger: " + t.error().message());
         }
         o.controller.psiTrigger = v;
       },
       "some 1000 500000"},
      {"log.level", "Only log messages with the given severity or above: debug, info, warn, error.",
       false,
       [](Options& o, const std::string& v) {
         log::Level l;
         if (!log::parseLevel(v, l)) {
           throw std::invalid_argument("--log.level must be debug, info, warn or error, got \"" +
                                       v + "\"");
         }
         o.logLevel = v;
       },
       "info"},
      {"version", "Show the version and exit.", true,
       [](Options& o, const std::string& v) { o.showVersion = v == "true"; }, "false"},
      {"help", "Show this help and exit.", true,
       [](Options& o, const std::string& v) { o.showHelp = v == "true"; }, "false"},
  };
  return kFlags;
}

const CollectorInfo* findCollector(std::string_view name) {
  for (const auto& c : collectorRegistry()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> Options::enabledCollectors() const {
  std::vector<std::string> out;
  for (const auto& c : collectorRegistry()) {
    bool on = !disableDefaults && c.defaultEnabled;
    auto it = collectorSwitch.find(std::string(c.name));
    if (it != collectorSwitch.end()) on = it->second;
    if (on) out.emplace_back(c.name);
  }
  return out;
}

Options parseFlags(int argc, const char* const* argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) {
      throw std::invalid_argument("unexpected argument \"" + arg + "\", try --help");
    }
    std::string body = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    bool negated = false;
    if (body.rfind("no-", 0) == 0) {
      negated = true;
      body = body.substr(3);
    }
    // --collector.NAME / --no-collector.NAME
    if (body.rfind("collector.", 0) == 0 && findCollector(body.substr(10))) {
      if (value) throw std::invalid_argument("--" + body + " takes no value");
      o.collectorSwitch[body.substr(10)] = !negated;
      continue;
    }
    const Flag* f = nullptr;
    for (const auto& fl : flagTable()) {
      if (fl.name == body) f = &fl;
    }
    if (!f) throw std::invalid_argument("unknown flag --" + body + ", try --help");
    if (f->isBool) {
      if (value && *value != "true" && *value != "false") {
        throw std::invalid_argument("--" + body + " wants true or false");
      }
      bool on = value ? *value == "true" : true;
      f->set(o, (on != negated) ? "true" : "false");
      continue;
    }
    if (negated) throw std::invalid_argument("--no-" + body + " is not a switch");
    if (!value) {
      if (i + 1 >= argc) throw std::invalid_argument("--" + body + " needs a value");
      value = argv[++i];
    }
    f->set(o, *value);
  }
  civetListeningPort(o.listenAddress);  // validate early
  return o;
}

std::string usage() {
  std::ostringstream s;
  s << "usage: memcg_exporter [<flags>]\n\n"
       "Prometheus exporter for Linux memory cgroups (memcg) and their reclaim.\n\nFlags:\n";
  for (const auto& f : flagTable()) {
    s << "  --" << f.name << (f.isBool ? "" : "=VALUE") << "\n      " << f.help;
    if (!f.isBool && !f.defaultText.empty()) s << " (default: " << f.defaultText << ")";
    s << "\n";
  }
  s << "\nCollectors (--collector.NAME enables, --no-collector.NAME disables):\n";
  for (const auto& c : collectorRegistry()) {
    s << "  " << c.name << (c.defaultEnabled ? " [default on]" : " [default off]") << "\n      "
      << c.help << "\n";
  }
  return s.str();
}

std::string civetListeningPort(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("--web.listen-address must be [host]:port, got \"" + addr + "\"");
  }
  std::string host = addr.substr(0, colon);
  std::string port = addr.substr(colon + 1);
  auto p = parseU64(port);
  if (!p || *p > 65535) {
    throw std::invalid_argument("--web.listen-address has a bad port: \"" + addr + "\"");
  }
  if (host.empty()) return port;
  if (host.front() == '[' && host.back() == ']') return host + ":" + port;
  if (host.find(':') != std::string::npos) {
    throw std::invalid_argument("--web.listen-address: write IPv6 hosts in brackets, e.g. [::1]:9712");
  }
  return host + ":" + port;
}

}  // namespace memcg
