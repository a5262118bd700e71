// The PromQL syntax tree (shaped like Prometheus 2.42's parser.Expr).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "promql/storage.h"

namespace memcg::promql {

enum class ValueType { kNone, kScalar, kVector, kMatrix, kString };
const char* valueTypeName(ValueType t);  // "scalar", "instant vector", ...

enum class NodeKind {
  kNumber,
  kString,
  kVectorSelector,
  kMatrixSelector,
  kSubquery,
  kParen,
  kUnary,
  kBinary,
  kAggregate,
  kCall
};

enum class BinOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kAtan2,
  kEql,
  kNeq,
  kGtr,
  kLss,
  kGte,
  kLte,
  kAnd,
  kOr,
  kUnless
};
const char* binOpName(BinOp op);
inline bool isComparison(BinOp op) { return op >= BinOp::kEql && op <= BinOp::kLte; }
inline bool isSetOp(BinOp op) { return op >= BinOp::kAnd; }

enum class AggOp {
  kSum,
  kAvg,
  kCount,
  kMin,
  kMax,
  kGroup,
  kStddev,
  kStdvar,
  kTopk,
  kBottomk,
  kQuantile,
  kCountValues
};
const char* aggOpName(AggOp op);

/// Where an `@` modifier pins the evaluation time.
enum class AtKind { kNone, kTimestamp, kStart, kEnd };

enum class FuncId {
  kAbs,
  kAbsent,
  kAbsentOverTime,
  kAcos,
  kAcosh,
  kAsin,
  kAsinh,
  kAtan,
  kAtanh,
  kAvgOverTime,
  kCeil,
  kChanges,
  kClamp,
  kClampMax,
  kClampMin,
  kCos,
  kCosh,
  kCountOverTime,
  kDaysInMonth,
  kDayOfMonth,
  kDayOfWeek,
  kDayOfYear,
  kDeg,
  kDelta,
  kDeriv,
  kExp,
  kFloor,
  kHistogramQuantile,
  kHoltWinters,
  kHour,
  kIdelta,
  kIncrease,
  kIrate,
  kLabelReplace,
  kLabelJoin,
  kLastOverTime,
  kLn,
  kLog10,
  kLog2,
  kMaxOverTime,
  kMinOverTime,
  kMinute,
  kMonth,
  kPi,
  kPredictLinear,
  kPresentOverTime,
  kQuantileOverTime,
  kRad,
  kRate,
  kResets,
  kRound,
  kScalar,
  kSgn,
  kSin,
  kSinh,
  kSort,
  kSortDesc,
  kSqrt,
  kStddevOverTime,
  kStdvarOverTime,
  kSumOverTime,
  kTan,
  kTanh,
  kTime,
  kTimestamp,
  kVector,
  kYear
};

struct FunctionInfo {
  const char* name;
  FuncId id;
  std::vector<ValueType> args;
  int variadic;  ///< 0 fixed; n>0 up to n optional trailing args; -1 any number
  ValueType ret;
};
/// nullptr when Prometheus 2.42 has no function of that name.
const FunctionInfo* findFunction(std::string_view name);
/// Names of 2.42 functions this engine refuses (native histograms).
bool isRefusedFunction(std::string_view name);

struct Expr {
  explicit Expr(NodeKind k) : kind(k) {}
  virtual ~Expr() = default;
  ValueType type() const;
  NodeKind kind;
  size_t pos = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct NumberLiteral : Expr {
  NumberLiteral() : Expr(NodeKind::kNumber) {}
  double value = 0;
};

struct StringLiteral : Expr {
  StringLiteral() : Expr(NodeKind::kString) {}
  std::string value;
};

struct AtModifier {
  AtKind kind = AtKind::kNone;
  int64_t ms = 0;  ///< for kTimestamp
};

struct VectorSelector : Expr {
  VectorSelector() : Expr(NodeKind::kVectorSelector) {}
  std::string name;
  std::vector<Matcher> matchers;  ///< includes __name__="name" when a name is given
  int64_t offset = 0;             ///< ms
  bool offsetSet = false;
  AtModifier at;
};

struct MatrixSelector : Expr {
  MatrixSelector() : Expr(NodeKind::kMatrixSelector) {}
  std::unique_ptr<VectorSelector> vs;
  int64_t range = 0;  ///< ms
};

struct SubqueryExpr : Expr {
  SubqueryExpr() : Expr(NodeKind::kSubquery) {}
  ExprPtr expr;
  int64_t range = 0;
  int64_t step = 0;  ///< 0: the engine's default subquery step
  int64_t offset = 0;
  bool offsetSet = false;
  AtModifier at;
};

struct ParenExpr : Expr {
  ParenExpr() : Expr(NodeKind::kParen) {}
  ExprPtr expr;
};

struct UnaryExpr : Expr {
  UnaryExpr() : Expr(NodeKind::kUnary) {}
  bool negate = false;
  ExprPtr expr;
};

enum class Card { kOneToOne, kManyToOne, kOneToMany, kManyToMany };

struct VectorMatching {
  Card card = Card::kOneToOne;
  bool on = false;                   ///< on(...) rather than ignoring(...)
  std::vector<std::string> labels;   ///< sorted
  std::vector<std::string> include;  ///< group_x(...) labels
};

struct BinaryExpr : Expr {
  BinaryExpr() : Expr(NodeKind::kBinary) {}
  BinOp op = BinOp::kAdd;
  ExprPtr lhs, rhs;
  bool returnBool = false;
  VectorMatching matching;  ///< meaningful between two instant vectors
};

struct AggregateExpr : Expr {
  AggregateExpr() : Expr(NodeKind::kAggregate) {}
  AggOp op = AggOp::kSum;
  ExprPtr expr;
  ExprPtr param;
  std::vector<std::string> grouping;  ///< sorted
  bool without = false;
};

struct Call : Expr {
  Call() : Expr(NodeKind::kCall) {}
  const FunctionInfo* func = nullptr;
  std::vector<ExprPtr> args;
};

}  // namespace memcg::promql
