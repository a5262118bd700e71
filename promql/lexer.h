// Tokens of PromQL (Prometheus 2.42's lexer, written anew).
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

/// Prometheus' duration syntax (1h30m, 5m, 10s, 100ms; units y w d h m s ms
/// in that order), in milliseconds; false when malformed.
bool parseDurationMs(std::string_view s, int64_t& ms);

}  // namespace memcg::promql
