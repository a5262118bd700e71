#include "history/history.h"
#include "common/clock.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "common/log.h"
#include "history/chunk.h"
#include "metrics/descriptors.h"
#include "promql/labels.h"
#include "promql/parser.h"

namespace memcg::history {
namespace {

using promql::Label;
using promql::Labels;
using promql::Matcher;

const metrics::Desc kSeries =
    metrics::nodeGauge("memcg_exporter_history_series",
                       "Series held by the history (live and ended, within retention).");
const metrics::Desc kSamples =
    metrics::nodeGauge("memcg_exporter_history_samples", "Samples held by the history.");
const metrics::Desc kBytes =
    metrics::nodeGauge("memcg_exporter_history_bytes",
                       "Bytes of compressed sample chunks held by the history.");
const metrics::Desc kRefused =
    metrics::nodeCounter("memcg_exporter_history_series_refused_total",
                         "New series refused because of --history.series-limit.");
const metrics::Desc kAppended = metrics::nodeCounter(
    "memcg_exporter_history_samples_appended_total", "Samples appended to the history.");
const metrics::Desc kPass =
    metrics::nodeGauge("memcg_exporter_history_sampler_duration_seconds",
                       "Time the history sampler's last pass took.");
const metrics::Desc kPassTotal =
    metrics::nodeCounter("memcg_exporter_history_sampler_seconds_total",
                         "Time the history sampler's passes took, in all.");
const metrics::Desc kPasses = metrics::nodeCounter(
    "memcg_exporter_history_sampler_passes_total", "History sampler passes.");

constexpr int64_t kMaxTreeAgeMs = 5000;


bool matchesAll(const std::vector<Matcher>& ms, const Labels& ls) {
  for (const auto& m : ms) {
    if (!m.matches(promql::labelValue(ls, m.name()))) return false;
  }
  return true;
}

// FNV-1a over a family name and its label values: the sampler's fast key.
uint64_t fnv(uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;
}

struct Series {
  Labels labels;
  uint64_t hash = 0;  // promql::hashLabels
  uint64_t inode = 0;
  std::deque<Chunk> chunks;
  int64_t lastT = std::numeric_limits<int64_t>::min();
  bool ended = false;
  bool sampled = false;  // made by the sampler (else appended)
  uint64_t seenPass = 0;
  std::vector<uint32_t> sels;  // the selections (by slot) it matched
  uint64_t samples = 0;

  void add(int64_t t, double v) {
    if (chunks.empty() || chunks.back().full()) {
      if (!chunks.empty()) chunks.back().shrink();
      chunks.emplace_back();
    }
    chunks.back().append(t, v);
    lastT = t;
    ++samples;
  }
};

struct Selection {
  SelectionId id;
  std::vector<Matcher> matchers;
  int64_t intervalMs;
  int64_t nextDue = 0;
};

class HistoryQuerier final : public promql::Querier {
 public:
  void select(const std::vector<Matcher>& matchers, int64_t mint, int64_t maxt,
              std::vector<promql::SeriesView>& out) override;
  std::deque<Labels> labels;
  std::deque<std::vector<promql::Sample>> samples;
  std::function<void(const std::vector<Matcher>&, int64_t, int64_t, HistoryQuerier&,
                     std::vector<promql::SeriesView>&)>
      fn;
};

void HistoryQuerier::select(const std::vector<Matcher>& matchers, int64_t mint,
                            int64_t maxt, std::vector<promql::SeriesView>& out) {
  fn(matchers, mint, maxt, *this, out);
}

}  // namespace

struct History::Impl {
  Options opts;
  CollectFn collect;
  mutable std::shared_mutex mu;  // series, byName, appended, entries
  std::vector<std::unique_ptr<Series>> series;
  std::unordered_map<std::string, std::vector<Series*>> byName;
  std::unordered_map<uint64_t, Series*> appended;  // hashLabels -> live series
  // hashLabels of appended series refused by the limit, so that a rule's
  // series is counted once, not at every evaluation (bounded: past
  // kMaxRefusedKept refusals are counted per sample again).
  static constexpr size_t kMaxRefusedKept = 1 << 16;
  std::unordered_set<uint64_t> refusedAppended;
  struct Entry {
    Series* live = nullptr;
    uint64_t gen = 0;  // selection generation of `sels`
    std::vector<uint32_t> sels;
    Labels labels;  // when selected
    uint64_t seenPass = 0;
    bool refused = false;  // counted once
  };
  std::unordered_map<uint64_t, Entry> entries;  // fast key -> entry

  std::mutex selMu;
  std::vector<Selection> selections;
  uint64_t selGen = 1;
  SelectionId nextId = 1;

  std::atomic<uint64_t> refused{0}, appendedTotal{0}, passes{0};
  std::atomic<double> lastPass{0}, passTotal{0};
  uint64_t pass = 0;

  std::mutex runMu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;

  // Caller holds mu exclusively. A refused series is counted once (`count`
  // is false when the caller knows it was refused before) and the first
  // refusal of the history's life is logged: the counter tells the rest.
  Series* newSeries(Labels ls, uint64_t inode, bool sampled, bool count = true) {
    if (series.size() >= opts.seriesLimit) {
      if (count && refused.fetch_add(1) == 0) {
        log::warn(
            "history series limit reached: new series are refused and counted in "
            "memcg_exporter_history_series_refused_total",
            "limit=" + std::to_string(opts.seriesLimit) +
                " first=" + log::quote(promql::labelsString(ls)));
      }
      return nullptr;
    }
    auto s = std::make_unique<Series>();
    s->hash = promql::hashLabels(ls);
    s->labels = std::move(ls);
    s->inode = inode;
    s->sampled = sampled;
    Series* p = s.get();
    byName[std::string(promql::labelValue(p->labels, promql::kMetricName))].push_back(p);
    series.push_back(std::move(s));
    return p;
  }

  void endSeries(Series* s, int64_t t) {
    if (s->ended) return;
    if (t > s->lastT) s->add(t, promql::staleNaN());
    s->ended = true;
  }

  void dropOld(int64_t now) {
    const int64_t cut = now - opts.retentionMs;
    size_t w = 0;
    for (size_t i = 0; i < series.size(); ++i) {
      Series* s = series[i].get();
      while (!s->chunks.empty() && s->chunks.front().maxT() < cut) {
        s->samples -= s->chunks.front().count();
        s->chunks.pop_front();
      }
      if (s->chunks.empty() && (s->ended || s->lastT < cut)) {
        auto& v = byName[std::string(promql::labelValue(s->labels, promql::kMetricName))];
        v.erase(std::find(v.begin(), v.end(), s));
        if (!s->sampled) {
          auto it = appended.find(s->hash);
          if (it != appended.end() && it->second == s) appended.erase(it);
        }
        for (auto& [k, e] : entries) {
          if (e.live == s) e.live = nullptr;
        }
        continue;  // freed below
      }
      if (w != i) std::swap(series[w], series[i]);
      ++w;
    }
    series.resize(w);
  }

  void gather(const std::vector<Matcher>& ms, int64_t mint, int64_t maxt,
              HistoryQuerier& q, std::vector<promql::SeriesView>& out) const {
    std::shared_lock lock(mu);
    const std::vector<Series*>* candidates = nullptr;
    std::vector<Series*> all;
    for (const auto& m : ms) {
      if (m.name() == promql::kMetricName && m.type() == promql::MatchType::kEqual) {
        auto it = byName.find(m.value());
        if (it == byName.end()) return;
        candidates = &it->second;
        break;
      }
    }
    if (!candidates) {
      all.reserve(series.size());
      for (const auto& s : series) all.push_back(s.get());
      candidates = &all;
    }
    // One view per label set: a recreated cgroup's series continue the old one's
    // label set after its staleness marker.
    std::unordered_map<uint64_t, size_t> byHash;
    std::vector<const Series*> hits;
    for (const Series* s : *candidates) {
      if (s->chunks.empty() || s->chunks.front().minT() > maxt || s->lastT < mint)
        continue;
      if (!matchesAll(ms, s->labels)) continue;
      hits.push_back(s);
    }
    std::sort(hits.begin(), hits.end(), [](const Series* a, const Series* b) {
      return a->chunks.front().minT() < b->chunks.front().minT();
    });
    for (const Series* s : hits) {
      auto [it, fresh] = byHash.try_emplace(s->hash, q.samples.size());
      if (fresh) {
        q.labels.push_back(s->labels);
        q.samples.emplace_back();
      }
      auto& dst = q.samples[it->second];
      for (const auto& c : s->chunks) {
        if (c.maxT() < mint || c.minT() > maxt) continue;
        size_t from = dst.size();
        if (!decodeChunk(c.bytes(), dst).ok()) {
          dst.resize(from);
          continue;
        }
        // Cut to [mint, maxt] and keep ascending across series.
        auto first = std::remove_if(dst.begin() + static_cast<long>(from), dst.end(),
                                    [&](const promql::Sample& x) {
                                      return x.t < mint || x.t > maxt ||
                                             (from > 0 && x.t <= dst[from - 1].t);
                                    });
        dst.erase(first, dst.end());
      }
    }
    for (const auto& [h, idx] : byHash) {
      if (q.samples[idx].empty()) continue;
      out.push_back({&q.labels[idx], q.samples[idx], true, h});
    }
    std::sort(out.end() - static_cast<long>(std::min(out.size(), byHash.size())),
              out.end(), [](const promql::SeriesView& a, const promql::SeriesView& b) {
                return promql::compareLabels(*a.labels, *b.labels) < 0;
              });
  }
};

History::History(Options opts, CollectFn collect) : opts_(std::move(opts)) {
  impl_ = std::make_unique<Impl>();
  impl_->opts = opts_;
  impl_->collect = std::move(collect);
}

Result<std::unique_ptr<History>> History::create(Options opts, CollectFn collect) {
  if (opts.intervalMs <= 0)
    return makeError(EINVAL, "--history.interval", "must be above 0");
  if (opts.retentionMs < opts.intervalMs)
    return makeError(EINVAL, "--history.retention",
                     "must be at least --history.interval");
  std::unique_ptr<History> h(new History(opts, std::move(collect)));
  for (const auto& m : opts.match) {
    auto r = h->select(m, 0);
    if (!r.ok()) return makeError(EINVAL, "--history.match", m + ": " + r.error().detail);
  }
  return h;
}

History::~History() { stop(); }

Result<SelectionId> History::select(std::vector<Matcher> matchers, int64_t intervalMs) {
  if (matchers.empty()) return makeError(EINVAL, "history select", "no matchers");
  if (intervalMs < 0) return makeError(EINVAL, "history select", "negative interval");
  for (const auto& m : matchers) {
    if (!m.error().empty()) return makeError(EINVAL, "history select", m.error());
  }
  const int64_t base = opts_.intervalMs;
  int64_t iv = intervalMs <= base ? base : (intervalMs + base - 1) / base * base;
  std::lock_guard g(impl_->selMu);
  SelectionId id = impl_->nextId++;
  impl_->selections.push_back({id, std::move(matchers), iv, 0});
  ++impl_->selGen;
  return id;
}

Result<SelectionId> History::select(std::string_view selector, int64_t intervalMs) {
  auto e = promql::parseExpr(selector);
  if (!e.ok()) return e.error();
  if ((*e)->kind != promql::NodeKind::kVectorSelector)
    return makeError(EINVAL, "history select",
                     "not a series selector: " + std::string(selector));
  auto* vs = static_cast<promql::VectorSelector*>(e->get());
  if (vs->offsetSet || vs->at.kind != promql::AtKind::kNone)
    return makeError(EINVAL, "history select",
                     "offset and @ do not apply to a selection");
  return select(vs->matchers, intervalMs);
}

void History::unselect(SelectionId id) {
  std::lock_guard g(impl_->selMu);
  auto& v = impl_->selections;
  v.erase(
      std::remove_if(v.begin(), v.end(), [id](const Selection& s) { return s.id == id; }),
      v.end());
  ++impl_->selGen;
}

bool History::append(const promql::Labels& labels, int64_t t, double v) {
  Impl& I = *impl_;
  std::unique_lock lock(I.mu);
  const uint64_t h = promql::hashLabels(labels);
  auto it = I.appended.find(h);
  Series* s = it == I.appended.end() ? nullptr : it->second;
  if (s && s->labels != labels) s = nullptr;  // a hash collision: not that series
  if (!s) {
    if (promql::isStaleNaN(v)) return false;
    const bool refusedBefore = I.refusedAppended.count(h) != 0;
    s = I.newSeries(labels, 0, false, !refusedBefore);
    if (!s) {
      if (!refusedBefore && I.refusedAppended.size() < Impl::kMaxRefusedKept)
        I.refusedAppended.insert(h);
      return false;
    }
    if (refusedBefore) I.refusedAppended.erase(h);
    I.appended[h] = s;
  }
  if (t <= s->lastT) return false;
  if (s->ended) {
    if (promql::isStaleNaN(v)) return false;
    s->ended = false;
  }
  s->add(t, v);
  if (promql::isStaleNaN(v)) s->ended = true;
  I.appendedTotal.fetch_add(1);
  return true;
}

void History::sampleOnce(int64_t now) {
  Impl& I = *impl_;
  const auto start = std::chrono::steady_clock::now();
  // The selections due now.
  std::vector<Selection> due;
  std::vector<uint32_t> dueSlots;
  uint64_t gen;
  size_t nsel;
  {
    std::lock_guard g(I.selMu);
    gen = I.selGen;
    nsel = I.selections.size();
    for (uint32_t i = 0; i < I.selections.size(); ++i) {
      auto& s = I.selections[i];
      if (s.nextDue > now) continue;
      s.nextDue = (now / s.intervalMs + 1) * s.intervalMs;
      due.push_back(s);
      dueSlots.push_back(i);
    }
  }
  std::vector<bool> isDue(nsel, false);
  for (auto i : dueSlots) isDue[i] = true;
  if (!due.empty() && I.collect) {
    // The filter: families any due selection's name matchers accept, cgroups
    // any due selection's cgroup matchers accept.
    ScrapeFilter filter;
    // A discovery walk costs as much as reading thousands of small files (on
    // a host with 10,000 cgroups ~0.8 s): the sampler reads over a tree up to
    // kMaxTreeAgeMs old and the walk scheduler walks when it is older (a
    // removed cgroup reads as gone at once).
    filter.maxTreeAgeMs = kMaxTreeAgeMs;
    filter.family = [&due](std::string_view name) {
      static constexpr std::string_view kSuffixes[] = {"", "_bucket", "_sum", "_count"};
      for (const auto& s : due) {
        bool ok = true;
        for (const auto& m : s.matchers) {
          if (m.name() != promql::kMetricName) continue;
          bool any = false;
          for (auto suf : kSuffixes) {
            if (m.matches(std::string(name) + std::string(suf))) any = true;
          }
          if (!any) ok = false;
        }
        if (ok) return true;
      }
      return false;
    };
    // Cgroups are filtered only when every due selection names a cgroup
    // matcher: otherwise every cgroup is read anyway, and a copy of the tree
    // with all of them would be wasted work.
    bool pinned = true;
    for (const auto& s : due) {
      bool has = false;
      for (const auto& m : s.matchers) has = has || m.name() == "cgroup";
      pinned = pinned && has;
    }
    if (pinned)
      filter.cgroup = [&due](std::string_view path) {
        for (const auto& s : due) {
          bool ok = true;
          for (const auto& m : s.matchers) {
            if (m.name() == "cgroup" && !m.matches(path)) ok = false;
          }
          if (ok) return true;
        }
        return false;
      };
    metrics::Sink sink;
    auto tree = I.collect(filter, sink);
    std::unordered_map<std::string_view, uint64_t> inodes;
    if (tree) {
      for (const auto& c : tree->cgroups)
        inodes.emplace(c.path, static_cast<uint64_t>(c.inode));
    }

    std::unique_lock lock(I.mu);
    const uint64_t pass = ++I.pass;
    auto emit = [&](const metrics::Desc& d, std::string_view name,
                    const metrics::LabelValues& lv, std::string_view extraName,
                    std::string_view extraValue, double v) {
      uint64_t key = fnv(14695981039346656037ull, name);
      for (size_t i = 0; i < d.labels.size() && i < metrics::kMaxLabels; ++i)
        key = fnv(key, lv[i]);
      key = fnv(key, extraValue);
      auto& e = I.entries[key];
      e.seenPass = pass;
      if (e.gen != gen) {
        Labels ls;
        ls.push_back({std::string(promql::kMetricName), std::string(name)});
        for (size_t i = 0; i < d.labels.size() && i < metrics::kMaxLabels; ++i)
          ls.push_back({d.labels[i], std::string(lv[i])});
        if (!extraName.empty())
          ls.push_back({std::string(extraName), std::string(extraValue)});
        ls = promql::makeLabels(std::move(ls));
        e.sels.clear();
        {
          std::lock_guard g(I.selMu);
          for (uint32_t i = 0; i < I.selections.size(); ++i) {
            if (matchesAll(I.selections[i].matchers, ls)) e.sels.push_back(i);
          }
        }
        e.gen = gen;
        if (e.live && e.live->labels != ls) e.live = nullptr;  // a key collision
        e.labels = e.sels.empty() ? Labels{} : std::move(ls);
      }
      if (e.sels.empty()) return;
      bool anyDue = false;
      for (auto i : e.sels) anyDue = anyDue || (i < isDue.size() && isDue[i]);
      if (!anyDue) return;
      uint64_t inode = 0;
      for (size_t i = 0; i < d.labels.size() && i < metrics::kMaxLabels; ++i) {
        if (d.labels[i] != "cgroup") continue;
        auto it = inodes.find(lv[i]);
        if (it != inodes.end()) inode = it->second;
      }
      if (e.live && e.live->inode != inode) {
        // The cgroup was recreated (a new inode): end the old series just
        // before this pass, and start a new one.
        I.endSeries(e.live, std::max(e.live->lastT + 1, now - 1));
        e.live = nullptr;
      }
      if (!e.live) {
        e.live = I.newSeries(e.labels, inode, true, !e.refused);
        if (!e.live) {
          e.refused = true;
          return;
        }
      }
      Series* s = e.live;
      s->sels = e.sels;
      if (now <= s->lastT) return;
      s->add(now, v);
      s->seenPass = pass;
      I.appendedTotal.fetch_add(1);
    };
    char le[32];
    for (const auto& f : sink.families()) {
      const metrics::Desc& d = *f.desc;
      for (const auto& smp : f.samples) emit(d, d.name, smp.values, {}, {}, smp.value);
      if (f.histograms.empty()) continue;
      const std::string bucket = d.name + "_bucket", sum = d.name + "_sum",
                        count = d.name + "_count";
      for (const auto& h : f.histograms) {
        emit(d, count, h.values, {}, {}, static_cast<double>(h.count));
        emit(d, sum, h.values, {}, {}, h.sum);
        for (size_t b = 0; b < d.buckets.size() && b < h.cumulative.size(); ++b) {
          int n = std::snprintf(le, sizeof le, "%.17g", d.buckets[b]);
          // Prometheus' le formatting: the shortest round-trip representation.
          for (int p = 1; p <= 17; ++p) {
            char t[32];
            int m = std::snprintf(t, sizeof t, "%.*g", p, d.buckets[b]);
            if (std::strtod(t, nullptr) == d.buckets[b]) {
              std::memcpy(le, t, static_cast<size_t>(m) + 1);
              n = m;
              break;
            }
          }
          emit(d, bucket, h.values, "le", std::string_view(le, static_cast<size_t>(n)),
               static_cast<double>(h.cumulative[b]));
        }
        emit(d, bucket, h.values, "le", "+Inf", static_cast<double>(h.count));
      }
    }
    // Staleness: a live sampled series a due selection covers, not seen now.
    for (auto& [k, e] : I.entries) {
      if (!e.live || e.live->seenPass == pass) continue;
      bool anyDue = false;
      for (auto i : e.live->sels) anyDue = anyDue || (i < isDue.size() && isDue[i]);
      if (!anyDue) continue;
      I.endSeries(e.live, now);
      e.live = nullptr;
    }
    for (auto it = I.entries.begin(); it != I.entries.end();) {
      if (!it->second.live && it->second.seenPass != pass)
        it = I.entries.erase(it);
      else
        ++it;
    }
    I.dropOld(now);
  } else {
    std::unique_lock lock(I.mu);
    I.dropOld(now);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  I.lastPass.store(secs);
  I.passTotal.store(I.passTotal.load() + secs);
  I.passes.fetch_add(1);
}

void History::start() {
  Impl& I = *impl_;
  std::lock_guard g(I.runMu);
  if (I.thread.joinable()) return;
  I.stop = false;
  I.thread = std::thread([this] {
    Impl& I = *impl_;
    const int64_t iv = opts_.intervalMs;
    std::unique_lock lk(I.runMu);
    while (!I.stop) {
      // Ticks on multiples of the interval: equal deltas compress to 1 bit.
      int64_t now = clock::wallMs();
      int64_t next = (now / iv + 1) * iv;
      I.cv.wait_for(lk, std::chrono::milliseconds(next - now), [&] { return I.stop; });
      if (I.stop) break;
      lk.unlock();
      sampleOnce(next);
      lk.lock();
    }
  });
}

void History::stop() {
  Impl& I = *impl_;
  {
    std::lock_guard g(I.runMu);
    I.stop = true;
  }
  I.cv.notify_all();
  if (I.thread.joinable()) I.thread.join();
}

std::unique_ptr<promql::Querier> History::querier(int64_t, int64_t) const {
  auto q = std::make_unique<HistoryQuerier>();
  const Impl* I = impl_.get();
  q->fn = [I](const std::vector<Matcher>& ms, int64_t mint, int64_t maxt,
              HistoryQuerier& qq, std::vector<promql::SeriesView>& out) {
    I->gather(ms, mint, maxt, qq, out);
  };
  return q;
}

std::vector<promql::Labels> History::series(
    const std::vector<std::vector<Matcher>>& matchers, int64_t mint, int64_t maxt) const {
  std::shared_lock lock(impl_->mu);
  std::set<uint64_t> seen;
  std::vector<Labels> out;
  for (const auto& s : impl_->series) {
    if (s->chunks.empty() || s->chunks.front().minT() > maxt || s->lastT < mint) continue;
    bool hit = matchers.empty();
    for (const auto& ms : matchers) hit = hit || matchesAll(ms, s->labels);
    if (hit && seen.insert(s->hash).second) out.push_back(s->labels);
  }
  std::sort(out.begin(), out.end(), [](const Labels& a, const Labels& b) {
    return promql::compareLabels(a, b) < 0;
  });
  return out;
}

std::vector<std::string> History::labelNames(
    const std::vector<std::vector<Matcher>>& matchers, int64_t mint, int64_t maxt) const {
  std::set<std::string> names;
  for (const auto& ls : series(matchers, mint, maxt))
    for (const auto& l : ls) names.insert(l.name);
  return {names.begin(), names.end()};
}

std::vector<std::string> History::labelValues(
    std::string_view name, const std::vector<std::vector<Matcher>>& matchers,
    int64_t mint, int64_t maxt) const {
  std::set<std::string> values;
  for (const auto& ls : series(matchers, mint, maxt)) {
    auto v = promql::labelValue(ls, name);
    if (!v.empty()) values.insert(std::string(v));
  }
  return {values.begin(), values.end()};
}

Stats History::stats() const {
  Stats st;
  {
    std::shared_lock lock(impl_->mu);
    st.series = impl_->series.size();
    for (const auto& s : impl_->series) {
      st.samples += s->samples;
      for (const auto& c : s->chunks) st.bytes += c.byteSize();
    }
  }
  st.refused = impl_->refused.load();
  st.appended = impl_->appendedTotal.load();
  st.lastPassSeconds = impl_->lastPass.load();
  st.passes = impl_->passes.load();
  st.passSecondsTotal = impl_->passTotal.load();
  return st;
}

void History::collectMetrics(metrics::Sink& sink) const {
  const Stats st = stats();
  sink.add(kSeries, {}, static_cast<double>(st.series));
  sink.add(kSamples, {}, static_cast<double>(st.samples));
  sink.add(kBytes, {}, static_cast<double>(st.bytes));
  sink.add(kRefused, {}, static_cast<double>(st.refused));
  sink.add(kAppended, {}, static_cast<double>(st.appended));
  sink.add(kPass, {}, st.lastPassSeconds);
  sink.add(kPassTotal, {}, st.passSecondsTotal);
  sink.add(kPasses, {}, static_cast<double>(st.passes));
}

std::vector<const metrics::Desc*> History::describeMetrics() {
  return {&kSeries,   &kSamples, &kBytes,     &kRefused,
          &kAppended, &kPass,    &kPassTotal, &kPasses};
}

}  // namespace memcg::history
