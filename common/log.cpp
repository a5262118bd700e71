#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace memcg::log {
namespace {
std::atomic<int> gLevel{static_cast<int>(Level::kInfo)};
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
}  // namespace

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
  std::string line = "ts=";
  line += ts;
  line += " level=";
  line += name(l);
  line += " msg=";
  line += quote(msg);
  if (!kv.empty()) {
    line += ' ';
    line += kv;
  }
  line += '\n';
  std::lock_guard<std::mutex> g(gMu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace memcg::log
