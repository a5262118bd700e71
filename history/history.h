// The exporter's in-process history: a bounded, compressed, short store of
// the series that rules, the live view and --history.match select, sampled by
// one thread at a fixed interval through the SAME collectors as /metrics
// (Scraper::scrape with a ScrapeFilter: only the selected families' collectors
// and only the selected cgroups are read). It implements promql::Storage, so
// the PromQL engine and the /api/v1/query* routes (web/api/v1/history.h) read it.
//
// Storage: per series, Gorilla-style chunks (delta-of-delta timestamps, XOR
// floats; history/chunk.h), 120 samples a chunk, whole chunks dropped past the
// retention. A series is identified by its label set AND the cgroup's inode:
// a vanished cgroup's series get a staleness marker (Prometheus' StaleNaN) at
// the first pass that misses them; a recreated cgroup (new inode) starts a new
// series (queries see one label set whose samples restart after the marker).
// Past --history.series-limit new series are refused and counted.
//
// Thread safety: every public member may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectors/collector.h"
#include "common/flag_spec.h"
#include "common/result.h"
#include "metrics/metric.h"
#include "promql/storage.h"

namespace memcg::history {

/// The selection when no --history.match is given: each cgroup's usage, limit
/// and failcnt (what a dashboard of the fleet shows first).
inline constexpr std::string_view kDefaultMatch =
    R"({__name__=~"memcg_memory_(usage|limit)_bytes|memcg_memory_failcnt_total"})";

struct Options {
  int64_t retentionMs = 15 * 60 * 1000;  ///< --history.retention
  int64_t intervalMs = 1000;             ///< --history.interval (the base tick)
  size_t seriesLimit = 200'000;          ///< --history.series-limit
  /// --history.match selectors (PromQL series selectors), sampled every tick.
  std::vector<std::string> match = {std::string(kDefaultMatch)};
  bool matchGiven = false;  ///< the first --history.match replaces the default
  bool enable = true;       ///< --[no-]history.enable
  /// --query.timeout: the default and upper bound of the query API's ?timeout=
  /// (the evaluator gives up at it; web/api/v1/history.h).
  int64_t queryTimeoutMs = 2 * 60 * 1000;
  int64_t queryMaxSamples = 50'000'000;  ///< --query.max-samples
};

/// --history.* flags bound to `o`.
FlagList historyFlags(Options& o);

/// What the sampler reads through: one scrape of the /metrics collectors
/// restricted by `filter` (App binds it to Scraper::scrape). The returned tree
/// must outlive the sink's label values; its cgroups give the inodes.
using CollectFn = std::function<std::shared_ptr<const CgroupTree>(
    const ScrapeFilter& filter, metrics::Sink& sink)>;

/// A registered selection (History::select); unselect() with it to drop it.
using SelectionId = uint64_t;

struct Stats {
  size_t series = 0;           ///< live + ended series still in retention
  uint64_t samples = 0;        ///< samples held now
  uint64_t bytes = 0;          ///< chunk bytes held now (the compressed data)
  uint64_t refused = 0;        ///< series refused by the series limit, total
  uint64_t appended = 0;       ///< samples appended, total
  double lastPassSeconds = 0;  ///< the sampler's last pass
  uint64_t passes = 0;
  double passSecondsTotal = 0;
};

class History final : public promql::Storage {
 public:
  /// Errors: a --history.match selector that does not parse (Error::detail
  /// says which). Does not start the sampler.
  static Result<std::unique_ptr<History>> create(Options opts, CollectFn collect);
  ~History() override;

  /// Samples the series matching all of `matchers` every `intervalMs`
  /// (rounded up to a multiple of Options::intervalMs, at least one tick) from
  /// now on. For the rules (each rule's selectors, at its group's interval)
  /// and the live view. Errors: a matcher with a bad regex, no matchers, or
  /// intervalMs < 0 (0 = the base interval).
  Result<SelectionId> select(std::vector<promql::Matcher> matchers,
                             int64_t intervalMs = 0);
  /// Parses `selector` (e.g. `memcg_memory_failcnt{cgroup="/a"}`) and selects it.
  Result<SelectionId> select(std::string_view selector, int64_t intervalMs = 0);
  void unselect(SelectionId id);

  /// Appends a sample made outside the collectors (recording-rule results,
  /// ALERTS, ALERTS_FOR_STATE) with `t` in ms. Samples at or before the
  /// series' last timestamp are dropped (false); a new series past the limit
  /// is refused (false, counted). Use promql::staleNaN() to end a series.
  bool append(const promql::Labels& labels, int64_t t, double v);

  /// Starts / stops the sampler thread (stop() also runs in the destructor).
  void start();
  void stop();
  /// One sampler pass at `nowMs` (the thread calls this; tests call it directly).
  void sampleOnce(int64_t nowMs);

  std::unique_ptr<promql::Querier> querier(int64_t mint, int64_t maxt) const override;

  /// Every label name / the values of one label over series matching any of
  /// `matchers` sets (empty = all) with samples in [mint, maxt], sorted.
  std::vector<std::string> labelNames(
      const std::vector<std::vector<promql::Matcher>>& matchers, int64_t mint,
      int64_t maxt) const;
  std::vector<std::string> labelValues(
      std::string_view name, const std::vector<std::vector<promql::Matcher>>& matchers,
      int64_t mint, int64_t maxt) const;
  /// The label sets of series matching any of `matchers` sets (non-empty) in [mint,
  /// maxt].
  std::vector<promql::Labels> series(
      const std::vector<std::vector<promql::Matcher>>& matchers, int64_t mint,
      int64_t maxt) const;

  Stats stats() const;
  const Options& options() const { return opts_; }
  /// The history's own metrics (series, samples, bytes, refused, pass duration).
  void collectMetrics(metrics::Sink& sink) const;
  static std::vector<const metrics::Desc*> describeMetrics();

 private:
  struct Impl;
  History(Options opts, CollectFn collect);
  Options opts_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memcg::history
