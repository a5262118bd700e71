// A loopback HTTP/1.1 server for tests of outbound clients (the notifier,
// the alert puller): one request per connection; records each request (its
// head and body) and answers with the status and body set now, or never
// answers when the status is 0 (holds the connection until the client gives
// up).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace memcg::test {

class FakeHttpServer {
 public:
  struct Request {
    std::string line;  ///< "GET /path HTTP/1.1"
    std::string head;  ///< the request line and headers
    std::string body;
  };
  explicit FakeHttpServer(int status, std::string body = {})
      : status_(status), body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  void answer(int status, std::string body) {
    std::lock_guard<std::mutex> g(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  std::vector<Request> all() {
    std::lock_guard<std::mutex> g(mu_);
    return reqs_;
  }
  /// (request line, body) of each request.
  std::vector<std::pair<std::string, std::string>> requests() {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& r : all()) out.push_back({r.line, r.body});
    return out;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string in;
      char buf[4096];
      size_t want = std::string::npos;
      while (want == std::string::npos || in.size() < want) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
        size_t e = in.find("\r\n\r\n");
        if (e != std::string::npos && want == std::string::npos) {
          size_t cl = in.find("Content-Length: ");
          want = e + 4 + (cl < e ? std::stoul(in.substr(cl + 16)) : 0);
        }
      }
      size_t e = in.find("\r\n\r\n");
      int status;
      std::string body;
      {
        std::lock_guard<std::mutex> g(mu_);
        reqs_.push_back({in.substr(0, in.find("\r\n")), in.substr(0, e),
                         e == std::string::npos ? "" : in.substr(e + 4)});
        status = status_;
        body = body_;
      }
      if (status == 0) {
        pollfd q{c, POLLIN, 0};
        while (!stop_ && ::poll(&q, 1, 20) == 0) {
        }
      } else {
        if (body.empty() && status / 100 != 2) body = "bad";
        std::string r = "HTTP/1.1 " + std::to_string(status) +
                        " X\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body;
        size_t off = 0;
        while (off < r.size()) {
          ssize_t n = ::write(c, r.data() + off, r.size() - off);
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
      }
      ::close(c);
    }
  }
  int status_;
  std::string body_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Request> reqs_;
  std::thread thread_;
};

}  // namespace memcg::test
