// The one duration parser: Prometheus' syntax (model.ParseDuration as
// Prometheus 2.42 has it), used by the flags, the HTTP API and PromQL alike,
// so "90s", "1m30s" and "500ms" mean the same wherever they are written.
//
//   "0", or integers with units in decreasing order: y w d h m s ms
//   ("1h30m", "2d", "500ms"); no fractions, no sign, no unit twice.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/flag_spec.h"
#include "common/result.h"

namespace memcg {

/// Parses `s` into `ms`; false (and `ms` untouched) when it is not a duration.
bool parseDurationMs(std::string_view s, int64_t& ms);
/// The same with the reason: Error (EINVAL) naming the text.
Result<int64_t> parseDurationMs(std::string_view s);

/// Prometheus' rendering: "1m30s", "0s".
std::string formatDuration(int64_t ms);

/// A duration flag's value in ms, in [minMs, maxMs]; std::invalid_argument
/// naming --`flag` otherwise (for the flag tables).
int64_t durationFlag(const std::string& flag, const std::string& v, int64_t minMs = 1,
                     int64_t maxMs = INT64_MAX);

/// The old spelling of a duration flag, `oldName` taking whole milliseconds
/// in [lo, hi], kept so existing command lines still work: it sets the same
/// option through `set` and logs once (per flag table) that `newName`
/// replaces it.
FlagSpec deprecatedMsFlag(std::string oldName, std::string newName, int lo, int hi,
                          std::function<void(int64_t ms)> set, std::string defaultText);

}  // namespace memcg
