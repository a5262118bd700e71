// The HTTP server (web/http_server.h) on loopback: concurrent
// keep-alive clients each get their own whole answers, a slow client never
// holds a worker, and requests beyond the workers wait queueWaitMs, then 503.
#include "web/auth.h"
#include "web/http_server.h"
#include "web/web_config.h"
#include "tests/support/loopback_http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <cstdio>
#include <fstream>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace memcg {
namespace {

int connectTo(int port) { return test::connectLoopback(port); }

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

TEST(HttpParser, ConflictingContentLengthsAreRefusedEqualOnesRead) {
  http::Request req;
  http::HeadInfo info;
  std::string why;
  EXPECT_EQ(http::parseRequestHead("POST /x HTTP/1.1\r\nContent-Length: 5\r\n"
                                   "content-length: 50",
                                   req, info, why),
            400);
  EXPECT_EQ(why, "conflicting Content-Length headers");
  why.clear();
  EXPECT_EQ(http::parseRequestHead("POST /x HTTP/1.1\r\nContent-Length: 5\r\n"
                                   "Content-Length: 5",
                                   req, info, why),
            0)
      << why;
  EXPECT_EQ(info.bodyLen, 5u);
}

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
  EXPECT_NE(why("tls_server_config:\n  cert_file: x\n").find("key_file is required"),
            std::string::npos);
  EXPECT_NE(why("http_server_config:\n  http3: false\n")
                .find("unknown key http_server_config.http3"),
            std::string::npos);
  EXPECT_NE(why("basic_auth_user:\n  a: b\n").find("unknown key basic_auth_user"),
            std::string::npos);
  EXPECT_NE(why("basic_auth_users:\n  alice: plaintext\n").find("not a bcrypt hash"),
            std::string::npos);
  EXPECT_NE(why("basic_auth_users: alice\n").find("must map"), std::string::npos);
  EXPECT_FALSE(loadWebConfig("/nonexistent/web.yml").ok());
}

TEST(WebConfig, ParsesTlsServerConfigAndRefusesBadValues) {
  auto c = parseWebConfig(
      "tls_server_config:\n  cert_file: s.crt\n  key_file: /k/s.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
      "  min_version: TLS13\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"
      "  curve_preferences: [X25519, CurveP256]\n  prefer_server_cipher_suites: false\n");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_TRUE(c->tls.has_value());
  EXPECT_EQ(c->tls->certFile, "s.crt");
  EXPECT_EQ(c->tls->clientAuthType, "RequireAndVerifyClientCert");
  EXPECT_EQ(c->tls->minVersion, "TLS13");
  EXPECT_EQ(c->tls->maxVersion, "TLS13");  // the default
  EXPECT_EQ(c->tls->cipherSuites.size(), 1u);
  EXPECT_EQ(c->tls->curvePreferences.size(), 2u);
  EXPECT_FALSE(c->tls->preferServerCipherSuites);
  EXPECT_FALSE(parseWebConfig("").value().tls.has_value());

  auto why = [](const std::string& extra) {
    auto r = parseWebConfig("tls_server_config:\n  cert_file: a\n  key_file: b\n" + extra);
    return r.ok() ? std::string("accepted") : r.error().detail;
  };
  EXPECT_EQ(why(""), "accepted");
  EXPECT_NE(why("  client_auth_type: Sometimes\n").find("unknown Sometimes"), std::string::npos);
  EXPECT_NE(why("  client_auth_type: VerifyClientCertIfGiven\n").find("client_ca_file is required"),
            std::string::npos);
  EXPECT_NE(why("  min_version: SSL3\n").find("min_version: unknown SSL3"), std::string::npos);
  EXPECT_NE(why("  min_version: TLS13\n  max_version: TLS12\n").find("above max_version"),
            std::string::npos);
  EXPECT_NE(why("  cipher_suites: [TLS_NO_SUCH_SUITE]\n").find("unknown TLS_NO_SUCH_SUITE"),
            std::string::npos);
  EXPECT_NE(why("  cipher_suites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n").find("must be a list"),
            std::string::npos);
  EXPECT_NE(why("  curve_preferences: [P256]\n").find("unknown P256"), std::string::npos);
  EXPECT_NE(why("  client_allowed_sans: [a]\n").find("needs client_auth_type"),
            std::string::npos);
  EXPECT_NE(why("  certfile: a\n").find("unknown key tls_server_config.certfile"),
            std::string::npos);
}

TEST(WebConfig, TlsFilesAreReadFromTheConfigFilesFolder) {
  char dir[] = "/tmp/memcg_exporter_test_webcfg.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/web.yml";
  std::ofstream(path) << "tls_server_config:\n  cert_file: s.crt\n  key_file: /abs/s.key\n";
  auto c = loadWebConfig(path);
  ::unlink(path.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->tls->certFile, std::string(dir) + "/s.crt");
  EXPECT_EQ(c->tls->keyFile, "/abs/s.key");
  // A missing certificate is refused when the context is made, naming it.
  auto ctx = makeTlsContext(*c->tls);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message().find("cert_file"), std::string::npos);
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
    // A bearer token is the route policy's to weigh (web/auth.h), not basic auth.
    EXPECT_FALSE(auth.allowed(bearer));
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
  char tmpl[] = "/tmp/memcg_exporter_test_web_config_XXXXXX";
  int tfd = ::mkstemp(tmpl);
  ASSERT_GE(tfd, 0);
  ::close(tfd);
  std::ofstream(tmpl) << "basic_auth_users:\n  alice: " << kHash
                      << "\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n";
  WebAuth webAuth(tmpl);
  std::remove(tmpl);
  web::AuthPolicy policy(&webAuth, "");
  http::Routes routes;
  routes.add({"GET", "/ok", [](const http::Request&, http::Response& r) { r.body = "{}"; }});
  routes.setAuth(&policy);
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.responseHeaders = [&webAuth] { return webAuth.responseHeaders(); };
  HttpServer server(o, routes);
  int fd = connectTo(server.port());
  std::string no = roundTrip(fd, get("/ok"));
  std::string yes = roundTrip(fd, "GET /ok HTTP/1.1\r\nAuthorization: " +
                                      basic("alice:s3cret").header("Authorization") +
                                      "\r\n\r\n");
  ::close(fd);
  // http_server_config.headers: on every answer, refusals included.
  EXPECT_NE(no.find("X-Frame-Options: deny\r\n"), std::string::npos) << no;
  EXPECT_NE(yes.find("X-Frame-Options: deny\r\n"), std::string::npos) << yes;
  EXPECT_TRUE(no.starts_with("HTTP/1.1 401 Unauthorized")) << no;
  EXPECT_NE(no.find("WWW-Authenticate: Basic"), std::string::npos) << no;
  EXPECT_TRUE(yes.starts_with("HTTP/1.1 200 OK")) << yes;
}

// --- TLS (tls.h): a self-signed P-256 certificate made here with OpenSSL ----
// The same SSL object is used by the front thread (handshake, request) and
// then a worker (answer): the TSan stage runs these too.

struct TlsFiles {
  std::string dir, cert, key;
  ~TlsFiles() {
    ::unlink(cert.c_str());
    ::unlink(key.c_str());
    ::rmdir(dir.c_str());
  }
};

bool makeSelfSigned(TlsFiles& f) {
  char dir[] = "/tmp/memcg_exporter_test_tls.XXXXXX";
  if (!::mkdtemp(dir)) return false;
  f.dir = dir;
  f.cert = f.dir + "/s.crt";
  f.key = f.dir + "/s.key";
  EVP_PKEY* pkey = EVP_EC_gen("P-256");
  X509* x = X509_new();
  if (!pkey || !x) return false;
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, pkey);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  bool ok = X509_sign(x, pkey, EVP_sha256()) > 0;
  FILE* c = std::fopen(f.cert.c_str(), "w");
  FILE* k = std::fopen(f.key.c_str(), "w");
  ok = ok && c && k && PEM_write_X509(c, x) == 1 &&
       PEM_write_PrivateKey(k, pkey, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (c) std::fclose(c);
  if (k) std::fclose(k);
  X509_free(x);
  EVP_PKEY_free(pkey);
  return ok;
}

/// A TLS client connection (no verification: the test trusts its own server).
struct TlsClient {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  int fd = -1;
  bool connect(int port) {
    ctx = SSL_CTX_new(TLS_client_method());
    fd = connectTo(port);
    if (!ctx || fd < 0) return false;
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    return SSL_connect(ssl) == 1;
  }
  std::string roundTrip(const std::string& req) {
    if (SSL_write(ssl, req.data(), static_cast<int>(req.size())) != static_cast<int>(req.size()))
      return "write failed";
    std::string in;
    char buf[4096];
    for (;;) {
      size_t end = in.find("\r\n\r\n");
      size_t cl = in.find("Content-Length: ");
      if (end != std::string::npos && cl != std::string::npos && cl < end) {
        size_t len = std::stoul(in.substr(cl + 16));
        if (in.size() >= end + 4 + len) return in.substr(0, end + 4 + len);
      }
      int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) return in.empty() ? "read failed" : in;
      in.append(buf, static_cast<size_t>(n));
    }
  }
  ~TlsClient() {
    if (ssl) SSL_free(ssl);
    if (ctx) SSL_CTX_free(ctx);
    if (fd >= 0) ::close(fd);
  }
};

TEST(HttpServerTls, ConcurrentKeepAliveClientsWhileHandshakesStall) {
  TlsFiles files;
  ASSERT_TRUE(makeSelfSigned(files));
  TlsServerConfig tc;
  tc.certFile = files.cert;
  tc.keyFile = files.key;
  auto ctx = makeTlsContext(tc);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  http::Routes routes;
  routes.add({"GET", "/echo", [](const http::Request& req, http::Response& r) {
                r.contentType = "text/plain";
                r.body = "q=" + req.param("q") + "\n" + std::string(40000, 'x');  // > 1 record
              }});
  HttpServerOptions o;
  o.listenAddress = "127.0.0.1:0";
  o.threads = 2;
  // Long enough that the good clients' handshakes never hit it (4 at once
  // on a loaded 2-core machine, or under TSan, took more than the former
  // 300 ms), short enough to wait for the stalled ones below.
  o.handshakeTimeoutMs = 3000;
  TlsContext shared = *ctx;
  o.tlsContext = [shared] { return shared; };
  HttpServer server(o, routes);
  // Stalled: half a ClientHello each; they must not hold the front or a worker.
  std::vector<int> stalled;
  for (int i = 0; i < 20; ++i) {
    int fd = connectTo(server.port());
    ASSERT_GE(fd, 0);
    ::send(fd, "\x16\x03\x01\x02\x00", 5, MSG_NOSIGNAL);
    stalled.push_back(fd);
  }
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      TlsClient cl;
      if (!cl.connect(server.port())) return;
      for (int i = 0; i < 10; ++i) {
        std::string q = std::to_string(c) + "-" + std::to_string(i);
        std::string got = cl.roundTrip(get("/echo?q=" + q));
        if (got.starts_with("HTTP/1.1 200 OK") && got.find("\r\n\r\nq=" + q + "\n") != std::string::npos &&
            got.size() > 40000)
          ++good;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 4 * 10);
  // The stalled ones are closed once handshakeTimeoutMs has passed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (server.stats().handshakeTimeouts < 20 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server.stats().handshakeTimeouts, 20u);
  char b;
  EXPECT_EQ(::recv(stalled[0], &b, 1, 0), 0);  // closed, nothing said
  for (int s : stalled) ::close(s);
  // Plain HTTP to the TLS port is a failed handshake, not an answer.
  int fd = connectTo(server.port());
  std::string got = roundTrip(fd, get("/echo", true));
  EXPECT_FALSE(got.starts_with("HTTP/1.1")) << got;
  ::close(fd);
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (server.stats().handshakeFailures < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server.stats().handshakeFailures, 1u);
}

// --- exporter-toolkit's keys beyond TLS and users, and the one auth policy ---

/// A self-signed P-256 certificate with `san` (e.g. "DNS:a.example") as its
/// subject alternative name, PEM text of {certificate, key}.
std::pair<std::string, std::string> selfSignedPem(const std::string& san) {
  EVP_PKEY* pkey = EVP_EC_gen("P-256");
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), 2);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, pkey);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("client"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  if (!san.empty()) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, san.c_str());
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x, pkey, EVP_sha256());
  auto text = [](auto write) {
    BIO* b = BIO_new(BIO_s_mem());
    write(b);
    char* p = nullptr;
    long n = BIO_get_mem_data(b, &p);
    std::string out(p, static_cast<size_t>(n));
    BIO_free(b);
    return out;
  };
  std::pair<std::string, std::string> out{
      text([&](BIO* b) { PEM_write_bio_X509(b, x); }),
      text([&](BIO* b) {
        PEM_write_bio_PrivateKey(b, pkey, nullptr, nullptr, 0, nullptr, nullptr);
      })};
  X509_free(x);
  EVP_PKEY_free(pkey);
  return out;
}

TEST(WebConfig, HttpServerConfigHeadersAndHttp2) {
  auto c = parseWebConfig(
      "http_server_config:\n  http2: true\n  headers:\n"
      "    Content-Security-Policy: default-src 'self'\n    X-Frame-Options: deny\n"
      "    X-XSS-Protection: ''\n    Strict-Transport-Security: max-age=31536000\n");
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_EQ(c->headers.size(), 3u);  // the blank one is unset, as exporter-toolkit does
  EXPECT_EQ(c->headers[0].first, "Content-Security-Policy");
  EXPECT_EQ(c->headers[0].second, "default-src 'self'");
  EXPECT_EQ(c->headers[2].first, "Strict-Transport-Security");
  ASSERT_EQ(c->ignored.size(), 1u);
  EXPECT_EQ(c->ignored[0], "http_server_config.http2");
  EXPECT_TRUE(parseWebConfig("http_server_config:\n  http2: false\n")->ignored.empty());
  auto why = [](const std::string& y) {
    auto r = parseWebConfig(y);
    return r.ok() ? std::string("accepted") : r.error().detail;
  };
  EXPECT_NE(why("http_server_config:\n  headers:\n    Content-Length: '1'\n")
                .find("Content-Length is set by the server"),
            std::string::npos);
  EXPECT_NE(why("http_server_config:\n  headers:\n    'X Bad': a\n").find("bad header name"),
            std::string::npos);
  EXPECT_NE(why("http_server_config:\n  headers:\n    X-A: \"a\\r\\nX-B: b\"\n")
                .find("one line"),
            std::string::npos);
  EXPECT_NE(why("http_server_config:\n  http2: maybe\n").find("true or false"),
            std::string::npos);
  // Unknown keys could be security settings: refused, naming the key.
  EXPECT_NE(why("http_server_config:\n  header:\n    X-A: b\n")
                .find("unknown key http_server_config.header"),
            std::string::npos);
}

TEST(WebConfig, RateLimitKeys) {
  auto c = parseWebConfig("rate_limit:\n  interval: 100ms\n  burst: 3\n");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->rateLimit.intervalMs, 100);
  EXPECT_EQ(c->rateLimit.burst, 3);
  EXPECT_EQ(parseWebConfig("rate_limit:\n  interval: 0\n  burst: 0\n")->rateLimit.intervalMs, 0);
  auto why = [](const std::string& y) {
    auto r = parseWebConfig(y);
    return r.ok() ? std::string("accepted") : r.error().detail;
  };
  EXPECT_NE(why("rate_limit:\n  interval: 1s\n").find("burst must be at least 1"),
            std::string::npos);
  EXPECT_NE(why("rate_limit:\n  interval: fast\n  burst: 1\n").find("want a duration"),
            std::string::npos);
  EXPECT_NE(why("rate_limit:\n  interval: 1s\n  burst: -1\n").find("want an integer"),
            std::string::npos);
  EXPECT_NE(why("rate_limit:\n  interval: 1s\n  burst: 1\n  per_ip: true\n")
                .find("unknown key rate_limit.per_ip"),
            std::string::npos);
}

TEST(RateLimiter, TokenBucketRefillsOneTokenPerInterval) {
  RateLimiter l;
  RateLimit r{100, 3};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.admit(r, 1000)) << i;  // starts full
  EXPECT_FALSE(l.admit(r, 1000));
  EXPECT_FALSE(l.admit(r, 1099));
  EXPECT_TRUE(l.admit(r, 1100));  // one interval later: one token
  EXPECT_FALSE(l.admit(r, 1100));
  EXPECT_TRUE(l.admit(r, 5000));
  EXPECT_TRUE(l.admit(r, 5000));
  EXPECT_TRUE(l.admit(r, 5000));  // never more than burst saved
  EXPECT_FALSE(l.admit(r, 5000));
  EXPECT_TRUE(l.admit(RateLimit{0, 0}, 5000));  // interval 0: no limit
}

TEST(WebConfig, InlineCertAndKeyBesideTheFiles) {
  auto [cert, key] = selfSignedPem("DNS:server.example");
  TlsServerConfig t;
  t.cert = cert;
  t.key = key;
  auto ctx = makeTlsContext(t);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  EXPECT_TRUE(t.files().empty());  // nothing to watch for a reload
  // Through the YAML: a block scalar, as a file shared with node_exporter has it.
  auto indent = [](const std::string& pemText) {
    std::string out;
    for (char ch : pemText) out += ch == '\n' ? std::string("\n    ") : std::string(1, ch);
    return out;
  };
  auto c = parseWebConfig("tls_server_config:\n  cert: |\n    " + indent(cert) +
                          "\n  key: |\n    " + indent(key) + "\n");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(makeTlsContext(*c->tls).ok());
  auto other = selfSignedPem("");
  t.key = other.second;
  auto mismatch = makeTlsContext(t);
  ASSERT_FALSE(mismatch.ok());
  // OpenSSL refuses a key that does not match the certificate as it loads it.
  EXPECT_NE(mismatch.error().message().find("tls_server_config.key"), std::string::npos)
      << mismatch.error().message();
  t.key = key;
  t.certFile = "/x.crt";
  EXPECT_NE(validateTlsConfig(t).error().detail.find("not both"), std::string::npos);
  t.certFile.clear();
  t.cert = "not PEM";
  auto bad = makeTlsContext(t);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("tls_server_config.cert"), std::string::npos);
}

/// One TLS handshake between a server context and a client sending
/// `clientPem` = {cert, key}, over a memory BIO pair (no socket). True if it
/// completes on both sides.
bool handshake(SSL_CTX* server, const std::pair<std::string, std::string>& clientPem) {
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  BIO* cb = BIO_new_mem_buf(clientPem.first.data(), static_cast<int>(clientPem.first.size()));
  X509* cx = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(clientPem.second.data(), static_cast<int>(clientPem.second.size()));
  EVP_PKEY* ck = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  SSL_CTX_use_certificate(cctx, cx);
  SSL_CTX_use_PrivateKey(cctx, ck);
  X509_free(cx);
  EVP_PKEY_free(ck);
  SSL* s = SSL_new(server);
  SSL* c = SSL_new(cctx);
  BIO *sb = nullptr, *cbio = nullptr;
  BIO_new_bio_pair(&sb, 0, &cbio, 0);
  SSL_set_bio(s, sb, sb);
  SSL_set_bio(c, cbio, cbio);
  SSL_set_accept_state(s);
  SSL_set_connect_state(c);
  bool sDone = false, cDone = false, failed = false;
  for (int i = 0; i < 100 && !(sDone && cDone) && !failed; ++i) {
    for (auto [ssl, done] : {std::pair<SSL*, bool*>{c, &cDone}, {s, &sDone}}) {
      if (*done) continue;
      int r = SSL_do_handshake(ssl);
      if (r == 1) {
        *done = true;
      } else {
        int e = SSL_get_error(ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) failed = true;
      }
    }
  }
  // TLS 1.3: the server's verdict on the client certificate reaches the
  // client after its handshake is done; a read shows whether it was refused.
  if (!failed && sDone && cDone) {
    char b;
    (void)SSL_write(s, "x", 1);
    failed = SSL_read(c, &b, 1) != 1;
  }
  SSL_free(s);
  SSL_free(c);
  SSL_CTX_free(cctx);
  ERR_clear_error();
  return sDone && cDone && !failed;
}

TEST(WebConfig, ClientAllowedSansRefuseOtherCertificates) {
  auto [cert, key] = selfSignedPem("DNS:server.example");
  TlsServerConfig t;
  t.cert = cert;
  t.key = key;
  t.clientAuthType = "RequireAnyClientCert";
  t.clientAllowedSans = {"good.example", "10.0.0.7"};
  auto ctx = makeTlsContext(t);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  EXPECT_TRUE(handshake(ctx->get(), selfSignedPem("DNS:good.example")));
  EXPECT_TRUE(handshake(ctx->get(), selfSignedPem("DNS:other.example,IP:10.0.0.7")));
  EXPECT_FALSE(handshake(ctx->get(), selfSignedPem("DNS:bad.example")));
  EXPECT_FALSE(handshake(ctx->get(), selfSignedPem("")));  // no SAN at all
  // Without the list the same context type takes any certificate.
  t.clientAllowedSans.clear();
  auto open = makeTlsContext(t);
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(handshake(open->get(), selfSignedPem("DNS:bad.example")));
  // The names as the refusal logs them.
  const std::string many =
      selfSignedPem("DNS:a.example,IP:10.0.0.7,email:o@x.example,URI:spiffe://x/y").first;
  BIO* b = BIO_new_mem_buf(many.c_str(), -1);
  X509* x = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  EXPECT_EQ(certificateSans(x), (std::vector<std::string>{"DNS:a.example", "IP:10.0.0.7",
                                                          "email:o@x.example", "URI:spiffe://x/y"}));
  X509_free(x);
  // A type that lets a client send no certificate leaves nothing to match.
  t.clientAllowedSans = {"good.example"};
  t.clientAuthType = "RequestClientCert";
  EXPECT_NE(validateTlsConfig(t).error().detail.find("needs client_auth_type"), std::string::npos);
}

// A file written the way exporter-toolkit documents it for node_exporter
// (TLS files beside it, bcrypt users, a rate limit, the security headers,
// http2) starts here unchanged.
TEST(WebConfig, AFileSharedWithNodeExporterStarts) {
  TlsFiles files;
  ASSERT_TRUE(makeSelfSigned(files));
  std::string path = files.dir + "/web-config.yml";
  std::ofstream(path) << "tls_server_config:\n"
                         "  cert_file: s.crt\n"
                         "  key_file: s.key\n"
                         "  min_version: TLS12\n"
                         "http_server_config:\n"
                         "  http2: true\n"
                         "  headers:\n"
                         "    X-Content-Type-Options: nosniff\n"
                         "    X-Frame-Options: sameorigin\n"
                         "basic_auth_users:\n"
                         "  alice: " << kHash << "\n"
                         "  bob: " << kHash << "\n"
                         "rate_limit:\n"
                         "  interval: \"1s\"\n"
                         "  burst: 20\n";
  std::unique_ptr<WebAuth> auth;
  EXPECT_NO_THROW(auth = std::make_unique<WebAuth>(path));
  ::unlink(path.c_str());
  ASSERT_TRUE(auth);
  EXPECT_TRUE(auth->tlsContext());
  EXPECT_EQ(auth->responseHeaders(),
            "X-Content-Type-Options: nosniff\r\nX-Frame-Options: sameorigin\r\n");
  EXPECT_TRUE(auth->allowed(basic("bob:s3cret")));
}

TEST(AuthPolicy, OnePolicyForEveryRoute) {
  char tmpl[] = "/tmp/memcg_exporter_test_web_config_XXXXXX";
  int tfd = ::mkstemp(tmpl);
  ASSERT_GE(tfd, 0);
  ::close(tfd);
  std::ofstream(tmpl) << "basic_auth_users:\n  alice: " << kHash << "\n";
  WebAuth webAuth(tmpl);
  std::remove(tmpl);
  web::AuthPolicy policy(&webAuth, "tok");
  web::AuthPolicy noToken(&webAuth, "");
  http::Routes routes;
  auto ok = [](const http::Request&, http::Response& r) { r.body = "{}"; };
  routes.add({"GET", "/read", ok});
  routes.add({"GET", "/state", ok, http::Access::kTokenRead});
  routes.add({"POST", "/cmd", ok, http::Access::kToken});
  auto ask = [&](const web::AuthPolicy& p, const char* method, const char* path,
                 const std::string& auth) {
    routes.setAuth(&p);
    http::Request q;
    q.method = method;
    q.path = path;
    if (!auth.empty()) q.headers.emplace_back("Authorization", auth);
    return http::dispatch(routes, q);
  };
  const std::string user = basic("alice:s3cret").header("Authorization");
  auto challenge = ask(policy, "GET", "/read", "");
  EXPECT_EQ(challenge.status, 401);
  ASSERT_EQ(challenge.headers.size(), 1u);
  EXPECT_EQ(challenge.headers[0].first, "WWW-Authenticate");
  EXPECT_EQ(ask(policy, "GET", "/read", user).status, 200);
  EXPECT_EQ(ask(policy, "GET", "/nowhere", "").status, 401);  // before 404
  EXPECT_EQ(ask(policy, "GET", "/nowhere", user).status, 404);
  EXPECT_EQ(ask(policy, "POST", "/read", "").status, 401);  // before 405
  // The token stands in for basic auth on the routes that take it ...
  EXPECT_EQ(ask(policy, "POST", "/cmd", "Bearer tok").status, 200);
  EXPECT_EQ(ask(policy, "GET", "/state", "Bearer tok").status, 200);
  EXPECT_EQ(ask(policy, "POST", "/cmd", "Bearer nope").status, 403);
  // ... and is still needed behind basic auth ...
  EXPECT_EQ(ask(policy, "POST", "/cmd", user).status, 401);
  EXPECT_EQ(ask(policy, "GET", "/state", user).status, 401);
  EXPECT_EQ(ask(policy, "POST", "/cmd", "").status, 401);
  // ... but not elsewhere: a token is no way past basic auth on /read.
  EXPECT_EQ(ask(policy, "GET", "/read", "Bearer tok").status, 401);
  // Without a token file: commands refused, reads under basic auth only,
  // and a Bearer header is no way past basic auth either.
  EXPECT_EQ(ask(noToken, "POST", "/cmd", user).status, 403);
  EXPECT_EQ(ask(noToken, "GET", "/state", user).status, 200);
  EXPECT_EQ(ask(noToken, "GET", "/state", "Bearer x").status, 401);
}

TEST(AuthPolicy, RateLimitAnswers429First) {
  char tmpl[] = "/tmp/memcg_exporter_test_web_config_XXXXXX";
  int tfd = ::mkstemp(tmpl);
  ASSERT_GE(tfd, 0);
  ::close(tfd);
  std::ofstream(tmpl) << "rate_limit:\n  interval: 1h\n  burst: 2\n";
  WebAuth webAuth(tmpl);
  std::remove(tmpl);
  web::AuthPolicy policy(&webAuth, "");
  http::Routes routes;
  routes.add({"GET", "/read", [](const http::Request&, http::Response& r) { r.body = "{}"; }});
  routes.setAuth(&policy);
  http::Request q;
  q.path = "/read";
  EXPECT_EQ(http::dispatch(routes, q).status, 200);
  EXPECT_EQ(http::dispatch(routes, q).status, 200);
  auto third = http::dispatch(routes, q);
  EXPECT_EQ(third.status, 429);
  EXPECT_NE(third.body.find("rate_limit"), std::string::npos);
  EXPECT_EQ(http::statusText(429), "Too Many Requests");
}

}  // namespace
}  // namespace memcg
