#include "controller/protection.h"

#include <algorithm>
#include <cmath>

namespace memcg::controller {
namespace {

uint64_t percentOf(uint64_t limit, double pct) {
  return static_cast<uint64_t>(std::floor(static_cast<double>(limit) * pct / 100.0));
}

/// A percent margin field: 0 (unused) or finite in (0, 100).
bool percentOk(double v) { return v == 0 || (std::isfinite(v) && v > 0 && v < 100); }

}  // namespace

uint64_t Protection::startBytes(uint64_t limit) const {
  return startMarginPercent > 0 ? percentOf(limit, startMarginPercent) : startMarginBytes;
}

uint64_t Protection::targetBytes(uint64_t limit) const {
  return targetMarginPercent > 0 ? percentOf(limit, targetMarginPercent)
                                 : targetMarginBytes;
}

std::string_view errorKindName(ErrorKind k) {
  switch (k) {
    case ErrorKind::kBadInput:
      return "bad_input";
    case ErrorKind::kForbidden:
      return "forbidden";
    case ErrorKind::kNotFound:
      return "not_found";
    case ErrorKind::kConflict:
      return "conflict";
    case ErrorKind::kDisabled:
      return "disabled";
    case ErrorKind::kInternal:
      return "internal";
  }
  return "internal";
}

std::optional<OpError> checkProtection(const Protection& p) {
  if (p.cgroup.empty() || p.cgroup.front() != '/')
    return OpError{ErrorKind::kBadInput, "cgroup must be a label starting with '/'"};
  if (!percentOk(p.startMarginPercent) || !percentOk(p.targetMarginPercent))
    return OpError{
        ErrorKind::kBadInput,
        "start_margin_percent and target_margin_percent must be above 0 and below 100"};
  if (p.startMarginPercent > 0 && p.startMarginBytes > 0)
    return OpError{ErrorKind::kBadInput,
                   "give start_margin_bytes or start_margin_percent, not both"};
  if (p.targetMarginPercent > 0 && p.targetMarginBytes > 0)
    return OpError{ErrorKind::kBadInput,
                   "give target_margin_bytes or target_margin_percent, not both"};
  const bool startPct = p.startMarginPercent > 0, targetPct = p.targetMarginPercent > 0;
  if (!startPct && p.startMarginBytes == 0)
    return OpError{ErrorKind::kBadInput,
                   "start_margin_bytes (or start_margin_percent) must be > 0"};
  if (!targetPct && p.targetMarginBytes == 0)
    return OpError{ErrorKind::kBadInput,
                   "target_margin_bytes (or target_margin_percent) must be > 0"};
  if (!startPct && !targetPct && p.targetMarginBytes <= p.startMarginBytes)
    return OpError{ErrorKind::kBadInput,
                   "target_margin_bytes must exceed start_margin_bytes"};
  if (startPct && targetPct && p.targetMarginPercent <= p.startMarginPercent)
    return OpError{ErrorKind::kBadInput,
                   "target_margin_percent must exceed start_margin_percent"};
  if (p.cgroup == "/")
    return OpError{ErrorKind::kForbidden, "the root cgroup is never written"};
  return std::nullopt;
}

std::optional<OpError> checkAtLimit(const Protection& p, uint64_t limit) {
  const uint64_t startB = p.startBytes(limit), targetB = p.targetBytes(limit);
  if (startB == 0)
    return OpError{ErrorKind::kBadInput, "the start margin is 0 bytes at the limit (" +
                                             std::to_string(limit) + ")"};
  if (targetB <= startB)
    return OpError{ErrorKind::kBadInput,
                   "the target margin must exceed the start margin; at the limit (" +
                       std::to_string(limit) + ") the target is " +
                       std::to_string(targetB) + " bytes, the start " +
                       std::to_string(startB)};
  if (targetB >= limit)
    return OpError{ErrorKind::kBadInput, "target_margin_bytes must be below the limit (" +
                                             std::to_string(limit) + ")"};
  return std::nullopt;
}

bool marginShort(const Protection& p, uint64_t usage, uint64_t limit) {
  return marginBytes(usage, limit) < p.startBytes(limit);
}

uint64_t reclaimNeed(const Protection& p, uint64_t usage, uint64_t limit) {
  const uint64_t margin = marginBytes(usage, limit);
  const uint64_t target = std::max(p.targetBytes(limit), p.startBytes(limit));
  return margin >= target ? 0 : target - margin;
}

uint64_t v1Threshold(const Protection& p, uint64_t limit) {
  const uint64_t start = p.startBytes(limit);
  return limit > start ? limit - start : 1;
}

}  // namespace memcg::controller
