// The exporter's metrics about itself: process_* (collectors/process.h) agree
// with what the kernel says of this very process, the HTTP server counts its
// refusals by reason and its queue waits, and a JSON log line is JSON.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/process.h"
#include "common/log.h"
#include "web/http_server.h"
#include "metrics/text_format.h"
#include "tests/support/loopback_http.h"

namespace memcg {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// name{labels} -> value, from a text exposition.
std::map<std::string, double> samples(const metrics::Sink& sink) {
  std::string text;
  metrics::writeText(sink.families(), text);
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

TEST(ProcessStat, ParsesFieldsAfterACommWithSpacesAndParentheses) {
  // Fields 3.. of proc(5): utime=250 stime=50 starttime=1000 vsize=4096000 rss=300.
  const std::string stat =
      "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 "
      "4096000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto p = parseProcessStat(stat, 100, 4096, 1'700'000'000);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_DOUBLE_EQ(p->cpuSeconds, 3.0);
  EXPECT_DOUBLE_EQ(p->startTimeSeconds, 1'700'000'010.0);
  EXPECT_DOUBLE_EQ(p->virtualBytes, 4096000);
  EXPECT_DOUBLE_EQ(p->residentBytes, 300.0 * 4096);
  EXPECT_FALSE(parseProcessStat("4242 (x) S 1 2 3", 100, 4096, 0).ok());
  EXPECT_FALSE(parseProcessStat("no comm here", 100, 4096, 0).ok());
}

TEST(ProcessStat, ParsesSoftLimits) {
  const std::string limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max address space         unlimited            unlimited            bytes     \n"
      "Max open files            1024                 524288               files     \n";
  EXPECT_DOUBLE_EQ(*parseSoftLimit(limits, "Max open files"), 1024);
  EXPECT_DOUBLE_EQ(*parseSoftLimit(limits, "Max address space"), 18446744073709551615.0);
  EXPECT_FALSE(parseSoftLimit(limits, "Max locked memory").ok());
}

TEST(ProcessStat, AgreesWithProcSelf) {
  auto ruCpu = [] {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
  };
  // Burn 0.3 s of CPU (not of wall time: the machine may be loaded) so the
  // figure is well above start-up noise.
  volatile double x = 0;
  while (ruCpu() < 0.3) {
    for (int i = 0; i < 100000; ++i) x = x + std::sqrt(x + 1);
  }

  const double cpuBefore = ruCpu();
  auto before = readProcessStats();
  const double cpuAfter = ruCpu();
  ASSERT_TRUE(before.ok()) << before.error().message();
  // Clock ticks (10 ms) against getrusage's finer accounting.
  EXPECT_GE(before->cpuSeconds, 0.25);
  EXPECT_GE(before->cpuSeconds, cpuBefore - 0.02);
  EXPECT_LE(before->cpuSeconds, cpuAfter + 0.02);

  rlimit nofile{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
  EXPECT_DOUBLE_EQ(before->maxFds, static_cast<double>(nofile.rlim_cur));
  rlimit as{};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &as), 0);
  EXPECT_DOUBLE_EQ(before->virtualMaxBytes, static_cast<double>(as.rlim_cur));

  // statm: size and resident pages.
  std::istringstream statm(slurp("/proc/self/statm"));
  double sizePages = 0, residentPages = 0;
  statm >> sizePages >> residentPages;
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  EXPECT_NEAR(before->virtualBytes, sizePages * page, 8 << 20);
  EXPECT_NEAR(before->residentBytes, residentPages * page, 4 << 20);
  EXPECT_GT(before->residentBytes, 1 << 20);

  // Started within the last 10 minutes (this test binary), not in the future.
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(before->startTimeSeconds, now + 1);
  EXPECT_GT(before->startTimeSeconds, now - 600);

  // Open descriptors: /proc/self/fd's entries, and 20 more after 20 open()s.
  size_t listed = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++listed;
  }
  listed -= 1;  // the iterator's own descriptor
  EXPECT_DOUBLE_EQ(before->openFds, static_cast<double>(listed));
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  auto after = readProcessStats();
  for (int fd : fds) ::close(fd);
  ASSERT_TRUE(after.ok());
  EXPECT_DOUBLE_EQ(after->openFds, before->openFds + 20);
}

TEST(ProcessCollector, ExportsClientGolangNames) {
  auto c = makeProcessCollector();
  CgroupTree tree;
  ScrapeContext ctx(tree);
  metrics::Sink sink;
  c->collect(ctx, sink);
  EXPECT_TRUE(ctx.errors.empty());
  auto s = samples(sink);
  for (const char* name :
       {"process_cpu_seconds_total", "process_open_fds", "process_max_fds",
        "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
        "process_resident_memory_bytes", "process_start_time_seconds"}) {
    EXPECT_TRUE(s.count(name)) << name;
  }
  EXPECT_EQ(c->describe().size(), 7u);
  // A procfs without self/ fails the collector, it does not throw.
  auto bad = makeProcessCollector("/nonexistent");
  ScrapeContext ctx2(tree);
  metrics::Sink sink2;
  bad->collect(ctx2, sink2);
  EXPECT_FALSE(ctx2.errors.empty());
}

int connectTo(int port) { return test::connectLoopback(port); }

/// Sends `req` on a new connection and returns the status line's code.
std::string status(int port, const std::string& req) {
  int fd = connectTo(port);
  if (fd < 0) return "connect failed";
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string in;
  char buf[4096];
  while (in.find("\r\n") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return in.size() >= 12 ? in.substr(9, 3) : "no answer: " + in;
}

TEST(HttpServerMetrics, CountsRefusalsByReasonAndQueueWaits) {
  http::Routes routes;
  routes.add({"GET", "/ok", [](const http::Request&, http::Response& r) {
                r.contentType = "text/plain";
                r.body = "ok";
              }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.threads = 1;
  o.maxHeadBytes = 1024;
  o.readTimeoutMs = 300;
  HttpServer server(o, routes);
  const int port = server.port();

  EXPECT_EQ(status(port, "GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"), "200");
  EXPECT_EQ(status(port, "GET /ok HTTP/1.1\r\nHost: t\r\nX: " + std::string(2000, 'a') +
                             "\r\n\r\n"),
            "431");
  EXPECT_EQ(status(port, "POST /ok HTTP/1.1\r\nHost: t\r\nContent-Length: 999999999\r\n\r\n"),
            "413");
  EXPECT_EQ(status(port, "GET /ok HTTP/1.1\r\nHost: t\r\n"), "408");  // head never ends
  EXPECT_EQ(status(port, "BAD\r\n\r\n"), "400");

  metrics::Sink sink;
  server.collect(sink);
  auto s = samples(sink);
  EXPECT_EQ(s["memcg_exporter_http_connections_accepted_total"], 5);
  EXPECT_EQ(s["memcg_exporter_http_requests_refused_total{code=\"431\",reason=\"head_too_large\"}"], 1);
  EXPECT_EQ(s["memcg_exporter_http_requests_refused_total{code=\"413\",reason=\"body_too_large\"}"], 1);
  EXPECT_EQ(s["memcg_exporter_http_requests_refused_total{code=\"408\",reason=\"head_timeout\"}"], 1);
  EXPECT_EQ(s["memcg_exporter_http_requests_refused_total{code=\"400\",reason=\"malformed\"}"], 1);
  EXPECT_EQ(s["memcg_exporter_http_requests_refused_total{code=\"503\",reason=\"queue_wait\"}"], 0);
  // Only the one complete request reached the queue.
  EXPECT_EQ(s["memcg_exporter_http_queue_wait_seconds_count"], 1);
  EXPECT_EQ(s["memcg_exporter_http_queue_wait_seconds_bucket{le=\"+Inf\"}"], 1);
  // Every connection was closed by now (the front thread may take a moment).
  for (int i = 0; i < 50 && s["memcg_exporter_http_connections_open"] != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    metrics::Sink again;
    server.collect(again);
    s = samples(again);
  }
  EXPECT_EQ(s["memcg_exporter_http_connections_open"], 0);
  EXPECT_EQ(HttpServer::describe().size(), 5u);
}

TEST(LogFormat, JsonLinesAreJsonWithEveryPair) {
  const std::string line = log::formatLine(
      log::Format::kJson, "2026-12-01T00:00:00.000Z", log::Level::kWarn, "say \"hi\"\n",
      "collector=vmscan err=" + log::quote("open \"/x\": no\ttab\\") + " msg=dup count=3");
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(j.is_object()) << line;
  EXPECT_EQ(j["ts"], "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["msg"], "say \"hi\"\n");
  EXPECT_EQ(j["collector"], "vmscan");
  EXPECT_EQ(j["err"], "open \"/x\": no\ttab\\");
  EXPECT_EQ(j["kv_msg"], "dup");
  EXPECT_EQ(j["count"], "3");
  const std::string logfmt = log::formatLine(log::Format::kLogfmt, "T", log::Level::kInfo, "m",
                                             "a=1");
  EXPECT_EQ(logfmt, "ts=T level=info msg=\"m\" a=1");
  log::Format f;
  EXPECT_TRUE(log::parseFormat("json", f));
  EXPECT_EQ(f, log::Format::kJson);
  EXPECT_FALSE(log::parseFormat("JSON", f));
}

}  // namespace
}  // namespace memcg
