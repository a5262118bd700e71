// `memcgtool check rules FILE...` (like `promtool check rules`) and
// `memcgtool test rules FILE...`, which runs promtool's rule unit-test YAML:
//
//   rule_files: [FILE or glob, relative to the test file]
//   evaluation_interval: <duration>          default 1m
//   group_eval_order: [group name...]        default: the order of the files (a
//                                            WARNING when the verdict depends on it:
//                                            promtool's order is random then)
//   tests:
//     - interval: <duration>                 input series step, default evaluation_interval
//       name: <string>
//       input_series: [{series: 'm{l="v"}', values: '1+2x10 _ stale'}]
//       alert_rule_test: [{eval_time, alertname, exp_alerts: [{exp_labels, exp_annotations}]}]
//       promql_expr_test: [{expr, eval_time, exp_samples: [{labels: 'm{l="v"}', value}]}]
//       external_labels: {name: value}
//       external_url: <string>
//
// As promtool 2.42: rules are evaluated at 0, evaluation_interval, ... up to
// the last eval_time; an alert test at eval_time compares the FIRING alerts
// (labels and annotations, order ignored) after the evaluation at or just
// before it; promql_expr_test queries after all evaluations and compares
// label sets and values exactly; a rule evaluation error fails the group.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace memcg::tool {

/// Runs one test file; the failures (empty = passed) are written to `out`.
bool runRuleTestFile(const std::string& path, std::ostream& out);

/// `memcgtool test rules FILE...`: 0 when all pass, 1 otherwise.
int testRulesMain(int argc, char** argv, std::ostream& out);
/// `memcgtool check rules FILE...`: 0 when all are valid, 1 otherwise.
int checkRulesMain(int argc, char** argv, std::ostream& out);

}  // namespace memcg::tool
