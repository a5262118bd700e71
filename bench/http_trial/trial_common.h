// What the three trial servers share: the command line, the /metrics body and
// the limits, so that only the HTTP library differs between them.
//
//   <server> [--threads N] [--max-conn N] [--read-timeout-ms N]
//            [--idle-timeout-ms N] [--queue-wait-ms N] [--tls CERT KEY]
//
// Each prints "port <n>" on stdout once it listens on 127.0.0.1 (any port) and
// serves until stdin closes or it is killed:
//   GET  /metrics  the same ~200 KB exposition text (text/plain; version=0.0.4)
//   GET  /slow     answers "slow" after 1.5 s on a worker (for the queue test)
//   POST /echo     answers the body's length (for the body tests)
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace trial {

inline constexpr size_t kMaxHeadBytes = 16 * 1024;
inline constexpr size_t kMaxBodyBytes = 64 * 1024;
inline constexpr int kSlowHandlerMs = 1500;

struct Options {
  int threads = 2;
  int maxConn = 4096;
  int readTimeoutMs = 3000;
  int idleTimeoutMs = 2000;
  int queueWaitMs = 500;
  std::string certFile, keyFile;  ///< both set: TLS
};

inline Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto is = [&](const char* f) { return std::strcmp(argv[i], f) == 0 && i + 1 < argc; };
    if (is("--threads")) o.threads = std::atoi(argv[++i]);
    else if (is("--max-conn")) o.maxConn = std::atoi(argv[++i]);
    else if (is("--read-timeout-ms")) o.readTimeoutMs = std::atoi(argv[++i]);
    else if (is("--idle-timeout-ms")) o.idleTimeoutMs = std::atoi(argv[++i]);
    else if (is("--queue-wait-ms")) o.queueWaitMs = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--tls") == 0 && i + 2 < argc) {
      o.certFile = argv[++i];
      o.keyFile = argv[++i];
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  return o;
}

inline std::string readFile(const std::string& path) {
  std::string s;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    std::fclose(f);
  }
  return s;
}

/// A fixed exposition shaped like the exporter's at ~360 cgroups: a few
/// families, every series labelled with a cgroup path (~200 KB).
inline const std::string& metricsBody() {
  static const std::string body = [] {
    std::string s;
    const char* families[] = {"memcg_memory_usage_bytes", "memcg_memory_limit_bytes",
                              "memcg_reclaim_pages_total", "memcg_pgscan_total",
                              "memcg_pgsteal_total", "memcg_oom_events_total"};
    for (const char* f : families) {
      s += "# HELP ";
      s += f;
      s += " Trial family.\n# TYPE ";
      s += f;
      s += std::strstr(f, "_total") ? " counter\n" : " gauge\n";
      for (int i = 0; i < 360; ++i) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "%s{cgroup=\"/kubepods/burstable/pod%08x-%04d/container-%d\"} %d\n", f,
                      i * 2654435761u, i, i % 7, i * 4096 + 17);
        s += line;
      }
    }
    return s;
  }();
  return body;
}

/// The port line the driver waits for.
inline void announce(int port) {
  std::printf("port %d\n", port);
  std::fflush(stdout);
}

/// Blocks until stdin is closed (the driver's way to stop a server).
inline void waitForStdinClose() {
  char c;
  while (std::fread(&c, 1, 1, stdin) == 1) {
  }
}

}  // namespace trial
