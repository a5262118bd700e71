#include "cgroupfs/readers.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <limits>
#include <string>

namespace memcg::cgroupfs {

Error malformed(std::string_view path, std::string_view line) {
  return makeError(EINVAL, std::string(path), "malformed line: \"" + std::string(line) + "\"");
}

double Limit::asDouble() const {
  return unlimited ? std::numeric_limits<double>::infinity() : static_cast<double>(bytes);
}

uint64_t v1UnlimitedBytes() {
  static const uint64_t v = [] {
    long page = ::sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    uint64_t p = static_cast<uint64_t>(page);
    return (static_cast<uint64_t>(LONG_MAX) / p) * p;
  }();
  return v;
}

Result<uint64_t> parseSingle(std::string_view content, std::string_view path) {
  std::string_view v = trimRight(content);
  if (auto n = parseU64(v)) return *n;
  return malformed(path, v);
}

Result<Limit> parseLimit(std::string_view content, std::string_view path) {
  std::string_view v = trimRight(content);
  if (v == "max") return Limit{true, 0};
  auto n = parseU64(v);
  if (!n) return malformed(path, v);
  if (*n >= v1UnlimitedBytes()) return Limit{true, 0};
  return Limit{false, *n};
}

}  // namespace memcg::cgroupfs
