// Runs PromQL test scripts (Prometheus' promql/testdata format): load,
// clear, eval instant / eval_fail / eval_ordered, and the newer
// `eval range from <t> to <t> step <d> <expr>` with expanding-notation
// expectations.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "promql/labels.h"

namespace memcg::tool {

struct ScriptOptions {
  double epsilon = 1e-6;       ///< relative error allowed, as 2.42's test runner
  bool checkRangeMode = true;  ///< also run instant evals as a range query, as 2.42 does
};

struct EvalOutcome {
  enum class Kind { kPassed, kFailed, kUnsupported } kind;
  int line;             ///< 1-based line of the eval command
  std::string command;  ///< the eval line
  std::string message;  ///< diff or reason
};

struct ScriptReport {
  std::vector<EvalOutcome> evals;
  std::string fatal;  ///< a script error (bad command or series); counts as a failure
  int passed() const;
  int failed() const;
  int unsupported() const;
};

ScriptReport runScript(std::string_view text, const ScriptOptions& opts);

/// One value of the expanding notation: omitted (`_`) or a float (stale
/// markers are the stale NaN).
struct SeqValue {
  bool omitted;
  double v;
};
/// Parses `metric{l="v"} 1 2+3x4 _x2 stale`; false with err on bad input.
bool parseSeriesDesc(std::string_view line, promql::Labels& labels,
                     std::vector<SeqValue>& vals, std::string& err);

/// `memcgtool test promql [--epsilon E] [--no-range-check] FILE...`
int testPromqlMain(int argc, char** argv, std::ostream& out);

}  // namespace memcg::tool
