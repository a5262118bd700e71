#include "collectors/process.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <optional>
#include <vector>

#include "common/file.h"
#include "common/parse.h"

namespace memcg {
namespace {

// Names, types and help texts as client_golang's process collector has them,
// so dashboards and alerts written for any exporter work unchanged.
const metrics::Desc kCpu = metrics::nodeCounter("process_cpu_seconds_total",
                                                "Total user and system CPU time spent in seconds.");
const metrics::Desc kOpenFds =
    metrics::nodeGauge("process_open_fds", "Number of open file descriptors.");
const metrics::Desc kMaxFds =
    metrics::nodeGauge("process_max_fds", "Maximum number of open file descriptors.");
const metrics::Desc kVirtual =
    metrics::nodeGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
const metrics::Desc kVirtualMax = metrics::nodeGauge(
    "process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.");
const metrics::Desc kResident =
    metrics::nodeGauge("process_resident_memory_bytes", "Resident memory size in bytes.");
const metrics::Desc kStart = metrics::nodeGauge(
    "process_start_time_seconds", "Start time of the process since unix epoch in seconds.");

constexpr double kUnlimited = 18446744073709551615.0;  // RLIM_INFINITY as a float

Result<double> bootTime(const std::string& procRoot) {
  const std::string path = procRoot + "/stat";
  auto s = readWholeFile(path);
  if (!s.ok()) return s.error();
  std::string_view rest = *s, line;
  while (nextLine(rest, line)) {
    if (line.rfind("btime ", 0) != 0) continue;
    if (auto v = parseU64(trimRight(line.substr(6)))) return static_cast<double>(*v);
    break;
  }
  return makeError(EINVAL, path, "no btime line");
}

Result<double> countFds(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return makeError(errno, dir);
  double n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the descriptor opendir() holds while counting
}

class ProcessCollector final : public Collector {
 public:
  explicit ProcessCollector(std::string procRoot) : root_(std::move(procRoot)) {}

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    auto s = readProcessStats(root_);
    if (!s.ok()) {
      ctx.fail(s.error());
      return;
    }
    auto want = [&](const metrics::Desc& d) { return ctx.wants(d); };
    if (want(kCpu)) sink.add(kCpu, {}, s->cpuSeconds);
    if (want(kOpenFds)) sink.add(kOpenFds, {}, s->openFds);
    if (want(kMaxFds)) sink.add(kMaxFds, {}, s->maxFds);
    if (want(kVirtual)) sink.add(kVirtual, {}, s->virtualBytes);
    if (want(kVirtualMax)) sink.add(kVirtualMax, {}, s->virtualMaxBytes);
    if (want(kResident)) sink.add(kResident, {}, s->residentBytes);
    if (want(kStart)) sink.add(kStart, {}, s->startTimeSeconds);
  }

  std::vector<const metrics::Desc*> describe() const override {
    return {&kCpu, &kOpenFds, &kMaxFds, &kVirtual, &kVirtualMax, &kResident, &kStart};
  }

 private:
  std::string root_;
};

}  // namespace

Result<ProcessStats> parseProcessStat(std::string_view stat, double ticks, double page,
                                      double btime) {
  // "pid (comm) state ppid ...": comm may hold ") ", so split at the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return makeError(EINVAL, "stat", "no ')' after comm");
  std::string_view rest = stat.substr(close + 1), tok;
  // Fields after comm, 1-based as in proc(5) minus 2: state is field 3.
  std::vector<std::string_view> f;
  while (nextToken(rest, tok)) f.push_back(tok);
  // utime(14) stime(15) starttime(22) vsize(23) rss(24) -> indices 11 12 19 20 21
  if (f.size() < 22) return makeError(EINVAL, "stat", "too few fields");
  auto num = [&](size_t i) -> std::optional<double> {
    if (auto v = parseU64(f[i])) return static_cast<double>(*v);
    if (auto v = parseI64(f[i])) return static_cast<double>(*v);
    return std::nullopt;
  };
  auto ut = num(11), st = num(12), start = num(19), vsize = num(20), rss = num(21);
  if (!ut || !st || !start || !vsize || !rss)
    return makeError(EINVAL, "stat", "bad number in " + std::string(stat.substr(0, 80)));
  ProcessStats p;
  p.cpuSeconds = (*ut + *st) / ticks;
  p.startTimeSeconds = btime + *start / ticks;
  p.virtualBytes = *vsize;
  p.residentBytes = *rss * page;
  return p;
}

Result<double> parseSoftLimit(std::string_view limits, std::string_view row) {
  std::string_view rest = limits, line;
  while (nextLine(rest, line)) {
    if (line.rfind(row, 0) != 0) continue;
    std::string_view after = line.substr(row.size()), tok;
    if (!nextToken(after, tok)) break;
    if (tok == "unlimited") return kUnlimited;
    if (auto v = parseU64(tok)) return static_cast<double>(*v);
    break;
  }
  return makeError(EINVAL, "limits", "no \"" + std::string(row) + "\" row");
}

Result<ProcessStats> readProcessStats(const std::string& procRoot) {
  const std::string self = procRoot + "/self";
  auto stat = readWholeFile(self + "/stat");
  if (!stat.ok()) return stat.error();
  auto btime = bootTime(procRoot);
  if (!btime.ok()) return btime.error();
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  auto p = parseProcessStat(*stat, ticks, page, *btime);
  if (!p.ok()) return makeError(EINVAL, self + "/stat", p.error().detail);
  auto limits = readWholeFile(self + "/limits");
  if (!limits.ok()) return limits.error();
  auto maxFds = parseSoftLimit(*limits, "Max open files");
  auto maxAs = parseSoftLimit(*limits, "Max address space");
  if (!maxFds.ok() || !maxAs.ok())
    return makeError(EINVAL, self + "/limits",
                     (maxFds.ok() ? maxAs : maxFds).error().detail);
  p->maxFds = *maxFds;
  p->virtualMaxBytes = *maxAs;
  auto fds = countFds(self + "/fd");
  if (!fds.ok()) return fds.error();
  p->openFds = *fds;
  return p;
}

std::unique_ptr<Collector> makeProcessCollector(std::string procRoot) {
  return std::make_unique<ProcessCollector>(std::move(procRoot));
}

}  // namespace memcg
