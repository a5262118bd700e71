#include "tools/memcgtool/query.h"

#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "common/http_client.h"
#include "promql/labels.h"

namespace memcg::tool {
namespace {

/// A query answer larger than this is refused rather than buffered.
constexpr size_t kMaxAnswerBytes = 256u << 20;
constexpr int64_t kTimeoutMs = 120000;

std::string metricString(const nlohmann::json& metric) {
  std::string name;
  std::vector<promql::Label> ls;
  for (auto it = metric.begin(); it != metric.end(); ++it) {
    if (it.key() == promql::kMetricName) {
      name = it.value().get<std::string>();
    } else {
      ls.push_back({it.key(), it.value().get<std::string>()});
    }
  }
  promql::Labels sorted = promql::makeLabels(std::move(ls));
  if (!name.empty() && sorted.empty()) return name;
  return name + promql::labelsString(sorted);
}

std::string pointString(const nlohmann::json& p) {
  // [ <unix seconds float>, "<value>" ]
  std::string t = p.at(0).dump();
  return p.at(1).get<std::string>() + " @[" + t + "]";
}

}  // namespace

bool renderQueryResponse(const std::string& body, std::string& text) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    text = "bad response (not JSON): " + body.substr(0, 200);
    return false;
  }
  if (j.value("status", "") != "success") {
    text = j.value("errorType", "error") + ": " + j.value("error", "unknown error");
    return false;
  }
  try {
    const auto& data = j.at("data");
    std::string type = data.at("resultType").get<std::string>();
    const auto& res = data.at("result");
    text.clear();
    if (type == "scalar" || type == "string") {
      text = (type == "scalar" ? "scalar: " : "string: ") + pointString(res) + "\n";
    } else if (type == "vector") {
      for (const auto& s : res)
        text += metricString(s.at("metric")) + " => " + pointString(s.at("value")) + "\n";
    } else if (type == "matrix") {
      for (const auto& s : res) {
        text += metricString(s.at("metric")) + " =>\n";
        for (const auto& p : s.at("values")) text += pointString(p) + "\n";
      }
    } else {
      text = "unknown result type " + type;
      return false;
    }
  } catch (const nlohmann::json::exception& e) {
    text = std::string("bad response: ") + e.what();
    return false;
  }
  return true;
}

int queryMain(int argc, char** argv, std::ostream& out, std::ostream& err) {
  auto usage = [&]() {
    err << "usage: memcgtool query instant [--time T] URL EXPR\n"
           "       memcgtool query range --start T --end T [--step D] URL EXPR\n"
           "  T: RFC 3339 or unix seconds; D: a duration (15s) or seconds\n";
    return 2;
  };
  if (argc < 1) return usage();
  std::string mode = argv[0];
  if (mode != "instant" && mode != "range") return usage();
  std::string time, start, end, step;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string& dst) {
      if (i + 1 >= argc) return false;
      dst = argv[++i];
      return true;
    };
    bool ok = true;
    if (a == "--time")
      ok = value(time);
    else if (a == "--start")
      ok = value(start);
    else if (a == "--end")
      ok = value(end);
    else if (a == "--step")
      ok = value(step);
    else if (a.size() > 1 && a[0] == '-' && a[1] == '-')
      return usage();
    else
      pos.push_back(a);
    if (!ok) return usage();
  }
  if (pos.size() != 2) return usage();
  if (mode == "range" && (start.empty() || end.empty())) return usage();
  auto base = parseClientUrl(pos[0]);
  if (!base.ok()) {
    err << "memcgtool: " << pos[0] << ": " << base.error().detail << "\n";
    return 2;
  }
  std::string path = base->path == "/" ? std::string() : base->path;
  path += std::string(mode == "instant" ? "/api/v1/query" : "/api/v1/query_range") +
          "?query=" + queryEscape(pos[1]);
  if (mode == "instant" && !time.empty()) path += "&time=" + queryEscape(time);
  if (mode == "range") {
    path += "&start=" + queryEscape(start) + "&end=" + queryEscape(end);
    path += "&step=" + queryEscape(step.empty() ? "15s" : step);
  }
  // The one outbound client (common/http_client.h), without TLS or auth options.
  HttpClient client{HttpClientConfig{}};
  auto reply = client.get(*base, path, kTimeoutMs, kMaxAnswerBytes);
  if (!reply.ok()) {
    err << "memcgtool: " << base->text << path << ": " << reply.error().detail << "\n";
    return 1;
  }
  std::string text;
  if (!renderQueryResponse(reply->body, text)) {
    err << "memcgtool: query failed (HTTP " << reply->status << "): " << text << "\n";
    return 1;
  }
  out << text;
  return 0;
}

}  // namespace memcg::tool
