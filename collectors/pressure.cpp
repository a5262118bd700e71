// Memory pressure stall information (PSI), nested keyed:
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=6789
// total= is cumulative microseconds; exported in seconds with node_exporter's
// names (some = waiting, full = stalled). The kernel's avg* are not exported:
// rate() over the totals gives any window. Node-wide from /proc/pressure/memory
// (absent when PSI is off: CONFIG_PSI=n or psi=0), per cgroup from
// memory.pressure (v2, and on hybrid hosts the cgroup2 directory of the same
// path, which has it even without the memory controller). Kernel >= 4.20.
#include "cgroupfs/readers.h"
#include "collectors/collector.h"
#include "common/log.h"

namespace memcg {
namespace {

using cgroupfs::FileId;
using cgroupfs::ReadStatus;

const metrics::Desc kNodeWaiting = nodeCounter(
    "memcg_node_pressure_memory_waiting_seconds_total",
    "Time some tasks were stalled on memory, node-wide (/proc/pressure/memory some total).");
const metrics::Desc kNodeStalled = nodeCounter(
    "memcg_node_pressure_memory_stalled_seconds_total",
    "Time all non-idle tasks were stalled on memory, node-wide (/proc/pressure/memory full total).");
const metrics::Desc kWaiting = cgroupCounter(
    "memcg_pressure_memory_waiting_seconds_total",
    "Time some tasks of the cgroup were stalled on memory (memory.pressure some total).");
const metrics::Desc kStalled = cgroupCounter(
    "memcg_pressure_memory_stalled_seconds_total",
    "Time all non-idle tasks of the cgroup were stalled on memory (memory.pressure full total).");

struct Totals {
  std::optional<double> some, full;
};

Status parsePressure(std::string_view content, std::string_view path, Totals& t) {
  return cgroupfs::parseNestedKeyed(content, path, [&](std::string_view line, std::string_view k,
                                                       std::string_view v) {
    if (k != "total") return;
    auto us = parseU64(v);
    if (!us) return;
    (line == "some" ? t.some : t.full) = static_cast<double>(*us) / 1e6;
  });
}

class PressureCollector : public Collector {
 public:
  explicit PressureCollector(const std::string& procfs)
      : nodePath_(procfs + "/" + std::string(cgroupfs::kProcPressureMemory)) {}

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    std::string_view content;
    Error err;
    // Each file only when the scrape wants one of its families (the history's filter).
    const bool node = ctx.wants(kNodeWaiting) || ctx.wants(kNodeStalled);
    const bool cgroups = ctx.wants(kWaiting) || ctx.wants(kStalled);
    switch (node ? cgroupfs::readFile(nodePath_, ctx.buf, content, &err)
                 : ReadStatus::kAbsent) {
      case ReadStatus::kOk: {
        Totals t;
        Status st = parsePressure(content, nodePath_, t);
        if (!st.ok()) {
          ctx.fail(st.error());
        } else {
          if (t.some) sink.add(kNodeWaiting, {}, *t.some);
          if (t.full) sink.add(kNodeStalled, {}, *t.full);
        }
        break;
      }
      case ReadStatus::kError: ctx.fail(err); break;
      default: break;  // PSI not available: nothing to export
    }
    for (const Cgroup& cg : ctx.tree.cgroups) {
      if (!cgroups) break;
      if (!cg.psiDir) continue;
      if (ctx.read(*cg.psiDir, FileId::kMemoryPressure, content) != ReadStatus::kOk) continue;
      Totals t;
      Status st = parsePressure(content, cg.psiDir->path() + "/memory.pressure", t);
      if (!st.ok()) {
        ctx.fail(st.error());
        continue;
      }
      if (t.some) sink.add(kWaiting, {cg.path}, *t.some);
      if (t.full) sink.add(kStalled, {cg.path}, *t.full);
    }
  }

  std::vector<const metrics::Desc*> describe() const override {
    return {&kNodeWaiting, &kNodeStalled, &kWaiting, &kStalled};
  }

 private:
  std::string nodePath_;
};

}  // namespace

std::unique_ptr<Collector> makePressureCollector(const std::string& procfs) {
  return std::make_unique<PressureCollector>(procfs);
}

}  // namespace memcg
