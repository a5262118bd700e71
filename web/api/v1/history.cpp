#include "web/api/v1/history.h"
#include "common/clock.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "metrics/descriptors.h"
#include "promql/lexer.h"
#include "promql/parser.h"

namespace memcg::history {
namespace {

using nlohmann::json;

const metrics::Desc kQueries =
    metrics::nodeCounter("memcg_exporter_history_api_requests_total",
                         "Query API requests, by endpoint.", {"endpoint"});
const metrics::Desc kErrors = metrics::nodeCounter(
    "memcg_exporter_history_api_errors_total",
    "Query API requests answered with an error, by endpoint.", {"endpoint"});
const metrics::Desc kSeconds = metrics::nodeCounter(
    "memcg_exporter_history_api_duration_seconds_total",
    "Time spent answering query API requests, by endpoint.", {"endpoint"});

constexpr const char* kEndpoints[] = {"query",     "query_range",    "series",
                                      "labels",    "label_values",   "metadata",
                                      "buildinfo", "query_exemplars"};
constexpr size_t kNumEndpoints = std::size(kEndpoints);


// Every value of `name` in the query string and, for a form POST, the body.
std::vector<std::string> params(const http::Request& req, std::string_view name) {
  std::vector<std::string> out;
  auto scan = [&](std::string_view raw) {
    size_t pos = 0;
    while (pos <= raw.size() && !raw.empty()) {
      size_t amp = raw.find('&', pos);
      if (amp == std::string_view::npos) amp = raw.size();
      std::string_view kv = raw.substr(pos, amp - pos);
      size_t eq = kv.find('=');
      std::string key = http::queryParam("k=" + std::string(kv.substr(0, eq)), "k");
      if (key == name) {
        out.push_back(http::queryParam(
            "v=" + std::string(eq == std::string_view::npos ? "" : kv.substr(eq + 1)),
            "v"));
      }
      pos = amp + 1;
    }
  };
  scan(req.query);
  if (req.method == "POST") scan(req.body);
  return out;
}
std::string param(const http::Request& req, std::string_view name) {
  auto v = params(req, name);
  return v.empty() ? std::string() : v.front();
}

std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[400];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}
json point(int64_t t, double v) {
  return json::array({static_cast<double>(t) / 1000.0, formatValue(v)});
}
json metricJson(const promql::Labels& ls) {
  json m = json::object();
  for (const auto& l : ls) m[l.name] = l.value;
  return m;
}

struct ApiError {
  int status;
  std::string type;
  std::string message;
};

void replySuccess(http::Response& resp, json data,
                  const std::vector<std::string>& warnings = {}) {
  json j = {{"status", "success"}, {"data", std::move(data)}};
  if (!warnings.empty()) j["warnings"] = warnings;
  http::replyJson(resp, j, 200);
}
void replyApiError(http::Response& resp, const ApiError& e) {
  http::replyJson(resp,
                  json{{"status", "error"}, {"errorType", e.type}, {"error", e.message}},
                  e.status);
}
ApiError badData(std::string m) { return {400, "bad_data", std::move(m)}; }

// Counts the samples a query loads; past the limit it stops handing them out
// and the query fails with Prometheus' message.
class LimitedStorage final : public promql::Storage {
 public:
  LimitedStorage(const promql::Storage& s, int64_t limit) : s_(s), limit_(limit) {}
  std::unique_ptr<promql::Querier> querier(int64_t mint, int64_t maxt) const override {
    struct Q final : promql::Querier {
      std::unique_ptr<promql::Querier> inner;
      const LimitedStorage* owner;
      void select(const std::vector<promql::Matcher>& ms, int64_t mint, int64_t maxt,
                  std::vector<promql::SeriesView>& out) override {
        size_t from = out.size();
        inner->select(ms, mint, maxt, out);
        for (size_t i = from; i < out.size(); ++i) {
          owner->loaded_ += static_cast<int64_t>(out[i].samples.size());
        }
        if (owner->loaded_ > owner->limit_) out.resize(from);
      }
    };
    auto q = std::make_unique<Q>();
    q->inner = s_.querier(mint, maxt);
    q->owner = this;
    return q;
  }
  bool exceeded() const { return loaded_ > limit_; }

 private:
  const promql::Storage& s_;
  int64_t limit_;
  mutable std::atomic<int64_t> loaded_{0};
};

Result<std::vector<std::vector<promql::Matcher>>> parseMatches(
    const std::vector<std::string>& in) {
  std::vector<std::vector<promql::Matcher>> out;
  for (const auto& m : in) {
    auto e = promql::parseExpr(m);
    if (!e.ok()) return e.error();
    if ((*e)->kind != promql::NodeKind::kVectorSelector)
      return makeError(EINVAL, "match[]", "not a series selector: " + m);
    out.push_back(static_cast<promql::VectorSelector*>(e->get())->matchers);
  }
  return out;
}

}  // namespace

bool parseApiTime(std::string_view s, int64_t& ms) {
  if (s.empty()) return false;
  // Unix seconds, possibly fractional.
  {
    double d;
    auto r = std::from_chars(s.data(), s.data() + s.size(), d);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(d)) {
      ms = static_cast<int64_t>(std::llround(d * 1000.0));
      return true;
    }
  }
  // Prometheus' minTime/maxTime renderings, which clients echo back.
  if (s == "-292273086-05-16T16:47:06Z") {
    ms = std::numeric_limits<int64_t>::min() / 2;
    return true;
  }
  if (s == "292277025-08-18T07:12:54.999999999Z") {
    ms = std::numeric_limits<int64_t>::max() / 2;
    return true;
  }
  // RFC 3339: YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)
  int Y, M, D, h, m, sec;
  if (s.size() < 20) return false;
  std::string str(s);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &Y, &M, &D, &h, &m, &sec) !=
          6 ||
      str[4] != '-' || str[7] != '-' || (str[10] != 'T' && str[10] != 't') ||
      str[13] != ':' || str[16] != ':')
    return false;
  size_t i = 19;
  int64_t frac = 0;
  if (i < str.size() && str[i] == '.') {
    ++i;
    int digits = 0;
    while (i < str.size() && std::isdigit(static_cast<unsigned char>(str[i]))) {
      if (digits < 3) frac = frac * 10 + (str[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0) return false;
    for (int d = digits; d < 3; ++d) frac *= 10;
  }
  int64_t off = 0;
  if (i < str.size() && (str[i] == 'Z' || str[i] == 'z')) {
    ++i;
  } else if (i + 6 == str.size() && (str[i] == '+' || str[i] == '-') &&
             str[i + 3] == ':') {
    int oh = std::atoi(str.substr(i + 1, 2).c_str()),
        om = std::atoi(str.substr(i + 4, 2).c_str());
    off = (oh * 60 + om) * 60 * (str[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return false;
  }
  if (i != str.size() || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 ||
      sec > 60)
    return false;
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  const int64_t secs = static_cast<int64_t>(timegm(&tm)) - off;
  ms = secs * 1000 + frac;
  return true;
}

bool parseApiDuration(std::string_view s, int64_t& ms) {
  if (s.empty()) return false;
  double d;
  auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size()) {
    if (!std::isfinite(d) || d * 1000 > 9.2e18 || d * 1000 < -9.2e18) return false;
    ms = static_cast<int64_t>(std::llround(d * 1000.0));
    return true;
  }
  return parseDurationMs(s, ms);
}

struct QueryApi::Impl {
  const History& history;
  ApiOptions opts;
  promql::Engine engine;
  std::atomic<uint64_t> requests[kNumEndpoints]{};
  std::atomic<uint64_t> errors[kNumEndpoints]{};
  std::atomic<uint64_t> micros[kNumEndpoints]{};

  Impl(const History& h, ApiOptions o)
      : history(h), opts(std::move(o)), engine([&] {
          promql::EngineOptions e;
          e.lookbackDeltaMs = opts.lookbackMs;
          e.maxRangeSteps = opts.maxPoints;
          return e;
        }()) {}

  // Times: `name` or the default.
  bool time(const http::Request& req, const char* name, int64_t def, int64_t& out,
            ApiError& err) {
    const std::string v = param(req, name);
    if (v.empty()) {
      out = def;
      return true;
    }
    if (!parseApiTime(v, out)) {
      err = badData(std::string("invalid parameter \"") + name + "\": cannot parse \"" +
                    v + "\" to a valid timestamp");
      return false;
    }
    return true;
  }

  /// The evaluator's deadline: `timeoutMs` from now.
  static promql::Deadline deadline(int64_t timeoutMs) {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  }

  bool timeout(const http::Request& req, int64_t& out, ApiError& err) {
    out = opts.timeoutMs;
    const std::string v = param(req, "timeout");
    if (v.empty()) return true;
    int64_t t;
    if (!parseApiDuration(v, t) || t <= 0) {
      err = badData("invalid parameter \"timeout\": cannot parse \"" + v +
                    "\" to a valid duration");
      return false;
    }
    out = std::min(t, opts.timeoutMs);
    return true;
  }

  std::optional<ApiError> evalResult(const Result<promql::QueryResult>& r,
                                     const LimitedStorage& ls, json& data) {
    if (ls.exceeded())
      return ApiError{422, "execution",
                      "query processing would load too many samples into memory in query "
                      "execution (limit " +
                          std::to_string(opts.maxSamples) + ")"};
    if (!r.ok()) {
      const auto& d = r.error().detail;
      // The evaluator gave up at the query's deadline (?timeout=, --query.timeout).
      if (r.error().err == ETIMEDOUT) return ApiError{503, "timeout", d};
      if (d.find("exceeded maximum resolution") != std::string::npos) return badData(d);
      return ApiError{422, "execution", d.empty() ? r.error().message() : d};
    }
    const auto& q = *r;
    json result;
    switch (q.type) {
      case promql::ValueType::kScalar:
        data = {{"resultType", "scalar"}, {"result", point(q.t, q.scalar)}};
        return std::nullopt;
      case promql::ValueType::kString:
        data = {{"resultType", "string"},
                {"result", json::array({static_cast<double>(q.t) / 1000.0, q.str})}};
        return std::nullopt;
      case promql::ValueType::kVector: {
        result = json::array();
        for (const auto& s : q.series) {
          if (s.points.empty()) continue;
          result.push_back({{"metric", metricJson(s.labels)},
                            {"value", point(s.points[0].t, s.points[0].v)}});
        }
        data = {{"resultType", "vector"}, {"result", result}};
        return std::nullopt;
      }
      default: {
        result = json::array();
        for (const auto& s : q.series) {
          json vals = json::array();
          for (const auto& p : s.points) vals.push_back(point(p.t, p.v));
          result.push_back({{"metric", metricJson(s.labels)}, {"values", vals}});
        }
        data = {{"resultType", "matrix"}, {"result", result}};
        return std::nullopt;
      }
    }
  }

  std::optional<ApiError> query(const http::Request& req, json& data) {
    ApiError err;
    const std::string qs = param(req, "query");
    int64_t t, to;
    const int64_t started = clock::wallMs();
    if (!time(req, "time", started, t, err) || !timeout(req, to, err)) return err;
    if (qs.empty())
      return badData(
          "invalid parameter \"query\": unknown position: parse error: no expression "
          "found in input");
    auto e = promql::parseExpr(qs);
    if (!e.ok()) return badData("invalid parameter \"query\": " + e.error().detail);
    LimitedStorage ls(history, opts.maxSamples);
    auto r = engine.instantQuery(ls, **e, t, deadline(to));
    return evalResult(r, ls, data);
  }

  std::optional<ApiError> queryRange(const http::Request& req, json& data) {
    ApiError err;
    int64_t start, end, step, to;
    if (param(req, "start").empty())
      return badData(
          "invalid parameter \"start\": cannot parse \"\" to a valid timestamp");
    if (param(req, "end").empty())
      return badData("invalid parameter \"end\": cannot parse \"\" to a valid timestamp");
    if (!time(req, "start", 0, start, err) || !time(req, "end", 0, end, err)) return err;
    if (end < start)
      return badData(
          "invalid parameter \"end\": end timestamp must not be before start time");
    const std::string sv = param(req, "step");
    if (!parseApiDuration(sv, step))
      return badData("invalid parameter \"step\": cannot parse \"" + sv +
                     "\" to a valid duration");
    if (step <= 0)
      return badData(
          "invalid parameter \"step\": zero or negative query resolution step widths are "
          "not accepted. Try a positive integer");
    if ((end - start) / step > opts.maxPoints)
      return badData(
          "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing "
          "the query resolution (?step=XX)");
    if (!timeout(req, to, err)) return err;
    const std::string qs = param(req, "query");
    if (qs.empty())
      return badData(
          "invalid parameter \"query\": unknown position: parse error: no expression "
          "found in input");
    auto e = promql::parseExpr(qs);
    if (!e.ok()) return badData("invalid parameter \"query\": " + e.error().detail);
    if ((*e)->type() != promql::ValueType::kScalar &&
        (*e)->type() != promql::ValueType::kVector)
      return badData(
          std::string("invalid parameter \"query\": invalid expression type \"") +
          promql::valueTypeName((*e)->type()) +
          "\" for range query, must be Scalar or instant Vector");
    LimitedStorage ls(history, opts.maxSamples);
    auto r = engine.rangeQuery(ls, **e, start, end, step, deadline(to));
    return evalResult(r, ls, data);
  }

  bool range(const http::Request& req, int64_t& mint, int64_t& maxt, ApiError& err) {
    return time(req, "start", std::numeric_limits<int64_t>::min() / 2, mint, err) &&
           time(req, "end", std::numeric_limits<int64_t>::max() / 2, maxt, err);
  }

  std::optional<ApiError> series(const http::Request& req, json& data) {
    ApiError err;
    int64_t mint, maxt;
    if (!range(req, mint, maxt, err)) return err;
    auto raw = params(req, "match[]");
    if (raw.empty()) return badData("no match[] parameter provided");
    auto ms = parseMatches(raw);
    if (!ms.ok()) return badData("invalid parameter \"match[]\": " + ms.error().detail);
    data = json::array();
    for (const auto& ls : history.series(*ms, mint, maxt)) data.push_back(metricJson(ls));
    return std::nullopt;
  }

  std::optional<ApiError> labels(const http::Request& req, json& data) {
    ApiError err;
    int64_t mint, maxt;
    if (!range(req, mint, maxt, err)) return err;
    auto ms = parseMatches(params(req, "match[]"));
    if (!ms.ok()) return badData("invalid parameter \"match[]\": " + ms.error().detail);
    data = history.labelNames(*ms, mint, maxt);
    return std::nullopt;
  }

  std::optional<ApiError> labelValues(const http::Request& req, json& data) {
    ApiError err;
    constexpr std::string_view kPrefix = "/api/v1/label/", kSuffix = "/values";
    std::string_view p = req.path;
    if (p.size() <= kPrefix.size() + kSuffix.size() ||
        p.substr(p.size() - kSuffix.size()) != kSuffix)
      return ApiError{404, "bad_data", "unknown path " + req.path};
    std::string name = http::queryParam(
        "n=" + std::string(
                   p.substr(kPrefix.size(), p.size() - kPrefix.size() - kSuffix.size())),
        "n");
    bool valid = !name.empty() &&
                 (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name)
      valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!valid) return badData("invalid label name: \"" + name + "\"");
    int64_t mint, maxt;
    if (!range(req, mint, maxt, err)) return err;
    auto ms = parseMatches(params(req, "match[]"));
    if (!ms.ok()) return badData("invalid parameter \"match[]\": " + ms.error().detail);
    data = history.labelValues(name, *ms, mint, maxt);
    return std::nullopt;
  }

  std::optional<ApiError> metadata(const http::Request& req, json& data) {
    const std::string metric = param(req, "metric");
    const std::string lim = param(req, "limit");
    long limit = -1;
    if (!lim.empty()) {
      auto r = std::from_chars(lim.data(), lim.data() + lim.size(), limit);
      if (r.ec != std::errc() || r.ptr != lim.data() + lim.size())
        return badData("invalid parameter \"limit\": \"" + lim + "\" is not a number");
    }
    std::vector<const metrics::Desc*> descs;
    if (opts.describe) descs = opts.describe();
    for (auto* d : History::describeMetrics()) descs.push_back(d);
    for (auto* d : QueryApi::describeMetrics()) descs.push_back(d);
    std::map<std::string, const metrics::Desc*> byName;
    for (auto* d : descs) byName.emplace(d->name, d);
    data = json::object();
    long n = 0;
    for (const auto& [name, d] : byName) {
      if (!metric.empty() && name != metric) continue;
      if (limit >= 0 && n >= limit) break;
      const char* type = d->type == metrics::Type::kCounter     ? "counter"
                         : d->type == metrics::Type::kHistogram ? "histogram"
                                                                : "gauge";
      data[name] = json::array({{{"type", type}, {"help", d->help}, {"unit", ""}}});
      ++n;
    }
    return std::nullopt;
  }

  std::optional<ApiError> buildinfo(const http::Request&, json& data) {
    data = {{"version", opts.version}, {"revision", opts.revision}, {"branch", ""},
            {"buildUser", ""},         {"buildDate", ""},           {"goVersion", ""}};
    return std::nullopt;
  }
};

QueryApi::QueryApi(const History& history, ApiOptions opts)
    : impl_(std::make_unique<Impl>(history, std::move(opts))) {}
QueryApi::~QueryApi() = default;

void QueryApi::registerRoutes(http::Routes& routes) {
  using Fn = std::optional<ApiError> (Impl::*)(const http::Request&, json&);
  struct Row {
    const char* path;
    size_t endpoint;
    Fn fn;
  };
  const Row rows[] = {
      {"/api/v1/query", 0, &Impl::query},
      {"/api/v1/query_range", 1, &Impl::queryRange},
      {"/api/v1/series", 2, &Impl::series},
      {"/api/v1/labels", 3, &Impl::labels},
      {"/api/v1/label/*", 4, &Impl::labelValues},
      {"/api/v1/metadata", 5, &Impl::metadata},
      {"/api/v1/status/buildinfo", 6, &Impl::buildinfo},
  };
  Impl* I = impl_.get();
  for (const auto& row : rows) {
    http::Handler h = [I, fn = row.fn, ep = row.endpoint](const http::Request& req,
                                                          http::Response& resp) {
      const auto start = std::chrono::steady_clock::now();
      json data;
      auto err = (I->*fn)(req, data);
      if (err) {
        replyApiError(resp, *err);
        I->errors[ep].fetch_add(1);
      } else {
        replySuccess(resp, std::move(data));
      }
      I->requests[ep].fetch_add(1);
      I->micros[ep].fetch_add(
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count()));
    };
    routes.add({"GET", row.path, h});
    routes.add({"POST", row.path, h});
  }
  // Grafana asks for exemplars next to range queries; the history has none.
  http::Handler ex = [I](const http::Request&, http::Response& resp) {
    replySuccess(resp, json::array());
    I->requests[7].fetch_add(1);
  };
  routes.add({"GET", "/api/v1/query_exemplars", ex});
  routes.add({"POST", "/api/v1/query_exemplars", ex});
}

void QueryApi::collectMetrics(metrics::Sink& sink) const {
  for (size_t i = 0; i < kNumEndpoints; ++i) {
    sink.add(kQueries, {kEndpoints[i]}, static_cast<double>(impl_->requests[i].load()));
    sink.add(kErrors, {kEndpoints[i]}, static_cast<double>(impl_->errors[i].load()));
    sink.add(kSeconds, {kEndpoints[i]},
             static_cast<double>(impl_->micros[i].load()) * 1e-6);
  }
}

std::vector<const metrics::Desc*> QueryApi::describeMetrics() {
  return {&kQueries, &kErrors, &kSeconds};
}

}  // namespace memcg::history
