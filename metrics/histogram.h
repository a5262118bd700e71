// One fixed-bucket histogram type for every histogram the exporter exports
// (reclaim stalls, lock waits and holds, the controller's trigger latency).
//
// The bucket bounds are given once, as a constexpr BucketLayout: ascending
// finite upper bounds in the unit values are observed in (ns as integers for
// trace events, seconds as doubles for the controller), plus how many of that
// unit make one exposed unit (1e9 for ns -> seconds, 1 for seconds). +Inf is
// implicit. A histogram is a fixed-size value (no allocation): it can be
// copied into snapshots, merged and subtracted (report windows), and written
// into a metrics::Sink as a Prometheus histogram (_bucket{le}, _sum, _count).
//
//   inline constexpr metrics::BucketLayout<uint64_t, 3> kWaitNs{{1'000, 10'000, 100'000}, 1e9};
//   using WaitHistogram = metrics::FixedHistogram<kWaitNs>;
//   const metrics::Desc kWait{"x_wait_seconds", "...", metrics::Type::kHistogram, {"cgroup"},
//                             kWaitNs.exposedBounds()};
//   h.observe(2'500);                 // reader thread
//   h.addTo(sink, kWait, {cgroup});   // scrape
//
// Exposition: le = bound / per_unit (correctly rounded: 2500 ns prints
// "2.5e-06"), _sum = sum * (1 / per_unit). Not thread-safe: the owner locks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <vector>

#include "metrics/metric.h"

namespace memcg::metrics {

/// A histogram's bucket bounds, given once (constexpr, static storage).
template <class T, size_t N>
struct BucketLayout {
  static_assert(std::is_arithmetic_v<T>);
  using Value = T;
  static constexpr size_t kFinite = N;

  std::array<T, N> bounds;  ///< ascending finite upper bounds, observed unit
  double per_unit = 1;      ///< observed units per exposed unit (1e9: ns -> s)

  /// Bound i in the exposed unit (Desc::buckets, "le").
  constexpr double exposedBound(size_t i) const {
    return static_cast<double>(bounds[i]) / per_unit;
  }
  /// Every bound in the exposed unit: the Desc's `buckets`.
  std::vector<double> exposedBounds() const {
    std::vector<double> b;
    b.reserve(N);
    for (size_t i = 0; i < N; ++i) b.push_back(exposedBound(i));
    return b;
  }
  /// A sum (observed unit) in the exposed unit.
  constexpr double exposedSum(T sum) const {
    return static_cast<double>(sum) * (1.0 / per_unit);
  }
  /// True if the bounds ascend strictly (checked by static_assert in FixedHistogram).
  constexpr bool ascending() const {
    for (size_t i = 1; i < N; ++i) {
      if (!(bounds[i - 1] < bounds[i])) return false;
    }
    return true;
  }
};

/// Counts per bucket of Layout (a constexpr BucketLayout), their count and sum.
template <const auto& Layout>
struct FixedHistogram {
  using LayoutType = std::remove_cvref_t<decltype(Layout)>;
  using Value = typename LayoutType::Value;
  static constexpr size_t kFinite = LayoutType::kFinite;
  static_assert(Layout.ascending(), "histogram bounds must ascend strictly");

  /// Per-bucket (NOT cumulative) counts: [i] counts values <= bounds[i] and
  /// > bounds[i-1]; the last one counts values above the last bound (+Inf).
  std::array<uint64_t, kFinite + 1> buckets{};
  uint64_t count = 0;
  Value sum{};  ///< observed unit

  static constexpr const LayoutType& layout() { return Layout; }
  /// Bound i in the exposed unit.
  static constexpr double exposedBound(size_t i) { return Layout.exposedBound(i); }

  void observe(Value v) {
    // Linear scan: observations cluster in the low buckets, and ~20 compares
    // beat a branchy binary search at this size.
    size_t i = 0;
    while (i < kFinite && v > Layout.bounds[i]) ++i;
    ++buckets[i];
    ++count;
    sum += v;
  }

  /// Adds `o`'s observations (e.g. summing series).
  void merge(const FixedHistogram& o) {
    for (size_t i = 0; i < buckets.size(); ++i) buckets[i] += o.buckets[i];
    count += o.count;
    sum += o.sum;
  }

  /// Removes `base`'s observations (an earlier copy of the same series: the
  /// observations since then). Saturates at 0 if `base` is not an earlier copy.
  void subtract(const FixedHistogram& base) {
    for (size_t i = 0; i < buckets.size(); ++i) buckets[i] = sat(buckets[i], base.buckets[i]);
    count = sat(count, base.count);
    sum = sat(sum, base.sum);
  }

  /// Sum in the exposed unit (seconds).
  double exposedSum() const { return Layout.exposedSum(sum); }

  /// Cumulative counts in Prometheus order: le=bounds[0] ... le=+Inf.
  std::array<uint64_t, kFinite + 1> cumulative() const {
    std::array<uint64_t, kFinite + 1> c{};
    uint64_t run = 0;
    for (size_t i = 0; i < buckets.size(); ++i) c[i] = run += buckets[i];
    return c;
  }
  /// Cumulative counts of the finite bounds only (the +Inf one is `count`):
  /// what HistogramSample::cumulative holds.
  std::vector<uint64_t> cumulativeFinite() const {
    std::vector<uint64_t> c(kFinite);
    uint64_t run = 0;
    for (size_t i = 0; i < kFinite; ++i) c[i] = run += buckets[i];
    return c;
  }

  /// Writes this histogram as one series of `d` (a kHistogram Desc whose
  /// buckets are Layout.exposedBounds()).
  void addTo(Family& f, std::initializer_list<std::string_view> labels) const {
    f.addHistogram(labels, count, exposedSum(), cumulativeFinite());
  }
  void addTo(Sink& sink, const Desc& d, std::initializer_list<std::string_view> labels) const {
    addTo(sink.family(d), labels);
  }

  friend bool operator==(const FixedHistogram&, const FixedHistogram&) = default;

 private:
  template <class U>
  static U sat(U a, U b) {
    return a > b ? a - b : U{};
  }
};

}  // namespace memcg::metrics
