// Fixture cgroupfs trees for the controller tests, built in a TempTree
// (tests/support/temp_tree.h; oomd's util/Fixture.h pattern).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "metrics/metric.h"
#include "tests/support/temp_tree.h"

namespace memcg::controller::testing {

/// The one temp-tree helper (tests/support/temp_tree.h).
using TempTree = memcg::test::TempTree;

inline constexpr uint64_t MiB = 1ull << 20;

/// Polls `pred` every 2 ms until it holds or `timeout` (generous: a loaded
/// CI machine may stall a thread for seconds) has passed; the final answer.
/// Tests wait on a condition with this and then assert exact values, never
/// sleep a fixed time and assert.
inline bool waitUntil(const std::function<bool()>& pred,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

/// The sum of the samples of metric `name` (histograms: their counts) whose
/// label number `index` is `label` (all samples when `label` is empty).
inline double metricValue(const metrics::Sink& s, const std::string& name,
                          std::string_view label = {}, size_t index = 0) {
  double v = 0;
  for (const auto& f : s.families()) {
    if (f.desc->name != name) continue;
    for (const auto& smp : f.samples) {
      if (label.empty() || smp.values[index] == label) v += smp.value;
    }
    for (const auto& h : f.histograms) v += static_cast<double>(h.count);
  }
  return v;
}

/// A v1 tree: <root>/memory (the hierarchy root) with one child `name`.
inline void makeV1(const TempTree& t, const std::string& name, uint64_t limit, uint64_t usage,
                   uint64_t cache) {
  t.mkdir("memory");
  t.write("memory/cgroup.procs", "");
  t.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  t.write("memory/memory.usage_in_bytes", "0\n");
  t.mkdir("memory/" + name);
  std::string d = "memory/" + name + "/";
  t.write(d + "cgroup.procs", "");
  t.write(d + "memory.limit_in_bytes", std::to_string(limit) + "\n");
  t.write(d + "memory.usage_in_bytes", std::to_string(usage) + "\n");
  t.write(d + "memory.stat", "cache " + std::to_string(cache) + "\nrss 0\ntotal_inactive_file " +
                                 std::to_string(cache / 2) + "\ntotal_active_file " +
                                 std::to_string(cache - cache / 2) + "\ntotal_inactive_anon 0\n");
  t.write(d + "cgroup.event_control", "");
}

/// A v2 tree: <root> is the hierarchy root with one child `name`.
inline void makeV2(const TempTree& t, const std::string& name, uint64_t max, uint64_t current) {
  t.write("cgroup.controllers", "cpu io memory pids\n");
  t.write("cgroup.procs", "");
  t.mkdir(name);
  t.write(name + "/cgroup.procs", "");
  t.write(name + "/memory.max", max ? std::to_string(max) + "\n" : "max\n");
  t.write(name + "/memory.high", "max\n");
  t.write(name + "/memory.current", std::to_string(current) + "\n");
  t.write(name + "/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  t.write(name + "/memory.reclaim", "");
  t.write(name + "/memory.stat", "file " + std::to_string(current) + "\nanon 0\n");
}

}  // namespace memcg::controller::testing
