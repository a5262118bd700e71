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

}  // namespace memcg
