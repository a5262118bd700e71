#include "tools/memcgtool/query.h"

#include <curl/curl.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "promql/labels.h"

namespace memcg::tool {
namespace {

size_t collect(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::string escape(CURL* c, const std::string& s) {
  char* e = curl_easy_escape(c, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

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
  CURL* c = curl_easy_init();
  if (c == nullptr) {
    err << "memcgtool: curl_easy_init failed\n";
    return 1;
  }
  std::string base = pos[0];
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url = base + (mode == "instant" ? "/api/v1/query" : "/api/v1/query_range") +
                    "?query=" + escape(c, pos[1]);
  if (mode == "instant" && !time.empty()) url += "&time=" + escape(c, time);
  if (mode == "range") {
    url += "&start=" + escape(c, start) + "&end=" + escape(c, end);
    url += "&step=" + escape(c, step.empty() ? "15s" : step);
  }
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    err << "memcgtool: " << url << ": " << curl_easy_strerror(rc) << "\n";
    return 1;
  }
  std::string text;
  if (!renderQueryResponse(body, text)) {
    err << "memcgtool: query failed (HTTP " << status << "): " << text << "\n";
    return 1;
  }
  out << text;
  return 0;
}

}  // namespace memcg::tool
