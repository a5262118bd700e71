// Seed 001's workload, small and fast enough that memcg reclaim is a visible
// share of a request's latency (the Python server's own milliseconds hid it).
//
//   seed001_http serve FILE PORT [write_fraction=0] [chunk_kib=64] [log_file]
//     HTTP/1.1 keep-alive server, one thread per connection. Every request
//     serves a random chunk of FILE (pread). With probability write_fraction
//     the request also stores a fresh chunk, which leaves dirty page cache:
//     at that offset of FILE (pwrite; a caching proxy refreshing an object),
//     or, with log_file, appended to it (an ingest journal / upload log).
//     Files are opened without O_DIRECT/O_SYNC: writeback is the kernel's.
//
//   seed001_http load PORT RATE SECONDS [conns=8] [warm_seconds=0]
//     Open-loop load at RATE requests/s in total over `conns` keep-alive
//     connections (wrk2's model: connection i sends its k-th request at
//     t0 + (k * conns + i) / RATE). Latency is measured from the intended
//     send time, so a stall also counts against the requests that queued
//     behind it (no coordinated omission). The first warm_seconds are sent
//     but not counted. Prints one line:
//       p50_ms p99_ms p999_ms max_ms achieved_rps requests errors late_starts
//     late_starts = requests sent more than 1 ms after their intended time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

bool writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void noDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// ---- serve ----------------------------------------------------------------

struct ServeConfig {
  int file = -1;
  uint64_t chunks = 0;
  size_t chunk = 64 << 10;
  double writeFraction = 0;
  int log = -1;  ///< append target; -1 = write in place
};

void serveConnection(int c, const ServeConfig& cfg, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<char> body(cfg.chunk), fresh(cfg.chunk);
  for (auto& b : fresh) b = static_cast<char>(rng());
  std::string in;
  char buf[4096];
  noDelay(c);
  for (;;) {
    size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t r = ::recv(c, buf, sizeof buf, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return ::close(c), void();
      in.append(buf, static_cast<size_t>(r));
    }
    in.erase(0, end + 4);  // requests carry no body
    uint64_t off = (rng() % cfg.chunks) * cfg.chunk;
    if (cfg.writeFraction > 0 && coin(rng) < cfg.writeFraction) {
      fresh[rng() % cfg.chunk] ^= 1;  // new content each time
      ssize_t w = cfg.log >= 0 ? ::write(cfg.log, fresh.data(), cfg.chunk)
                               : ::pwrite(cfg.file, fresh.data(), cfg.chunk, static_cast<off_t>(off));
      static std::atomic<bool> warned{false};
      if (w != static_cast<ssize_t>(cfg.chunk) && !warned.exchange(true)) std::perror("write");
    }
    ssize_t n = ::pread(cfg.file, body.data(), cfg.chunk, static_cast<off_t>(off));
    if (n < 0) n = 0;
    char head[128];
    int h = std::snprintf(head, sizeof head,
                          "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                          "Content-Length: %zd\r\n\r\n", n);
    if (!writeAll(c, head, static_cast<size_t>(h)) ||
        !writeAll(c, body.data(), static_cast<size_t>(n))) {
      return ::close(c), void();
    }
  }
}

int serve(int argc, char** argv) {
  if (argc < 4) {
    return std::fprintf(stderr, "usage: serve FILE PORT [write_fraction] [chunk_kib] [log_file]\n"), 2;
  }
  ServeConfig cfg;
  cfg.writeFraction = argc > 4 ? std::atof(argv[4]) : 0;
  if (argc > 5) cfg.chunk = static_cast<size_t>(std::atoi(argv[5])) << 10;
  if (argc > 6) {
    cfg.log = ::open(argv[6], O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (cfg.log < 0) return std::perror(argv[6]), 1;
  }
  cfg.file = ::open(argv[2], cfg.writeFraction > 0 && cfg.log < 0 ? O_RDWR : O_RDONLY);
  struct stat st{};
  if (cfg.file < 0 || ::fstat(cfg.file, &st) != 0) return std::perror(argv[2]), 1;
  cfg.chunks = static_cast<uint64_t>(st.st_size) / cfg.chunk;
  if (cfg.chunks == 0) return std::fprintf(stderr, "%s: smaller than a chunk\n", argv[2]), 1;
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[3])));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 128) != 0) {
    return std::perror("bind/listen"), 1;
  }
  std::random_device rd;
  for (;;) {
    int c = ::accept(s, nullptr, nullptr);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return std::perror("accept"), 1;
    }
    std::thread(serveConnection, c, std::cref(cfg), (uint64_t{rd()} << 32) ^ rd()).detach();
  }
}

// ---- load -----------------------------------------------------------------

int connectTo(uint16_t port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(s);
    return -1;
  }
  noDelay(s);
  return s;
}

// Reads one response (headers + Content-Length body). False on error.
bool readResponse(int s, std::string& in) {
  char buf[65536];
  size_t end;
  while ((end = in.find("\r\n\r\n")) == std::string::npos) {
    ssize_t r = ::recv(s, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    in.append(buf, static_cast<size_t>(r));
  }
  if (in.compare(0, 12, "HTTP/1.1 200") != 0) return false;
  size_t cl = in.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return false;
  size_t len = std::strtoull(in.c_str() + cl + 16, nullptr, 10);
  size_t need = end + 4 + len;
  while (in.size() < need) {
    ssize_t r = ::recv(s, buf, std::min(sizeof buf, need - in.size()), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    in.append(buf, static_cast<size_t>(r));
  }
  in.erase(0, need);
  return true;
}

int load(int argc, char** argv) {
  if (argc < 5) return std::fprintf(stderr, "usage: load PORT RATE SECONDS [conns] [warm_seconds]\n"), 2;
  auto port = static_cast<uint16_t>(std::atoi(argv[2]));
  double rate = std::atof(argv[3]), secs = std::atof(argv[4]);
  int conns = argc > 5 ? std::atoi(argv[5]) : 8;
  double warm = argc > 6 ? std::atof(argv[6]) : 0;
  if (rate <= 0 || secs <= 0 || conns <= 0) return std::fprintf(stderr, "load: bad arguments\n"), 2;
  const double interval = conns / rate;  // seconds between one connection's sends
  const auto t0 = Clock::now() + std::chrono::milliseconds(50);
  const auto tEnd = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(warm + secs));
  const auto tMeasure = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(warm));
  std::mutex mu;
  std::vector<double> lat;  // ms, measured window only
  std::atomic<uint64_t> errors{0}, late{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < conns; ++i) {
    ts.emplace_back([&, i] {
      std::vector<double> mine;
      int s = connectTo(port);
      std::string in;
      const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
      for (uint64_t k = 0;; ++k) {
        auto intended = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>((k + i / double(conns)) * interval));
        if (intended >= tEnd) break;
        std::this_thread::sleep_until(intended);
        auto sent = Clock::now();
        bool ok = s >= 0 && writeAll(s, req, sizeof req - 1) && readResponse(s, in);
        auto done = Clock::now();
        if (intended < tMeasure) {
          if (!ok) { if (s >= 0) ::close(s); s = connectTo(port); in.clear(); }
          continue;
        }
        if (sent - intended > std::chrono::milliseconds(1)) late.fetch_add(1);
        if (!ok) {
          errors.fetch_add(1);
          if (s >= 0) ::close(s);
          s = connectTo(port);
          in.clear();
          continue;
        }
        mine.push_back(std::chrono::duration<double, std::milli>(done - intended).count());
      }
      if (s >= 0) ::close(s);
      std::lock_guard<std::mutex> l(mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : ts) t.join();
  if (lat.empty()) return std::fprintf(stderr, "load: no successful request\n"), 1;
  std::sort(lat.begin(), lat.end());
  auto pct = [&](double q) {
    size_t idx = static_cast<size_t>(q * static_cast<double>(lat.size() - 1) + 0.5);
    return lat[std::min(idx, lat.size() - 1)];
  };
  std::printf("%.3f %.3f %.3f %.3f %.1f %zu %llu %llu\n", pct(0.5), pct(0.99), pct(0.999),
              lat.back(), static_cast<double>(lat.size()) / secs, lat.size(),
              static_cast<unsigned long long>(errors.load()),
              static_cast<unsigned long long>(late.load()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "serve") return serve(argc, argv);
  if (cmd == "load") return load(argc, argv);
  std::fprintf(stderr, "usage: %s serve FILE PORT [write_fraction] [chunk_kib] [log_file]\n"
                       "       %s load PORT RATE SECONDS [conns] [warm_seconds]\n", argv[0], argv[0]);
  return 2;
}
