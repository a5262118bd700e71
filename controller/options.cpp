#include "controller/options.h"

#include <stdexcept>
#include <string_view>

#include "controller/controller.h"

namespace memcg::controller {

FlagList controllerFlags(ControllerOptions& o) {
  return {
      switchFlag("controller.enable",
                 "Run the background-reclaim controller (off: nothing is ever written to "
                 "cgroupfs).",
                 o.enable),
      switchFlag("controller.dry-run",
                 "Log and count what the controller would do; never write.", o.dryRun),
      {"controller.allow",
       "Regex of cgroup labels the controller may write to (whole match; the root "
       "never).",
       false, [&o](const std::string& v) { o.allow = checkFlagRegex("controller.allow", v); }, ""},
      {"controller.token-file",
       "File whose first line is the bearer token the controller API requires.", false,
       [&o](const std::string& v) { o.tokenFile = v; }, ""},
      {"controller.journal",
       "Journal of limits lowered by the controller (fsync'd; replayed at start).", false,
       [&o](const std::string& v) { o.journal = v; },
       "/var/lib/memcg_exporter/controller.journal"},
      {"controller.audit-log", "JSON-lines audit log of everything the controller did.",
       false, [&o](const std::string& v) { o.auditLog = v; }, ""},
      {"controller.sched-policy",
       "Policy of the controller's threads: other, batch or idle (each limit nudge "
       "itself "
       "always runs as SCHED_OTHER).",
       false, [&o](const std::string& v) {
         if (v != "other" && v != "batch" && v != "idle") {
           throw std::invalid_argument(
               "--controller.sched-policy must be other, batch or idle, got \"" + v + "\"");
         }
         o.schedPolicy = v;
       }, "other"},
      {"controller.poll-interval-ms",
       "Fallback polling period of the controller's waiter, ms (the v1 threshold eventfd "
       "and "
       "the v2 memory.events / PSI trigger are the fast path).",
       false,
       [&o](const std::string& v) {
         o.pollIntervalMs = parseFlagInt("controller.poll-interval-ms", v, 1, 600000);
       },
       "50"},
      {"controller.v2-wake",
       "cgroup v2 wake sources besides the poll, comma-separated: events "
       "(memory.events), psi "
       "(a PSI trigger on memory.pressure); empty: the poll only.",
       false,
       [&o](const std::string& v) {
         o.v2WakeEvents = o.v2WakePsi = false;
         std::string_view rest = v;
         while (!rest.empty()) {
           size_t n = rest.find(',');
           std::string_view w = rest.substr(0, n);
           rest = n == std::string_view::npos ? std::string_view{} : rest.substr(n + 1);
           if (w == "events") {
             o.v2WakeEvents = true;
           } else if (w == "psi") {
             o.v2WakePsi = true;
           } else if (!w.empty()) {
             throw std::invalid_argument(
                 "--controller.v2-wake takes events and/or psi, got \"" + std::string(w) +
                 "\"");
           }
         }
       },
       "events,psi"},
      {"controller.psi-trigger",
       "PSI trigger the controller writes to a protected v2 cgroup's memory.pressure: "
       "\"some|full <stall us> <window us>\" (window 500000..10000000).",
       false,
       [&o](const std::string& v) {
         // Checked here, not only when the controller starts on a v2 host: a
         // bad value must not wait for the day the exporter runs on one.
         if (auto t = parsePsiTrigger(v); !t) {
           throw std::invalid_argument("--controller.psi-trigger: " +
                                       t.error().message());
         }
         o.psiTrigger = v;
       },
       "some 1000 500000"},
  };
}

}  // namespace memcg::controller
