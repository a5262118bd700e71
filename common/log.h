// Leveled logging in node_exporter's shapes (--log.format):
//   logfmt  ts=2026-11-30T12:00:00.000Z level=warn msg="..." key=value ...
//   json    {"ts":"2026-11-30T12:00:00.000Z","level":"warn","msg":"...","key":"value"}
// Callers always write key=value pairs (values quoted by quote()); the JSON
// format turns them into string members, so one call site serves both.
#pragma once

#include <string>
#include <string_view>

namespace memcg::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

/// Parses "debug", "info", "warn" or "error".
bool parseLevel(std::string_view s, Level& out);
void setLevel(Level l);

enum class Format { kLogfmt = 0, kJson = 1 };
/// Parses "logfmt" or "json".
bool parseFormat(std::string_view s, Format& out);
void setFormat(Format f);

/// One log line (without the newline) in format `f`: exposed for tests.
std::string formatLine(Format f, std::string_view ts, Level l, std::string_view msg,
                       std::string_view kv);
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
