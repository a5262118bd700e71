// Internals of the evaluator, shared by engine.cpp and functions.cpp.
#pragma once

#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "promql/ast.h"
#include "promql/engine.h"
#include "promql/storage.h"

namespace re2 {
class RE2;
}

namespace memcg::promql::detail {

/// An interned label set: equal sets are the same pointer within a query.
struct LSet {
  const Labels* ls;
  uint64_t hash;
  mutable const LSet* dropped = nullptr;  ///< the set without __name__, once known
  /// Scratch for one loop at a time (a set or map without hashing): valid
  /// when mark equals the loop's epoch (Evaluator::nextEpoch()).
  mutable uint64_t mark = 0;
  mutable uint32_t slot = 0;
  /// One per-node memo (grouping key, signature, renamed set...) kept on the
  /// set itself; a second node falls back to its NodeCache map.
  mutable const void* memoNode = nullptr;
  mutable const LSet* memoVal = nullptr;
  mutable double memoNum = 0;
};

class LabelPool {
 public:
  /// Keeps the pointer, no copy; hash is hashLabels(*external) or 0.
  const LSet* intern(const Labels* external, uint64_t hash = 0);
  const LSet* intern(Labels&& owned);

 private:
  const LSet* find(const Labels& ls, uint64_t h) const;
  const LSet* insert(const Labels* ls, uint64_t h);
  std::deque<Labels> owned_;
  std::deque<LSet> sets_;
  std::vector<const LSet*> table_;  // open addressing, power-of-two size
  size_t count_ = 0;
};

struct VSample {
  const LSet* m;
  double v;
};
using Vector = std::vector<VSample>;

struct MSeries {
  const LSet* m;
  std::span<const Sample> pts;
};

struct Matrix {
  std::vector<MSeries> series;
  int64_t rangeStart = 0;  ///< the window [rangeStart, rangeEnd] the points come from
  int64_t rangeEnd = 0;
  int64_t range = 0;
  std::deque<std::vector<Sample>> owned;  ///< backing for filtered points
};

struct Value {
  ValueType type = ValueType::kNone;
  double scalar = 0;
  Vector vec;
  Matrix mat;
  std::string str;
};

struct EvalError {
  std::string msg;
  bool timeout = false;  ///< the query's deadline passed
};
[[noreturn]] void fail(std::string msg);
/// Prometheus' ErrQueryTimeout("expression evaluation").
inline constexpr std::string_view kTimeoutMessage =
    "query timed out in expression evaluation";

const Expr* unwrapParens(const Expr* e);
bool validLabelName(std::string_view s);
/// Go's strconv.ParseFloat (no base prefixes); false when malformed.
bool goParseFloat(std::string_view s, double& out);
/// Go's strconv.FormatFloat(v, 'f', -1, 64).
std::string goFormatFloat(double v);

class Evaluator {
 public:
  /// [start, end]: the query's range (start() and end() in @ modifiers); the
  /// caller steps through it.
  Evaluator(const Storage& storage, const EngineOptions& opts, int64_t start, int64_t end,
            Deadline deadline = kNoDeadline);
  ~Evaluator();
  Value eval(const Expr* e, int64_t ts);
  bool rangeMode() const { return start_ != end_; }
  LabelPool& pool() { return pool_; }
  uint64_t nextEpoch() { return ++epoch_; }
  const LSet* dropName(const LSet* s);
  /// The per-node memo of s (nullptr when unknown); see LSet::memoNode.
  const LSet* memoGet(const Expr* node, const LSet* s, double* num = nullptr);
  void memoPut(const Expr* node, const LSet* s, const LSet* v, double num = 0);

  // functions.cpp
  Value evalCall(const Call* c, int64_t ts);

  /// Throws the timeout once the deadline has passed.
  void checkDeadline() const;
  /// One unit of work (a node, a series of an inner loop): reads the clock
  /// every 256 units (a unit is a few ns to a few us, the clock ~20 ns).
  void tick() {
    if ((++ticks_ & 255u) == 0) checkDeadline();
  }

 private:
  struct Selected {
    std::vector<SeriesView> series;
    std::vector<const LSet*> sets;
    std::vector<char> hasStale;
  };
  struct NodeCache {
    std::unordered_map<const LSet*, const LSet*>
        map;  // group / signature / output labels
    std::unordered_map<const LSet*, const LSet*>
        outFrom;                                   // range mode: output labels -> source
    std::unordered_map<int64_t, Vector> byTime;    // subquery inner results
    std::unordered_map<const LSet*, double> nums;  // memo numbers beside map
    int collisionFree = -1;
    std::vector<uint32_t> lo,
        hi;  // matrix selectors: the last window per series  // matrix functions: no two
             // selected series collide once renamed
    std::shared_ptr<re2::RE2> re;
    std::unordered_map<
        uint64_t,
        std::vector<std::pair<std::pair<const LSet*, const LSet*>, const LSet*>>>
        pairMap;
  };

  int64_t atTime(const AtModifier& at, int64_t ts) const;
  const Selected& select(const VectorSelector* vs);
  NodeCache& cache(const Expr* e) { return caches_[e]; }

  Value evalVectorSelector(const VectorSelector* vs, int64_t ts, bool timestamps);
  Matrix evalMatrixSelector(const MatrixSelector* ms, int64_t ts);
  Matrix evalSubquery(const SubqueryExpr* sq, int64_t ts);
  Matrix evalMatrixArg(const Expr* e, int64_t ts);
  Value evalBinary(const BinaryExpr* b, int64_t ts);
  Value evalAggregate(const AggregateExpr* a, int64_t ts);
  Vector vectorBinop(const BinaryExpr* b, Vector&& lhs, Vector&& rhs);
  Vector setOp(const BinaryExpr* b, Vector&& lhs, Vector&& rhs);
  const LSet* signature(const BinaryExpr* b, const LSet* s);
  const LSet* resultMetric(const BinaryExpr* b, const LSet* l, const LSet* r);
  void checkDuplicates(const Vector& v);
  /// Range mode: an output label set may come from one input series only
  /// over the whole query (Prometheus checks the whole result matrix).
  void checkAcrossSteps(const Expr* node, const LSet* out, const LSet* in);

  // functions.cpp helpers
  Value rangeFunction(const Call* c, int64_t ts);
  Vector histogramQuantile(const Call* c, double q, const Vector& in);
  Vector labelReplace(const Call* c, const Vector& in);
  Vector labelJoin(const Call* c, const Vector& in);

  const Storage& storage_;
  EngineOptions opts_;
  int64_t start_, end_;
  Deadline deadline_;
  uint32_t ticks_ = 0;
  std::unique_ptr<Querier> querier_;
  LabelPool pool_;
  std::unordered_map<const VectorSelector*, Selected> selected_;
  std::unordered_map<const Expr*, NodeCache> caches_;
  uint64_t epoch_ = 0;
  int64_t subqueryPoints_ = 0;
  Labels scratch_;
};

}  // namespace memcg::promql::detail
