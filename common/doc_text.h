// Small text helpers for the references the binaries print about themselves
// (memcg_exporter --help-format, memcgtool --help-format): roff escaping for
// the manual pages and Markdown table cells.
#pragma once

#include <string>
#include <string_view>

namespace memcg::doc {

/// Text safe in a roff line: backslashes and hyphens escaped, and a line
/// starting with '.' or '\'' guarded so it is not read as a request.
inline std::string roff(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

/// Text safe in a Markdown table cell: '|' escaped, newlines as spaces.
inline std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace memcg::doc
