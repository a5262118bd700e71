#include "web/http_server.h"
#include "common/clock.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/parse.h"
#include "metrics/descriptors.h"
#include "metrics/histogram.h"

namespace memcg {
namespace {

/// Milliseconds on the steady clock, truncated: a deadline `nowMs() + T`
/// may then start up to 1 ms before the true moment, so a deadline has
/// passed only once `nowMs() > deadline` (strictly), which is at least T
/// after the true start. `>=` closed a 2 s read timeout after 1.999 s.
// Intervals and timeouts: the steady clock (common/clock.h).
int64_t nowMs() { return clock::steadyMs(); }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// %xx-decodes a path ('+' stays '+': it is only a space in queries).
std::string decodePath(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '%' && i + 2 < p.size() && hexDigit(p[i + 1]) >= 0 &&
        hexDigit(p[i + 2]) >= 0) {
      out += static_cast<char>(hexDigit(p[i + 1]) * 16 + hexDigit(p[i + 2]));
      i += 2;
    } else {
      out += p[i];
    }
  }
  return out;
}

std::string responseHead(int status, std::string_view contentType, size_t length,
                         bool keepAlive, std::string_view extraHeaders = {}) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " ";
  head += http::statusText(status);
  head += "\r\nContent-Type: ";
  head += contentType;
  head += "\r\nContent-Length: " + std::to_string(length) + "\r\n";
  if (!keepAlive) head += "Connection: close\r\n";
  head += extraHeaders;
  head += "\r\n";
  return head;
}

// --- one connection's bytes, plain or TLS ----------------------------------
// Both kinds of socket are non-blocking. A TLS connection's SSL object is
// used by one thread at a time: the front while it reads a request, then the
// worker that answers it (handed over under the queue's mutex).

enum class Io { kOk, kAgain, kEof, kError };

/// Reads what is there into buf. kAgain: nothing now; `wantWrite` says the
/// TLS layer waits for the socket to be writable rather than readable.
Io recvSome(int fd, SSL* ssl, char* buf, size_t cap, size_t& got, bool& wantWrite) {
  wantWrite = false;
  if (!ssl) {
    for (;;) {
      ssize_t n = ::recv(fd, buf, cap, 0);
      if (n > 0) {
        got = static_cast<size_t>(n);
        return Io::kOk;
      }
      if (n == 0) return Io::kEof;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kAgain : Io::kError;
    }
  }
  ERR_clear_error();
  int n = SSL_read(ssl, buf, static_cast<int>(cap));
  if (n > 0) {
    got = static_cast<size_t>(n);
    return Io::kOk;
  }
  switch (SSL_get_error(ssl, n)) {
    case SSL_ERROR_WANT_READ: return Io::kAgain;
    case SSL_ERROR_WANT_WRITE: wantWrite = true; return Io::kAgain;
    case SSL_ERROR_ZERO_RETURN: return Io::kEof;
    default: ERR_clear_error(); return Io::kError;
  }
}

/// Writes what the socket takes now. kAgain: wait for `wantRead` ? readable
/// : writable.
Io sendSome(int fd, SSL* ssl, std::string_view data, size_t& sent, bool& wantRead) {
  wantRead = false;
  if (!ssl) {
    for (;;) {
      ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) {
        sent = static_cast<size_t>(n);
        return Io::kOk;
      }
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kAgain : Io::kError;
    }
  }
  ERR_clear_error();
  size_t n = 0;
  if (SSL_write_ex(ssl, data.data(), data.size(), &n) == 1) {
    sent = n;
    return Io::kOk;
  }
  switch (SSL_get_error(ssl, 0)) {
    case SSL_ERROR_WANT_WRITE: return Io::kAgain;
    case SSL_ERROR_WANT_READ: wantRead = true; return Io::kAgain;
    default: ERR_clear_error(); return Io::kError;
  }
}

/// Writes all of `data`, waiting for the socket to drain until `deadline`.
/// False on an error or the deadline.
bool writeAll(int fd, SSL* ssl, std::string_view data, int64_t deadline) {
  while (!data.empty()) {
    size_t sent = 0;
    bool wantRead = false;
    Io r = sendSome(fd, ssl, data, sent, wantRead);
    if (r == Io::kOk) {
      data.remove_prefix(sent);
      continue;
    }
    if (r != Io::kAgain) return false;
    int64_t left = deadline - nowMs();
    if (left < 0) return false;  // passed strictly (see nowMs)
    pollfd p{fd, static_cast<short>(wantRead ? POLLIN : POLLOUT), 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return false;
  }
  return true;
}

/// Writes what the socket takes at once (the front thread never waits).
void sendNow(int fd, SSL* ssl, std::string_view data) {
  size_t sent = 0;
  bool wantRead = false;
  (void)sendSome(fd, ssl, data, sent, wantRead);
}

/// One error answer, written without waiting; the connection is closed
/// after it.
void sendErrorNow(int fd, SSL* ssl, int status, std::string_view why) {
  std::string body = std::string(why) + "\n";
  sendNow(fd, ssl, responseHead(status, "text/plain; charset=utf-8", body.size(), false) + body);
}

enum class Stage { kHandshake, kIdle, kHead, kBody };

/// Why a request or connection was refused: a bounded label set.
enum Refusal {
  kMaxConnections,  // 503: over --web.max-connections
  kQueueFull,       // 503: kMaxQueued complete requests already wait
  kQueueWait,       // 503: waited longer than queueWaitMs for a worker
  kHeadTimeout,     // 408
  kBodyTimeout,     // 408
  kBodyTooLarge,    // 413
  kHeadTooLarge,    // 431: request line and headers over maxHeadBytes
  kTooManyHeaders,  // 431
  kMalformed,       // 400
  kChunked,         // 411
  kRefusalCount
};
struct RefusalName {
  const char* code;
  const char* reason;
};
constexpr RefusalName kRefusalNames[kRefusalCount] = {
    {"503", "max_connections"}, {"503", "queue_full"},     {"503", "queue_wait"},
    {"408", "head_timeout"},    {"408", "body_timeout"},   {"413", "body_too_large"},
    {"431", "head_too_large"},  {"431", "too_many_headers"}, {"400", "malformed"},
    {"411", "length_required"}};

// Queue waits in microseconds; the last bound is the default queueWaitMs
// (longer waits are answered 503 and land in +Inf).
inline constexpr metrics::BucketLayout<uint64_t, 9> kQueueWaitUs{
    {100, 500, 1'000, 5'000, 10'000, 50'000, 100'000, 500'000, 2'000'000}, 1e6};
using QueueWaitHistogram = metrics::FixedHistogram<kQueueWaitUs>;

const metrics::Desc kAccepted = metrics::nodeCounter(
    "memcg_exporter_http_connections_accepted_total",
    "HTTP connections accepted (including those refused at once over --web.max-connections).");
const metrics::Desc kOpen =
    metrics::nodeGauge("memcg_exporter_http_connections_open", "HTTP connections open now.");
const metrics::Desc kRefused = metrics::nodeCounter(
    "memcg_exporter_http_requests_refused_total",
    "Requests and connections the server refused itself, by status code and reason "
    "(before any route ran).",
    {"code", "reason"});
const metrics::Desc kHandshakes = metrics::nodeCounter(
    "memcg_exporter_http_tls_handshake_failures_total",
    "TLS handshakes that failed (reason=error) or did not finish in time (reason=timeout).",
    {"reason"});
const metrics::Desc kQueueWaitDesc = metrics::nodeHistogram(
    "memcg_exporter_http_queue_wait_seconds",
    "Time complete requests waited for a free worker (--web.threads).", {},
    kQueueWaitUs.exposedBounds());

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace http {

int parseRequestHead(std::string_view head, Request& r, HeadInfo& info, std::string& why) {
  r.headers.clear();
  r.body.clear();
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    why = "malformed request line";
    return 400;
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (char ch : method) {
    if (ch < 'A' || ch > 'Z') {
      why = "malformed method";
      return 400;
    }
  }
  if (method.empty() || target.empty() || target.front() != '/' ||
      (version != "HTTP/1.1" && version != "HTTP/1.0")) {
    why = "malformed request line";
    return 400;
  }
  r.method = std::string(method);
  size_t q = target.find('?');
  r.path = decodePath(target.substr(0, q));
  r.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  std::string_view rest = eol == std::string_view::npos ? std::string_view{} : head.substr(eol + 2);
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    std::string_view h = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e + 2);
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0 || h.front() == ' ' || h.front() == '\t') {
      why = "malformed header";
      return 400;
    }
    r.headers.emplace_back(std::string(h.substr(0, colon)), std::string(trim(h.substr(colon + 1))));
    if (r.headers.size() > 100) {
      why = "too many headers";
      return 431;
    }
  }
  if (!r.header("Transfer-Encoding").empty()) {
    why = "chunked bodies are not accepted, send Content-Length";
    return 411;
  }
  // Two Content-Length headers that disagree frame the body two ways: a proxy in
  // front may take the other one, so the request is refused (RFC 9112 6.3), not
  // read with the first.
  const std::string* first = nullptr;
  for (const auto& [name, value] : r.headers) {
    if (!iequals(name, "Content-Length")) continue;
    if (first && *first != value) {
      why = "conflicting Content-Length headers";
      return 400;
    }
    first = &value;
  }
  info.bodyLen = 0;
  std::string cl = r.header("Content-Length");
  if (!cl.empty()) {
    auto v = parseU64(cl);
    if (!v) {
      why = "bad Content-Length";
      return 400;
    }
    info.bodyLen = *v > kMaxBodyBytes + 1 ? kMaxBodyBytes + 1 : *v;
  }
  std::string conn = r.header("Connection");
  info.keepAlive = version == "HTTP/1.1" ? !iequals(conn, "close") : iequals(conn, "keep-alive");
  return 0;
}

}  // namespace http

struct HttpServer::Impl {
  struct Conn {
    int fd = -1;
    SSL* ssl = nullptr;      ///< set on a TLS server
    bool wantWrite = false;  ///< TLS waits for writable (epoll has EPOLLOUT)
    std::string in;  ///< bytes read, not yet consumed by a request
    Stage stage = Stage::kIdle;
    int64_t deadline = 0;
    size_t headEnd = 0;  ///< offset just past "\r\n\r\n"
    size_t bodyLen = 0;
    bool keepAlive = true;
    bool eof = false;  ///< the client shut its side after sending
    http::Request req;
  };
  struct Job {
    std::unique_ptr<Conn> conn;
    int64_t enqueued = 0;
    int64_t enqueuedUs = 0;  ///< for the queue wait histogram
  };
  struct Buffers {
    http::Response resp;
    std::string gz;
  };

  Impl(const HttpServerOptions& o, const http::Routes& r) : opts(o), routes(r) {}

  // --- set-up and tear-down ------------------------------------------------
  void bind() {
    const std::string& addr = opts.listenAddress;
    auto colon = addr.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("bad listen address " + addr);
    std::string host = addr.substr(0, colon);
    std::string port = addr.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = host.empty() ? AF_INET6 : AF_UNSPEC;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0 && host.empty()) {  // no IPv6: all IPv4 interfaces
      hints.ai_family = AF_INET;
      rc = ::getaddrinfo(nullptr, port.c_str(), &hints, &res);
    }
    if (rc != 0) throw std::runtime_error(std::string("cannot resolve: ") + gai_strerror(rc));
    int err = 0;
    for (addrinfo* a = res; a; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        err = errno;
        continue;
      }
      int one = 1, zero = 0;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (a->ai_family == AF_INET6 && host.empty())
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) {
        listenFd = fd;
        break;
      }
      err = errno;
      ::close(fd);
    }
    ::freeaddrinfo(res);
    if (listenFd < 0) throw std::runtime_error(std::strerror(err));
  }

  void start() {
    bind();
    epollFd = ::epoll_create1(EPOLL_CLOEXEC);
    wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epollFd < 0 || wakeFd < 0) throw std::runtime_error("epoll: " + std::string(strerror(errno)));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listenFd;
    ::epoll_ctl(epollFd, EPOLL_CTL_ADD, listenFd, &ev);
    ev.data.fd = wakeFd;
    ::epoll_ctl(epollFd, EPOLL_CTL_ADD, wakeFd, &ev);
    front = std::thread([this] { frontLoop(); });
    for (int i = 0; i < std::max(1, opts.threads); ++i)
      workers.emplace_back([this] { workerLoop(); });
  }

  void stop() {
    stopping = true;
    wake();
    if (front.joinable()) front.join();
    {
      std::lock_guard<std::mutex> g(qmu);
      qcv.notify_all();
    }
    for (auto& w : workers) w.join();
    for (auto& j : queue) drop(std::move(j.conn));
    queue.clear();
    for (auto& c : returned) drop(std::move(c));
    returned.clear();
    for (auto& [fd, c] : conns) drop(std::move(c));
    conns.clear();
    if (listenFd >= 0) ::close(listenFd);
    if (epollFd >= 0) ::close(epollFd);
    if (wakeFd >= 0) ::close(wakeFd);
  }

  void wake() {
    uint64_t one = 1;
    (void)!::write(wakeFd, &one, sizeof one);
  }

  // --- the front thread: accept, read, bound, hand off --------------------
  void frontLoop() {
    std::vector<epoll_event> events(256);
    int64_t nextSweep = nowMs() + 100;
    while (!stopping) {
      int n = ::epoll_wait(epollFd, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == listenFd) {
          acceptAll();
        } else if (fd == wakeFd) {
          uint64_t v;
          (void)!::read(wakeFd, &v, sizeof v);
          takeReturned();
        } else {
          readable(fd);
        }
      }
      int64_t now = nowMs();
      if (now >= nextSweep) {
        sweep(now);
        nextSweep = now + 100;
      }
    }
  }

  void acceptAll() {
    for (;;) {
      int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno == EMFILE || errno == ENFILE) {
          log::warn("HTTP accept failed", "err=" + log::quote(std::strerror(errno)));
        }
        return;
      }
      ++accepted;
      if (open.load() >= opts.maxConnections) {
        ++refusedConnections;
        ++refused[kMaxConnections];
        // Over TLS nothing readable can be said before a handshake.
        if (!opts.tlsContext) sendErrorNow(fd, nullptr, 503, "too many connections");
        ::close(fd);
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->stage = Stage::kHead;
      c->deadline = nowMs() + opts.readTimeoutMs;
      if (opts.tlsContext) {
        TlsContext ctx = opts.tlsContext();  // the current one (a reload may change it)
        c->ssl = ctx ? SSL_new(ctx.get()) : nullptr;  // holds its own reference to ctx
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
          log::warn("TLS: cannot set up a connection");
          if (c->ssl) SSL_free(c->ssl);
          ::close(fd);
          continue;
        }
        SSL_set_accept_state(c->ssl);
        c->stage = Stage::kHandshake;
        c->deadline = nowMs() + opts.handshakeTimeoutMs;
      }
      ++open;
      watch(std::move(c));
    }
  }

  /// Puts a connection (new or back from a worker) under the front's care.
  void watch(std::unique_ptr<Conn> c) {
    epoll_event ev{};
    c->wantWrite = false;
    ev.events = EPOLLIN;
    ev.data.fd = c->fd;
    int fd = c->fd;
    if (::epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      drop(std::move(c));
      return;
    }
    Conn& ref = *c;
    conns[fd] = std::move(c);
    if (ref.ssl && SSL_pending(ref.ssl) > 0) {
      readable(fd);  // decrypted bytes wait inside OpenSSL: epoll will not say so
    } else if (!ref.in.empty()) {
      advance(ref);  // a pipelined request already read
    }
  }

  /// Watches for writable too while TLS needs to write to go on.
  void setWantWrite(Conn& c, bool want) {
    if (c.wantWrite == want) return;
    c.wantWrite = want;
    epoll_event ev{};
    ev.events = want ? EPOLLIN | EPOLLOUT : EPOLLIN;
    ev.data.fd = c.fd;
    ::epoll_ctl(epollFd, EPOLL_CTL_MOD, c.fd, &ev);
  }

  /// Moves a TLS handshake on. True once it is done (the connection then
  /// reads its request head, with a fresh read deadline); false while it
  /// waits, or after a failure closed the connection.
  bool handshake(Conn& c) {
    ERR_clear_error();
    int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      setWantWrite(c, false);
      c.stage = Stage::kHead;
      c.deadline = nowMs() + opts.readTimeoutMs;
      return true;
    }
    int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      setWantWrite(c, e == SSL_ERROR_WANT_WRITE);
      return false;
    }
    ++handshakeFailures;
    unsigned long code = ERR_peek_last_error();
    char why[256] = "connection closed";
    if (code) ERR_error_string_n(code, why, sizeof why);
    ERR_clear_error();
    log::debug("TLS handshake failed", "err=" + log::quote(why));
    close(c.fd);
    return false;
  }

  void takeReturned() {
    std::vector<std::unique_ptr<Conn>> back;
    {
      std::lock_guard<std::mutex> g(rmu);
      back.swap(returned);
    }
    for (auto& c : back) watch(std::move(c));
  }

  void close(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    ::epoll_ctl(epollFd, EPOLL_CTL_DEL, fd, nullptr);
    drop(std::move(it->second));
    conns.erase(it);
  }

  void drop(std::unique_ptr<Conn> c) {
    if (c->ssl) {
      // close_notify if the socket takes it now; never waits.
      if (c->stage != Stage::kHandshake) (void)SSL_shutdown(c->ssl);
      ERR_clear_error();
      SSL_free(c->ssl);
    }
    ::close(c->fd);
    --open;
  }

  void fail(Conn& c, Refusal r, int status, std::string_view why) {
    ++refused[r];
    sendErrorNow(c.fd, c.ssl, status, why);
    close(c.fd);
  }

  void readable(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (c.stage == Stage::kHandshake && !handshake(c)) return;
    char buf[16384];
    for (;;) {
      size_t n = 0;
      bool wantWrite = false;
      Io r = recvSome(fd, c.ssl, buf, sizeof buf, n, wantWrite);
      if (r == Io::kOk) {
        if (c.stage == Stage::kIdle) {
          c.stage = Stage::kHead;
          c.deadline = nowMs() + opts.readTimeoutMs;
        }
        c.in.append(buf, n);
        // Never hold more than one request's worth.
        if (c.in.size() > opts.maxHeadBytes + http::kMaxBodyBytes) break;
        continue;
      }
      if (r == Io::kAgain) {
        if (c.ssl) setWantWrite(c, wantWrite);
        break;
      }
      if (r == Io::kEof && !c.in.empty()) {  // half-closed after a request: answer it
        c.eof = true;
        advance(c);
        if (conns.count(fd)) close(fd);
        return;
      }
      close(fd);  // EOF or error
      return;
    }
    advance(c);
  }

  /// Moves a connection on as far as its bytes allow: head parsed, body
  /// complete, handed to a worker, or refused.
  void advance(Conn& c) {
    if (c.stage == Stage::kIdle && !c.in.empty()) {
      c.stage = Stage::kHead;
      c.deadline = nowMs() + opts.readTimeoutMs;
    }
    if (c.stage == Stage::kHead) {
      size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (c.in.size() > opts.maxHeadBytes)
          return fail(c, kHeadTooLarge, 431, "request line and headers too large");
        return;
      }
      if (end + 4 > opts.maxHeadBytes)
        return fail(c, kHeadTooLarge, 431, "request line and headers too large");
      c.headEnd = end + 4;
      std::string why;
      int status = parseHead(c, std::string_view(c.in).substr(0, end), why);
      if (status != 0) {
        return fail(c, status == 431 ? kTooManyHeaders : status == 411 ? kChunked : kMalformed,
                    status, why);
      }
      if (c.bodyLen > http::kMaxBodyBytes) return fail(c, kBodyTooLarge, 413, "body too large");
      c.stage = Stage::kBody;
      c.deadline = nowMs() + opts.readTimeoutMs;
      if (c.bodyLen > 0 && iequals(c.req.header("Expect"), "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        sendNow(c.fd, c.ssl, kContinue);
      }
    }
    if (c.stage == Stage::kBody) {
      if (c.in.size() < c.headEnd + c.bodyLen) return;
      c.req.body.assign(c.in, c.headEnd, c.bodyLen);
      c.in.erase(0, c.headEnd + c.bodyLen);
      c.stage = Stage::kIdle;
      if (c.eof) c.keepAlive = false;
      handOff(c.fd);
    }
  }

  /// Fills c.req, c.bodyLen and c.keepAlive from the head (without the
  /// blank line). 0, or the status to refuse it with.
  int parseHead(Conn& c, std::string_view head, std::string& why) {
    http::HeadInfo info;
    int status = http::parseRequestHead(head, c.req, info, why);
    c.bodyLen = info.bodyLen;
    c.keepAlive = info.keepAlive;
    return status;
  }

  void handOff(int fd) {
    auto it = conns.find(fd);
    std::unique_ptr<Conn> c = std::move(it->second);
    conns.erase(it);
    ::epoll_ctl(epollFd, EPOLL_CTL_DEL, fd, nullptr);
    std::lock_guard<std::mutex> g(qmu);
    if (queue.size() >= kMaxQueued) {
      ++refused[kQueueFull];
      sendErrorNow(fd, c->ssl, 503, "too many requests at once");
      drop(std::move(c));
      return;
    }
    queue.push_back({std::move(c), nowMs(), nowUs()});
    qcv.notify_one();
  }

  void sweep(int64_t now) {
    std::vector<std::pair<int, Stage>> expired;
    for (auto& [fd, c] : conns) {
      if (now > c->deadline) expired.emplace_back(fd, c->stage);  // strictly: see nowMs
    }
    for (auto [fd, stage] : expired) {
      if (stage == Stage::kIdle || stage == Stage::kHandshake) {
        if (stage == Stage::kHandshake) ++handshakeTimeouts;
        close(fd);
      } else {
        auto it = conns.find(fd);
        const bool head = stage == Stage::kHead;
        fail(*it->second, head ? kHeadTimeout : kBodyTimeout, 408,
             head ? "request head not received in time" : "request body not received in time");
      }
    }
  }

  // --- workers: one complete request each ----------------------------------
  void workerLoop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> g(qmu);
        qcv.wait(g, [this] { return stopping || !queue.empty(); });
        if (stopping) return;
        job = std::move(queue.front());
        queue.pop_front();
        const int64_t waited = nowUs() - job.enqueuedUs;
        queueWaits.observe(waited > 0 ? static_cast<uint64_t>(waited) : 0);
      }
      serve(job);
    }
  }

  void serve(Job& job) {
    Conn& c = *job.conn;
    auto b = acquire();
    http::Response& resp = b->resp;
    resp.status = 200;
    resp.contentType = "application/json";
    resp.compressible = false;
    resp.body.clear();  // keeps its capacity for the next scrape
    resp.headers.clear();
    if (nowMs() - job.enqueued > opts.queueWaitMs) {
      ++refused[kQueueWait];
      http::replyError(resp, 503, "too many requests at once, retry later");
      c.keepAlive = false;
    } else {
      http::dispatch(routes, c.req, resp);
    }
    std::string extra = opts.responseHeaders ? opts.responseHeaders() : std::string();
    for (const auto& [name, value] : resp.headers) extra += name + ": " + value + "\r\n";
    int64_t deadline = nowMs() + opts.writeTimeoutMs;
    bool ok;
    const std::string& ae = c.req.header("Accept-Encoding");
    if (resp.compressible && ae.find("gzip") != std::string::npos &&
        gzipCompress(resp.body, opts.gzipLevel, b->gz)) {
      ok = writeAll(c.fd, c.ssl,
                    responseHead(resp.status, resp.contentType, b->gz.size(), c.keepAlive,
                                 extra + "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n"),
                    deadline) &&
           writeAll(c.fd, c.ssl, b->gz, deadline);
    } else {
      ok = writeAll(c.fd, c.ssl, responseHead(resp.status, resp.contentType, resp.body.size(),
                                       c.keepAlive, extra),
                    deadline) &&
           writeAll(c.fd, c.ssl, resp.body, deadline);
    }
    release(std::move(b));
    if (!ok || !c.keepAlive || stopping) {
      drop(std::move(job.conn));
      return;
    }
    c.stage = Stage::kIdle;
    c.deadline = nowMs() + opts.idleTimeoutMs;
    c.req = http::Request{};
    {
      std::lock_guard<std::mutex> g(rmu);
      returned.push_back(std::move(job.conn));
    }
    wake();
  }

  std::unique_ptr<Buffers> acquire() {
    std::lock_guard<std::mutex> g(bmu);
    if (freeBuffers.empty()) return std::make_unique<Buffers>();
    auto b = std::move(freeBuffers.back());
    freeBuffers.pop_back();
    return b;
  }
  void release(std::unique_ptr<Buffers> b) {
    std::lock_guard<std::mutex> g(bmu);
    freeBuffers.push_back(std::move(b));
  }

  static constexpr size_t kMaxQueued = 1024;

  HttpServerOptions opts;
  const http::Routes& routes;
  int listenFd = -1;
  int epollFd = -1;
  int wakeFd = -1;
  std::atomic<bool> stopping{false};
  std::atomic<int> open{0};
  std::atomic<uint64_t> refusedConnections{0};
  std::atomic<uint64_t> handshakeFailures{0};
  std::atomic<uint64_t> handshakeTimeouts{0};
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused[kRefusalCount] = {};
  QueueWaitHistogram queueWaits;  ///< guarded by qmu
  std::unordered_map<int, std::unique_ptr<Conn>> conns;  ///< front thread only
  std::thread front;
  std::vector<std::thread> workers;
  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<Job> queue;
  std::mutex rmu;
  std::vector<std::unique_ptr<Conn>> returned;
  std::mutex bmu;
  std::vector<std::unique_ptr<Buffers>> freeBuffers;
};

bool gzipCompress(std::string_view in, int level, std::string& out) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out.resize(deflateBound(&zs, in.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END;
}

HttpServer::HttpServer(const HttpServerOptions& opts, const http::Routes& routes)
    : impl_(std::make_unique<Impl>(opts, routes)) {
  try {
    impl_->start();
  } catch (const std::exception& e) {
    impl_->stop();
    throw std::runtime_error("cannot listen on " + opts.listenAddress + ": " + e.what());
  }
}

HttpServer::~HttpServer() {
  if (impl_) impl_->stop();
}

HttpServerStats HttpServer::stats() const {
  HttpServerStats s;
  s.refusedConnections = impl_->refusedConnections.load();
  s.handshakeFailures = impl_->handshakeFailures.load();
  s.handshakeTimeouts = impl_->handshakeTimeouts.load();
  return s;
}

void HttpServer::collect(metrics::Sink& sink) const {
  sink.add(kAccepted, {}, static_cast<double>(impl_->accepted.load()));
  sink.add(kOpen, {}, static_cast<double>(impl_->open.load()));
  for (int r = 0; r < kRefusalCount; ++r) {
    sink.add(kRefused, {kRefusalNames[r].code, kRefusalNames[r].reason},
             static_cast<double>(impl_->refused[r].load()));
  }
  sink.add(kHandshakes, {"error"}, static_cast<double>(impl_->handshakeFailures.load()));
  sink.add(kHandshakes, {"timeout"}, static_cast<double>(impl_->handshakeTimeouts.load()));
  QueueWaitHistogram waits;
  {
    std::lock_guard<std::mutex> g(impl_->qmu);
    waits = impl_->queueWaits;
  }
  waits.addTo(sink, kQueueWaitDesc, {});
}

std::vector<const metrics::Desc*> HttpServer::describe() {
  return {&kAccepted, &kOpen, &kRefused, &kHandshakes, &kQueueWaitDesc};
}

int HttpServer::port() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(impl_->listenFd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

}  // namespace memcg
