// PromQL evaluation with Prometheus 2.42's semantics (float samples only):
// instant queries at one time and range queries over (start, end, step),
// over a Storage. Each query selects every series once and evaluates the
// expression step by step, with per-query caches for label sets. Evaluation
// errors unwind inside the evaluator and come back as Result errors; nothing
// is thrown to the caller. Queries on one Engine may run concurrently as long
// as the Storage allows concurrent reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "promql/ast.h"
#include "promql/storage.h"

namespace memcg::promql {

struct EngineOptions {
  int64_t lookbackDeltaMs = 5 * 60 * 1000;    ///< Prometheus' default 5m
  int64_t defaultSubqueryStepMs = 60 * 1000;  ///< the global evaluation interval
  /// Range queries with (end - start) / step above this are refused (Prometheus' API
  /// limit).
  int64_t maxRangeSteps = 11000;
  /// Subquery points one query may compute in all (as --query.max-samples).
  int64_t maxSubqueryPoints = 50'000'000;
};

/// When a query must stop (the API's ?timeout=). The evaluator checks it
/// before it starts and every 256 units of work (a node of a step, a series of
/// an inner loop), and gives up with Prometheus' "query timed out in
/// expression evaluation" (Error::err ETIMEDOUT).
using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

struct ResultSeries {
  Labels labels;
  std::vector<Sample> points;
};

struct QueryResult {
  ValueType type = ValueType::kNone;  ///< scalar, vector, matrix or string
  double scalar = 0;                  ///< for kScalar
  int64_t t = 0;                      ///< evaluation time of instant queries
  std::string str;                    ///< for kString
  /// kVector: one point each, in the order Prometheus returns them;
  /// kMatrix: range results, sorted by labels.
  std::vector<ResultSeries> series;
};

class Engine {
 public:
  explicit Engine(EngineOptions opts = {}) : opts_(opts) {}
  /// Errors: Error::detail holds the message (path "eval").
  /// A query past `deadline` fails with err ETIMEDOUT.
  Result<QueryResult> instantQuery(const Storage& storage, const Expr& expr, int64_t t,
                                   Deadline deadline = kNoDeadline) const;
  /// expr must be of scalar or instant-vector type; step > 0.
  Result<QueryResult> rangeQuery(const Storage& storage, const Expr& expr, int64_t start,
                                 int64_t end, int64_t step,
                                 Deadline deadline = kNoDeadline) const;
  const EngineOptions& options() const { return opts_; }

 private:
  EngineOptions opts_;
};

}  // namespace memcg::promql
