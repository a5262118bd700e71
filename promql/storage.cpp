#include "promql/storage.h"

#include <re2/re2.h>

#include <algorithm>

namespace memcg::promql {

Matcher::Matcher(MatchType type, std::string name, std::string value)
    : type_(type), name_(std::move(name)), value_(std::move(value)) {
  if (type_ == MatchType::kRegex || type_ == MatchType::kNotRegex) {
    RE2::Options opts;
    opts.set_log_errors(false);
    auto re = std::make_shared<RE2>("^(?:" + value_ + ")$", opts);
    if (!re->ok()) {
      error_ = "error parsing regexp: " + re->error();
    } else {
      re_ = std::move(re);
    }
  }
}

bool Matcher::matches(std::string_view v) const {
  switch (type_) {
    case MatchType::kEqual:
      return v == value_;
    case MatchType::kNotEqual:
      return v != value_;
    case MatchType::kRegex:
      return re_ && RE2::FullMatch(v, *re_);
    case MatchType::kNotRegex:
      return re_ && !RE2::FullMatch(v, *re_);
  }
  return false;
}

std::string Matcher::toString() const {
  static const char* ops[] = {"=", "!=", "=~", "!~"};
  return name_ + ops[static_cast<int>(type_)] + goQuote(value_);
}

void MemoryStorage::append(const Labels& labels, int64_t t, double v) {
  Series* s = nullptr;
  if (last_ != nullptr && last_->labels == labels) s = last_;
  if (s == nullptr) {
    uint64_t h = hashLabels(labels);
    auto& bucket = byHash_[h];
    for (size_t idx : bucket) {
      if (series_[idx]->labels == labels) {
        s = series_[idx].get();
        break;
      }
    }
    if (s == nullptr) {
      auto owned = std::make_unique<Series>();
      owned->labels = labels;
      owned->hash = h;
      s = owned.get();
      bucket.push_back(series_.size());
      byName_[std::string(labelValue(labels, kMetricName))].push_back(series_.size());
      series_.push_back(std::move(owned));
    }
    last_ = s;
  }
  if (isStaleNaN(v)) ++s->staleMarkers;
  auto& ss = s->samples;
  if (ss.empty() || ss.back().t < t) {
    ss.push_back({t, v});
    return;
  }
  auto it = std::lower_bound(ss.begin(), ss.end(), t,
                             [](const Sample& a, int64_t b) { return a.t < b; });
  if (it != ss.end() && it->t == t) {
    if (isStaleNaN(it->v)) --s->staleMarkers;
    it->v = v;
  } else {
    ss.insert(it, {t, v});
  }
}

void MemoryStorage::clear() {
  last_ = nullptr;
  series_.clear();
  byHash_.clear();
  byName_.clear();
}

class MemoryQuerier final : public Querier {
 public:
  explicit MemoryQuerier(const MemoryStorage& s) : s_(s) {}
  void select(const std::vector<Matcher>& matchers, int64_t mint, int64_t maxt,
              std::vector<SeriesView>& out) override {
    const std::vector<size_t>* candidates = nullptr;
    for (const auto& m : matchers) {
      if (m.name() == kMetricName && m.type() == MatchType::kEqual) {
        auto it = s_.byName_.find(m.value());
        if (it == s_.byName_.end()) return;
        candidates = &it->second;
        break;
      }
    }
    auto consider = [&](const MemoryStorage::Series& s) {
      for (const auto& m : matchers) {
        if (!m.matches(labelValue(s.labels, m.name()))) return;
      }
      if (s.samples.empty()) return;
      auto lo = s.samples.begin(), hi = s.samples.end();
      if (mint > s.samples.front().t) {
        lo = std::lower_bound(s.samples.begin(), s.samples.end(), mint,
                              [](const Sample& a, int64_t b) { return a.t < b; });
      }
      if (maxt < s.samples.back().t) {
        hi = std::upper_bound(lo, s.samples.end(), maxt,
                              [](int64_t b, const Sample& a) { return b < a.t; });
      }
      if (lo == hi) return;
      out.push_back({&s.labels,
                     std::span<const Sample>(&*lo, static_cast<size_t>(hi - lo)),
                     s.staleMarkers > 0, s.hash});
    };
    if (candidates != nullptr) {
      for (size_t idx : *candidates) consider(*s_.series_[idx]);
    } else {
      for (const auto& s : s_.series_) consider(*s);
    }
  }

 private:
  const MemoryStorage& s_;
};

std::unique_ptr<Querier> MemoryStorage::querier(int64_t, int64_t) const {
  return std::make_unique<MemoryQuerier>(*this);
}

}  // namespace memcg::promql
