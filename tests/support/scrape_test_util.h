// Scrapes a fixture tree in-process, for golden and behaviour tests.
#pragma once

#include <memory>
#include <regex>
#include <string>

#include "cgroupfs/discovery.h"
#include "collectors/registry.h"
#include "collectors/scraper.h"
#include "tests/support/temp_tree.h"

namespace memcg::test {

inline std::vector<EnabledCollector> allCollectors(const CollectorInputs& cfg) {
  std::vector<EnabledCollector> out;
  for (const auto& c : collectorRegistry()) {
    if (c.defaultEnabled && !c.live) out.push_back({std::string(c.name), c.make(cfg)});
  }
  return out;
}

inline DiscoveryOptions fixtureOptions(const std::string& cgroupfsRoot) {
  DiscoveryOptions o;
  o.cgroupfsRoot = cgroupfsRoot;
  o.procfsRoot = fixturePath("procfs");
  return o;
}

/// A Discovery and a Scraper with every default collector.
struct FixtureScrape {
  explicit FixtureScrape(const std::string& cgroupfsRoot, CollectorInputs cfg = {})
      : FixtureScrape(fixtureOptions(cgroupfsRoot), std::move(cfg)) {}
  FixtureScrape(const DiscoveryOptions& o, CollectorInputs cfg) {
    cfg.procfsRoot = o.procfsRoot;
    discovery = std::make_unique<Discovery>(o);
    walks = std::make_unique<WalkScheduler>(*discovery);
    scraper = std::make_unique<Scraper>(*walks, allCollectors(cfg));
  }
  std::string text() {
    std::string out;
    scraper->scrapeText(out);
    return out;
  }
  std::unique_ptr<Discovery> discovery;
  std::unique_ptr<WalkScheduler> walks;
  std::unique_ptr<Scraper> scraper;
};

/// Removes what changes from run to run: collector durations, the revision.
inline std::string normalize(const std::string& text) {
  static const std::regex kDuration("(memcg_exporter_collector_duration_seconds\\{[^}]*\\}) .*");
  static const std::regex kRevision("revision=\"[^\"]*\"");
  // Process-wide descriptor figures: they depend on what ran before.
  static const std::regex kFds(
      "\n(memcg_exporter_(fds_kept|fd_budget|file_reads_uncached_total)) [^\n]*");
  std::string s = std::regex_replace(text, kDuration, "$1 0");
  s = std::regex_replace(s, kFds, "\n$1 0");
  return std::regex_replace(s, kRevision, "revision=\"REV\"");
}

}  // namespace memcg::test
