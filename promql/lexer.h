// Tokens of PromQL (Prometheus 2.42's lexer, written anew).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"

namespace memcg::promql {

enum class Tok {
  kEof,
  kError,
  kIdentifier,        ///< a word without ':' that is no keyword
  kMetricIdentifier,  ///< a word with ':'
  kKeyword,           ///< text holds the lower-cased keyword
  kNumber,
  kDuration,
  kString,  ///< text holds the unquoted value
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma,
  kColon,
  kAt,
  kAssign,  // '=' in matchers
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kEqlC,
  kNeq,
  kLte,
  kLss,
  kGte,
  kGtr,
  kEqlRegex,
  kNeqRegex,
};

struct Token {
  Tok type;
  std::string text;  ///< source text (unquoted for strings, lowered for keywords)
  size_t pos;        ///< byte offset in the input
};

/// Splits the input into tokens; the last is kEof, or kError with the
/// message in text.
std::vector<Token> lex(std::string_view input);

/// Durations are Prometheus' syntax, parsed by the one parser (common/duration.h).
using ::memcg::parseDurationMs;

}  // namespace memcg::promql
