#include "promql/ast.h"

#include <string_view>

namespace memcg::promql {

const char* valueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kNone:
      return "none";
    case ValueType::kScalar:
      return "scalar";
    case ValueType::kVector:
      return "instant vector";
    case ValueType::kMatrix:
      return "range vector";
    case ValueType::kString:
      return "string";
  }
  return "?";
}

const char* binOpName(BinOp op) {
  static const char* names[] = {"+",  "-", "*", "/",  "%",  "^",   "atan2", "==",
                                "!=", ">", "<", ">=", "<=", "and", "or",    "unless"};
  return names[static_cast<int>(op)];
}

const char* aggOpName(AggOp op) {
  static const char* names[] = {"sum",  "avg",     "count",    "min",
                                "max",  "group",   "stddev",   "stdvar",
                                "topk", "bottomk", "quantile", "count_values"};
  return names[static_cast<int>(op)];
}

ValueType Expr::type() const {
  switch (kind) {
    case NodeKind::kNumber:
      return ValueType::kScalar;
    case NodeKind::kString:
      return ValueType::kString;
    case NodeKind::kVectorSelector:
      return ValueType::kVector;
    case NodeKind::kMatrixSelector:
      return ValueType::kMatrix;
    case NodeKind::kSubquery:
      return ValueType::kMatrix;
    case NodeKind::kParen:
      return static_cast<const ParenExpr*>(this)->expr->type();
    case NodeKind::kUnary:
      return static_cast<const UnaryExpr*>(this)->expr->type();
    case NodeKind::kBinary: {
      auto* b = static_cast<const BinaryExpr*>(this);
      if (b->lhs->type() == ValueType::kScalar && b->rhs->type() == ValueType::kScalar) {
        return ValueType::kScalar;
      }
      return ValueType::kVector;
    }
    case NodeKind::kAggregate:
      return ValueType::kVector;
    case NodeKind::kCall:
      return static_cast<const Call*>(this)->func->ret;
  }
  return ValueType::kNone;
}

namespace {

using VT = ValueType;
const FunctionInfo kFunctions[] = {
    {"abs", FuncId::kAbs, {VT::kVector}, 0, VT::kVector},
    {"absent", FuncId::kAbsent, {VT::kVector}, 0, VT::kVector},
    {"absent_over_time", FuncId::kAbsentOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"acos", FuncId::kAcos, {VT::kVector}, 0, VT::kVector},
    {"acosh", FuncId::kAcosh, {VT::kVector}, 0, VT::kVector},
    {"asin", FuncId::kAsin, {VT::kVector}, 0, VT::kVector},
    {"asinh", FuncId::kAsinh, {VT::kVector}, 0, VT::kVector},
    {"atan", FuncId::kAtan, {VT::kVector}, 0, VT::kVector},
    {"atanh", FuncId::kAtanh, {VT::kVector}, 0, VT::kVector},
    {"avg_over_time", FuncId::kAvgOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"ceil", FuncId::kCeil, {VT::kVector}, 0, VT::kVector},
    {"changes", FuncId::kChanges, {VT::kMatrix}, 0, VT::kVector},
    {"clamp", FuncId::kClamp, {VT::kVector, VT::kScalar, VT::kScalar}, 0, VT::kVector},
    {"clamp_max", FuncId::kClampMax, {VT::kVector, VT::kScalar}, 0, VT::kVector},
    {"clamp_min", FuncId::kClampMin, {VT::kVector, VT::kScalar}, 0, VT::kVector},
    {"cos", FuncId::kCos, {VT::kVector}, 0, VT::kVector},
    {"cosh", FuncId::kCosh, {VT::kVector}, 0, VT::kVector},
    {"count_over_time", FuncId::kCountOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"days_in_month", FuncId::kDaysInMonth, {VT::kVector}, 1, VT::kVector},
    {"day_of_month", FuncId::kDayOfMonth, {VT::kVector}, 1, VT::kVector},
    {"day_of_week", FuncId::kDayOfWeek, {VT::kVector}, 1, VT::kVector},
    {"day_of_year", FuncId::kDayOfYear, {VT::kVector}, 1, VT::kVector},
    {"deg", FuncId::kDeg, {VT::kVector}, 0, VT::kVector},
    {"delta", FuncId::kDelta, {VT::kMatrix}, 0, VT::kVector},
    {"deriv", FuncId::kDeriv, {VT::kMatrix}, 0, VT::kVector},
    {"exp", FuncId::kExp, {VT::kVector}, 0, VT::kVector},
    {"floor", FuncId::kFloor, {VT::kVector}, 0, VT::kVector},
    {"histogram_quantile",
     FuncId::kHistogramQuantile,
     {VT::kScalar, VT::kVector},
     0,
     VT::kVector},
    {"holt_winters",
     FuncId::kHoltWinters,
     {VT::kMatrix, VT::kScalar, VT::kScalar},
     0,
     VT::kVector},
    {"hour", FuncId::kHour, {VT::kVector}, 1, VT::kVector},
    {"idelta", FuncId::kIdelta, {VT::kMatrix}, 0, VT::kVector},
    {"increase", FuncId::kIncrease, {VT::kMatrix}, 0, VT::kVector},
    {"irate", FuncId::kIrate, {VT::kMatrix}, 0, VT::kVector},
    {"label_replace",
     FuncId::kLabelReplace,
     {VT::kVector, VT::kString, VT::kString, VT::kString, VT::kString},
     0,
     VT::kVector},
    {"label_join",
     FuncId::kLabelJoin,
     {VT::kVector, VT::kString, VT::kString, VT::kString},
     -1,
     VT::kVector},
    {"last_over_time", FuncId::kLastOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"ln", FuncId::kLn, {VT::kVector}, 0, VT::kVector},
    {"log10", FuncId::kLog10, {VT::kVector}, 0, VT::kVector},
    {"log2", FuncId::kLog2, {VT::kVector}, 0, VT::kVector},
    {"max_over_time", FuncId::kMaxOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"min_over_time", FuncId::kMinOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"minute", FuncId::kMinute, {VT::kVector}, 1, VT::kVector},
    {"month", FuncId::kMonth, {VT::kVector}, 1, VT::kVector},
    {"pi", FuncId::kPi, {}, 0, VT::kScalar},
    {"predict_linear",
     FuncId::kPredictLinear,
     {VT::kMatrix, VT::kScalar},
     0,
     VT::kVector},
    {"present_over_time", FuncId::kPresentOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"quantile_over_time",
     FuncId::kQuantileOverTime,
     {VT::kScalar, VT::kMatrix},
     0,
     VT::kVector},
    {"rad", FuncId::kRad, {VT::kVector}, 0, VT::kVector},
    {"rate", FuncId::kRate, {VT::kMatrix}, 0, VT::kVector},
    {"resets", FuncId::kResets, {VT::kMatrix}, 0, VT::kVector},
    {"round", FuncId::kRound, {VT::kVector, VT::kScalar}, 1, VT::kVector},
    {"scalar", FuncId::kScalar, {VT::kVector}, 0, VT::kScalar},
    {"sgn", FuncId::kSgn, {VT::kVector}, 0, VT::kVector},
    {"sin", FuncId::kSin, {VT::kVector}, 0, VT::kVector},
    {"sinh", FuncId::kSinh, {VT::kVector}, 0, VT::kVector},
    {"sort", FuncId::kSort, {VT::kVector}, 0, VT::kVector},
    {"sort_desc", FuncId::kSortDesc, {VT::kVector}, 0, VT::kVector},
    {"sqrt", FuncId::kSqrt, {VT::kVector}, 0, VT::kVector},
    {"stddev_over_time", FuncId::kStddevOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"stdvar_over_time", FuncId::kStdvarOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"sum_over_time", FuncId::kSumOverTime, {VT::kMatrix}, 0, VT::kVector},
    {"tan", FuncId::kTan, {VT::kVector}, 0, VT::kVector},
    {"tanh", FuncId::kTanh, {VT::kVector}, 0, VT::kVector},
    {"time", FuncId::kTime, {}, 0, VT::kScalar},
    {"timestamp", FuncId::kTimestamp, {VT::kVector}, 0, VT::kVector},
    {"vector", FuncId::kVector, {VT::kScalar}, 0, VT::kVector},
    {"year", FuncId::kYear, {VT::kVector}, 1, VT::kVector},
};

}  // namespace

const FunctionInfo* findFunction(std::string_view name) {
  for (const auto& f : kFunctions) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

bool isRefusedFunction(std::string_view name) {
  return name == "histogram_count" || name == "histogram_sum" ||
         name == "histogram_fraction";
}

}  // namespace memcg::promql
