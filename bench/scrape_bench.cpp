// Scrape cost from 1,000 to 10,000 cgroups, side by side in one run:
//   - memcg_exporter over HTTP, plain and gzip-requested: wall and CPU per
//     scrape (the process's threads' schedstat, ns), series, bytes, RSS, and
//     the descriptors it keeps per cgroup;
//   - the floor: one loop pread()ing, through kept-open fds, the files of the
//     exporter's default set (README "Performance"), and the 8 files the
//     reclaim view needs, interleaved with the scrapes run by run;
//   - the discovery walk, in process (off the scrape path);
//   - node_exporter with its defaults (Debian's prometheus-node-exporter):
//     its cost per series.
// The exporter runs with its default collectors but vmscan (the tracer reads
// no cgroup file; its idle reader thread would blur the per-scrape CPU, and it
// would need a tracefs instance of its own), and without the history (its
// sampler reads usage, limit and failcnt every second on a thread of its
// own, which would land in some scrapes' CPU and not others).
//
// usage: scrape_bench path/to/memcg_exporter [counts=1000,10000] [runs=21]
// Needs root and cgroup v1 memory. Creates
// /sys/fs/cgroup/memory/memcg_exporter_test_scale_bench_<pid>_<count>/cgNNNNN
// (empty memcgs) and removes them after each count, on exit and on
// SIGINT/SIGTERM.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cgroupfs/cgroup_dir.h"
#include "cgroupfs/file_names.h"
#include "cgroupfs/discovery.h"

using namespace memcg;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kV1Root = "/sys/fs/cgroup/memory";

std::string gBase;
int gCount = 0;
std::vector<pid_t> gChildren;

void removeTree() {
  if (gBase.empty()) return;
  char name[64];
  int failed = 0;
  for (int i = 0; i < gCount; ++i) {
    std::snprintf(name, sizeof name, "/cg%05d", i);
    failed += ::rmdir((gBase + name).c_str()) != 0 && errno != ENOENT;
  }
  failed += ::rmdir(gBase.c_str()) != 0;
  if (failed) std::fprintf(stderr, "%s: %d rmdir failures\n", gBase.c_str(), failed);
  gBase.clear();
}

double threadCpuMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

void cleanup() {
  for (pid_t p : gChildren) ::kill(p, SIGTERM);
  for (pid_t p : gChildren) ::waitpid(p, nullptr, 0);
  gChildren.clear();
  removeTree();
}

void onSignal(int) {
  cleanup();
  _exit(1);
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Http {
  std::string body;
  bool ok = false;
};

Http get(int port, const std::string& path, bool gzip) {
  Http r;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != ECONNREFUSED) {  // (refused: waitUp() polling a server coming up)
      std::fprintf(stderr, "GET 127.0.0.1:%d%s: %s\n", port, path.c_str(), std::strerror(errno));
    }
    if (fd >= 0) ::close(fd);
    return r;
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                    (gzip ? "Accept-Encoding: gzip\r\n" : "") + "\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string resp;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) resp.append(buf, n);
  ::close(fd);
  size_t hdr = resp.find("\r\n\r\n");
  if (hdr == std::string::npos || resp.compare(0, 12, "HTTP/1.1 200") != 0) return r;
  r.body = resp.substr(hdr + 4);
  r.ok = true;
  return r;
}

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

pid_t spawn(std::vector<std::string> argv) {
  pid_t p = ::fork();
  if (p == 0) {
    // SCRAPE_BENCH_LOG=file keeps the children's output (debugging a run).
    const char* log = std::getenv("SCRAPE_BENCH_LOG");
    int out = log ? ::open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : ::open("/dev/null", O_WRONLY);
    ::dup2(out, 1);
    ::dup2(out, 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    _exit(127);
  }
  gChildren.push_back(p);
  return p;
}

void stopChild(pid_t p) {
  ::kill(p, SIGTERM);
  ::waitpid(p, nullptr, 0);
  std::erase(gChildren, p);
}

bool waitUp(int port) {
  for (int i = 0; i < 300; ++i) {
    if (get(port, "/metrics", false).ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

/// CPU time of all of a process's threads, ns (schedstat's first field).
double cpuNs(pid_t p) {
  const std::string dir = "/proc/" + std::to_string(p) + "/task";
  double total = 0;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return NAN;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/schedstat");
    double ns = 0;
    if (f >> ns) total += ns;
  }
  ::closedir(d);
  return total;
}

long statusKiB(pid_t p, const char* key) {
  std::ifstream f("/proc/" + std::to_string(p) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
  }
  return -1;
}

size_t fdCount(pid_t p) {
  size_t n = 0;
  DIR* d = ::opendir(("/proc/" + std::to_string(p) + "/fd").c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

size_t seriesOf(const std::string& text) {
  size_t n = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') ++n;
  }
  return n;
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

using cgroupfs::FileId;

/// The v1 files the exporter reads per cgroup by default (README
/// "Performance"): the reclaim view's and memory.oom_control; memsw.failcnt
/// only where swap accounting is on.
std::vector<FileId> defaultFiles(bool memsw) {
  std::vector<FileId> f = {FileId::kMemoryStat,  FileId::kV1Usage,     FileId::kV1Limit,
                           FileId::kV1MaxUsage,  FileId::kV1SoftLimit, FileId::kV1Failcnt,
                           FileId::kV1KmemFailcnt, FileId::kV1OomControl};
  if (memsw) f.push_back(FileId::kV1MemswFailcnt);
  return f;
}

/// The 8 files the reclaim view needs.
const std::vector<FileId> kReclaimView = {
    FileId::kMemoryStat, FileId::kV1Usage,       FileId::kV1Limit,        FileId::kV1MaxUsage,
    FileId::kV1Failcnt,  FileId::kV1SoftLimit,   FileId::kV1MemswFailcnt, FileId::kV1KmemFailcnt};

/// pread() at offset 0 through kept-open descriptors, timed; the files are
/// opened (and warmed by one untimed read) a chunk of cgroups at a time, so
/// 10,000 cgroups fit a process's RLIMIT_NOFILE (20,000 here).
struct Floor {
  std::string base;
  int count = 0;
  std::vector<FileId> files;
  int chunk = 1000;
  std::vector<char> buf = std::vector<char>(65536);

  /// The descriptor-capped floor: only the first `keptFiles` files (in
  /// cgroup-major order) are read through kept-open descriptors, the rest
  /// are openat()ed below their cgroup's kept directory, read and closed, as
  /// the exporter must past its --cgroup.fd-budget. -1: all kept.
  long keptFiles = -1;

  double cpuMs = 0;  ///< CPU of the last pass's timed reads
  double pass() {
    double total = 0;
    cpuMs = 0;
    std::vector<int> fds;
    std::vector<std::pair<int, const char*>> transient;  // (dir fd, name)
    std::vector<int> dirs;
    char name[64];
    long g = 0;
    for (int c0 = 0; c0 < count; c0 += chunk) {
      fds.clear();
      transient.clear();
      dirs.clear();
      for (int i = c0; i < std::min(count, c0 + chunk); ++i) {
        std::snprintf(name, sizeof name, "/cg%05d/", i);
        int dir = -1;
        for (FileId f : files) {
          if (keptFiles >= 0 && g++ >= keptFiles) {
            if (dir < 0) {
              dir = ::open((base + name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
              dirs.push_back(dir);
            }
            transient.emplace_back(dir, cgroupfs::fileName(f).data());
            continue;
          }
          int fd = ::open((base + name + std::string(cgroupfs::fileName(f))).c_str(),
                          O_RDONLY | O_CLOEXEC);
          if (fd >= 0) fds.push_back(fd);
        }
      }
      for (int fd : fds) (void)!::pread(fd, buf.data(), buf.size(), 0);
      auto a = Clock::now();
      const double c = threadCpuMs();
      for (int fd : fds) (void)!::pread(fd, buf.data(), buf.size(), 0);
      for (auto [dir, file] : transient) {
        int fd = ::openat(dir, file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        (void)!::pread(fd, buf.data(), buf.size(), 0);
        ::close(fd);
      }
      cpuMs += threadCpuMs() - c;
      total += ms(Clock::now() - a);
      for (int fd : fds) ::close(fd);
      for (int fd : dirs) ::close(fd);
    }
    return total;
  }
};

/// A gauge or counter of the exposition without labels (NAN when absent).
double valueOf(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  size_t p = text.find(key);
  if (p == std::string::npos) return NAN;
  return std::strtod(text.c_str() + p + key.size(), nullptr);
}

struct Row {
  int cgroups = 0;
  size_t filesPerCgroup = 0;
  double floorMs = NAN, floor8Ms = NAN, floorCpuMs = NAN, floor8CpuMs = NAN;
  double cappedMs = NAN, cappedCpuMs = NAN;  ///< the floor under the exporter's fd budget
  long fdBudget = -1, keptFiles = -1;
  double uncachedPerScrape = NAN;
  double plainMs = NAN, plainCpuMs = NAN, gzMs = NAN, gzCpuMs = NAN;
  double walkMs = NAN;
  size_t series = 0, perCgroup = 0, bytes = 0, gzBytes = 0;
  double fdsPerCgroup = 0;
  long rssKiB = 0, hwmKiB = 0;
  int errors = 0;
  bool ok = false;
};

Row measure(const std::string& exporter, int count, int runs) {
  Row row;
  row.cgroups = count;
  gCount = count;
  gBase = std::string(kV1Root) + "/memcg_exporter_test_scale_bench_" +
          std::to_string(::getpid()) + "_" + std::to_string(count);
  if (::mkdir(gBase.c_str(), 0755) != 0) {
    std::perror(("mkdir " + gBase).c_str());
    gBase.clear();
    return row;
  }
  char name[64];
  auto t0 = Clock::now();
  for (int i = 0; i < count; ++i) {
    std::snprintf(name, sizeof name, "/cg%05d", i);
    if (::mkdir((gBase + name).c_str(), 0755) != 0) {
      std::perror("mkdir");
      gCount = i;
      removeTree();
      return row;
    }
  }
  std::fprintf(stderr, "created %d memcgs in %.0f ms\n", count, ms(Clock::now() - t0));
  const std::string label = gBase.substr(std::strlen(kV1Root));
  const std::string include = label + "(/.*)?";
  const bool memsw =
      ::access((std::string(kV1Root) + "/memory.memsw.usage_in_bytes").c_str(), F_OK) == 0;

  int port = freePort();
  pid_t ex = spawn({exporter, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                    "--cgroup.include=" + include, "--cgroup.limit=" + std::to_string(count + 100),
                    "--no-collector.vmscan", "--no-history.enable", "--log.level=warn"});
  if (!waitUp(port)) {
    std::fprintf(stderr, "exporter did not come up\n");
    stopChild(ex);
    removeTree();
    return row;
  }
  std::string sample;
  for (int i = 0; i < 3; ++i) sample = get(port, "/metrics", false).body;  // warm up, open fds
  (void)get(port, "/metrics", true);

  const auto files = defaultFiles(memsw);
  Floor floor{gBase, count, files};
  Floor floor8{gBase, count, kReclaimView};
  row.filesPerCgroup = files.size();
  // The exporter's descriptors after its warm-up: directories (one per
  // cgroup, always kept) and the files its budget left room for.
  const double kept = valueOf(sample, "memcg_exporter_fds_kept");
  row.fdBudget = static_cast<long>(valueOf(sample, "memcg_exporter_fd_budget"));
  Floor capped{gBase, count, files};
  capped.keptFiles = std::max(0L, static_cast<long>(kept) - count - 1);  // - dirs, - the parent
  if (capped.keptFiles >= static_cast<long>(count * files.size())) capped.keptFiles = -1;
  row.keptFiles = capped.keptFiles;
  const double uncached0 = valueOf(sample, "memcg_exporter_file_reads_uncached_total");

  std::vector<double> floorMs, floorCpu, floor8Ms, floor8Cpu, plainMs, plainCpu, gzMs, gzCpu;
  std::vector<double> cappedMs, cappedCpu;
  for (int r = 0; r < runs; ++r) {
    // Interleaved run by run, so load drift hits all alike.
    floorMs.push_back(floor.pass());
    floorCpu.push_back(floor.cpuMs);
    floor8Ms.push_back(floor8.pass());
    floor8Cpu.push_back(floor8.cpuMs);
    if (capped.keptFiles >= 0) {
      cappedMs.push_back(capped.pass());
      cappedCpu.push_back(capped.cpuMs);
    }
    for (bool gz : {false, true}) {
      double c0 = cpuNs(ex);
      auto a = Clock::now();
      auto res = get(port, "/metrics", gz);
      double wall = ms(Clock::now() - a);
      double cpu = (cpuNs(ex) - c0) / 1e6;
      if (!res.ok) ++row.errors;
      (gz ? gzMs : plainMs).push_back(wall);
      (gz ? gzCpu : plainCpu).push_back(cpu);
      (gz ? row.gzBytes : row.bytes) = res.body.size();
      if (!gz && res.ok) sample = std::move(res.body);
    }
  }
  // Per scrape: the last plain scrape's counter less the warm-up's, over
  // the 2 * runs scrapes between them (1 + plain and gzip each run).
  row.uncachedPerScrape =
      (valueOf(sample, "memcg_exporter_file_reads_uncached_total") - uncached0) / (2.0 * runs);
  row.rssKiB = statusKiB(ex, "VmRSS:");
  row.hwmKiB = statusKiB(ex, "VmHWM:");
  row.fdsPerCgroup = static_cast<double>(fdCount(ex)) / count;
  stopChild(ex);

  row.series = seriesOf(sample);
  row.perCgroup = countOf(sample, "{cgroup=\"" + label + "/cg00000\"") +
                  countOf(sample, "{cgroup=\"" + label + "/cg00000\",");
  // A collector that failed its last scrape counts as an error too.
  for (size_t p = sample.find("memcg_exporter_collector_success{"); p != std::string::npos;
       p = sample.find("memcg_exporter_collector_success{", p + 1)) {
    size_t e = sample.find('\n', p);
    if (sample.compare(e - 2, 2, " 0") == 0) ++row.errors;
  }

  // The discovery walk, in process (the exporter does it every
  // --cgroup.refresh-interval-ms, off the scrape path).
  {
    DiscoveryOptions o;
    o.include = include;
    o.limit = static_cast<size_t>(count) + 100;
    Discovery disc(o);
    std::vector<double> w;
    for (int r = 0; r < std::max(5, runs / 2); ++r) {
      auto a = Clock::now();
      auto t = disc.refresh();
      w.push_back(ms(Clock::now() - a));
      if (!t.ok()) ++row.errors;
    }
    row.walkMs = median(w);
  }

  row.floorMs = median(floorMs);
  row.floor8Ms = median(floor8Ms);
  row.floorCpuMs = median(floorCpu);
  row.floor8CpuMs = median(floor8Cpu);
  row.cappedMs = capped.keptFiles >= 0 ? median(cappedMs) : row.floorMs;
  row.cappedCpuMs = capped.keptFiles >= 0 ? median(cappedCpu) : row.floorCpuMs;
  row.plainMs = median(plainMs);
  row.plainCpuMs = median(plainCpu);
  row.gzMs = median(gzMs);
  row.gzCpuMs = median(gzCpu);
  row.ok = true;
  auto r0 = Clock::now();
  removeTree();
  std::fprintf(stderr, "removed them in %.0f ms\n", ms(Clock::now() - r0));
  return row;
}

struct NodeExporter {
  double ms = NAN, cpuMs = NAN;
  size_t series = 0;
};

NodeExporter nodeExporter(int runs) {
  NodeExporter out;
  if (::access("/usr/bin/prometheus-node-exporter", X_OK) != 0) return out;
  int port = freePort();
  pid_t ne = spawn({"/usr/bin/prometheus-node-exporter",
                    "--web.listen-address=127.0.0.1:" + std::to_string(port)});
  if (waitUp(port)) {
    std::vector<double> v;
    std::string body;
    for (int i = 0; i < 3; ++i) body = get(port, "/metrics", false).body;
    std::vector<double> cpu;
    for (int i = 0; i < runs; ++i) {
      double c0 = cpuNs(ne);
      auto a = Clock::now();
      body = get(port, "/metrics", false).body;
      v.push_back(ms(Clock::now() - a));
      cpu.push_back((cpuNs(ne) - c0) / 1e6);
    }
    out.ms = median(v);
    out.cpuMs = median(cpu);
    out.series = seriesOf(body);
  }
  stopChild(ne);
  return out;
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s path/to/memcg_exporter [counts=1000,10000] [runs=21]\n",
                 argv[0]);
    return 2;
  }
  const std::string exporter = argv[1];
  std::vector<int> counts;
  {
    std::istringstream in(argc > 2 ? argv[2] : "1000,10000");
    std::string tok;
    while (std::getline(in, tok, ',')) counts.push_back(std::atoi(tok.c_str()));
  }
  const int runs = argc > 3 ? std::atoi(argv[3]) : 21;
  if (::geteuid() != 0 || ::access((std::string(kV1Root) + "/memory.stat").c_str(), F_OK) != 0) {
    std::printf("scrape_bench: SKIPPED: needs root and cgroup v1 memory\n");
    return 77;
  }
  signal(SIGINT, onSignal);
  signal(SIGTERM, onSignal);
  std::atexit(cleanup);
  // The floors keep ~21 descriptors per cgroup open (210,000 at 10,000).
  const long fdLimit = cgroupfs::raiseFdLimit();
  std::fprintf(stderr, "RLIMIT_NOFILE %ld\n", fdLimit);

  const std::string loadBefore = loadavg();
  std::vector<Row> rows;
  for (int c : counts) rows.push_back(measure(exporter, c, runs));
  const NodeExporter ne = nodeExporter(runs);
  const std::string loadAfter = loadavg();

  std::printf("\nscrape_bench: empty v1 memcgs, default collectors but vmscan, %d runs each, "
              "medians; exporter, floor and floor-8 interleaved run by run\n",
              runs);
  std::printf("loadavg before: %s; after: %s; %ld CPUs\n", loadBefore.c_str(), loadAfter.c_str(),
              ::sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("\n| | %s |\n|---|", [&] {
    std::string h;
    for (const auto& r : rows) h += (h.empty() ? "" : " | ") + std::to_string(r.cgroups) + " cgroups";
    return h;
  }().c_str());
  for (size_t i = 0; i < rows.size(); ++i) std::printf("---|");
  std::printf("\n");
  auto line = [&](const std::string& what, auto fmt) {
    std::printf("| %s |", what.c_str());
    for (const auto& r : rows) std::printf(" %s |", r.ok ? fmt(r).c_str() : "failed");
    std::printf("\n");
  };
  auto f2 = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return std::string(b);
  };
  line("files read per cgroup (default set)", [](const Row& r) { return std::to_string(r.filesPerCgroup); });
  line("exporter fds kept per cgroup (RLIMIT_NOFILE " + std::to_string(fdLimit) + ")", [&](const Row& r) { return f2(r.fdsPerCgroup); });
  line("exporter fd budget / files kept open (-1: all)", [](const Row& r) {
    return std::to_string(r.fdBudget) + " / " + std::to_string(r.keptFiles);
  });
  line("exporter uncached reads (open, read, close) per scrape", [&](const Row& r) { return f2(r.uncachedPerScrape); });
  line("floor: pread of the default set, wall ms", [&](const Row& r) { return f2(r.floorMs); });
  line("floor: pread of the default set, CPU ms", [&](const Row& r) { return f2(r.floorCpuMs); });
  line("floor under the fd budget (kept pread + openat/pread/close past it), wall ms", [&](const Row& r) { return f2(r.cappedMs); });
  line("floor under the fd budget, CPU ms", [&](const Row& r) { return f2(r.cappedCpuMs); });
  line("floor: pread of the reclaim view's 8 files, wall ms", [&](const Row& r) { return f2(r.floor8Ms); });
  line("floor: pread of the reclaim view's 8 files, CPU ms", [&](const Row& r) { return f2(r.floor8CpuMs); });
  line("scrape wall, plain, ms", [&](const Row& r) { return f2(r.plainMs); });
  line("scrape CPU, plain, ms", [&](const Row& r) { return f2(r.plainCpuMs); });
  line("scrape wall, gzip, ms", [&](const Row& r) { return f2(r.gzMs); });
  line("scrape CPU, gzip, ms", [&](const Row& r) { return f2(r.gzCpuMs); });
  line("plain wall / floor", [&](const Row& r) { return f2(r.plainMs / r.floorMs); });
  line("plain CPU / floor CPU", [&](const Row& r) { return f2(r.plainCpuMs / r.floorCpuMs); });
  line("gzip CPU / floor CPU", [&](const Row& r) { return f2(r.gzCpuMs / r.floorCpuMs); });
  line("gzip wall / floor", [&](const Row& r) { return f2(r.gzMs / r.floorMs); });
  line("plain CPU / floor CPU under the fd budget", [&](const Row& r) { return f2(r.plainCpuMs / r.cappedCpuMs); });
  line("plain wall / floor of the 8 files", [&](const Row& r) { return f2(r.plainMs / r.floor8Ms); });
  line("plain CPU / floor CPU of the 8 files", [&](const Row& r) { return f2(r.plainCpuMs / r.floor8CpuMs); });
  line("discovery walk (every 5 s, off the scrape path), ms", [&](const Row& r) { return f2(r.walkMs); });
  line("series (per cgroup)", [](const Row& r) {
    return std::to_string(r.series) + " (" + std::to_string(r.perCgroup) + ")";
  });
  line("bytes plain / gzip", [](const Row& r) {
    return std::to_string(r.bytes) + " / " + std::to_string(r.gzBytes);
  });
  line("us per series (plain wall)", [&](const Row& r) { return f2(r.plainMs * 1e3 / r.series); });
  line("us per series (plain CPU)", [&](const Row& r) { return f2(r.plainCpuMs * 1e3 / r.series); });
  line("RSS MiB (peak)", [&](const Row& r) {
    return f2(r.rssKiB / 1024.0) + " (" + f2(r.hwmKiB / 1024.0) + ")";
  });
  line("scrape errors", [](const Row& r) { return std::to_string(r.errors); });
  const double nePer = ne.ms * 1e3 / static_cast<double>(ne.series);
  const double neCpuPer = ne.cpuMs * 1e3 / static_cast<double>(ne.series);
  std::printf("\nnode_exporter (defaults): wall %.2f ms, CPU %.2f ms for %zu series = %.2f us/series "
              "wall, %.2f us/series CPU\n",
              ne.ms, ne.cpuMs, ne.series, nePer, neCpuPer);

  // Targets: CPU per series and scrape CPU against the read floor.
  std::printf("\ntargets:\n");
  const Row* r1 = nullptr;
  const Row* r10 = nullptr;
  for (const auto& r : rows) {
    if (r.cgroups == 1000 && r.ok) r1 = &r;
    if (r.cgroups == 10000 && r.ok) r10 = &r;
  }
  auto verdict = [](bool b) { return b ? "met" : "NOT met"; };
  if (r1) {
    const double ratio = r1->plainMs / r1->floorMs;
    const double cpuRatio = r1->plainCpuMs / r1->floorCpuMs;
    const double per = r1->plainMs * 1e3 / r1->series;
    std::printf("  1,000: plain scrape <= 1.3x the floor of its files: wall %s (%.2fx), CPU %s (%.2fx)\n",
                verdict(ratio <= 1.3), ratio, verdict(cpuRatio <= 1.3), cpuRatio);
    const double cpuPer = r1->plainCpuMs * 1e3 / r1->series;
    std::printf("  1,000: >= 20x cheaper per series than node_exporter: wall %s (%.1fx), CPU %s (%.1fx)\n",
                verdict(nePer / per >= 20), nePer / per, verdict(neCpuPer / cpuPer >= 20),
                neCpuPer / cpuPer);
    std::printf("  1,000: RSS <= 30 MiB: %s (%.1f MiB)\n", verdict(r1->rssKiB <= 30 * 1024),
                r1->rssKiB / 1024.0);
  }
  if (r1 && r10) {
    const double a = r1->plainMs / r1->floorMs, b = r10->plainMs / r10->floorMs;
    std::printf("  10,000: wall ratio to floor within 10%% of 1,000's: %s (%.2fx vs %.2fx, %+.0f%%)\n",
                verdict(std::fabs(b / a - 1) <= 0.10), b, a, 100 * (b / a - 1));
    const double ca = r1->plainCpuMs / r1->floorCpuMs, cb = r10->plainCpuMs / r10->floorCpuMs;
    std::printf("  10,000: CPU ratio to floor within 10%% of 1,000's: %s (%.2fx vs %.2fx, %+.0f%%)\n",
                verdict(std::fabs(cb / ca - 1) <= 0.10), cb, ca, 100 * (cb / ca - 1));
    const double pa = r1->plainCpuMs / r1->cappedCpuMs, pb = r10->plainCpuMs / r10->cappedCpuMs;
    std::printf("  10,000: CPU ratio to the floor under the fd budget within 10%% of 1,000's: %s "
                "(%.2fx vs %.2fx, %+.0f%%)\n",
                verdict(std::fabs(pb / pa - 1) <= 0.10), pb, pa, 100 * (pb / pa - 1));
    std::printf("  10,000: RSS <= 120 MiB: %s (%.1f MiB)\n", verdict(r10->rssKiB <= 120 * 1024),
                r10->rssKiB / 1024.0);
    std::printf("  10,000: no scrape error: %s (%d)\n", verdict(r10->errors == 0), r10->errors);
  }
  cleanup();
  return 0;
}
