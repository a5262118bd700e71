// Leveled logging in node_exporter's logfmt shape:
//   ts=2026-11-30T12:00:00.000Z level=warn msg="..." key=value ...
#pragma once

#include <string>
#include <string_view>

namespace memcg::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

/// Parses "debug", "info", "warn" or "error".
bool parseLevel(std::string_view s, Level& out);
void setLevel(Level l);
bool enabled(Level l);

/// Writes one line to stderr if `l` is enabled. `kv` is appended verbatim and
/// should already be in key=value form (values quoted by quote()).
void write(Level l, std::string_view msg, std::string_view kv = {});
std::string quote(std::string_view v);

inline void debug(std::string_view m, std::string_view kv = {}) {
  if (enabled(Level::kDebug)) write(Level::kDebug, m, kv);
}
inline void info(std::string_view m, std::string_view kv = {}) { write(Level::kInfo, m, kv); }
inline void warn(std::string_view m, std::string_view kv = {}) { write(Level::kWarn, m, kv); }
inline void error(std::string_view m, std::string_view kv = {}) {
  write(Level::kError, m, kv);
}

}  // namespace memcg::log
