// Alerts that act: a firing alert with the label `action: protect` protects
// the cgroup named by its `cgroup` label through the controller, with the
// margins of its `start_margin` / `target_margin` labels (bytes with an IEC
// unit, "64MiB", plain bytes, or a percent of the limit, "10%") or the
// defaults (--rules.default-start-margin / --rules.default-target-margin).
// Both sources feed it: the rule engine (every evaluation) and the
// Alertmanager webhook (firing / resolved).
//
// Ownership: only protections this made are ever removed, and only after
// --rules.protect-hold without the alert firing again (from the engine: since
// it last fired; from Alertmanager: since it was reported resolved). A cgroup
// protected by hand (API) is left alone ("exists"). Refused, never written:
// a label that is not a cgroup path ("../", relative), the root, a cgroup
// discovery does not know, one outside --controller.allow. With the
// controller off every action is "skipped". Each outcome is logged and
// counted once per (rule, cgroup, result) change in
// memcg_exporter_rule_actions_total{rule,action,result}.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "metrics/metric.h"
#include "promql/labels.h"

namespace memcg::rules {

/// What a protect action asks for: the cgroup and its two margins, each in
/// bytes or in percent of the limit (one form per margin; the other is 0).
struct ProtectRequest {
  std::string cgroup;  ///< label, "/a/b"
  uint64_t startMarginBytes = 0;
  uint64_t targetMarginBytes = 0;
  double startMarginPercent = 0;
  double targetMarginPercent = 0;
};

/// Why a target did not act, in the terms an action reports.
struct ActionError {
  enum class Kind {
    kRefused,  ///< bad input or not allowed: retrying cannot help
    kGone,     ///< no such cgroup, or not protected
    kFailed,   ///< anything else
  };
  Kind kind = Kind::kFailed;
  std::string message;
};

/// What the actions act on: protections and what discovery knows, behind an
/// interface that names no controller type (the App adapts the controller).
class ProtectTarget {
 public:
  virtual ~ProtectTarget() = default;
  virtual std::optional<ActionError> protect(const ProtectRequest& p) = 0;
  virtual std::optional<ActionError> unprotect(const std::string& cgroup) = 0;
  virtual bool isProtected(const std::string& cgroup) const = 0;
  /// --controller.allow admits it (never the root).
  virtual bool allowed(const std::string& cgroup) const = 0;
  /// Discovery's last walk has it.
  virtual bool known(const std::string& cgroup) const = 0;
};

struct ActionOptions {
  std::string defaultStartMargin = "10%";   ///< --rules.default-start-margin
  std::string defaultTargetMargin = "20%";  ///< --rules.default-target-margin
  int64_t holdMs = 10 * 60 * 1000;          ///< --rules.protect-hold
};

/// "64MiB", "1GiB", "512KiB", "1048576" (bytes), "10%" (percent, 0 < p < 100),
/// into the start or target half of `p`. Error: why.
Status parseMargin(std::string_view text, bool start, ProtectRequest& p);

class Actions {
 public:
  /// `target` null: the controller is off (every action skipped).
  Actions(ActionOptions opts, ProtectTarget* target);

  enum class Source { kRules, kAlertmanager };
  /// A firing alert (labels with alertname, action, cgroup, margins). Returns
  /// the result: ok, held (already protected by an alert), exists, refused,
  /// skipped, error; "" when the alert has no action.
  /// `nextEvalMs` (rules): until when the alert counts as firing without
  /// news, its group's next evaluation; the hold counts from then, so a
  /// short hold (even 0) does not drop a protection between evaluations.
  std::string firing(const promql::Labels& labels, Source src, int64_t nowMs,
                     int64_t nextEvalMs = 0);
  /// A resolved alert: its hold starts (Alertmanager) / is noted (rules).
  void resolved(const promql::Labels& labels, Source src, int64_t nowMs);
  /// Removes the protections whose hold has passed.
  void tick(int64_t nowMs);

  nlohmann::json state() const;
  void collect(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describe();

 private:
  struct Owned {
    std::string rule;
    Source source = Source::kRules;
    int64_t lastFiringMs = 0;  ///< the later of the last firing and its next evaluation
    int64_t resolvedMs = 0;  ///< 0 while firing
  };
  std::string count(const std::string& rule, const char* action, const std::string& result,
             const std::string& cgroup, const std::string& why);

  ActionOptions opts_;
  ProtectTarget* target_;
  mutable std::mutex mu_;
  std::map<std::string, Owned> owned_;                       // by cgroup
  std::map<std::string, std::string> lastResult_;            // rule \x1f cgroup -> result
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_;
};

}  // namespace memcg::rules
