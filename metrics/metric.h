// The metric model shared by every collector and by every output.
//
// A Desc is a metric's one definition (name, help, type, label names, and for
// histograms the bucket bounds). Each collector owns a table of Descs; the name
// of a metric is written once, there. Exposition, the JSON API and the docs
// read the same Descs.
//
// A scrape writes samples into a Sink: families in the order they are first
// used, samples in the order they are added. Label values are string_views: they
// must outlive the scrape (cgroup paths owned by the CgroupTree the scrape
// holds, literals from tables, or strings kept by Sink::keep()). Nothing is
// allocated per sample beyond the vectors' growth.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memcg::metrics {

enum class Type { kCounter, kGauge, kHistogram };

inline constexpr size_t kMaxLabels = 4;

struct Desc {
  std::string name;
  std::string help;
  Type type = Type::kGauge;
  std::vector<std::string> labels;  ///< at most kMaxLabels
  std::vector<double> buckets;      ///< histograms: upper bounds, ascending, no +Inf
};

using LabelValues = std::array<std::string_view, kMaxLabels>;

struct Sample {
  LabelValues values{};
  double value = 0;
};

struct HistogramSample {
  LabelValues values{};
  uint64_t count = 0;
  double sum = 0;
  std::vector<uint64_t> cumulative;  ///< one per Desc::buckets entry
};

struct Family {
  const Desc* desc = nullptr;
  std::vector<Sample> samples;
  std::vector<HistogramSample> histograms;

  void add(std::initializer_list<std::string_view> labels, double v);
  void add(const LabelValues& labels, double v) { samples.push_back(Sample{labels, v}); }
  /// `cumulative` counts per bucket bound (cumulative, as Prometheus wants).
  void addHistogram(std::initializer_list<std::string_view> labels, uint64_t count, double sum,
                    std::vector<uint64_t> cumulative);
};

/// True for a valid Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*). Names
/// built at scrape time from a kernel key must pass it: one bad name makes
/// the whole exposition unparseable.
bool isValidMetricName(std::string_view name);

class Sink {
 public:
  /// The family for `d`, created on first use. Two Descs with the same name
  /// share one family (the first one's help and type win).
  Family& family(const Desc& d);
  /// Adds one sample to `d`'s family.
  void add(const Desc& d, std::initializer_list<std::string_view> labels, double v) {
    family(d).add(labels, v);
  }
  /// A Desc made at scrape time (e.g. an unknown memory.stat key), kept for
  /// the life of the sink; one per name.
  const Desc& own(Desc d);
  /// Keeps a string alive for the life of the sink (a dynamic label value).
  std::string_view keep(std::string s);

  const std::deque<Family>& families() const { return families_; }
  size_t sampleCount() const;

 private:
  std::deque<Family> families_;
  std::unordered_map<std::string_view, Family*> byName_;
  std::deque<Desc> owned_;
  std::unordered_map<std::string_view, const Desc*> ownedByName_;
  std::deque<std::string> kept_;
};

}  // namespace memcg::metrics
