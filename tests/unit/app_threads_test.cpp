// Every thread of the composition root at once, for the TSan stage:
// the history's sampler (every 10 ms), the rule engine (a recording and an
// alerting rule every 20 ms), the HTTP front thread and its workers, while
// clients scrape /metrics and ask the query, rules and alerts APIs over
// loopback. A data race fails the TSan build of this test; in every build the
// answers must stay whole and right: every request 200, the recorded sum
// equal to the sum of the same samples, the alert firing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "exporter/app.h"
#include "tests/support/loopback_http.h"
#include "tests/support/temp_tree.h"

namespace memcg {
namespace {

/// One HTTP/1.0 GET on loopback: the status code and the body (0 when the
/// exchange failed).
std::pair<int, std::string> httpGet(int port, const std::string& path) {
  const std::string out =
      test::loopbackExchange(port, "GET " + path + " HTTP/1.0\r\n\r\n");
  if (out.rfind("HTTP/1.1 ", 0) != 0) return {0, out};
  const size_t body = out.find("\r\n\r\n");
  return {std::atoi(out.c_str() + 9),
          body == std::string::npos ? "" : out.substr(body + 4)};
}

/// The first sample value of an instant-vector answer of the query API, NaN
/// when there is none.
double firstValue(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return NAN;
  const auto& r = j["data"]["result"];
  if (!r.is_array() || r.empty()) return NAN;
  return std::stod(r[0]["value"][1].get<std::string>());
}

TEST(AppThreads, SamplerRulesQueriesAndScrapesRunTogether) {
  test::TempTree t;
  {
    std::ofstream f(t.path("rules.yml"));
    f << "groups:\n"
         "  - name: threads\n"
         "    interval: 20ms\n"
         "    rules:\n"
         "      - record: threads:usage_bytes:sum\n"
         "        expr: sum(memcg_memory_usage_bytes)\n"
         "      - alert: ThreadsUsage\n"
         "        expr: threads:usage_bytes:sum > 0\n";
  }
  const std::string cg = "--path.cgroupfs=" + test::fixturePath("cgroupfs/v2");
  const std::string proc = "--path.procfs=" + test::fixturePath("procfs");
  const std::string journal = "--controller.journal=" + t.path("journal");
  const std::string rules = "--rules.file=" + t.path("rules.yml");
  std::vector<const char*> args = {"memcg_exporter",
                                   cg.c_str(),
                                   proc.c_str(),
                                   "--no-collector.vmscan",
                                   "--web.listen-address=127.0.0.1:0",
                                   "--web.threads=3",
                                   "--history.interval=10ms",
                                   "--history.retention=1m",
                                   "--cgroup.refresh-interval-ms=0",
                                   journal.c_str(),
                                   rules.c_str()};
  App app(parseFlags(static_cast<int>(args.size()), args.data()));
  const int port = app.port();
  ASSERT_GT(port, 0);

  // For at least a second (~100 sampler passes, ~50 rule evaluations), until
  // each client has made kMin requests and the recorded series is seen (a
  // generous deadline: TSan and a loaded machine are slow).
  constexpr int kMin = 40;
  const auto start = std::chrono::steady_clock::now();
  const auto minEnd = start + std::chrono::seconds(1);
  const auto deadline = start + std::chrono::seconds(120);
  std::atomic<bool> recorded{false};
  struct Client {
    std::string path;
    int done = 0, failed = 0;
    std::string lastFailure;
  };
  const long now = static_cast<long>(std::time(nullptr));
  std::vector<Client> clients;
  for (std::string p : std::vector<std::string>{
           "/metrics", "/metrics", "/api/v1/query?query=threads:usage_bytes:sum",
           "/api/v1/query_range?query=sum(memcg_memory_usage_bytes)&step=0.5&start=" +
               std::to_string(now - 30) + "&end=" + std::to_string(now + 300),
           "/api/v1/rules", "/api/v1/alerts"})
    clients.push_back(Client{p, 0, 0, {}});
  std::vector<std::thread> threads;
  for (auto& c : clients) {
    threads.emplace_back([&c, &recorded, port, minEnd, deadline] {
      for (auto now = std::chrono::steady_clock::now();
           now < deadline && (now < minEnd || c.done < kMin || !recorded.load());
           now = std::chrono::steady_clock::now()) {
        auto [code, body] = httpGet(port, c.path);
        ++c.done;
        if (code != 200) {
          ++c.failed;
          c.lastFailure = std::to_string(code) + " " + body.substr(0, 200);
        } else if (c.path.find("threads:usage") != std::string::npos &&
                   !std::isnan(firstValue(body))) {
          recorded = true;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& c : clients) {
    EXPECT_GE(c.done, kMin) << c.path;
    EXPECT_EQ(c.failed, 0) << c.path << ": " << c.lastFailure;
  }
  ASSERT_TRUE(recorded) << "the recording rule's output never reached the history";

  // The recorded sum is the sum of the samples it was computed from: both
  // queried at one evaluation time of the rule, whose output is written at it.
  auto alerts =
      nlohmann::json::parse(httpGet(port, "/api/v1/alerts").second, nullptr, false);
  ASSERT_FALSE(alerts.is_discarded());
  bool firing = false;
  for (const auto& a : alerts["data"]["alerts"])
    firing |= a["labels"]["alertname"] == "ThreadsUsage" && a["state"] == "firing";
  EXPECT_TRUE(firing) << alerts.dump();
  auto series = nlohmann::json::parse(
      httpGet(port, "/api/v1/query?query=timestamp(threads:usage_bytes:sum)").second,
      nullptr, false);
  ASSERT_FALSE(series.is_discarded());
  const std::string ts = series["data"]["result"][0]["value"][1].get<std::string>();
  const double recordedSum = firstValue(
      httpGet(port, "/api/v1/query?query=threads:usage_bytes:sum&time=" + ts).second);
  const double directSum = firstValue(
      httpGet(port, "/api/v1/query?query=sum(memcg_memory_usage_bytes)&time=" + ts)
          .second);
  EXPECT_GT(recordedSum, 0);
  EXPECT_DOUBLE_EQ(recordedSum, directSum);
}

}  // namespace
}  // namespace memcg
