#include "common/duration.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <memory>
#include <stdexcept>

#include "common/log.h"

namespace memcg {

bool parseDurationMs(std::string_view s, int64_t& ms) {
  if (s == "0") {
    ms = 0;
    return true;
  }
  struct Unit {
    const char* name;
    int64_t mult;
  };
  static const Unit kUnits[] = {{"y", 365LL * 24 * 3600 * 1000},
                                {"w", 7LL * 24 * 3600 * 1000},
                                {"d", 24LL * 3600 * 1000},
                                {"h", 3600LL * 1000},
                                {"m", 60LL * 1000},
                                {"s", 1000},
                                {"ms", 1}};
  size_t i = 0, nextUnit = 0;
  int64_t total = 0;
  bool any = false;
  while (i < s.size()) {
    size_t start = i;
    int64_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (n > (INT64_MAX - 9) / 10) return false;
      n = n * 10 + (s[i] - '0');
      ++i;
    }
    if (i == start) return false;
    size_t ustart = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    std::string_view unit = s.substr(ustart, i - ustart);
    size_t u = nextUnit;
    while (u < 7 && unit != kUnits[u].name) ++u;
    if (u == 7) return false;
    if (n != 0 && kUnits[u].mult > INT64_MAX / n) return false;
    if (total > INT64_MAX - n * kUnits[u].mult) return false;
    total += n * kUnits[u].mult;
    nextUnit = u + 1;
    any = true;
  }
  if (!any) return false;
  ms = total;
  return true;
}

Result<int64_t> parseDurationMs(std::string_view s) {
  int64_t ms = 0;
  if (!parseDurationMs(s, ms))
    return makeError(EINVAL, "duration", "not a valid duration string: \"" + std::string(s) + "\"");
  return ms;
}

std::string formatDuration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  struct U {
    const char* n;
    int64_t ms;
  } units[] = {{"y", 365LL * 86400000},
               {"w", 7LL * 86400000},
               {"d", 86400000},
               {"h", 3600000},
               {"m", 60000},
               {"s", 1000},
               {"ms", 1}};
  for (const auto& u : units) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.n;
      ms %= u.ms;
    }
  }
  return out;
}

int64_t durationFlag(const std::string& flag, const std::string& v, int64_t minMs,
                     int64_t maxMs) {
  int64_t ms = 0;
  if (!parseDurationMs(v, ms) || ms < minMs || ms > maxMs) {
    std::string range;
    if (minMs > 1) range += "at least " + formatDuration(minMs);
    if (maxMs != INT64_MAX) range += (range.empty() ? "" : ", ") + ("at most " + formatDuration(maxMs));
    throw std::invalid_argument("--" + flag + " must be a duration such as 1s, 500ms or 15m" +
                                (range.empty() ? "" : " (" + range + ")") + ", got \"" + v +
                                "\"");
  }
  return ms;
}

FlagSpec deprecatedMsFlag(std::string oldName, std::string newName, int lo, int hi,
                          std::function<void(int64_t ms)> set, std::string defaultText) {
  FlagSpec f;
  f.name = oldName;
  f.help = "Deprecated: --" + newName + " in whole milliseconds.";
  f.defaultText = std::move(defaultText);
  auto logged = std::make_shared<bool>(false);
  f.set = [oldName, newName, lo, hi, set = std::move(set), logged](const std::string& v) {
    const int64_t ms = parseFlagInt(oldName, v, lo, hi);
    if (!*logged) {
      *logged = true;
      log::warn("deprecated flag", "flag=--" + oldName + " use=--" + newName + "=" +
                                       formatDuration(ms));
    }
    set(ms);
  };
  return f;
}

}  // namespace memcg
