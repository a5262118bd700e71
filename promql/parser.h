// PromQL parser: text -> syntax tree, with Prometheus 2.42's grammar,
// precedence and type checks. What the engine does not implement is refused
// here, naming the construct (Error::err == ENOTSUP).
#pragma once

#include <string_view>

#include "common/result.h"
#include "promql/ast.h"

namespace memcg::promql {

/// The error's detail is the message ("parse error at char N: ...");
/// err is EINVAL for bad input, ENOTSUP for constructs we refuse.
Result<ExprPtr> parseExpr(std::string_view input);

/// A Go-style float literal as PromQL's lexer reads it (hex and octal
/// integers, Inf, NaN, exponents); false when malformed.
bool parseNumber(std::string_view s, double& out);

}  // namespace memcg::promql
