#include "collectors/taskstats/delay_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "collectors/taskstats/cgroup_delays.h"
#include "common/fd.h"
#include "common/file.h"
#include "common/parse.h"

namespace memcg::taskstats {
namespace {

std::string readComm(const std::string& procfs, uint32_t pid) {
  const std::string path = procfs + "/" + std::to_string(pid) + "/comm";
  auto text = readWholeFile(path);
  if (!text.ok()) return {};
  return std::string(trimRight(*text));
}

double seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

Result<DelayTable> readDelayTable(TaskstatsClient& client, const std::string& cgroup_dir,
                                  const DelayTableOptions& opts) {
  auto ids = readIdList(cgroup_dir + (opts.per_thread ? "/tasks" : "/cgroup.procs"));
  if (!ids.ok()) return ids.error();
  DelayTable t;
  t.cgroup = cgroup_dir;
  t.per_thread = opts.per_thread;
  t.listed = static_cast<uint32_t>(ids->size());
  std::sort(ids->begin(), ids->end());
  if (ids->size() > opts.max_rows) {
    ids->resize(opts.max_rows);
    t.truncated = true;
  }
  t.rows.reserve(ids->size());
  const IdKind kind = opts.per_thread ? IdKind::kPid : IdKind::kTgid;
  Status s = client.queryMany(*ids, kind, [&](uint32_t id, Result<TaskStats>&& r) {
    if (!r.ok()) {
      ++(r.error().err == ESRCH ? t.vanished : t.errors);
      return;
    }
    DelayTableRow row;
    row.pid = id;
    row.tgid = opts.per_thread ? r->ac_tgid : id;
    row.comm = opts.per_thread && !r->comm.empty() ? r->comm : readComm(opts.procfs, id);
    row.stats = std::move(r.value());
    t.rows.push_back(std::move(row));
  });
  if (!s.ok()) return s.error();
  return t;
}

nlohmann::json delayTableToJson(const DelayTable& t, const DelayAcctStatus* status) {
  nlohmann::json j;
  j["cgroup"] = t.cgroup;
  j["per_thread"] = t.per_thread;
  if (status) {
    j["delay_accounting"] = {{"known", status->known},
                             {"enabled", status->enabled},
                             {"enabled_by_exporter", status->enabled_by_exporter},
                             {"note", status->note}};
  }
  j["listed"] = t.listed;
  j["vanished"] = t.vanished;
  j["errors"] = t.errors;
  j["truncated"] = t.truncated;
  nlohmann::json tasks = nlohmann::json::array();
  for (const DelayTableRow& r : t.rows) {
    nlohmann::json d = nlohmann::json::object();
    for (const DelayClassInfo& c : kDelayClasses) {
      if (!r.stats.has(c.cls)) continue;
      const DelayCounter& v = r.stats[c.cls];
      nlohmann::json e = {
          {"count", v.count},
          {"total_seconds", seconds(v.total_ns)},
          {"average_seconds",
           v.count ? seconds(v.total_ns) / static_cast<double>(v.count) : 0.0},
      };
      if (r.stats.hasMax(c.cls)) e["max_seconds"] = seconds(v.max_ns);
      d[std::string(c.metric_name)] = std::move(e);
    }
    nlohmann::json row = {{"pid", r.pid}, {"tgid", r.tgid}, {"comm", r.comm}};
    row["cpu_run_real_seconds"] = seconds(r.stats.cpu_run_real_total_ns);
    row["cpu_run_virtual_seconds"] = seconds(r.stats.cpu_run_virtual_total_ns);
    row["delays"] = std::move(d);
    tasks.push_back(std::move(row));
  }
  j["tasks"] = std::move(tasks);
  return j;
}

}  // namespace memcg::taskstats
