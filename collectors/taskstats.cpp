// Delay accounting per cgroup: the getdelays view, continuous.
//
// Source: generic-netlink TASKSTATS (collectors/taskstats/), one query per
// process of each exported cgroup, summed per cgroup and kept monotonic across
// process exits. Per delay class the kernel reports (cpu, blkio, swapin,
// freepages = direct reclaim, thrashing, compact, wpcopy, irq):
//   memcg_delay_<class>_total{cgroup}           delays counted
//   memcg_delay_<class>_seconds_total{cgroup}   time delayed
//   memcg_delay_<class>_max_seconds{cgroup}     longest single delay (kernel >= 6.x with max)
// Most classes need kernel.task_delayacct=1 (off by default);
// --collector.taskstats.enable-delayacct switches it on at start (and back off
// at exit), and memcg_delay_accounting_enabled shows the state. Needs
// CAP_NET_ADMIN: without it the collector reports failure and logs why once.
// Off by default: it costs ~2 us per process per scrape.
//
// Processes no scrape saw alive (shorter than the scrape interval: builds,
// batch jobs, cron) are attributed from their exit record to the cgroup they
// were in:
//  - with tracing, by the running backend (the App hands the service the
//    tracefs Tracer or the BpfTracer as a tracing::PidCgroupLookup;
//    taskstatsExitLocator, collectors/taskstats_locator.h): the tracefs
//    backend's pid cache follows fork, exit and cgroup attach (every task
//    that reclaimed is in it); the bpf backend records each process's memcg
//    at its leader's sched_process_exit in a bounded map (tracing/bpf/
//    bpf_tracer.h). Retried for a few seconds while the trace reader catches
//    up, or while the exit record is ahead of sched_process_exit;
//  - without tracing (and for tasks the tracer does not know), by sampling:
//    between scrapes the listener thread reads the scraped cgroups'
//    cgroup.procs every second (no TASKSTATS queries), so a process that
//    lived at least ~1 s in a cgroup that was scraped before is attributed;
//    shorter ones are not. /proc/<pid>/cgroup at exit is no use: by the time
//    the record is read the kernel has detached the exiting task (v1 shows
//    "/"), so it would charge the root.
// memcg_delay_exits_located_total counts them.
#include <sys/stat.h>

#include <mutex>

#include "collectors/taskstats.h"

#include "collectors/collector.h"
#include "collectors/taskstats_locator.h"
#include "collectors/taskstats/cgroup_delays.h"
#include "collectors/taskstats/delay_table.h"
#include "collectors/taskstats/delayacct_sysctl.h"
#include "common/file.h"
#include "common/log.h"
#include "tracing/cgroup_resolver.h"

namespace memcg {
namespace {

using taskstats::kDelayClasses;

const metrics::Desc kEnabled = nodeGauge(
    "memcg_delay_accounting_enabled",
    "1 if kernel.task_delayacct is on (most delay classes are only counted then).");
const metrics::Desc kEnabledByUs = nodeGauge(
    "memcg_delay_accounting_enabled_by_exporter",
    "1 if this exporter switched kernel.task_delayacct on at start.");
const metrics::Desc kExitsFolded = nodeCounter(
    "memcg_delay_exits_folded_total",
    "Exited processes whose final delays were folded into their cgroup.");
const metrics::Desc kExitsLost = nodeCounter(
    "memcg_delay_exits_without_record_total",
    "Exited processes without an exit record (their last scraped delays are kept).");
const metrics::Desc kOverruns = nodeCounter(
    "memcg_delay_exit_listener_overruns_total",
    "Times the TASKSTATS exit listener's socket overflowed (exit records lost).");
const metrics::Desc kQueryOverruns = nodeCounter(
    "memcg_delay_query_overruns_total",
    "Times the TASKSTATS query socket's receive buffer overflowed (ENOBUFS); the lost "
    "replies were asked for again.");
const metrics::Desc kExitsLocated = nodeCounter(
    "memcg_delay_exits_located_total",
    "Exited processes no scrape saw alive, folded into the cgroup they were in (the vmscan "
    "backend's record of exits, or cgroup.procs sampled between scrapes).");
const metrics::Desc kListening = nodeGauge(
    "memcg_delay_exit_listener_up", "1 if the TASKSTATS exit listener is registered.");
const metrics::Desc kProcesses = cgroupGauge(
    "memcg_delay_processes", "Processes of the cgroup queried in the last scrape.");

struct ClassDescs {
  metrics::Desc count, total, max;
};

std::vector<ClassDescs> buildClassDescs() {
  std::vector<ClassDescs> out;
  for (const auto& c : kDelayClasses) {
    std::string base = "memcg_delay_" + std::string(c.metric_name);
    std::string what = std::string(c.help);
    out.push_back({cgroupCounter(base + "_total", "Delays of the cgroup's tasks " + what + " (taskstats " + std::string(c.kernel_name) + "_count)."),
                   cgroupCounter(base + "_seconds_total", "Time the cgroup's tasks spent " + what + " (taskstats " + std::string(c.kernel_name) + "_delay_total)."),
                   cgroupGauge(base + "_max_seconds", "Longest single delay " + what + " seen (taskstats " + std::string(c.kernel_name) + "_delay_max).")});
  }
  return out;
}

class TaskstatsCollector : public Collector {
 public:
  explicit TaskstatsCollector(TaskstatsService& service)
      : service_(service), classes_(buildClassDescs()) {}

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    const auto& status = service_.status();
    sink.add(kEnabled, {}, status.enabled ? 1 : 0);
    sink.add(kEnabledByUs, {}, status.enabled_by_exporter ? 1 : 0);
    auto* agg = service_.aggregator();
    if (!agg) {
      ctx.fail(*service_.down());
      return;
    }
    std::vector<std::string> dirs;
    dirs.reserve(ctx.tree.cgroups.size());
    for (const Cgroup& cg : ctx.tree.cgroups) {
      const std::string& dir = cg.dir->path();
      // cgroup.procs through the cgroup's kept directory descriptor (no path
      // walk, and a recreated cgroup never reads as the old one).
      auto d = agg->collect(dir, cg.inode, [&]() -> Result<std::vector<uint32_t>> {
        std::string_view content;
        Error err;
        switch (cg.dir->read(cgroupfs::FileId::kCgroupProcs, ctx.buf, content, &err)) {
          case cgroupfs::ReadStatus::kOk:
            return taskstats::parseIdList(content, dir + "/cgroup.procs");
          case cgroupfs::ReadStatus::kError:
            return err;
          case cgroupfs::ReadStatus::kAbsent:
          case cgroupfs::ReadStatus::kGone:
            break;
        }
        return makeError(ENOENT, dir + "/cgroup.procs");
      });
      if (!d.ok()) {
        if (d.error().gone()) {
          ++ctx.vanished;
        } else {
          ctx.fail(d.error());
        }
        continue;
      }
      dirs.push_back(dir);
      sink.add(kProcesses, {cg.path}, d->live_processes);
      for (size_t i = 0; i < kDelayClasses.size(); ++i) {
        auto c = kDelayClasses[i].cls;
        if (!d->has(c)) continue;
        const auto& v = (*d)[c];
        sink.add(classes_[i].count, {cg.path}, static_cast<double>(v.count));
        sink.add(classes_[i].total, {cg.path}, static_cast<double>(v.total_ns) / 1e9);
        if (d->hasMax(c)) sink.add(classes_[i].max, {cg.path}, static_cast<double>(v.max_ns) / 1e9);
      }
    }
    agg->retainOnly(dirs);
    auto st = agg->stats();
    sink.add(kExitsFolded, {}, static_cast<double>(st.exits_folded));
    sink.add(kExitsLost, {}, static_cast<double>(st.exits_without_record));
    sink.add(kExitsLocated, {}, static_cast<double>(st.exits_located));
    sink.add(kOverruns, {}, static_cast<double>(st.listener_overruns));
    sink.add(kQueryOverruns, {}, static_cast<double>(st.query_overruns));
    sink.add(kListening, {}, st.listening ? 1 : 0);
  }

  std::vector<const metrics::Desc*> describe() const override {
    std::vector<const metrics::Desc*> out = {
        &kEnabled,  &kEnabledByUs,   &kExitsFolded, &kExitsLost, &kExitsLocated,
        &kOverruns, &kQueryOverruns, &kListening,   &kProcesses};
    for (const auto& c : classes_) {
      out.push_back(&c.count);
      out.push_back(&c.total);
      out.push_back(&c.max);
    }
    return out;
  }

 private:
  TaskstatsService& service_;
  std::vector<ClassDescs> classes_;
};

}  // namespace

std::shared_ptr<tracing::CgroupResolver> procCgroupResolver(const std::string& procfs,
                                                           const MountLayout& layout) {
  int hierarchy = layout.mode == CgroupMode::kV2 ? 0 : -1;
  if (auto text = readWholeFile(procfs + "/cgroups"); text.ok()) {
    if (auto h = tracing::parseMemoryHierarchyId(*text)) hierarchy = *h;
  }
  if (hierarchy < 0) return nullptr;  // no memory controller: nothing to read
  return std::make_shared<tracing::ProcCgroupResolver>(procfs, hierarchy, layout.memoryRoot);
}

taskstats::DelayLedger::ExitLocator taskstatsExitLocator(
    const tracing::PidCgroupLookup* lookup, std::shared_ptr<tracing::CgroupResolver> ids) {
  if (!lookup) return {};
  return [lookup, ids](uint32_t tgid, bool) -> uint64_t {
    auto w = lookup->cgroupOf(static_cast<int32_t>(tgid));
    if (!w) return 0;
    if (w->id != 0) return w->id;
    return ids ? ids->idOf(w->cgroup) : 0;  // stat the directory
  };
}

FlagList taskstatsFlags(TaskstatsOptions& o) {
  return {switchFlag("collector.taskstats.enable-delayacct",
                     "Switch kernel.task_delayacct on at start (and off again at exit) for the "
                     "taskstats collector.",
                     o.enableDelayacct)};
}

TaskstatsService::TaskstatsService(const TaskstatsOptions& o, std::string procfs,
                                   const TaskstatsExitAttribution& exits)
    : procfs_(std::move(procfs)) {
  status_ = taskstats::ensureTaskDelayacct(o.enableDelayacct, procfs_);  // logs itself
  taskstats::CgroupDelayAggregator::Options opts;
  opts.locate_exit =
      taskstatsExitLocator(exits.lookup, procCgroupResolver(procfs_, exits.layout));
  auto agg = taskstats::CgroupDelayAggregator::create(std::move(opts));
  if (agg.ok()) {
    agg_ = std::move(*agg);
  } else {
    down_ = agg.error();
    log::warn("taskstats collector down", "err=" + log::quote(down_->message()));
  }
}

TaskstatsService::~TaskstatsService() {
  agg_.reset();
  // Leave the sysctl as we found it.
  if (status_.enabled_by_exporter) (void)taskstats::writeTaskDelayacct(false, procfs_);
}

Result<nlohmann::json> TaskstatsService::delayTable(const std::string& cgroupDir) {
  if (!agg_) return makeError(EPERM, cgroupDir, "taskstats is not available");
  auto table = agg_->withClient([&](taskstats::TaskstatsClient& client) {
    return taskstats::readDelayTable(client, cgroupDir, {});
  });
  if (!table.ok()) return table.error();
  return taskstats::delayTableToJson(*table, &status_);
}

std::unique_ptr<Collector> makeTaskstatsCollector(TaskstatsService& service) {
  return std::make_unique<TaskstatsCollector>(service);
}

}  // namespace memcg
