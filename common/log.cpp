#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace memcg::log {
namespace {
std::atomic<int> gLevel{static_cast<int>(Level::kInfo)};
std::atomic<int> gFormat{static_cast<int>(Format::kLogfmt)};
std::mutex gMu;
const char* name(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}
void jsonString(std::string& out, std::string_view v) {
  out += '"';
  for (unsigned char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  out += '"';
}

/// Splits logfmt pairs (key=value, key="quoted \"value\"") as quote() writes
/// them. A token without '=' becomes a key with an empty value.
template <class F>
void eachPair(std::string_view kv, F&& f) {
  size_t i = 0;
  while (i < kv.size()) {
    while (i < kv.size() && kv[i] == ' ') ++i;
    if (i >= kv.size()) break;
    size_t k0 = i;
    while (i < kv.size() && kv[i] != '=' && kv[i] != ' ') ++i;
    std::string_view key = kv.substr(k0, i - k0);
    std::string value;
    if (i < kv.size() && kv[i] == '=') {
      ++i;
      if (i < kv.size() && kv[i] == '"') {
        ++i;
        while (i < kv.size() && kv[i] != '"') {
          if (kv[i] == '\\' && i + 1 < kv.size()) {
            ++i;
            value += kv[i] == 'n' ? '\n' : kv[i];
          } else {
            value += kv[i];
          }
          ++i;
        }
        if (i < kv.size()) ++i;  // the closing quote
      } else {
        size_t v0 = i;
        while (i < kv.size() && kv[i] != ' ') ++i;
        value.assign(kv.substr(v0, i - v0));
      }
    }
    f(key, value);
  }
}
}  // namespace

bool parseFormat(std::string_view s, Format& out) {
  if (s == "logfmt") {
    out = Format::kLogfmt;
    return true;
  }
  if (s == "json") {
    out = Format::kJson;
    return true;
  }
  return false;
}

void setFormat(Format f) { gFormat.store(static_cast<int>(f)); }

std::string formatLine(Format f, std::string_view ts, Level l, std::string_view msg,
                       std::string_view kv) {
  std::string line;
  if (f == Format::kJson) {
    line = "{\"ts\":";
    jsonString(line, ts);
    line += ",\"level\":";
    jsonString(line, name(l));
    line += ",\"msg\":";
    jsonString(line, msg);
    eachPair(kv, [&line](std::string_view k, const std::string& v) {
      // The line's own members win: a caller's ts/level/msg key is renamed.
      line += ',';
      if (k == "ts" || k == "level" || k == "msg") {
        jsonString(line, "kv_" + std::string(k));
      } else {
        jsonString(line, k);
      }
      line += ':';
      jsonString(line, v);
    });
    line += '}';
    return line;
  }
  line = "ts=";
  line += ts;
  line += " level=";
  line += name(l);
  line += " msg=";
  line += quote(msg);
  if (!kv.empty()) {
    line += ' ';
    line += kv;
  }
  return line;
}

bool parseLevel(std::string_view s, Level& out) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
    if (s == name(l)) {
      out = l;
      return true;
    }
  }
  return false;
}

void setLevel(Level l) { gLevel.store(static_cast<int>(l)); }
bool enabled(Level l) { return static_cast<int>(l) >= gLevel.load(std::memory_order_relaxed); }

std::string quote(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}

void write(Level l, std::string_view msg, std::string_view kv) {
  if (!enabled(l)) return;
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
      1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  std::string line =
      formatLine(static_cast<Format>(gFormat.load(std::memory_order_relaxed)), ts, l, msg, kv);
  line += '\n';
  std::lock_guard<std::mutex> g(gMu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace memcg::log
