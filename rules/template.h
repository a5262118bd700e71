// Alert templates: the subset of Prometheus' Go text/template that rule
// labels and annotations use. Actions are `{{ pipeline }}` (also `{{-` and
// `-}}`, which trim the whitespace beside them); a pipeline is commands
// joined by `|`, each a function with arguments or one operand. Operands:
// `$labels`, `$labels.name`, `.Labels.name`, `$value`, `.Value`,
// `$externalLabels.name`, `.ExternalLabels.name`, "strings", `raw strings`,
// numbers. Functions: humanize, humanize1024, humanizeDuration,
// humanizePercentage, humanizeTimestamp, printf, toUpper, toLower, title,
// and no others. Anything else (if/range/with, queries) is
// refused when the template is parsed, so `memcgtool check rules` reports it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace memcg::rules {

struct TemplateData {
  const std::map<std::string, std::string>* labels = nullptr;
  const std::map<std::string, std::string>* externalLabels = nullptr;
  double value = 0;
  /// checkTemplate: errors that depend on the data (a label that is not a number for
  /// humanize) do not fail.
  bool checking = false;
};

/// Expands `text`; an error names the action that failed.
Result<std::string> expandTemplate(std::string_view text, const TemplateData& data);

/// Parses without data (for checks): ok when every action is supported.
Status checkTemplate(std::string_view text);

/// Go's fmt of a float64 with %v / strconv 'g' -1 (shortest, e+06 from 1e6).
std::string goFloat(double v);
/// An argument of printf as Go's text/template types it: float64 ($value, a
/// float literal), int (an integer literal) or string (labels, "literals").
struct FmtArg {
  enum Kind { kFloat, kInt, kString } kind = kString;
  double f = 0;
  int64_t i = 0;
  std::string s;
  static FmtArg ofFloat(double v) { return {kFloat, v, 0, {}}; }
  static FmtArg ofInt(int64_t v) { return {kInt, 0, v, {}}; }
  static FmtArg ofString(std::string v) { return {kString, 0, 0, std::move(v)}; }
};

/// Go's fmt.Sprintf: flags (+ - # space 0), width and precision; for float64 the
/// verbs b e E f F g G x X v, for int b c d o O q x X U v, for string s v q x X;
/// any other pairing prints %!verb(type=value), a missing argument %!verb(MISSING),
/// extra ones %!(EXTRA type=value, ...), a lone % at the end %!(NOVERB). No argument
/// indexes ([n]) nor * widths.
std::string goFormat(std::string_view format, const std::vector<FmtArg>& args);
/// goFormat of float64 (isNum) and string arguments.
std::string goSprintf(std::string_view format, const std::vector<std::string>& strArgs,
                      const std::vector<double>& numArgs, const std::vector<bool>& isNum);

std::string humanize(double v);
std::string humanize1024(double v);
std::string humanizeDuration(double v);
std::string humanizePercentage(double v);

}  // namespace memcg::rules
