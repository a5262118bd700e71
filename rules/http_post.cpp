#include "rules/http_post.h"
#include "common/clock.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/fd.h"
#include "common/parse.h"

namespace memcg::rules {
namespace {

// Deadlines are kept in microseconds: a millisecond clock truncates the start
// and could end a 200 ms timeout after 199 ms.
int64_t steadyUs() { return clock::steadyUs(); }

/// Waits until `fd` is ready for `events` or the deadline passes.
Status waitFd(int fd, short events, int64_t deadlineUs, const std::string& what) {
  for (;;) {
    const int64_t left = deadlineUs - steadyUs();
    if (left <= 0) return makeError(ETIMEDOUT, what, "timed out");
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>((left + 999) / 1000));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return makeError(errno, what, "poll");
    if (n > 0) return Ok{};
  }
}

Result<Fd> connectTo(const HttpUrl& url, int64_t deadlineUs) {
  const std::string what = url.text;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &res); rc != 0)
    return makeError(EHOSTUNREACH, what, std::string("resolve: ") + ::gai_strerror(rc));
  Error last = makeError(ECONNREFUSED, what, "no address");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                   ai->ai_protocol));
    if (!fd.valid()) {
      last = makeError(errno, what, "socket");
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = makeError(errno, what, "connect");
        continue;
      }
      if (auto w = waitFd(fd.get(), POLLOUT, deadlineUs, what); !w.ok()) {
        last = w.error();
        continue;
      }
      int soerr = 0;
      socklen_t len = sizeof soerr;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr != 0) {
        last = makeError(soerr, what, "connect");
        continue;
      }
    }
    ::freeaddrinfo(res);
    return fd;
  }
  ::freeaddrinfo(res);
  return last;
}

}  // namespace

Result<HttpUrl> parseHttpUrl(std::string_view url) {
  HttpUrl u;
  u.text = std::string(url);
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, 8) == "https://")
    return makeError(EINVAL, u.text, "https is not supported (use http://)");
  if (url.substr(0, kScheme.size()) != kScheme)
    return makeError(EINVAL, u.text, "not an http:// URL");
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "/" : rest.substr(slash);
  if (path.find_first_of("?# ") != std::string_view::npos)
    return makeError(EINVAL, u.text, "a query, fragment or space in the path");
  if (hostport.find('@') != std::string_view::npos)
    return makeError(EINVAL, u.text, "credentials in the URL are not supported");
  std::string_view port;
  if (!hostport.empty() && hostport[0] == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return makeError(EINVAL, u.text, "unclosed '['");
    u.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return makeError(EINVAL, u.text, "junk after ']'");
      port = after.substr(1);
    }
  } else {
    const size_t colon = hostport.rfind(':');
    u.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) port = hostport.substr(colon + 1);
  }
  if (u.host.empty()) return makeError(EINVAL, u.text, "no host");
  if (port.empty() && hostport.back() == ':')
    return makeError(EINVAL, u.text, "empty port");
  if (!port.empty()) {
    auto p = parseU64(port);
    if (!p || *p == 0 || *p > 65535) return makeError(EINVAL, u.text, "bad port");
    u.port = std::string(port);
  } else {
    u.port = "80";
  }
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  u.path = p;
  return u;
}

Result<HttpReply> httpPost(const HttpUrl& url, const std::string& path,
                           std::string_view contentType, std::string_view body,
                           int64_t timeoutMs) {
  const int64_t deadline = steadyUs() + timeoutMs * 1000;
  auto fd = connectTo(url, deadline);
  if (!fd.ok()) return fd.error();
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string req =
      "POST " + path + " HTTP/1.1\r\nHost: " + (v6 ? "[" + url.host + "]" : url.host) +
      ":" + url.port +
      "\r\nUser-Agent: memcg_exporter\r\nContent-Type: " + std::string(contentType) +
      "\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n";
  req.append(body);
  size_t off = 0;
  while (off < req.size()) {
    const ssize_t n = ::send(fd->get(), req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto w = waitFd(fd->get(), POLLOUT, deadline, url.text); !w.ok())
        return w.error();
      continue;
    }
    return makeError(errno, url.text, "send");
  }
  // Read the status line and headers, then the body up to Content-Length
  // (or to the close); only the first 4 KiB of the body are kept.
  constexpr size_t kKeep = 4096;
  std::string in;
  size_t headerEnd = std::string::npos;
  size_t contentLength = std::string::npos;
  char buf[4096];
  for (;;) {
    if (headerEnd != std::string::npos && contentLength != std::string::npos &&
        in.size() - headerEnd >= std::min(contentLength, kKeep))
      break;
    const ssize_t n = ::recv(fd->get(), buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto w = waitFd(fd->get(), POLLIN, deadline, url.text); !w.ok())
        return w.error();
      continue;
    }
    if (n < 0) return makeError(errno, url.text, "recv");
    if (headerEnd == std::string::npos || in.size() - headerEnd < kKeep)
      in.append(buf, static_cast<size_t>(n));
    if (headerEnd == std::string::npos) {
      const size_t e = in.find("\r\n\r\n");
      if (e != std::string::npos) {
        headerEnd = e + 4;
        std::string lower = in.substr(0, e);
        for (auto& c : lower)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const size_t cl = lower.find("\r\ncontent-length:");
        if (cl != std::string::npos) {
          size_t b = cl + 17;
          while (b < lower.size() && lower[b] == ' ') ++b;
          size_t en = b;
          while (en < lower.size() && std::isdigit(static_cast<unsigned char>(lower[en])))
            ++en;
          if (auto v = parseU64(std::string_view(lower).substr(b, en - b)))
            contentLength = static_cast<size_t>(*v);
        }
      } else if (in.size() > 64 * 1024) {
        return makeError(EPROTO, url.text, "reply headers too long");
      }
    }
  }
  HttpReply r;
  int major = 0, minor = 0, status = 0;
  if (std::sscanf(in.c_str(), "HTTP/%d.%d %d", &major, &minor, &status) != 3 ||
      status < 100 || status > 999)
    return makeError(EPROTO, url.text, "not an HTTP reply");
  r.status = status;
  if (headerEnd != std::string::npos) r.body = in.substr(headerEnd, kKeep);
  return r;
}

}  // namespace memcg::rules
