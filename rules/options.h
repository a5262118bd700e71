// The rule engine's options and flags (--rules.*).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/flag_spec.h"
#include "rules/actions.h"

namespace memcg::rules {

struct RulesOptions {
  std::vector<std::string> files;          ///< --rules.file (repeatable, globs)
  int64_t evaluationIntervalMs = 60000;    ///< --rules.evaluation-interval
  ActionOptions actions;                   ///< margins, hold
};

FlagList rulesFlags(RulesOptions& o);

}  // namespace memcg::rules
