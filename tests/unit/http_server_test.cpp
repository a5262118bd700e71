// The HTTP server (exporter/http_server.h) on loopback: concurrent
// keep-alive clients each get their own whole answers, a slow client never
// holds a worker, and requests beyond the workers wait queueWaitMs, then 503.
#include "exporter/http_server.h"
#include "exporter/web_config.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace memcg {
namespace {

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends `req` and reads one answer (head + Content-Length body).
std::string roundTrip(int fd, const std::string& req) {
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    return "send failed";
  std::string in;
  char buf[4096];
  for (;;) {
    size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t cl = in.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) {
        size_t len = std::stoul(in.substr(cl + 16));
        if (in.size() >= end + 4 + len) return in.substr(0, end + 4 + len);
      }
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return in.empty() ? "recv failed" : in;
    in.append(buf, static_cast<size_t>(n));
  }
}

std::string get(const std::string& path, bool close = false) {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + (close ? "Connection: close\r\n" : "") +
         "\r\n";
}

TEST(HttpServer, ConcurrentKeepAliveClientsGetTheirOwnAnswers) {
  http::Routes routes;
  routes.add({"GET", "/echo", [](const http::Request& req, http::Response& r) {
                r.contentType = "text/plain";
                r.body = "q=" + req.param("q") + "\n" + std::string(10000, 'x');
              }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.threads = 4;
  HttpServer server(o, routes);
  ASSERT_GT(server.port(), 0);
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      int fd = connectTo(server.port());
      if (fd < 0) return;
      for (int i = 0; i < 25; ++i) {
        std::string want = "q=" + std::to_string(c) + "-" + std::to_string(i) + "\n";
        std::string got = roundTrip(fd, get("/echo?q=" + std::to_string(c) + "-" +
                                            std::to_string(i)));
        if (got.starts_with("HTTP/1.1 200 OK") && got.find("\r\n\r\n" + want) != std::string::npos)
          ++good;
      }
      ::close(fd);
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 8 * 25);
}

// README: "a handler that throws answers 500 with a JSON error; the exporter
// stays up". Over HTTP, on the server's own worker threads: a std::exception
// and a non-std throw, on a keep-alive connection and on fresh ones, then
// other routes still answer.
TEST(HttpServer, AThrowingHandlerAnswers500AndTheServerStaysUp) {
  http::Routes routes;
  std::atomic<int> thrown{0};
  routes.add({"GET", "/test/throw", [&](const http::Request& req, http::Response& r) {
                r.body = "half-written";  // must not leak into the 500
                ++thrown;
                if (req.param("kind") == "int") throw 42;
                throw std::runtime_error("boom");
              }});
  routes.add({"GET", "/ok", [](const http::Request&, http::Response& r) {
                r.contentType = "text/plain";
                r.body = "ok";
              }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.threads = 2;
  HttpServer server(o, routes);
  ASSERT_GT(server.port(), 0);
  auto body = [](const std::string& answer) {
    size_t end = answer.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : answer.substr(end + 4);
  };
  auto expect500 = [&](const std::string& answer) {
    EXPECT_EQ(answer.rfind("HTTP/1.1 500 ", 0), 0u) << answer;
    EXPECT_NE(answer.find("Content-Type: application/json"), std::string::npos) << answer;
    auto j = nlohmann::json::parse(body(answer), nullptr, false);
    ASSERT_TRUE(j.is_object()) << answer;
    ASSERT_TRUE(j.contains("error")) << answer;
    EXPECT_TRUE(j["error"].is_string());
    EXPECT_EQ(body(answer).find("half-written"), std::string::npos);
  };
  int fd = connectTo(server.port());
  ASSERT_GE(fd, 0);
  expect500(roundTrip(fd, get("/test/throw")));
  expect500(roundTrip(fd, get("/test/throw?kind=int")));
  std::string ok = roundTrip(fd, get("/ok"));  // the same connection goes on
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 ", 0), 0u) << ok;
  EXPECT_EQ(body(ok), "ok");
  ::close(fd);
  for (int i = 0; i < 20; ++i) {  // more throws than workers, fresh connections
    int c = connectTo(server.port());
    ASSERT_GE(c, 0);
    expect500(roundTrip(c, get(i % 2 ? "/test/throw?kind=int" : "/test/throw", true)));
    ::close(c);
  }
  EXPECT_EQ(thrown.load(), 22);
  int c = connectTo(server.port());
  ASSERT_GE(c, 0);
  ok = roundTrip(c, get("/ok", true));
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 ", 0), 0u) << ok;
  ::close(c);
}

TEST(HttpServer, SlowClientsDoNotHoldTheOneWorker) {
  http::Routes routes;
  routes.add({"GET", "/ok", [](const http::Request&, http::Response& r) { r.body = "{}"; }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.threads = 1;
  // A slow client holding the worker would hold it until this read timeout:
  // the bound below is half of it, not a guess at how fast a loaded machine is.
  o.readTimeoutMs = 60000;
  HttpServer server(o, routes);
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) {
    int fd = connectTo(server.port());
    ASSERT_GE(fd, 0);
    ::send(fd, "GET /ok HTTP/1.1\r\nHo", 20, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  int fd = connectTo(server.port());
  auto t0 = std::chrono::steady_clock::now();
  std::string got = roundTrip(fd, get("/ok", true));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - t0)
                .count();
  EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK")) << got;
  EXPECT_LT(ms, 30000);
  ::close(fd);
  for (int s : slow) ::close(s);
}

TEST(HttpServer, RequestsBeyondTheWorkersWaitThenGet503) {
  http::Routes routes;
  // The one worker is held by the first request until the second has waited
  // in the queue far longer than queueWaitMs (the refusal is decided when a
  // worker takes the job). A fixed sleep between the two requests was a
  // race under load; here only the server's own reading of the second
  // request within 2.8 s of its arrival is assumed.
  std::atomic<bool> started{false}, sent{false}, release{false};
  routes.add({"GET", "/slow", [&](const http::Request&, http::Response& r) {
                started = true;
                for (int i = 0; i < 30000 && !release; ++i)
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
                r.body = "{}";
              }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.threads = 1;
  o.queueWaitMs = 200;
  HttpServer server(o, routes);
  auto waitFlag = [](const std::atomic<bool>& f) {
    for (int i = 0; i < 30000 && !f; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return f.load();
  };
  std::string first, second;
  std::thread a([&] {
    int fd = connectTo(server.port());
    first = roundTrip(fd, get("/slow", true));
    ::close(fd);
  });
  const bool firstStarted = waitFlag(started);
  std::thread b([&] {
    if (!firstStarted) return;
    int fd = connectTo(server.port());
    const std::string req = get("/slow", true);
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    sent = true;
    second = roundTrip(fd, "");  // the answer to what was sent
    ::close(fd);
  });
  if (firstStarted && waitFlag(sent)) std::this_thread::sleep_for(std::chrono::seconds(3));
  release = true;
  a.join();
  b.join();
  ASSERT_TRUE(firstStarted) << "the first request never reached its handler";
  EXPECT_TRUE(first.starts_with("HTTP/1.1 200 OK")) << first;
  // Waited over queueWaitMs for the one (held) worker: refused.
  EXPECT_TRUE(second.starts_with("HTTP/1.1 503 ")) << second;
  EXPECT_NE(second.find("too many requests"), std::string::npos) << second;
}

TEST(HttpServer, RefusesOversizedAndMalformedRequests) {
  http::Routes routes;
  routes.add({"POST", "/p", [](const http::Request& req, http::Response& r) {
                r.body = std::to_string(req.body.size());
              }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  HttpServer server(o, routes);
  auto ask = [&](const std::string& raw) {
    int fd = connectTo(server.port());
    std::string got = roundTrip(fd, raw);
    ::close(fd);
    return got.substr(0, got.find("\r\n"));
  };
  EXPECT_EQ(ask("GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n"),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(ask("POST /p HTTP/1.1\r\nContent-Length: 70000\r\n\r\n"),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(ask("POST /p HTTP/1.1\r\nContent-Length: x\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(ask("GET nothing HTTP/1.1\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(ask("GET / HTTP/2.0\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(ask("GET / HTTP/1.1\r\n bad\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(ask("POST /p HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), "HTTP/1.1 200 OK");
}

// Made with Python's crypt (libxcrypt), cost 4: the password is "s3cret".
constexpr const char* kHash = "$2b$04$fT7pJ18F1/0vWYW6yDszaO11MBQAL2h0VtgCLHFK0SFkOapCR0Z5i";

TEST(WebConfig, ParsesBasicAuthUsers) {
  auto c = parseWebConfig(std::string("basic_auth_users:\n  alice: ") + kHash + "\n");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->basicAuthUsers.size(), 1u);
  EXPECT_EQ(c->basicAuthUsers.at("alice"), kHash);
  EXPECT_TRUE(parseWebConfig("").ok());
}

TEST(WebConfig, RefusesBadFilesWithTheReason) {
  auto why = [](const std::string& y) {
    auto c = parseWebConfig(y);
    return c.ok() ? std::string("accepted") : c.error().detail;
  };
  EXPECT_NE(why("basic_auth_users: [a").find("not YAML"), std::string::npos);
  EXPECT_NE(why("- a\n- b\n").find("mapping"), std::string::npos);
  EXPECT_NE(why("tls_server_config:\n  cert_file: x\n").find("TLS"), std::string::npos);
  EXPECT_NE(why("basic_auth_user:\n  a: b\n").find("unknown key basic_auth_user"),
            std::string::npos);
  EXPECT_NE(why("basic_auth_users:\n  alice: plaintext\n").find("not a bcrypt hash"),
            std::string::npos);
  EXPECT_NE(why("basic_auth_users: alice\n").find("must map"), std::string::npos);
  EXPECT_FALSE(loadWebConfig("/nonexistent/web.yml").ok());
}

TEST(WebConfig, VerifiesBcryptIncludingThe2yPrefix) {
  EXPECT_TRUE(verifyPassword("s3cret", kHash));
  EXPECT_FALSE(verifyPassword("s3cret!", kHash));
  EXPECT_FALSE(verifyPassword("", kHash));
  std::string y = kHash;
  y.replace(0, 4, "$2y$");  // htpasswd -B writes $2y$; same algorithm
  EXPECT_TRUE(verifyPassword("s3cret", y));
  EXPECT_FALSE(verifyPassword("s3cret", "$2y$04$notavalidhash"));
}

http::Request basic(const std::string& userPass) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < userPass.size(); i += 3) {
    uint32_t v = (uint8_t(userPass[i]) << 16) | (uint8_t(userPass[i + 1]) << 8) |
                 uint8_t(userPass[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (userPass.size() - i == 1) {
    uint32_t v = uint8_t(userPass[i]) << 16;
    out += std::string{k[(v >> 18) & 63], k[(v >> 12) & 63]} + "==";
  } else if (userPass.size() - i == 2) {
    uint32_t v = (uint8_t(userPass[i]) << 16) | (uint8_t(userPass[i + 1]) << 8);
    out += std::string{k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63]} + "=";
  }
  http::Request r;
  r.path = "/metrics";
  r.headers.emplace_back("Authorization", "Basic " + out);
  return r;
}

TEST(WebAuth, BasicAuthRightWrongUnknownAndReload) {
  char tmpl[] = "/tmp/memcg_web_config_XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::string path = tmpl;
  std::ofstream(path) << "basic_auth_users:\n  alice: " << kHash << "\n";
  {
    WebAuth auth(path);
    EXPECT_TRUE(auth.allowed(basic("alice:s3cret")));
    EXPECT_TRUE(auth.allowed(basic("alice:s3cret")));  // from the cache
    EXPECT_FALSE(auth.allowed(basic("alice:wrong")));
    EXPECT_FALSE(auth.allowed(basic("bob:s3cret")));
    EXPECT_FALSE(auth.allowed(http::Request{}));
    http::Request bearer;
    bearer.path = "/api/v1/controller/protect";
    bearer.headers.emplace_back("Authorization", "Bearer t");
    EXPECT_TRUE(auth.allowed(bearer));  // left to the controller's token check
    // Changed file: bob instead of alice, picked up within a second.
    std::ofstream(path) << "basic_auth_users:\n  bob: " << kHash << "\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    EXPECT_TRUE(auth.allowed(basic("bob:s3cret")));
    EXPECT_FALSE(auth.allowed(basic("alice:s3cret")));
    // A bad new version is refused and the last good one kept.
    std::ofstream(path) << "basic_auth_users: [\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    EXPECT_TRUE(auth.allowed(basic("bob:s3cret")));
  }
  std::ofstream(path) << "tls_server_config: {}\n";
  EXPECT_THROW(WebAuth{path}, std::invalid_argument);
  std::remove(path.c_str());
}

TEST(HttpServer, UnauthorizedGets401WithABasicChallenge) {
  http::Routes routes;
  routes.add({"GET", "/ok", [](const http::Request&, http::Response& r) { r.body = "{}"; }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.authorize = [](const http::Request& r) { return r.header("Authorization") == "let me"; };
  HttpServer server(o, routes);
  int fd = connectTo(server.port());
  std::string no = roundTrip(fd, get("/ok"));
  std::string yes = roundTrip(fd, "GET /ok HTTP/1.1\r\nAuthorization: let me\r\n\r\n");
  ::close(fd);
  EXPECT_TRUE(no.starts_with("HTTP/1.1 401 Unauthorized")) << no;
  EXPECT_NE(no.find("WWW-Authenticate: Basic"), std::string::npos) << no;
  EXPECT_TRUE(yes.starts_with("HTTP/1.1 200 OK")) << yes;
}

}  // namespace
}  // namespace memcg
