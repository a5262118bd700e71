// A protection and its margin maths: what the API asks for, the checks it
// must pass (before and against the limit) and the bytes a check and an
// episode work with. Pure functions of their arguments; no cgroupfs.
//
// Protection {cgroup, start margin, target margin, floor}: when limit - usage
// falls below the start margin, reclaim until it is back at the target margin,
// never taking usage below the floor. Each margin is given either in bytes or
// in percent of the limit (0 < p < 100, fractions allowed); a percent margin
// is resolved against the limit read at each check (bytes =
// floor(limit * p / 100)), so it follows a limit that changes later.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memcg::controller {

struct Protection {
  std::string cgroup;              ///< label, "/a/b"
  uint64_t startMarginBytes = 0;   ///< reclaim when limit - usage < this
  uint64_t targetMarginBytes = 0;  ///< ... until limit - usage >= this
  uint64_t floorBytes = 0;         ///< 0 = ControllerOptions::floorBytes
  /// > 0: the start / target margin in percent of the limit instead of bytes
  /// (the bytes field is then ignored, and must be 0).
  double startMarginPercent = 0;
  double targetMarginPercent = 0;

  /// The margins in bytes for a limit (percent forms resolved, floored).
  uint64_t startBytes(uint64_t limit) const;
  uint64_t targetBytes(uint64_t limit) const;
};

enum class ErrorKind {
  kBadInput,
  kForbidden,
  kNotFound,
  kConflict,
  kDisabled,
  kInternal
};

struct OpError {
  ErrorKind kind;
  std::string message;
};

std::string_view errorKindName(ErrorKind k);

/// The checks that need no cgroup: a label, one form per margin, margins
/// above 0, target above start when both use the same form, never the root.
std::optional<OpError> checkProtection(const Protection& p);

/// The checks against the limit read at protect time: start > 0 bytes,
/// target > start, target < limit.
std::optional<OpError> checkAtLimit(const Protection& p, uint64_t limit);

/// limit - usage, 0 when usage is at or above the limit.
inline uint64_t marginBytes(uint64_t usage, uint64_t limit) {
  return limit > usage ? limit - usage : 0;
}

/// True when the margin is below the start margin at this limit (a check
/// queues an episode).
bool marginShort(const Protection& p, uint64_t usage, uint64_t limit);

/// Bytes an episode still has to reclaim to reach the target margin; 0 when
/// it is reached. A limit changed since protect() can make a percent target
/// fall below a bytes start margin: then the start margin is the target.
uint64_t reclaimNeed(const Protection& p, uint64_t usage, uint64_t limit);

/// The v1 usage threshold for a limit: limit - start margin (at least 1).
uint64_t v1Threshold(const Protection& p, uint64_t limit);

}  // namespace memcg::controller
