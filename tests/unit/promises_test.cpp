// Promises of the flags and the HTTP surface at their edges, each asserted
// where it could fail: the request-size limits at the byte (over a socket),
// the idle keep-alive close, ":port" answering on IPv4 and IPv6,
// --cgroup.include/exclude matching whole paths, --query.max-samples' 422,
// /-/ready before the first successful walk, and the journal replay at start
// with the controller off. No root: fixture and temp trees, loopback only.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "controller/journal.h"
#include "exporter/app.h"
#include "exporter/flags.h"
#include "web/http_server.h"
#include "web/routes.h"
#include "web/api/v1/history.h"
#include "history/history.h"
#include "tests/support/temp_tree.h"

namespace memcg {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t MiB = 1 << 20;

int connectTo(int family, int port) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int rc;
  if (family == AF_INET6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    a.sin6_addr = in6addr_loopback;
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool sendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

/// Reads one answer (head + Content-Length body); "" on EOF or timeout first.
std::string readAnswer(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t cl = in.find("Content-Length: ");
      size_t len = cl != std::string::npos && cl < end ? std::stoul(in.substr(cl + 16)) : 0;
      if (in.size() >= end + 4 + len) return in.substr(0, end + 4 + len);
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return in;
    in.append(buf, static_cast<size_t>(n));
  }
}

std::string statusLine(const std::string& answer) {
  return answer.substr(0, answer.find("\r\n"));
}
std::string bodyOf(const std::string& answer) {
  size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : answer.substr(end + 4);
}

/// One request on a new IPv4 connection; the answer's status line and body.
std::pair<std::string, std::string> ask(int port, const std::string& raw) {
  int fd = connectTo(AF_INET, port);
  if (fd < 0) return {"connect failed", ""};
  std::string got = sendAll(fd, raw) ? readAnswer(fd) : "send failed";
  ::close(fd);
  return {statusLine(got), bodyOf(got)};
}

/// A server whose one route echoes the request's body size and header count.
struct EchoServer {
  http::Routes routes;
  std::unique_ptr<HttpServer> server;
  explicit EchoServer(HttpServerOptions o = {}) {
    auto echo = [](const http::Request& req, http::Response& r) {
      r = http::Response{200, std::to_string(req.body.size()), "text/plain"};
    };
    routes.add({"GET", "/", echo});
    routes.add({"POST", "/", echo});
    if (o.listenAddress == ":9712") o.listenAddress = "127.0.0.1:0";
    server = std::make_unique<HttpServer>(o, routes);
  }
  int port() const { return server->port(); }
};

/// A GET whose request line + headers, up to and with the blank line, are
/// exactly `bytes` long.
std::string headOf(size_t bytes) {
  const std::string start = "GET / HTTP/1.1\r\nHost: t\r\nX-Pad: ";
  const std::string end = "\r\n\r\n";
  return start + std::string(bytes - start.size() - end.size(), 'a') + end;
}

TEST(RequestLimits, HeadOf16384BytesIsServedAnd16385Gets431) {
  EchoServer s;
  ASSERT_EQ(headOf(16384).size(), 16384u);
  EXPECT_EQ(ask(s.port(), headOf(16384)).first, "HTTP/1.1 200 OK");
  EXPECT_EQ(ask(s.port(), headOf(16385)).first,
            "HTTP/1.1 431 Request Header Fields Too Large");
}

TEST(RequestLimits, BodyOf65536BytesIsServedAnd65537Gets413) {
  EchoServer s;
  auto post = [](size_t n) {
    return "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n" +
           std::string(n, 'b');
  };
  auto ok = ask(s.port(), post(65536));
  EXPECT_EQ(ok.first, "HTTP/1.1 200 OK");
  EXPECT_EQ(ok.second, "65536");  // the whole body reached the handler
  EXPECT_EQ(ask(s.port(), post(65537)).first, "HTTP/1.1 413 Payload Too Large");
}

TEST(KeepAlive, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  HttpServerOptions o;
  o.idleTimeoutMs = 1000;
  EchoServer s(o);
  int fd = connectTo(AF_INET, s.port());
  ASSERT_GE(fd, 0);
  const std::string get = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_TRUE(sendAll(fd, get));
  EXPECT_EQ(statusLine(readAnswer(fd)), "HTTP/1.1 200 OK");
  // Kept alive: a second request on the same connection is answered.
  ASSERT_TRUE(sendAll(fd, get));
  EXPECT_EQ(statusLine(readAnswer(fd)), "HTTP/1.1 200 OK");
  // Then nothing: the server closes it. Not before half the timeout on our
  // clock (which starts after the server's), and within 10 s (a loaded
  // machine delays the close, it cannot hasten it).
  auto t0 = Clock::now();
  char c;
  ssize_t n = ::recv(fd, &c, 1, 0);  // SO_RCVTIMEO 10 s
  double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  EXPECT_EQ(n, 0) << "the idle connection was not closed within 10 s (errno " << errno << ")";
  EXPECT_GE(waited, 0.5);
}

TEST(Listen, AColonPortAnswersOnIPv4AndIPv6) {
  // ":9712" (the default) is ":port" with no host: one socket for both
  // families. Port 0 here, so that a running exporter does not matter.
  if (::access("/proc/net/if_inet6", R_OK) != 0) GTEST_SKIP() << "no IPv6 on this host";
  http::Routes routes;
  routes.add({"GET", "/", [](const http::Request&, http::Response& r) {
                r = http::Response{200, "x", "text/plain"};
              }});
  HttpServerOptions o;
  o.listenAddress = ":0";
  HttpServer server(o, routes);
  ASSERT_GT(server.port(), 0);
  for (int family : {AF_INET, AF_INET6}) {
    int fd = connectTo(family, server.port());
    ASSERT_GE(fd, 0) << (family == AF_INET ? "127.0.0.1" : "::1") << " refused";
    ASSERT_TRUE(sendAll(fd, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    EXPECT_EQ(statusLine(readAnswer(fd)), "HTTP/1.1 200 OK")
        << (family == AF_INET ? "127.0.0.1" : "::1");
    ::close(fd);
  }
}

// --- The App on fixture and temp trees ---------------------------------------------

Options appOptions(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"memcg_exporter", "--no-collector.vmscan",
                                   "--web.listen-address=127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parseFlags(static_cast<int>(argv.size()), argv.data());
}

http::Response getPath(const App& app, const std::string& path) {
  http::Request q;
  q.method = "GET";
  q.path = path;
  return http::dispatch(app.routes(), q);
}

std::vector<std::string> exportedCgroups(const App& app) {
  std::string body = getPath(app, "/metrics").body;
  std::vector<std::string> out;
  const std::string key = "memcg_memory_usage_bytes{cgroup=\"";
  for (size_t p = body.find(key); p != std::string::npos; p = body.find(key, p + 1)) {
    size_t b = p + key.size();
    out.push_back(body.substr(b, body.find('"', b) - b));
  }
  return out;
}

TEST(CgroupSelection, IncludeAndExcludeMatchWholePaths) {
  test::TempTree t;
  const std::string cg = "--path.cgroupfs=" + test::fixturePath("cgroupfs/v1");
  const std::string proc = "--path.procfs=" + test::fixturePath("procfs");
  const std::string journal = "--controller.journal=" + t.path("journal");
  {
    App app(appOptions({cg, proc, journal, "--cgroup.include=/web"}));
    EXPECT_EQ(exportedCgroups(app), std::vector<std::string>{"/web"})
        << "include /web must not export /web/frontend";
  }
  {
    App app(appOptions({cg, proc, journal, "--cgroup.exclude=/web"}));
    EXPECT_EQ(exportedCgroups(app),
              (std::vector<std::string>{"/", "/system.slice", "/web/frontend"}))
        << "exclude /web must keep /web/frontend";
  }
  {
    App app(appOptions({cg, proc, journal, "--cgroup.include=/we"}));
    EXPECT_TRUE(exportedCgroups(app).empty()) << "a prefix is not a match";
  }
}

TEST(Ready, Answers503UntilAWalkSucceeds) {
  // A v1 memory mount (as mountinfo says) whose directory is not there yet:
  // the first walk fails, so /-/ready must say 503; once the hierarchy is
  // there the walker's next pass makes it 200.
  test::TempTree t;
  t.copyFixture("procfs", "proc");
  t.write("proc/self/mountinfo",
          "34 30 0:31 / " + t.path("cg/memory") + " rw - cgroup cgroup rw,memory\n");
  t.mkdir("cg");
  App app(appOptions({"--path.cgroupfs=" + t.path("cg"), "--path.procfs=" + t.path("proc"),
                      "--controller.journal=" + t.path("journal"),
                      "--cgroup.refresh-interval-ms=100"}));
  EXPECT_EQ(getPath(app, "/-/ready").status, 503);
  EXPECT_EQ(getPath(app, "/-/healthy").status, 200);
  t.copyFixture("cgroupfs/v1/memory", "cg/memory");
  int status = 0;
  for (auto end = Clock::now() + std::chrono::seconds(30); Clock::now() < end;) {
    status = getPath(app, "/-/ready").status;
    if (status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200) << "the walker's pass after the hierarchy appeared";
}

TEST(JournalReplay, ALimitLeftLoweredIsRestoredAtStartWithTheControllerOff) {
  test::TempTree t;
  t.write("memory/a/memory.limit_in_bytes", std::to_string(128 * MiB) + "\n");
  t.write("memory/b/memory.limit_in_bytes", std::to_string(200 * MiB) + "\n");
  {
    auto j = controller::Journal::open(t.path("journal"));
    ASSERT_TRUE(j.ok()) << j.error().message();
    for (const char* name : {"a", "b"}) {
      struct stat st {};
      ASSERT_EQ(::stat(t.path(std::string("memory/") + name).c_str(), &st), 0);
      controller::JournalEntry e;
      e.cgroup = std::string("/") + name;
      e.dir = t.path(std::string("memory/") + name);
      e.inode = st.st_ino;
      e.original = 256 * MiB;
      e.lowered = 128 * MiB;  // b: changed by someone else since (200 MiB)
      ASSERT_TRUE((*j)->record(e).ok());
    }
  }
  App app(appOptions({"--path.cgroupfs=" + test::fixturePath("cgroupfs/v1"),
                      "--path.procfs=" + test::fixturePath("procfs"),
                      "--controller.journal=" + t.path("journal"),
                      "--controller.audit-log=" + t.path("audit.jsonl")}));
  EXPECT_EQ(app.controller(), nullptr);  // off
  EXPECT_EQ(t.read("memory/a/memory.limit_in_bytes"), std::to_string(256 * MiB));
  EXPECT_EQ(t.read("memory/b/memory.limit_in_bytes"), std::to_string(200 * MiB) + "\n")
      << "a limit someone else changed is left as is";
  auto j = controller::Journal::open(t.path("journal"));
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE((*j)->pending().empty());
  EXPECT_NE(t.read("audit.jsonl").find("journal_restore"), std::string::npos);
}

// --- --query.max-samples -------------------------------------------------------------

TEST(QueryMaxSamples, OneSampleOverTheLimitIs422AndAtTheLimitServed) {
  auto h = history::History::create(history::Options{},
                                    [](const ScrapeFilter&, metrics::Sink&) {
                                      return std::shared_ptr<const CgroupTree>(
                                          std::make_shared<CgroupTree>());
                                    });
  ASSERT_TRUE(h.ok()) << h.error().message();
  const int64_t t0 = 1'700'000'000'000;
  auto ls = promql::makeLabels({{"__name__", "m"}, {"cgroup", "/a"}});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*h)->append(ls, t0 + i * 1000, i));
  auto query = [&](int64_t maxSamples) {
    history::ApiOptions o;
    o.maxSamples = maxSamples;
    history::QueryApi api(**h, o);
    http::Routes routes;
    api.registerRoutes(routes);
    http::Request q;
    q.method = "GET";
    q.path = "/api/v1/query";
    // m[1m] at t0 + 9 s selects the 10 samples.
    q.query = "query=m%5B1m%5D&time=" + std::to_string((t0 + 9000) / 1000);
    return http::dispatch(routes, q);
  };
  auto at = query(10);
  EXPECT_EQ(at.status, 200) << at.body;
  auto j = nlohmann::json::parse(at.body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << at.body;
  EXPECT_EQ(j["data"]["result"][0]["values"].size(), 10u) << at.body;
  auto over = query(9);
  EXPECT_EQ(over.status, 422) << over.body;
  auto e = nlohmann::json::parse(over.body, nullptr, false);
  EXPECT_EQ(e.value("errorType", ""), "execution") << over.body;
  EXPECT_NE(over.body.find("too many samples"), std::string::npos) << over.body;
}

}  // namespace
}  // namespace memcg
