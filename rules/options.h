// The rule engine's options and flags (--rules.*).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/flag_spec.h"
#include "rules/actions.h"
#include "rules/alert_puller.h"
#include "rules/notifier.h"

namespace memcg::rules {

struct RulesOptions {
  std::vector<std::string> files;          ///< --rules.file (repeatable, globs)
  int64_t evaluationIntervalMs = 60000;    ///< --rules.evaluation-interval
  ActionOptions actions;                   ///< margins, hold
  /// --rules.external-label name=value (repeatable): $externalLabels in
  /// templates, added to notifications.
  std::map<std::string, std::string> externalLabels;
  NotifierOptions notifier;                ///< --rules.alertmanager-url and the rest
  PullerOptions pull;                      ///< --rules.alertmanager.pull*
};

FlagList rulesFlags(RulesOptions& o);

}  // namespace memcg::rules
