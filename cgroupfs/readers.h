// Typed readers, one per cgroupfs file shape (as below's cgroupfs crate):
//
//   single value   "123\n"                       memory.usage_in_bytes, memory.failcnt
//   value or max   "max\n" | "123\n"             memory.max, memory.limit_in_bytes
//   flat keyed     "key 123\n..."                memory.stat, memory.events, oom_control
//   nested keyed   "some avg10=0.00 total=12\n"  memory.pressure, /proc/pressure/memory
//
// They parse text already read by CgroupDir::read(); they never throw and
// never format metrics. A malformed line is an Error carrying the path and the
// line; unknown keys are passed through to the caller, which decides.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/parse.h"
#include "common/result.h"

namespace memcg::cgroupfs {

/// A memory limit: a byte count, or no limit at all.
///
/// cgroup v2 writes the literal "max". cgroup v1 has no such word: an unset
/// limit reads as PAGE_COUNTER_MAX pages in bytes (9223372036854771712 with 4
/// KiB pages), which is the kernel's "unlimited" and is mapped to it here, so
/// no fake number ever reaches a metric. Exported as +Inf.
struct Limit {
  bool unlimited = true;
  uint64_t bytes = 0;

  double asDouble() const;
  bool operator==(const Limit&) const = default;
};

/// The v1 "unlimited" value for this machine's page size.
uint64_t v1UnlimitedBytes();

Result<uint64_t> parseSingle(std::string_view content, std::string_view path);
Result<Limit> parseLimit(std::string_view content, std::string_view path);

/// Calls fn(key, value) for each "key value" line. A value may be negative in
/// v1 files (per-CPU counter drift); it is clamped to 0.
template <typename Fn>
Status parseFlatKeyed(std::string_view content, std::string_view path, Fn&& fn);

/// Calls fn(lineKey, fieldKey, fieldValue) for each "k=v" of each line.
template <typename Fn>
Status parseNestedKeyed(std::string_view content, std::string_view path, Fn&& fn);

// ---------------------------------------------------------------------------

Error malformed(std::string_view path, std::string_view line);

/// A flat-keyed value: unsigned decimal, or a negative one clamped to 0.
inline bool parseFlatValue(std::string_view s, uint64_t& out) {
  if (!s.empty() && s.front() == '-') {
    if (!parseI64(s)) return false;
    out = 0;
    return true;
  }
  auto v = parseU64(s);
  if (!v) return false;
  out = *v;
  return true;
}

template <typename Fn>
Status parseFlatKeyed(std::string_view content, std::string_view path, Fn&& fn) {
  std::string_view rest = content, line;
  while (nextLine(rest, line)) {
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0) return malformed(path, line);
    std::string_view key = line.substr(0, sp);
    std::string_view val = line.substr(sp + 1);
    uint64_t v = 0;
    if (!parseFlatValue(val, v)) return malformed(path, line);
    fn(key, v);
  }
  return Ok{};
}

template <typename Fn>
Status parseNestedKeyed(std::string_view content, std::string_view path, Fn&& fn) {
  std::string_view rest = content, line;
  while (nextLine(rest, line)) {
    if (line.empty()) continue;
    std::string_view tok;
    std::string_view fields = line;
    if (!nextToken(fields, tok)) continue;
    std::string_view lineKey = tok;
    bool any = false;
    while (nextToken(fields, tok)) {
      size_t eq = tok.find('=');
      if (eq == std::string_view::npos || eq == 0) return malformed(path, line);
      fn(lineKey, tok.substr(0, eq), tok.substr(eq + 1));
      any = true;
    }
    if (!any) return malformed(path, line);
  }
  return Ok{};
}

}  // namespace memcg::cgroupfs
