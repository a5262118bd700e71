#include "metrics/metric.h"

#include <algorithm>

namespace memcg::metrics {

namespace {
LabelValues toValues(std::initializer_list<std::string_view> labels) {
  LabelValues v{};
  std::copy_n(labels.begin(), std::min(labels.size(), kMaxLabels), v.begin());
  return v;
}
}  // namespace

void Family::add(std::initializer_list<std::string_view> labels, double v) {
  samples.push_back(Sample{toValues(labels), v});
}

void Family::addHistogram(std::initializer_list<std::string_view> labels, uint64_t count,
                          double sum, std::vector<uint64_t> cumulative) {
  histograms.push_back(HistogramSample{toValues(labels), count, sum, std::move(cumulative)});
}

bool isValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    c == ':' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

Family& Sink::family(const Desc& d) {
  auto it = byName_.find(d.name);
  if (it != byName_.end()) return *it->second;
  Family& f = families_.emplace_back();
  f.desc = &d;
  byName_.emplace(d.name, &f);
  return f;
}

const Desc& Sink::own(Desc d) {
  auto it = ownedByName_.find(d.name);
  if (it != ownedByName_.end()) return *it->second;
  const Desc& stored = owned_.emplace_back(std::move(d));
  ownedByName_.emplace(stored.name, &stored);
  return stored;
}

std::string_view Sink::keep(std::string s) { return kept_.emplace_back(std::move(s)); }

size_t Sink::sampleCount() const {
  size_t n = 0;
  for (const auto& f : families_) n += f.samples.size() + f.histograms.size();
  return n;
}

}  // namespace memcg::metrics
