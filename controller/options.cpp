#include "controller/options.h"

#include <stdexcept>
#include <string_view>

#include "common/duration.h"
#include "common/parse.h"
#include "controller/controller.h"

namespace memcg::controller {
namespace {

constexpr uint64_t kMaxFlagBytes = 1ull << 50;  // 1 PiB: a typo, not a budget

/// A number f with lo < f <= hi for --`flag`; throws std::invalid_argument.
double parseFlagFraction(const std::string& flag, const std::string& v, double lo, double hi,
                         const char* range) {
  double f = 0;
  bool good = false;
  try {
    size_t n = 0;
    f = std::stod(v, &n);
    good = n == v.size() && f > lo && f <= hi;
  } catch (const std::exception&) {
    good = false;
  }
  if (!good)
    throw std::invalid_argument("--" + flag + " must be a number in " + range + ", got \"" + v +
                                "\"");
  return f;
}

/// Whole bytes in [lo, kMaxFlagBytes] for --`flag`; throws std::invalid_argument.
uint64_t parseFlagBytes(const std::string& flag, const std::string& v, uint64_t lo) {
  auto n = parseU64(v);
  if (!n || *n < lo || *n > kMaxFlagBytes) {
    throw std::invalid_argument("--" + flag + " must be whole bytes in " + std::to_string(lo) +
                                ".." + std::to_string(kMaxFlagBytes) + ", got \"" + v + "\"");
  }
  return *n;
}

}  // namespace

std::string checkBudgets(const ControllerOptions& o) {
  if (!(o.cpuBudget > 0 && o.cpuBudget <= 1)) return "controller CPU budget must be in (0, 1]";
  if (o.maxBytesPerSecond < (1u << 20) || o.maxBytesPerSecond > kMaxFlagBytes)
    return "controller bytes per second must be 1 MiB..1 PiB";
  if (o.maxNudgesPerEpisode < 1 || o.maxNudgesPerEpisode > 1000)
    return "controller nudges per episode must be 1..1000";
  if (o.maxStepBytes < 4096 || o.maxStepBytes > kMaxFlagBytes)
    return "controller step must be 4096 bytes..1 PiB";
  if (o.cooldownMs < 0 || o.cooldownMs > 600000) return "controller cooldown must be 0..600000 ms";
  return {};
}

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
      {"controller.poll-interval",
       "Fallback polling period of the controller's waiter (the v1 threshold eventfd "
       "and the v2 memory.events / PSI trigger are the fast path).",
       false,
       [&o](const std::string& v) {
         o.pollIntervalMs = static_cast<int>(durationFlag("controller.poll-interval", v, 1, 600000));
       },
       "50ms"},
      deprecatedMsFlag("controller.poll-interval-ms", "controller.poll-interval", 1, 600000,
                       [&o](int64_t ms) { o.pollIntervalMs = static_cast<int>(ms); }, "50"),
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
      {"controller.margin-max-fraction",
       "Largest fraction of a protected cgroup's limit the adaptive start margin may "
       "widen to while the controller's wakes come late (0: the configured margins only).",
       false,
       [&o](const std::string& v) {
         double f = -1;
         try {
           size_t n = 0;
           f = std::stod(v, &n);
           if (n != v.size()) f = -1;
         } catch (const std::exception&) {
           f = -1;
         }
         if (!(f >= 0 && f <= 0.75))
           throw std::invalid_argument(
               "--controller.margin-max-fraction must be a number in 0..0.75, got \"" + v + "\"");
         o.marginMaxFraction = f;
       },
       "0.5"},
      {"controller.cpu-budget",
       "CPU the controller's worker may use, fraction of one CPU per 1 s window (0 < f <= 1); "
       "an episode stops, counted as throttled (reason cpu), when it is spent.",
       false,
       [&o](const std::string& v) {
         o.cpuBudget = parseFlagFraction("controller.cpu-budget", v, 0, 1, "(0, 1]");
       },
       "0.5"},
      {"controller.max-bytes-per-second",
       "Reclaim rate cap over all protections, bytes (a token bucket with a 1 s burst; at "
       "least 1048576); an episode stops, counted as throttled (reason rate), when it is "
       "spent.",
       false,
       [&o](const std::string& v) {
         o.maxBytesPerSecond = parseFlagBytes("controller.max-bytes-per-second", v, 1u << 20);
       },
       "8589934592"},
      {"controller.max-nudges-per-episode",
       "Actuations (v1 lower-and-restore pairs, v2 memory.reclaim writes) per episode at most.",
       false,
       [&o](const std::string& v) {
         o.maxNudgesPerEpisode = parseFlagInt("controller.max-nudges-per-episode", v, 1, 1000);
       },
       "8"},
      {"controller.max-step-bytes",
       "Bytes one actuation asks for at most (at least 4096).", false,
       [&o](const std::string& v) {
         o.maxStepBytes = parseFlagBytes("controller.max-step-bytes", v, 4096);
       },
       "268435456"},
      {"controller.cooldown",
       "Quiet time after an episode before the next one for the same cgroup "
       "(dry-run: at least 1s).",
       false,
       [&o](const std::string& v) {
         o.cooldownMs = static_cast<int>(durationFlag("controller.cooldown", v, 0, 600000));
       },
       "5ms"},
      deprecatedMsFlag("controller.cooldown-ms", "controller.cooldown", 0, 600000,
                       [&o](int64_t ms) { o.cooldownMs = static_cast<int>(ms); }, "5"),
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
