#include "rules/options.h"

#include <stdexcept>

#include "promql/eval.h"
#include "rules/rule_file.h"

namespace memcg::rules {

FlagList rulesFlags(RulesOptions& o) {
  FlagList flags{
      {"rules.file", "Prometheus rule file to evaluate in-process (repeatable; globs)",
       false, [&o](const std::string& v) { o.files.push_back(v); }, ""},
      {"rules.evaluation-interval", "interval of rule groups that set none", false,
       [&o](const std::string& v) {
         o.evaluationIntervalMs = durationFlag("rules.evaluation-interval", v, 10);
       },
       "1m"},
      {"rules.default-start-margin",
       "start margin of action: protect alerts without a start_margin label (IEC bytes "
       "or %)",
       false,
       [&o](const std::string& v) {
         ProtectRequest p;
         if (auto s = parseMargin(v, true, p); !s.ok())
           throw std::invalid_argument("--rules.default-start-margin: " +
                                       s.error().detail);
         o.actions.defaultStartMargin = v;
       },
       "10%"},
      {"rules.default-target-margin",
       "target margin of action: protect alerts without a target_margin label (IEC bytes "
       "or %)",
       false,
       [&o](const std::string& v) {
         ProtectRequest p;
         if (auto s = parseMargin(v, false, p); !s.ok())
           throw std::invalid_argument("--rules.default-target-margin: " +
                                       s.error().detail);
         o.actions.defaultTargetMargin = v;
       },
       "20%"},
      {"rules.protect-hold",
       "a rule's protection is removed after its alert stopped firing for this long",
       false,
       [&o](const std::string& v) {
         o.actions.holdMs = durationFlag("rules.protect-hold", v, 0);
       },
       "10m"},
      {"rules.external-label",
       "name=value label of this node, added to the alerts sent to Alertmanager and seen "
       "by "
       "templates as $externalLabels (repeatable)",
       false,
       [&o](const std::string& v) {
         const size_t eq = v.find('=');
         const std::string name = v.substr(0, eq);
         if (eq == std::string::npos || !promql::detail::validLabelName(name) ||
             eq + 1 == v.size())
           throw std::invalid_argument("--rules.external-label: not name=value: " + v);
         o.externalLabels[name] = v.substr(eq + 1);
       },
       ""},
  };
  for (auto& f : notifierFlags(o.notifier)) flags.push_back(std::move(f));
  for (auto& f : pullerFlags(o.pull)) flags.push_back(std::move(f));
  return flags;
}

}  // namespace memcg::rules
