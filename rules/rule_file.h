// Rule files in Prometheus' format (YAML):
//
//   groups:
//     - name: <string>              unique across all loaded files
//       interval: <duration>        default: the global evaluation interval
//       limit: <int>                0 = none: more alerts / samples fail the rule
//       rules:
//         - alert: <name> | record: <metric name>
//           expr: <PromQL>
//           for: <duration>           alerts only
//           keep_firing_for: <duration>  alerts only
//           labels: {<name>: <template>}
//           annotations: {<name>: <template>}   alerts only
//
// Durations are Prometheus' ([0-9]+(y|w|d|h|m|s|ms))+ or 0. The checks are
// promtool's: a name, one of alert/record, a parsable expr, valid label
// names, a valid metric name for record, templates that parse, no fields of
// the other kind, unknown keys refused.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/result.h"
#include "promql/ast.h"

namespace memcg::rules {

struct RuleConfig {
  bool alerting = false;
  std::string name;  ///< alert name or recorded metric name
  std::string exprText;
  std::shared_ptr<const promql::Expr> expr;
  int64_t forMs = 0;
  int64_t keepFiringForMs = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  /// Identity for state transfer on reload (name, expr, for, labels, ...).
  std::string key() const;
};

struct GroupConfig {
  std::string file;
  std::string name;
  int64_t intervalMs = 0;  ///< 0: the default
  int limit = 0;
  std::vector<RuleConfig> rules;
};

// Durations: the one parser and rendering (common/duration.h).
using ::memcg::durationFlag;
using ::memcg::formatDuration;
using ::memcg::parseDurationMs;

/// Parses and checks one rule file. Errors: Error::path = the file,
/// detail = every problem found, one a line ("group \"g\", rule 2: ...").
Result<std::vector<GroupConfig>> loadRuleFile(const std::string& path);
/// The same from text (tests); `path` only names it in errors.
Result<std::vector<GroupConfig>> parseRuleFile(const std::string& text,
                                               const std::string& path);

/// Expands globs (in order, each glob's matches sorted) and loads every file;
/// group names must be unique across files. A glob matching nothing is no
/// error (as Prometheus); a plain path that does not exist is.
Result<std::vector<GroupConfig>> loadRuleFiles(const std::vector<std::string>& patterns);

/// The matchers of every selector in `e` (for the history's selections).
void collectSelectors(const promql::Expr& e,
                      std::vector<std::vector<promql::Matcher>>& out);

}  // namespace memcg::rules
