#include "collectors/scraper.h"

#include <chrono>
#include <mutex>

#include "common/log.h"
#include "common/version.h"
#include "metrics/text_format.h"

namespace memcg {
namespace {

const metrics::Desc kSuccess = nodeGauge(
    "memcg_exporter_collector_success", "1 if the collector's last scrape succeeded, 0 if it failed.",
    {"collector"});
const metrics::Desc kDuration = nodeGauge("memcg_exporter_collector_duration_seconds",
                                          "Time the collector took in the last scrape.",
                                          {"collector"});
const metrics::Desc kErrors = nodeCounter(
    "memcg_exporter_scrape_errors_total",
    "Read or parse failures, by collector (each also logged with its path and line).",
    {"collector"});
const metrics::Desc kCgroups = nodeGauge("memcg_exporter_cgroups",
                                         "Cgroups exported in the last scrape.");
const metrics::Desc kDropped = nodeGauge(
    "memcg_exporter_cgroups_dropped",
    "Cgroups matching the filters but not exported because of --cgroup.limit (last scrape).");
const metrics::Desc kVanished = nodeCounter(
    "memcg_exporter_cgroups_vanished_total", "Cgroups removed while a scrape was reading them.");
const metrics::Desc kDiscovery = nodeGauge(
    "memcg_exporter_discovery_success", "1 if the last cgroup discovery walk succeeded.");
const metrics::Desc kMode = nodeGauge(
    "memcg_exporter_cgroup_mode_info",
    "The memory cgroup layout found: v1, v2, or hybrid (v1 memory with a cgroup2 tree for PSI).",
    {"mode"});
const metrics::Desc kFdsKept = nodeGauge(
    "memcg_exporter_fds_kept",
    "Descriptors kept open for cgroup directories and files (at most memcg_exporter_fd_budget).");
const metrics::Desc kFdBudget = nodeGauge(
    "memcg_exporter_fd_budget",
    "Descriptors cgroup directories and files may keep open (--cgroup.fd-budget).");
const metrics::Desc kUncached = nodeCounter(
    "memcg_exporter_file_reads_uncached_total",
    "Cgroup file reads that opened and closed the file because the descriptor budget was spent.");
const metrics::Desc kBuild = nodeGauge(
    "memcg_exporter_build_info", "Build information; always 1.", {"version", "revision"});

}  // namespace

struct Scraper::Stats {
  std::vector<std::atomic<uint64_t>> errors;
  std::mutex mu;
  std::vector<std::string> lastError;  // per collector, guarded by mu
  std::atomic<uint64_t> vanished{0};
  std::atomic<uint64_t> filesRead{0};
  std::atomic<uint64_t> discoveryFailures{0};
  explicit Stats(size_t n) : errors(n), lastError(n) {}

  /// True if this failure is not the one the collector logged last time
  /// (a collector that stays down, e.g. without tracefs, logs once).
  bool changed(size_t i, const std::string& first) {
    std::lock_guard<std::mutex> g(mu);
    if (lastError[i] == first) return false;
    lastError[i] = first;
    return true;
  }
};

Scraper::Scraper(WalkScheduler& walks, std::vector<EnabledCollector> collectors)
    : walks_(walks),
      discovery_(walks.discovery()),
      collectors_(std::move(collectors)),
      stats_(std::make_unique<Stats>(collectors_.size())) {}

Scraper::~Scraper() = default;

std::shared_ptr<const CgroupTree> Scraper::scrape(metrics::Sink& sink) {
  using Clock = std::chrono::steady_clock;
  // The last walk's tree while it is fresh (walk_scheduler.h: off the scrape path).
  auto treeOr = walks_.tree();
  std::shared_ptr<const CgroupTree> tree;
  if (treeOr.ok()) {
    tree = *treeOr;
    sink.add(kDiscovery, {}, 1);
  } else {
    log::error("cgroup discovery failed", "err=" + log::quote(treeOr.error().message()));
    sink.add(kDiscovery, {}, 0);
    tree = std::make_shared<const CgroupTree>(CgroupTree{discovery_.layout(), {}, 0, 0});
  }

  std::vector<std::pair<bool, double>> results(collectors_.size());
  for (size_t i = 0; i < collectors_.size(); ++i) {
    ScrapeContext ctx(*tree);
    auto start = Clock::now();
    collectors_[i].collector->collect(ctx, sink);
    stats_->filesRead.fetch_add(ctx.reads, std::memory_order_relaxed);
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    results[i] = {ctx.errors.empty(), secs};
    if (ctx.vanished) {
      stats_->vanished.fetch_add(ctx.vanished);
      log::debug("cgroups vanished mid-scrape", "collector=" + collectors_[i].name +
                                                     " count=" + std::to_string(ctx.vanished));
    }
    if (!ctx.errors.empty()) stats_->errors[i].fetch_add(ctx.errors.size());
    const std::string first = ctx.errors.empty() ? std::string() : ctx.errors.front().message();
    if (!stats_->changed(i, first)) {
      if (!first.empty()) log::debug("collector still failing", "collector=" + collectors_[i].name +
                                                " err=" + log::quote(first));
    } else if (!first.empty()) {
      // The first few, so a broken file cannot flood the log.
      for (size_t e = 0; e < ctx.errors.size() && e < 3; ++e) {
        log::error("collector failed", "collector=" + collectors_[i].name +
                                           " err=" + log::quote(ctx.errors[e].message()));
      }
      if (ctx.errors.size() > 3) {
        log::error("collector failed", "collector=" + collectors_[i].name + " more_errors=" +
                                           std::to_string(ctx.errors.size() - 3));
      }
    }
  }

  for (size_t i = 0; i < collectors_.size(); ++i) {
    if (collectors_[i].self) continue;
    const std::string& name = collectors_[i].name;
    sink.add(kSuccess, {name}, results[i].first ? 1 : 0);
    sink.add(kDuration, {name}, results[i].second);
    sink.add(kErrors, {name}, static_cast<double>(stats_->errors[i].load()));
  }
  sink.add(kCgroups, {}, static_cast<double>(tree->cgroups.size()));
  sink.add(kDropped, {}, static_cast<double>(tree->dropped));
  sink.add(kVanished, {}, static_cast<double>(stats_->vanished.load()));
  const cgroupfs::FdBudget& fds = discovery_.fdBudget();
  sink.add(kFdsKept, {}, static_cast<double>(fds.kept()));
  sink.add(kFdBudget, {}, static_cast<double>(fds.budget()));
  sink.add(kUncached, {}, static_cast<double>(fds.uncachedReads()));
  sink.add(kMode, {modeName(tree->layout.mode)}, 1);
  sink.add(kBuild, {kVersion, kRevision}, 1);
  return tree;
}

std::shared_ptr<const CgroupTree> Scraper::scrape(metrics::Sink& sink,
                                                  const ScrapeFilter& filter) {
  auto treeOr = walks_.within(std::chrono::milliseconds(filter.maxTreeAgeMs));
  if (!treeOr.ok()) return nullptr;
  std::shared_ptr<const CgroupTree> full = *treeOr;
  auto tree = full;
  if (filter.cgroup) {
    auto sub = std::make_shared<CgroupTree>();
    sub->layout = full->layout;
    sub->generation = full->generation;
    for (const auto& c : full->cgroups) {
      if (filter.cgroup(c.path)) sub->cgroups.push_back(c);
    }
    tree = std::move(sub);
  }
  for (size_t i = 0; i < collectors_.size(); ++i) {
    if (filter.family) {
      bool want = false;
      for (const auto* d : collectors_[i].collector->describe()) {
        if (filter.family(d->name)) {
          want = true;
          break;
        }
      }
      if (!want) continue;
    }
    ScrapeContext ctx(*tree, &filter);
    collectors_[i].collector->collect(ctx, sink);
    stats_->filesRead.fetch_add(ctx.reads, std::memory_order_relaxed);
    if (ctx.vanished) stats_->vanished.fetch_add(ctx.vanished);
    if (!ctx.errors.empty()) stats_->errors[i].fetch_add(ctx.errors.size());
  }
  return tree;
}

uint64_t Scraper::filesRead() const {
  return stats_->filesRead.load(std::memory_order_relaxed);
}

void Scraper::scrapeText(std::string& out) {
  metrics::Sink sink;
  auto keep = scrape(sink);
  metrics::writeText(sink.families(), out);
}

std::vector<const metrics::Desc*> Scraper::describe() const {
  std::vector<const metrics::Desc*> out;
  for (const auto& c : collectors_) {
    auto d = c.collector->describe();
    out.insert(out.end(), d.begin(), d.end());
  }
  for (const auto* d : {&kSuccess, &kDuration, &kErrors, &kCgroups, &kDropped, &kVanished,
                        &kDiscovery, &kFdsKept, &kFdBudget, &kUncached, &kMode, &kBuild}) {
    out.push_back(d);
  }
  return out;
}

}  // namespace memcg
