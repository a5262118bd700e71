// Number parsing without exceptions (std::from_chars) and the small text
// helpers the kernel-file readers share.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memcg {

/// Parses an unsigned decimal integer that fills the whole view.
inline std::optional<uint64_t> parseU64(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Parses a signed decimal integer that fills the whole view.
inline std::optional<int64_t> parseI64(std::string_view s) {
  int64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Strips trailing newlines and spaces.
inline std::string_view trimRight(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

/// Splits off the next line (without its '\n'); returns false at the end.
inline bool nextLine(std::string_view& rest, std::string_view& line) {
  if (rest.empty()) return false;
  size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) {
    line = rest;
    rest = {};
  } else {
    line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
  }
  return true;
}

/// Splits off the next space-separated token; returns false when none is left.
inline bool nextToken(std::string_view& rest, std::string_view& token) {
  size_t b = rest.find_first_not_of(' ');
  if (b == std::string_view::npos) {
    rest = {};
    return false;
  }
  rest.remove_prefix(b);
  size_t e = rest.find(' ');
  token = rest.substr(0, e);
  rest.remove_prefix(e == std::string_view::npos ? rest.size() : e);
  return true;
}

/// True if `item` is one of the comma-separated entries of `list`
/// ("rw,memory", the controllers of /proc/<pid>/cgroup).
inline bool listContains(std::string_view list, std::string_view item) {
  while (!list.empty()) {
    size_t c = list.find(',');
    if (list.substr(0, c) == item) return true;
    if (c == std::string_view::npos) break;
    list.remove_prefix(c + 1);
  }
  return false;
}

/// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no
/// overlongs, no surrogates, nothing above U+10FFFF), or 0 if it is not one.
inline size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = at(i);
  if (b < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace memcg
