// Scrape cost at 1,000 cgroups, side by side in one run (issue 2):
//   - memcg_exporter over HTTP, plain and gzip-requested (median, p99, bytes,
//     series, exporter CPU per scrape, RSS);
//   - the floor: a minimal loop reading the same files through kept-open fds
//     with pread at offset 0;
//   - node_exporter with its defaults (Debian's prometheus-node-exporter);
//   - in-process exposition: prometheus-cpp's TextSerializer vs ours, and
//     gzip level 6 (the Exposer's) vs level 1.
//
// usage: scrape_bench path/to/memcg_exporter [cgroups=1000] [runs=40]
// Needs root and cgroup v1 memory. Creates memcg_exporter_bench_<pid>/cgNNNN
// and removes them on exit (also on SIGINT/SIGTERM).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/cgroupfs/cgroup_dir.h"
#include "collectors/cgroupfs/file_names.h"
#include "collectors/discovery.h"
#include "collectors/registry.h"
#include "exporter/http_server.h"
#include "exporter/scraper.h"
#include "metrics/text_format.h"

using namespace memcg;
using Clock = std::chrono::steady_clock;

namespace {

std::string gBase;
int gCount = 0;
std::vector<pid_t> gChildren;

void cleanup() {
  for (pid_t p : gChildren) ::kill(p, SIGTERM);
  for (pid_t p : gChildren) ::waitpid(p, nullptr, 0);
  gChildren.clear();
  if (gBase.empty()) return;
  char name[64];
  for (int i = 0; i < gCount; ++i) {
    std::snprintf(name, sizeof name, "/cg%04d", i);
    ::rmdir((gBase + name).c_str());
  }
  ::rmdir(gBase.c_str());
  gBase.clear();
}

void onSignal(int) {
  cleanup();
  _exit(1);
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * v.size())) - 1);
  return v[i];
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
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
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
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
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
  for (int i = 0; i < 100; ++i) {
    if (get(port, "/metrics", false).ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

double cpuSeconds(pid_t p) {
  std::ifstream f("/proc/" + std::to_string(p) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), {});
  size_t rp = s.rfind(')');
  std::istringstream in(s.substr(rp + 2));
  std::string tok;
  unsigned long long ut = 0, st = 0;
  for (int i = 3; i <= 15; ++i) {
    in >> tok;
    if (i == 14) ut = std::stoull(tok);
    if (i == 15) st = std::stoull(tok);
  }
  return static_cast<double>(ut + st) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long rssKiB(pid_t p, const char* key) {
  std::ifstream f("/proc/" + std::to_string(p) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
  }
  return -1;
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

struct Series {
  std::vector<double> ms;
  size_t bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s path/to/memcg_exporter [cgroups] [runs]\n", argv[0]);
    return 2;
  }
  const std::string exporter = argv[1];
  gCount = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 40;
  if (::geteuid() != 0 || ::access("/sys/fs/cgroup/memory/memory.stat", F_OK) != 0) {
    std::printf("scrape_bench: SKIPPED: needs root and cgroup v1 memory\n");
    return 0;
  }
  signal(SIGINT, onSignal);
  signal(SIGTERM, onSignal);
  std::atexit(cleanup);

  // 1,000 memcgs from this process (mkdir(2), no shell loop).
  gBase = "/sys/fs/cgroup/memory/memcg_exporter_bench_" + std::to_string(::getpid());
  ::mkdir(gBase.c_str(), 0755);
  char name[64];
  auto t0 = Clock::now();
  for (int i = 0; i < gCount; ++i) {
    std::snprintf(name, sizeof name, "/cg%04d", i);
    if (::mkdir((gBase + name).c_str(), 0755) != 0) {
      std::perror("mkdir");
      return 1;
    }
  }
  std::printf("created %d memcgs in %.0f ms\n", gCount, ms(Clock::now() - t0));
  const std::string label = gBase.substr(std::strlen("/sys/fs/cgroup/memory"));
  const std::string include = label + "(/.*)?";

  // --- memcg_exporter over HTTP, plain and gzip interleaved.
  int port = freePort();
  pid_t ex = spawn({exporter, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                    "--cgroup.include=" + include, "--cgroup.limit=100000", "--log.level=warn"});
  if (!waitUp(port)) {
    std::fprintf(stderr, "exporter did not come up\n");
    return 1;
  }
  Series plain, gz;
  std::string sample;
  for (int i = 0; i < 3; ++i) sample = get(port, "/metrics", false).body;  // warm up
  double cpu0 = cpuSeconds(ex);
  for (int i = 0; i < runs; ++i) {
    auto a = Clock::now();
    auto r = get(port, "/metrics", false);
    plain.ms.push_back(ms(Clock::now() - a));
    plain.bytes = r.body.size();
    a = Clock::now();
    r = get(port, "/metrics", true);
    gz.ms.push_back(ms(Clock::now() - a));
    gz.bytes = r.body.size();
  }
  double cpuPerScrape = (cpuSeconds(ex) - cpu0) / (2.0 * runs) * 1e3;
  long rss = rssKiB(ex, "VmRSS:"), hwm = rssKiB(ex, "VmHWM:");
  stopChild(ex);
  const size_t series = seriesOf(sample);
  size_t cgSeries = 0;
  {
    std::istringstream in(sample);
    std::string line;
    std::string needle = "cgroup=\"" + label + "/cg0000\"";
    while (std::getline(in, line)) {
      if (line.find(needle) != std::string::npos && line.find("cg0000/") == std::string::npos) {
        ++cgSeries;
      }
    }
  }

  // --- The floor: the same files, kept-open fds, pread at offset 0.
  std::vector<int> fds;
  using cgroupfs::FileId;
  const FileId files[] = {FileId::kMemoryStat,      FileId::kV1Usage,          FileId::kV1Limit,
                          FileId::kV1MaxUsage,      FileId::kV1SoftLimit,      FileId::kV1Failcnt,
                          FileId::kV1MemswUsage,    FileId::kV1MemswLimit,     FileId::kV1MemswMaxUsage,
                          FileId::kV1MemswFailcnt,  FileId::kV1KmemUsage,      FileId::kV1KmemLimit,
                          FileId::kV1KmemMaxUsage,  FileId::kV1KmemFailcnt,    FileId::kV1KmemTcpUsage,
                          FileId::kV1KmemTcpLimit,  FileId::kV1KmemTcpMaxUsage, FileId::kV1KmemTcpFailcnt,
                          FileId::kV1OomControl};
  for (int i = 0; i < gCount; ++i) {
    std::snprintf(name, sizeof name, "/cg%04d/", i);
    for (FileId f : files) {
      int fd = ::open((gBase + name + std::string(cgroupfs::fileName(f))).c_str(), O_RDONLY);
      if (fd >= 0) fds.push_back(fd);
    }
  }
  std::vector<double> floorMs;
  std::vector<char> buf(65536);
  for (int r = 0; r < runs; ++r) {
    auto a = Clock::now();
    for (int fd : fds) (void)!::pread(fd, buf.data(), buf.size(), 0);
    floorMs.push_back(ms(Clock::now() - a));
  }
  for (int fd : fds) ::close(fd);

  // --- node_exporter, defaults.
  double neMs = NAN;
  size_t neSeries = 0;
  if (::access("/usr/bin/prometheus-node-exporter", X_OK) == 0) {
    int nport = freePort();
    pid_t ne = spawn({"/usr/bin/prometheus-node-exporter",
                      "--web.listen-address=127.0.0.1:" + std::to_string(nport)});
    if (waitUp(nport)) {
      std::vector<double> v;
      std::string body;
      for (int i = 0; i < 3; ++i) body = get(nport, "/metrics", false).body;
      for (int i = 0; i < runs / 2; ++i) {
        auto a = Clock::now();
        body = get(nport, "/metrics", false).body;
        v.push_back(ms(Clock::now() - a));
      }
      neMs = pct(v, 0.5);
      neSeries = seriesOf(body);
    }
    stopChild(ne);
  }

  // --- In-process exposition of the same scrape: TextSerializer vs ours, gzip 6 vs 1.
  cgroupfs::CgroupDir::setFdBudget(cgroupfs::raiseFdLimit() - 1024);  // as the daemon does
  DiscoveryOptions o;
  o.include = include;
  o.limit = 100000;
  Discovery disc(o);
  // As the App does: tracing started before the collectors that read it.
  TracingService tracing = startTracing(tracerOptions(VmscanOptions{}, disc.layout(), "/proc"));
  CollectorInputs cfg;
  cfg.tracer = tracing.tracer.get();
  cfg.tracingDown = tracing.down;
  std::vector<EnabledCollector> cols;
  for (const auto& c : collectorRegistry()) {
    if (c.defaultEnabled) cols.push_back({std::string(c.name), c.make(cfg)});
  }
  Scraper scraper(disc, std::move(cols));
  metrics::Sink sink;
  auto keep = scraper.scrape(sink);
  std::vector<prometheus::MetricFamily> pf;
  for (const auto& f : sink.families()) pf.push_back(metrics::toPrometheus(f));
  std::vector<double> refMs, oursMs, collectMs, gz6Ms, gz1Ms, walkMs;
  std::string ours, zbuf;
  size_t gz6Bytes = 0, gz1Bytes = 0;
  for (int r = 0; r < std::max(5, runs / 4); ++r) {
    auto a = Clock::now();
    std::ostringstream s;
    prometheus::TextSerializer().Serialize(s, pf);
    refMs.push_back(ms(Clock::now() - a));
    a = Clock::now();
    ours.clear();
    metrics::writeText(sink.families(), ours);
    oursMs.push_back(ms(Clock::now() - a));
    a = Clock::now();
    gzipCompress(ours, 6, zbuf);
    gz6Ms.push_back(ms(Clock::now() - a));
    gz6Bytes = zbuf.size();
    a = Clock::now();
    gzipCompress(ours, 1, zbuf);
    gz1Ms.push_back(ms(Clock::now() - a));
    gz1Bytes = zbuf.size();
    a = Clock::now();
    (void)disc.refresh();
    walkMs.push_back(ms(Clock::now() - a));
    a = Clock::now();
    metrics::Sink s2;
    auto k2 = scraper.scrape(s2);
    collectMs.push_back(ms(Clock::now() - a));
  }
  const double samples = static_cast<double>(sink.sampleCount());

  // --- Table.
  const double floorMed = pct(floorMs, 0.5);
  const double plainMed = pct(plain.ms, 0.5), gzMed = pct(gz.ms, 0.5);
  const double oursPerSeries = plainMed * 1e3 / static_cast<double>(series);
  const double nePerSeries = neMs * 1e3 / static_cast<double>(neSeries);
  std::printf("\nscrape of %d cgroups, default field set, %d runs each (medians; one run, side by side)\n",
              gCount, runs);
  std::printf("  series: %zu total, %zu per cgroup; bytes: %zu plain, %zu gzip\n", series, cgSeries,
              plain.bytes, gz.bytes);
  std::printf("  %-38s %9s %9s %12s\n", "", "median ms", "p99 ms", "x floor");
  std::printf("  %-38s %9.2f %9.2f %12s\n", "floor (pread, kept-open fds)", floorMed,
              pct(floorMs, 0.99), "1.00");
  std::printf("  %-38s %9.2f %9.2f %12.2f\n", "memcg_exporter /metrics plain", plainMed,
              pct(plain.ms, 0.99), plainMed / floorMed);
  std::printf("  %-38s %9.2f %9.2f %12.2f\n", "memcg_exporter /metrics gzip-requested", gzMed,
              pct(gz.ms, 0.99), gzMed / floorMed);
  std::printf("  %-38s %9.2f %9s %12s\n", "  of which in-process scrape", pct(collectMs, 0.5), "", "");
  std::printf("  %-38s %9.2f %9s %12s\n", "    of which the discovery walk", pct(walkMs, 0.5), "", "");
  std::printf("  exporter CPU per scrape: %.2f ms; RSS %ld KiB (peak %ld KiB)\n", cpuPerScrape, rss,
              hwm);
  std::printf("  node_exporter defaults: %.2f ms for %zu series = %.2f us/series; memcg_exporter: "
              "%.3f us/series (%.1fx cheaper)\n",
              neMs, neSeries, nePerSeries, oursPerSeries, nePerSeries / oursPerSeries);
  std::printf("  exposition of %.0f samples: TextSerializer %.2f ms (%.3f us/sample), ours %.2f ms "
              "(%.3f us/sample), %.1fx\n",
              samples, pct(refMs, 0.5), pct(refMs, 0.5) * 1e3 / samples, pct(oursMs, 0.5),
              pct(oursMs, 0.5) * 1e3 / samples, pct(refMs, 0.5) / pct(oursMs, 0.5));
  std::printf("  gzip of %zu bytes: level 6 %.2f ms -> %zu bytes, level 1 %.2f ms -> %zu bytes (%.1fx "
              "faster, %+.0f%% bytes)\n",
              ours.size(), pct(gz6Ms, 0.5), gz6Bytes, pct(gz1Ms, 0.5), gz1Bytes,
              pct(gz6Ms, 0.5) / pct(gz1Ms, 0.5),
              100.0 * (static_cast<double>(gz1Bytes) / static_cast<double>(gz6Bytes) - 1));
  std::printf("\ntargets: plain <= 2.5x floor: %s (%.2fx); gzip <= 4x floor: %s (%.2fx); "
              "per-series >= 20x below node_exporter: %s (%.1fx); RSS < 30 MiB: %s (%.1f MiB)\n",
              plainMed <= 2.5 * floorMed ? "met" : "NOT met", plainMed / floorMed,
              gzMed <= 4 * floorMed ? "met" : "NOT met", gzMed / floorMed,
              nePerSeries / oursPerSeries >= 20 ? "met" : "NOT met", nePerSeries / oursPerSeries,
              rss < 30 * 1024 ? "met" : "NOT met", rss / 1024.0);
  cleanup();
  return 0;
}
