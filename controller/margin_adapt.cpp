#include "controller/margin_adapt.h"

#include <algorithm>
#include <cmath>

namespace memcg::controller {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t fractionOf(uint64_t limit, double f) {
  return static_cast<uint64_t>(std::floor(static_cast<double>(limit) * f));
}

/// The largest extra the bounds allow at this limit.
uint64_t maxExtra(const Protection& p, uint64_t limit, double maxFraction) {
  const uint64_t start = p.startBytes(limit);
  const uint64_t ceil = startCeiling(p, limit, maxFraction);
  return ceil > start ? ceil - start : 0;
}

}  // namespace

uint64_t startCeiling(const Protection& p, uint64_t limit, double maxFraction) {
  return std::max(p.startBytes(limit), fractionOf(limit, maxFraction));
}

Margins effectiveMargins(const Protection& p, uint64_t limit, uint64_t extra,
                         double maxFraction) {
  const uint64_t start = p.startBytes(limit), target = p.targetBytes(limit);
  extra = std::min(extra, maxExtra(p, limit, maxFraction));
  Margins m{start + extra, target + extra};
  const uint64_t targetCeil =
      std::max(target, fractionOf(limit, (1.0 + maxFraction) / 2));
  m.target = std::min(m.target, targetCeil);
  // A limit changed since protect() can leave a percent target below a bytes
  // start (reclaimNeed then takes the start); the clamp never does worse.
  return m;
}

void observeShortWake(MarginAdapt& a, const Protection& p, uint64_t usage, uint64_t limit,
                      double maxFraction, MarginAdapt::Clock::time_point now) {
  a.extra = std::min(a.extra, maxExtra(p, limit, maxFraction));
  const Margins m = effectiveMargins(p, limit, a.extra, maxFraction);
  const uint64_t margin = marginBytes(usage, limit);
  const uint64_t over = margin < m.start ? m.start - margin : 0;
  a.lastOvershoot = over;
  a.maxOvershoot = std::max(a.maxOvershoot, over);
  const double s = static_cast<double>(m.start);
  if (static_cast<double>(over) >= kHoldAt * s) a.lastPressure = now;
  if (static_cast<double>(over) < kWidenAt * s) return;
  const uint64_t cap = maxExtra(p, limit, maxFraction);
  uint64_t next = a.extra + 2 * over;
  next = (next + kPage - 1) / kPage * kPage;
  next = std::min(next, cap);
  if (next > a.extra) {
    a.extra = next;
    a.widenings++;
  }
}

bool narrowIfCalm(MarginAdapt& a, const Protection& p, uint64_t limit, double maxFraction,
                  MarginAdapt::Clock::time_point now) {
  a.extra = std::min(a.extra, maxExtra(p, limit, maxFraction));
  if (a.extra == 0 || now - a.lastPressure < kCalmPeriod) return false;
  a.extra = a.extra / 2 < kNarrowToZeroBelow ? 0 : a.extra / 2 / kPage * kPage;
  a.lastPressure = now;  // the next step one calm period later
  a.narrowings++;
  return true;
}

bool marginShort(const Margins& m, uint64_t usage, uint64_t limit) {
  return marginBytes(usage, limit) < m.start;
}

uint64_t reclaimNeed(const Margins& m, uint64_t usage, uint64_t limit) {
  const uint64_t margin = marginBytes(usage, limit);
  const uint64_t target = std::max(m.target, m.start);
  return margin >= target ? 0 : target - margin;
}

uint64_t v1Threshold(const Margins& m, uint64_t limit) {
  return limit > m.start ? limit - m.start : 1;
}

}  // namespace memcg::controller
