// PromQL engine benchmark: ours on its in-memory storage, on data shaped like the
// exporter's at N cgroups (bench/promql_bench.sh puts Prometheus 2.42 beside it).
//
//   promql_bench [--cgroups 1000] [--minutes 15] [--kinds 2] [--runs 7]
//                [--remote-write http://127.0.0.1:PORT/api/v1/write] [--results FILE]
//                [--interleave]
//
// Data (1 s resolution, deterministic): per cgroup and reclaim kind the stall
// histogram memcg_vmscan_reclaim_stall_seconds_bucket{cgroup,kind,le} with the
// exporter's bucket bounds (tracing/aggregator.h) plus _sum and _count, and per
// cgroup memcg_memory_failcnt_total, memcg_memory_usage_bytes, memcg_memory_limit_bytes
// (10% unlimited: +Inf). With --remote-write the same samples go to a Prometheus
// remote-write receiver first (protobuf and a literal-only snappy block, both written
// here), in time order. Then every query of kQueries runs --runs times as an instant
// query at the end and as a range query over the last 14 minutes at 15 s; one JSON
// line per query and kind goes to stdout: timings (ms) and a digest of the answer, so
// the driver can check that both engines answered the same. With --interleave each timed
// run waits for a line on stdin and reports {"run_ms": ..}, so that the driver can time
// Prometheus in between: both see the same machine load (it is shared).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "promql/parser.h"
#include "promql/storage.h"
#include "tracing/aggregator.h"

using namespace memcg;
using namespace memcg::promql;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int cgroups = 1000;
  int minutes = 15;
  int kinds = 2;
  int runs = 7;
  bool interleave = false;  ///< wait for a line on stdin before each timed run
  std::string remote_write;
  std::string results;
};

// The benchmark's queries: what dashboards and the shipped rules ask.
struct BenchQuery {
  const char* name;
  const char* expr;
};
constexpr BenchQuery kQueries[] = {
    {"stall_p99",
     "histogram_quantile(0.99, sum by (cgroup, le) "
     "(rate(memcg_vmscan_reclaim_stall_seconds_bucket[1m])))"},
    {"failcnt_top10", "topk(10, rate(memcg_memory_failcnt_total[1m]))"},
    {"usage_ratio", "memcg_memory_usage_bytes / memcg_memory_limit_bytes"},
};

constexpr int64_t kT0 = 1'700'000'000'000;  // ms; a fixed start keeps runs comparable
constexpr const char* kKinds[] = {"direct", "memcg", "softlimit", "proactive"};

// splitmix64: small, fast, the same sequence on every machine.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double normal() {  // Box-Muller, one of the pair
    double u = std::max(uniform(), 1e-300), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }
};

std::string fmtLe(double v) {
  char buf[32];
  auto r =
      std::to_chars(buf, buf + sizeof buf, v);  // shortest: "2.5e-06", "0.0001", "10"
  return std::string(buf, r.ptr);
}

Labels lbls(std::initializer_list<std::pair<const char*, std::string>> l) {
  std::vector<Label> v;
  for (const auto& [n, val] : l) v.push_back({n, val});
  return makeLabels(std::move(v));
}

/// Fills the storage; returns the number of samples.
size_t generate(const Options& o, MemoryStorage& st) {
  const int64_t n = int64_t{o.minutes} * 60 + 1;
  const size_t nb = tracing::kStallBoundsNs.size();
  std::vector<std::string> les;
  for (uint64_t ns : tracing::kStallBoundsNs)
    les.push_back(fmtLe(static_cast<double>(ns) / 1e9));
  les.push_back("+Inf");
  size_t samples = 0;
  Rng rng{42};
  char cg[48];
  for (int c = 0; c < o.cgroups; ++c) {
    std::snprintf(cg, sizeof cg, "/kubepods/burstable/pod%04d", c);
    const std::string inst = "host-1:9851", job = "memcg";
    // A few cgroups reclaim a lot, most a little (stall rate per second).
    const double busy = rng.uniform() < 0.1 ? 20.0 : 0.5 * rng.uniform();
    for (int k = 0; k < o.kinds; ++k) {
      std::vector<Labels> bucket_labels;
      for (const auto& le : les) {
        bucket_labels.push_back(
            lbls({{"__name__", "memcg_vmscan_reclaim_stall_seconds_bucket"},
                  {"cgroup", cg},
                  {"kind", kKinds[k]},
                  {"le", le},
                  {"instance", inst},
                  {"job", job}}));
      }
      Labels sum_l = lbls({{"__name__", "memcg_vmscan_reclaim_stall_seconds_sum"},
                           {"cgroup", cg},
                           {"kind", kKinds[k]},
                           {"instance", inst},
                           {"job", job}});
      Labels count_l = lbls({{"__name__", "memcg_vmscan_reclaim_stall_seconds_count"},
                             {"cgroup", cg},
                             {"kind", kKinds[k]},
                             {"instance", inst},
                             {"job", job}});
      std::vector<uint64_t> counts(nb + 1, 0);
      std::vector<std::vector<double>> rows(nb + 1, std::vector<double>(n));
      std::vector<double> sums(n), totals(n);
      double sum_s = 0;
      uint64_t total = 0;
      const double mu = std::log(k == 0 ? 2e-4 : 3e-5);
      for (int64_t i = 0; i < n; ++i) {
        int stalls = static_cast<int>(busy * 2 * rng.uniform());
        for (int s = 0; s < stalls; ++s) {
          double d = std::exp(mu + 1.6 * rng.normal());
          uint64_t ns = static_cast<uint64_t>(d * 1e9);
          size_t b = 0;
          while (b < nb && ns > tracing::kStallBoundsNs[b]) ++b;
          ++counts[b];
          ++total;
          sum_s += d;
        }
        uint64_t run = 0;
        for (size_t b = 0; b <= nb; ++b)
          rows[b][i] = static_cast<double>(run += counts[b]);
        sums[i] = sum_s;
        totals[i] = static_cast<double>(total);
      }
      for (size_t b = 0; b <= nb; ++b) {
        for (int64_t i = 0; i < n; ++i)
          st.append(bucket_labels[b], kT0 + i * 1000, rows[b][i]);
      }
      for (int64_t i = 0; i < n; ++i) {
        st.append(sum_l, kT0 + i * 1000, sums[i]);
        st.append(count_l, kT0 + i * 1000, totals[i]);
      }
      samples += (nb + 3) * static_cast<size_t>(n);
    }
    Labels fail_l = lbls({{"__name__", "memcg_memory_failcnt_total"},
                          {"cgroup", cg},
                          {"instance", inst},
                          {"job", job}});
    Labels usage_l = lbls({{"__name__", "memcg_memory_usage_bytes"},
                           {"cgroup", cg},
                           {"instance", inst},
                           {"job", job}});
    Labels limit_l = lbls({{"__name__", "memcg_memory_limit_bytes"},
                           {"cgroup", cg},
                           {"instance", inst},
                           {"job", job}});
    const double limit = rng.uniform() < 0.1
                             ? INFINITY
                             : std::ldexp(1.0 + std::floor(rng.uniform() * 64), 26);
    double usage = std::isinf(limit) ? std::ldexp(1.0, 30) : limit * 0.6;
    double fail = 0;
    const double fail_rate = busy > 1              ? 30 * rng.uniform()
                             : rng.uniform() < 0.3 ? rng.uniform()
                                                   : 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = kT0 + i * 1000;
      fail += std::floor(fail_rate * 2 * rng.uniform());
      usage = std::max(4096.0, usage + std::floor(rng.normal() * 1e6 / 4096) * 4096);
      if (!std::isinf(limit)) usage = std::min(usage, limit);
      st.append(fail_l, t, fail);
      st.append(usage_l, t, usage);
      st.append(limit_l, t, limit);
    }
    samples += 3 * static_cast<size_t>(n);
  }
  return samples;
}

// ---------------------------------------------------------------- remote write

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void lenField(std::string& out, int field, std::string_view payload) {
  varint(out, static_cast<uint64_t>(field) << 3 | 2);
  varint(out, payload.size());
  out.append(payload);
}

/// A snappy block made of literals only: valid snappy that any decoder reads.
std::string snappyLiterals(std::string_view in) {
  std::string out;
  varint(out, in.size());
  for (size_t off = 0; off < in.size(); off += 65536) {
    size_t len = std::min<size_t>(65536, in.size() - off);
    size_t l1 = len - 1;
    if (l1 < 60) {
      out.push_back(static_cast<char>(l1 << 2));
    } else if (l1 < 256) {
      out.push_back(static_cast<char>(60 << 2));
      out.push_back(static_cast<char>(l1));
    } else {
      out.push_back(static_cast<char>(61 << 2));
      out.push_back(static_cast<char>(l1 & 0xff));
      out.push_back(static_cast<char>(l1 >> 8));
    }
    out.append(in.substr(off, len));
  }
  return out;
}

struct Url {
  std::string host;
  int port = 0;
  std::string path;
};
bool parseUrl(const std::string& u, Url& out) {
  const std::string p = "http://";
  if (u.rfind(p, 0) != 0) return false;
  size_t colon = u.find(':', p.size()), slash = u.find('/', p.size());
  if (colon == std::string::npos || slash == std::string::npos || colon > slash)
    return false;
  out.host = u.substr(p.size(), colon - p.size());
  out.port = std::atoi(u.substr(colon + 1, slash - colon - 1).c_str());
  out.path = u.substr(slash);
  return out.port > 0;
}

/// One HTTP/1.1 POST on loopback; returns the status code (0 on a transport error).
int httpPost(const Url& url, const std::string& body, std::string& response) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(url.port));
  if (::inet_pton(AF_INET, url.host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return 0;
  }
  std::string req =
      "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host +
      "\r\nContent-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n"
      "X-Prometheus-Remote-Write-Version: 0.1.0\r\nConnection: close\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  req += body;
  for (size_t off = 0; off < req.size();) {
    ssize_t w = ::write(fd, req.data() + off, req.size() - off);
    if (w <= 0) {
      ::close(fd);
      return 0;
    }
    off += static_cast<size_t>(w);
  }
  response.clear();
  char buf[4096];
  for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;)
    response.append(buf, static_cast<size_t>(r));
  ::close(fd);
  int code = 0;
  if (response.rfind("HTTP/1.", 0) == 0 && response.size() > 12)
    code = std::atoi(response.c_str() + 9);
  return code;
}

/// Sends every sample, a window of time at a time (the head wants in-order samples).
bool remoteWrite(const Options& o, const MemoryStorage& st) {
  Url url;
  if (!parseUrl(o.remote_write, url)) {
    std::fprintf(stderr, "promql_bench: bad --remote-write URL %s\n",
                 o.remote_write.c_str());
    return false;
  }
  const int64_t end = kT0 + int64_t{o.minutes} * 60'000;
  const int64_t win = 20'000;
  std::vector<Matcher> all{Matcher(MatchType::kRegex, "__name__", ".+")};
  for (int64_t w0 = kT0; w0 <= end; w0 += win) {
    auto q = st.querier(w0, w0 + win - 1);
    std::vector<SeriesView> views;
    q->select(all, w0, w0 + win - 1, views);
    std::string msg, ts, lab, smp;
    for (const auto& v : views) {
      ts.clear();
      for (const auto& l : *v.labels) {
        lab.clear();
        lenField(lab, 1, l.name);
        lenField(lab, 2, l.value);
        lenField(ts, 1, lab);
      }
      for (const auto& s : v.samples) {
        if (s.t < w0 || s.t >= w0 + win) continue;
        smp.clear();
        smp.push_back(0x09);
        char d[8];
        std::memcpy(d, &s.v, 8);  // little-endian double, as protobuf's fixed64
        smp.append(d, 8);
        smp.push_back(0x10);
        varint(smp, static_cast<uint64_t>(s.t));
        lenField(ts, 2, smp);
      }
      lenField(msg, 1, ts);
    }
    std::string resp;
    int code = httpPost(url, snappyLiterals(msg), resp);
    if (code < 200 || code >= 300) {
      std::fprintf(stderr, "promql_bench: remote write failed (%d): %.300s\n", code,
                   resp.c_str());
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------- timing

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

std::string jsonEscape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    o.push_back(c);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "promql_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--cgroups")
      o.cgroups = std::atoi(val().c_str());
    else if (a == "--minutes")
      o.minutes = std::atoi(val().c_str());
    else if (a == "--kinds")
      o.kinds = std::clamp(std::atoi(val().c_str()), 1, 4);
    else if (a == "--runs")
      o.runs = std::max(1, std::atoi(val().c_str()));
    else if (a == "--remote-write")
      o.remote_write = val();
    else if (a == "--results")
      o.results = val();
    else if (a == "--interleave")
      o.interleave = true;
    else {
      std::fprintf(
          stderr,
          "usage: promql_bench [--cgroups N] [--minutes M] [--kinds K] [--runs R] "
          "[--remote-write URL] [--results FILE] [--interleave]\n");
      return 2;
    }
  }
  MemoryStorage st;
  auto g0 = Clock::now();
  size_t samples = generate(o, st);
  double gen_s = std::chrono::duration<double>(Clock::now() - g0).count();
  const int64_t end = kT0 + int64_t{o.minutes} * 60'000;
  std::printf(
      "{\"data\": {\"series\": %zu, \"samples\": %zu, \"t0_ms\": %lld, \"end_ms\": %lld, "
      "\"generate_s\": %.2f}}\n",
      st.seriesCount(), samples, static_cast<long long>(kT0), static_cast<long long>(end),
      gen_s);
  std::fflush(stdout);
  if (!o.remote_write.empty()) {
    auto w0 = Clock::now();
    if (!remoteWrite(o, st)) return 1;
    std::printf("{\"remote_write_s\": %.2f}\n",
                std::chrono::duration<double>(Clock::now() - w0).count());
    std::fflush(stdout);
  }
  std::ofstream results;
  if (!o.results.empty()) results.open(o.results);
  // The range: the last 14 minutes at 15 s (the first minute only fills the [1m]
  // windows).
  const int64_t rstart = kT0 + 60'000, rstep = 15'000;
  const Engine engine;
  for (const auto& q : kQueries) {
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<double> ms;
      QueryResult answer;
      const char* kname = kind == 0 ? "instant" : "range";
      if (o.interleave) {
        std::printf(
            "{\"next\": {\"query\": \"%s\", \"expr\": \"%s\", \"kind\": \"%s\"}}\n",
            q.name, jsonEscape(q.expr).c_str(), kname);
        std::fflush(stdout);
      }
      for (int r = 0; r < o.runs; ++r) {
        if (o.interleave) {
          // The driver runs Prometheus' turn in between and says "go" for ours.
          char line[16];
          if (std::fgets(line, sizeof line, stdin) == nullptr) return 1;
        }
        // Timed: parse + evaluation (Prometheus' evalTotalTime leaves out its parse).
        auto t0 = Clock::now();
        auto expr = parseExpr(q.expr);
        if (!expr) {
          std::fprintf(stderr, "promql_bench: %s: %s\n", q.expr,
                       expr.error().detail.c_str());
          return 1;
        }
        auto res = kind == 0 ? engine.instantQuery(st, **expr, end)
                             : engine.rangeQuery(st, **expr, rstart, end, rstep);
        ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (!res) {
          std::fprintf(stderr, "promql_bench: %s: %s\n", q.expr,
                       res.error().detail.c_str());
          return 1;
        }
        answer = std::move(*res);
        if (o.interleave) {
          std::printf("{\"run_ms\": %.3f}\n", ms.back());
          std::fflush(stdout);
        }
      }
      size_t points = 0;
      for (const auto& s : answer.series) points += s.points.size();
      std::printf(
          "{\"query\": \"%s\", \"expr\": \"%s\", \"kind\": \"%s\", \"runs\": %d, "
          "\"median_ms\": %.3f, \"min_ms\": %.3f, \"series\": %zu, \"points\": %zu}\n",
          q.name, jsonEscape(q.expr).c_str(), kname, o.runs, median(ms),
          *std::min_element(ms.begin(), ms.end()), answer.series.size(), points);
      std::fflush(stdout);
      if (results.is_open()) {
        // One line per series: query, kind, labels, then t=v pairs (for the cross-check).
        for (const auto& s : answer.series) {
          results << q.name << '\t' << kname << '\t' << labelsString(s.labels);
          for (const auto& p : s.points) {
            char buf[32];
            auto e = std::to_chars(buf, buf + sizeof buf, p.v);
            // Instant answers carry the evaluation time.
            results << '\t' << (kind == 0 ? end : p.t) << '='
                    << std::string_view(buf, static_cast<size_t>(e.ptr - buf));
          }
          results << '\n';
        }
      }
    }
  }
  return 0;
}
