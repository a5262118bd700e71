// The storage the PromQL engine reads: series (a label set and time-ordered
// float samples), selected by label matchers. The exporter's history
// implements it; tests fill MemoryStorage directly.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "promql/labels.h"

namespace re2 {
class RE2;
}

namespace memcg::promql {

/// Prometheus' staleness marker: a NaN with this exact bit pattern.
inline constexpr uint64_t kStaleNaNBits = 0x7ff0000000000002ull;
inline double staleNaN() {
  double d;
  std::memcpy(&d, &kStaleNaNBits, sizeof d);
  return d;
}
inline bool isStaleNaN(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b == kStaleNaNBits;
}

struct Sample {
  int64_t t;  ///< milliseconds since the epoch
  double v;
};

enum class MatchType { kEqual, kNotEqual, kRegex, kNotRegex };

/// One label matcher; regexes are fully anchored (RE2 syntax, as Prometheus').
class Matcher {
 public:
  Matcher(MatchType type, std::string name, std::string value);
  /// Empty when the matcher is usable, else why the regex does not compile.
  const std::string& error() const { return error_; }
  bool matches(std::string_view v) const;
  MatchType type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& value() const { return value_; }
  std::string toString() const;

 private:
  MatchType type_;
  std::string name_;
  std::string value_;
  std::shared_ptr<const re2::RE2> re_;
  std::string error_;
};

/// A selected series; the views stay valid while the Querier lives.
struct SeriesView {
  const Labels* labels;
  std::span<const Sample> samples;  ///< ascending t, within the asked range
  bool mayHaveStale = true;         ///< false: the storage knows there is no marker
  uint64_t labelsHash = 0;  ///< hashLabels(*labels) when the storage keeps it, else 0
};

class Querier {
 public:
  virtual ~Querier() = default;
  /// Appends every series that matches all matchers and has samples in
  /// [mint, maxt]; the samples outside may be cut off.
  virtual void select(const std::vector<Matcher>& matchers, int64_t mint, int64_t maxt,
                      std::vector<SeriesView>& out) = 0;
};

class Storage {
 public:
  virtual ~Storage() = default;
  virtual std::unique_ptr<Querier> querier(int64_t mint, int64_t maxt) const = 0;
};

/// All series in memory; append in any order (samples are kept sorted, a
/// repeated timestamp replaces the value).
class MemoryStorage final : public Storage {
 public:
  void append(const Labels& labels, int64_t t, double v);
  void clear();
  size_t seriesCount() const { return series_.size(); }
  std::unique_ptr<Querier> querier(int64_t mint, int64_t maxt) const override;

 private:
  friend class MemoryQuerier;
  struct Series {
    Labels labels;
    std::vector<Sample> samples;
    size_t staleMarkers = 0;
    uint64_t hash = 0;
  };
  Series* last_ = nullptr;  // appends usually continue one series
  std::vector<std::unique_ptr<Series>> series_;
  std::unordered_map<uint64_t, std::vector<size_t>> byHash_;
  std::unordered_map<std::string, std::vector<size_t>> byName_;
};

}  // namespace memcg::promql
