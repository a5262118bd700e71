// Evaluator: the details that make answers match Prometheus 2.42, on data
// put straight into MemoryStorage.
#include "promql/engine.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cmath>

#include "promql/parser.h"

namespace memcg::promql {
namespace {

Labels L(std::vector<Label> ls) { return makeLabels(std::move(ls)); }

class PromqlEngine : public ::testing::Test {
 protected:
  void add(const Labels& ls, std::vector<Sample> samples) {
    for (const auto& s : samples) st_.append(ls, s.t, s.v);
  }
  Result<QueryResult> instant(const std::string& q, int64_t t) {
    auto e = parseExpr(q);
    EXPECT_TRUE(e.ok()) << q << ": " << (e.ok() ? "" : e.error().detail);
    if (!e.ok()) return e.error();
    return engine_.instantQuery(st_, **e, t);
  }
  Result<QueryResult> range(const std::string& q, int64_t s, int64_t e, int64_t step) {
    auto x = parseExpr(q);
    EXPECT_TRUE(x.ok()) << q;
    if (!x.ok()) return x.error();
    return engine_.rangeQuery(st_, **x, s, e, step);
  }
  // The single value of an instant vector query (NaN sentinel when not one).
  double one(const std::string& q, int64_t t) {
    auto r = instant(q, t);
    EXPECT_TRUE(r.ok()) << q << ": " << (r.ok() ? "" : r.error().detail);
    if (!r.ok()) return -12345;
    if (r->type == ValueType::kScalar) return r->scalar;
    EXPECT_EQ(r->series.size(), 1u) << q;
    if (r->series.size() != 1) return -12345;
    return r->series[0].points[0].v;
  }
  size_t count(const std::string& q, int64_t t) {
    auto r = instant(q, t);
    EXPECT_TRUE(r.ok()) << q << ": " << (r.ok() ? "" : r.error().detail);
    return r.ok() ? r->series.size() : 9999;
  }
  std::string error(const std::string& q, int64_t t) {
    auto r = instant(q, t);
    EXPECT_FALSE(r.ok()) << q;
    return r.ok() ? "" : r.error().detail;
  }

  MemoryStorage st_;
  Engine engine_;
};

constexpr int64_t kMin = 60000;

TEST_F(PromqlEngine, LookbackIsFiveMinutesInclusive) {
  add(L({{"__name__", "g"}}), {{0, 1}});
  EXPECT_EQ(one("g", 5 * kMin), 1);         // exactly 5m old: still seen
  EXPECT_EQ(count("g", 5 * kMin + 1), 0u);  // 5m + 1ms: gone
  EXPECT_EQ(count("g", -1), 0u);            // before the first sample
  EXPECT_EQ(one("g offset 1m", 6 * kMin), 1);
}

TEST_F(PromqlEngine, StalenessMarkerEndsTheSeries) {
  add(L({{"__name__", "g"}}), {{0, 1}, {kMin, staleNaN()}, {3 * kMin, 3}});
  EXPECT_EQ(one("g", 30000), 1);
  EXPECT_EQ(count("g", kMin), 0u);
  EXPECT_EQ(count("g", 2 * kMin), 0u);
  EXPECT_EQ(one("g", 3 * kMin), 3);
  // Range functions skip the marker.
  EXPECT_EQ(one("count_over_time(g[10m])", 3 * kMin), 2);
}

TEST_F(PromqlEngine, RangeBoundariesAreClosed) {
  add(L({{"__name__", "c"}}), {{0, 0}, {kMin, 1}, {2 * kMin, 2}});
  EXPECT_EQ(one("count_over_time(c[2m])", 2 * kMin), 3);  // [0, 2m]
  EXPECT_EQ(one("count_over_time(c[2m])", 2 * kMin + 1), 2);
}

TEST_F(PromqlEngine, RateExtrapolatesAsExtrapolatedRate) {
  // 0, 10, 20, ... every 15 s; rate over 1m at 60 s: 5 samples cover the
  // window fully -> exactly 40/60 per second.
  std::vector<Sample> s;
  for (int i = 0; i <= 8; ++i) s.push_back({i * 15000, i * 10.0});
  add(L({{"__name__", "c_total"}, {"job", "a"}}), s);
  EXPECT_DOUBLE_EQ(one("rate(c_total[1m])", kMin), 40.0 / 60);
  EXPECT_DOUBLE_EQ(one("increase(c_total[1m])", kMin), 40.0);
  // Window starting between samples: samples at 15..60 s cover 45 s of a 50 s
  // window; 5 s to the start is below 1.1 * 15 s, so extrapolate fully.
  EXPECT_DOUBLE_EQ(one("increase(c_total[50s])", kMin), 30.0 * 50 / 45);
  // The name is dropped.
  auto r = instant("rate(c_total[1m])", kMin);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->series[0].labels, L({{"job", "a"}}));
}

TEST_F(PromqlEngine, RateHandlesCounterResetsAndZeroPoint) {
  add(L({{"__name__", "c"}}), {{0, 5}, {10000, 8}, {20000, 2}, {30000, 4}});
  // Increase with reset: (4 - 5) + 8 = 7 over 30 s sampled.
  double inc = one("increase(c[40s])", 30000);
  // durationToStart = 0 (sample at window start 0?) window is [-10s, 30s]:
  // start 10 s away, threshold 11 s -> extrapolate 10 s; zero point
  // 30 * 5/7 = 21.4 s is farther, so it does not cut. End 0 s.
  EXPECT_NEAR(inc, 7.0 * 40 / 30, 1e-12);
  EXPECT_EQ(one("resets(c[1m])", 30000), 1);
  EXPECT_EQ(one("changes(c[1m])", 30000), 3);
  // delta is not a counter function: 4 - 5 extrapolated.
  EXPECT_NEAR(one("delta(c[40s])", 30000), -1.0 * 40 / 30, 1e-12);
  EXPECT_NEAR(one("irate(c[1m])", 30000), 0.2, 1e-12);
  EXPECT_NEAR(one("idelta(c[1m])", 30000), 2, 1e-12);
}

TEST_F(PromqlEngine, RateNeedsTwoSamples) {
  add(L({{"__name__", "c"}}), {{0, 5}});
  EXPECT_EQ(count("rate(c[5m])", kMin), 0u);
  EXPECT_EQ(count("deriv(c[5m])", kMin), 0u);
}

TEST_F(PromqlEngine, HistogramQuantileInterpolatesAndFixesMonotonicity) {
  auto b = [&](const char* le, double v) {
    add(L({{"__name__", "h_bucket"}, {"le", le}, {"job", "x"}}), {{0, v}});
  };
  b("0.1", 10);
  b("0.5", 5);  // below the previous bucket: raised to 10
  b("1", 30);
  b("+Inf", 40);
  // rank 0.5 * 40 = 20 lies in (0.5, 1]: 0.5 + 0.5 * (20 - 10) / 20.
  EXPECT_DOUBLE_EQ(one("histogram_quantile(0.5, h_bucket)", 0), 0.75);
  // Beyond the last finite bucket: its upper bound.
  EXPECT_DOUBLE_EQ(one("histogram_quantile(0.99, h_bucket)", 0), 1);
  EXPECT_TRUE(std::isinf(one("histogram_quantile(1.5, h_bucket)", 0)));
  auto r = instant("histogram_quantile(0.5, h_bucket)", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->series[0].labels, L({{"job", "x"}}));
}

TEST_F(PromqlEngine, HistogramQuantileWithoutInfBucketIsNaN) {
  add(L({{"__name__", "h_bucket"}, {"le", "1"}}), {{0, 1}});
  add(L({{"__name__", "h_bucket"}, {"le", "2"}}), {{0, 2}});
  EXPECT_TRUE(std::isnan(one("histogram_quantile(0.5, h_bucket)", 0)));
}

TEST_F(PromqlEngine, NameDroppingRules) {
  add(L({{"__name__", "m"}, {"a", "1"}}), {{0, 2}});
  auto labelsOf = [&](const std::string& q) {
    auto r = instant(q, 0);
    EXPECT_TRUE(r.ok()) << q;
    return r.ok() && !r->series.empty() ? r->series[0].labels : Labels{};
  };
  Labels named = L({{"__name__", "m"}, {"a", "1"}});
  Labels bare = L({{"a", "1"}});
  EXPECT_EQ(labelsOf("m * 2"), bare);
  EXPECT_EQ(labelsOf("m > 1"), named);  // filtering keeps the name
  EXPECT_EQ(labelsOf("m > bool 1"), bare);
  EXPECT_EQ(labelsOf("m atan2 1"), named);  // 2.42 keeps it for atan2
  EXPECT_EQ(labelsOf("-m"), bare);
  EXPECT_EQ(labelsOf("abs(m)"), bare);
  EXPECT_EQ(labelsOf("last_over_time(m[1m])"), named);
  EXPECT_EQ(labelsOf("max_over_time(m[1m])"), bare);
  EXPECT_EQ(labelsOf("sort(m)"), named);
  EXPECT_EQ(labelsOf("label_replace(m, \"b\", \"$1\", \"a\", \"(.*)\")"),
            L({{"__name__", "m"}, {"a", "1"}, {"b", "1"}}));
}

TEST_F(PromqlEngine, VectorMatchingErrors) {
  add(L({{"__name__", "a"}, {"x", "1"}, {"y", "1"}}), {{0, 1}});
  add(L({{"__name__", "a"}, {"x", "1"}, {"y", "2"}}), {{0, 2}});
  add(L({{"__name__", "b"}, {"x", "1"}}), {{0, 10}});
  add(L({{"__name__", "b"}, {"x", "1"}, {"z", "1"}}), {{0, 20}});
  EXPECT_NE(error("a + on(x) a", 0).find("many-to-many matching not allowed"),
            std::string::npos);
  EXPECT_NE(error("a + on(x) b{z=\"\"}", 0).find("many-to-one matching must be explicit"),
            std::string::npos);
  // group_left works, and the one side must be unique.
  EXPECT_EQ(count("a * on(x) group_left b{z=\"\"}", 0), 2u);
  EXPECT_NE(error("a * on(x) group_left b", 0)
                .find("found duplicate series for the match group"),
            std::string::npos);
  EXPECT_NE(error("label_replace(a, \"y\", \"\", \"\", \"\")", 0)
                .find("vector cannot contain metrics with the same labelset"),
            std::string::npos);
}

TEST_F(PromqlEngine, SetOperators) {
  add(L({{"__name__", "a"}, {"x", "1"}}), {{0, 1}});
  add(L({{"__name__", "a"}, {"x", "2"}}), {{0, 2}});
  add(L({{"__name__", "b"}, {"x", "2"}}), {{0, 20}});
  add(L({{"__name__", "b"}, {"x", "3"}}), {{0, 30}});
  EXPECT_EQ(count("a and b", 0), 1u);
  EXPECT_EQ(count("a or b", 0), 3u);
  EXPECT_EQ(count("a unless b", 0), 1u);
  EXPECT_EQ(count("a and on() b", 0), 2u);
  EXPECT_EQ(one("a unless b", 0), 1);
}

TEST_F(PromqlEngine, AggregationsWithGrouping) {
  add(L({{"__name__", "m"}, {"job", "a"}, {"i", "1"}}), {{0, 1}});
  add(L({{"__name__", "m"}, {"job", "a"}, {"i", "2"}}), {{0, 3}});
  add(L({{"__name__", "m"}, {"job", "b"}, {"i", "1"}}), {{0, 10}});
  EXPECT_EQ(one("sum(m)", 0), 14);
  EXPECT_EQ(one("sum by (job) (m{job=\"a\"})", 0), 4);
  EXPECT_EQ(count("sum without (i) (m)", 0), 2u);
  EXPECT_EQ(one("avg by (job) (m{job=\"a\"})", 0), 2);
  EXPECT_EQ(one("stddev by (job) (m{job=\"a\"})", 0), 1);
  EXPECT_EQ(one("stdvar by (job) (m{job=\"a\"})", 0), 1);
  EXPECT_EQ(one("quantile(0.5, m)", 0), 3);
  EXPECT_EQ(one("group(m)", 0), 1);
  EXPECT_EQ(one("count(m)", 0), 3);
  EXPECT_EQ(count("count_values(\"v\", m)", 0), 3u);
  auto top = instant("topk(2, m)", 0);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->series.size(), 2u);
  EXPECT_EQ(top->series[0].points[0].v, 10);  // descending
  EXPECT_EQ(top->series[1].points[0].v, 3);
  EXPECT_EQ(top->series[0].labels, L({{"__name__", "m"}, {"job", "b"}, {"i", "1"}}));
  EXPECT_EQ(count("bottomk(0, m)", 0), 0u);
  EXPECT_NE(error("topk(NaN, m)", 0).find("overflows int64"), std::string::npos);
  EXPECT_NE(error("count_values(\"1x\", m)", 0).find("invalid label name"),
            std::string::npos);
}

TEST_F(PromqlEngine, AvgOfInfinities) {
  add(L({{"__name__", "m"}, {"i", "1"}}), {{0, INFINITY}});
  add(L({{"__name__", "m"}, {"i", "2"}}), {{0, 5}});
  EXPECT_TRUE(std::isinf(one("avg(m)", 0)));
  add(L({{"__name__", "m"}, {"i", "3"}}), {{0, -INFINITY}});
  EXPECT_TRUE(std::isnan(one("avg(m)", 0)));
}

TEST_F(PromqlEngine, ScalarsAndLiterals) {
  EXPECT_EQ(one("2 ^ 3 ^ 2", 0), 512);
  EXPECT_EQ(one("-2 ^ 2", 0), -4);
  EXPECT_EQ(one("1 + 2 * 3 - 4 / 2", 0), 5);
  EXPECT_EQ(one("7 % 4", 0), 3);
  EXPECT_EQ(one("1 < bool 2", 0), 1);
  EXPECT_TRUE(std::isnan(one("0 / 0", 0)));
  EXPECT_EQ(one("time()", 90000), 90);
  EXPECT_EQ(one("scalar(vector(3))", 0), 3);
  EXPECT_TRUE(std::isnan(one("scalar(nosuch)", 0)));
  EXPECT_EQ(one("year(vector(0))", 0), 1970);
  EXPECT_EQ(one("day_of_week(vector(0))", 0), 4);             // a Thursday
  EXPECT_EQ(one("days_in_month(vector(951782400))", 0), 29);  // Feb 2000
}

TEST_F(PromqlEngine, AbsentTakesLabelsFromEqualityMatchers) {
  auto r = instant("absent(nosuch{job=\"a\", instance=~\"x\"})", 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->series.size(), 1u);
  EXPECT_EQ(r->series[0].labels, L({{"job", "a"}}));
  add(L({{"__name__", "m"}}), {{0, 1}});
  EXPECT_EQ(count("absent(m)", 0), 0u);
  EXPECT_EQ(count("absent_over_time(m[1m])", 0), 0u);
  EXPECT_EQ(one("absent_over_time(m[1m])", 2 * kMin), 1);
}

TEST_F(PromqlEngine, SubqueryAlignsToItsStep) {
  std::vector<Sample> s;
  for (int i = 0; i <= 20; ++i) s.push_back({i * 10000, static_cast<double>(i)});
  add(L({{"__name__", "g"}}), s);
  // Inner steps at multiples of 30 s within [200s - 100s, 200s]: 120, 150, 180.
  EXPECT_EQ(one("count_over_time(g[100s:30s])", 200000), 3);
  EXPECT_EQ(one("sum_over_time(g[100s:30s])", 200000), 12 + 15 + 18);
  // Default step is 1m: 120 and 180.
  EXPECT_EQ(one("count_over_time(g[100s:])", 200000), 2);
}

TEST_F(PromqlEngine, SubqueryPointsAreBounded) {
  add(L({{"__name__", "g"}}), {{0, 1}});
  EngineOptions o;
  o.maxSubqueryPoints = 100;
  Engine small(o);
  auto e = parseExpr("count_over_time(g[100s:1s])");
  ASSERT_TRUE(e.ok());
  auto r = small.instantQuery(st_, **e, 100000);  // 101 inner steps
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().detail.find("too many samples"), std::string::npos);
  auto ok = small.instantQuery(st_, **e, 98999);  // inner steps -1..98 s: 100
  ASSERT_TRUE(ok.ok()) << ok.error().detail;
}

TEST_F(PromqlEngine, AtModifierPinsTime) {
  add(L({{"__name__", "g"}}), {{0, 1}, {kMin, 2}, {2 * kMin, 3}});
  EXPECT_EQ(one("g @ 60", 5 * kMin), 2);
  EXPECT_EQ(one("g @ 120 offset 1m", 0), 2);
  auto r = range("g @ start()", kMin, 2 * kMin, kMin);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->series.size(), 1u);
  EXPECT_EQ(r->series[0].points.size(), 2u);
  EXPECT_EQ(r->series[0].points[1].v, 2);  // pinned to start = 60 s
  auto e = range("g @ end()", kMin, 2 * kMin, kMin);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->series[0].points[0].v, 3);
}

TEST_F(PromqlEngine, RangeQueryStepsAndGaps) {
  add(L({{"__name__", "g"}, {"a", "1"}}), {{0, 1}, {10 * kMin, 2}});
  auto r = range("g", 0, 10 * kMin, kMin);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->series.size(), 1u);
  // Seen at 0..5m (lookback), missing at 6..9m, back at 10m.
  ASSERT_EQ(r->series[0].points.size(), 7u);
  EXPECT_EQ(r->series[0].points[5].t, 5 * kMin);
  EXPECT_EQ(r->series[0].points[6].t, 10 * kMin);
  auto sc = range("time()", 0, 2 * kMin, kMin);
  ASSERT_TRUE(sc.ok());
  ASSERT_EQ(sc->series.size(), 1u);
  EXPECT_EQ(sc->series[0].points[2].v, 120);
}

TEST_F(PromqlEngine, RangeQueryRejections) {
  add(L({{"__name__", "g"}}), {{0, 1}});
  auto r = range("g[5m]", 0, kMin, kMin);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.error().detail.find("invalid expression type \"range vector\" for range query"),
      std::string::npos);
  auto s = range("\"str\"", 0, kMin, kMin);
  ASSERT_FALSE(s.ok());
  auto z = range("g", 0, kMin, 0);
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().detail.find("step"), std::string::npos);
  auto b = range("g", kMin, 0, kMin);
  ASSERT_FALSE(b.ok());
  auto many = range("g", 0, 11001LL * 1000, 1000);  // 11,002 steps
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().detail.find("exceeded maximum resolution"), std::string::npos);
  EXPECT_TRUE(range("g", 0, 11000LL * 1000, 1000).ok());
}

TEST_F(PromqlEngine, RangeModeChecksDuplicatesAcrossSteps) {
  // Two series that become equal once the name is dropped, present at
  // different steps: Prometheus rejects the whole range result.
  add(L({{"__name__", "a"}}), {{0, 1}, {kMin, 2}});
  add(L({{"__name__", "b"}}), {{20 * kMin, 1}, {21 * kMin, 2}});
  auto ok = instant("rate({__name__=~\"a|b\"}[2m])", kMin);
  ASSERT_TRUE(ok.ok());
  auto r = range("rate({__name__=~\"a|b\"}[2m])", 0, 22 * kMin, kMin);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().detail.find("same labelset"), std::string::npos);
}

TEST_F(PromqlEngine, FunctionEvaluationErrors) {
  add(L({{"__name__", "g"}, {"a", "x"}}), {{0, 1}, {kMin, 2}});
  EXPECT_NE(error("label_replace(g, \"1b\", \"\", \"a\", \"x\")", kMin)
                .find("invalid destination label name"),
            std::string::npos);
  EXPECT_NE(error("label_replace(g, \"b\", \"\", \"a\", \"(\")", kMin)
                .find("invalid regular expression"),
            std::string::npos);
  EXPECT_NE(error("label_join(g, \"b\", \",\", \"1a\")", kMin)
                .find("invalid source label name"),
            std::string::npos);
  EXPECT_NE(error("label_join(g, \"1b\", \",\", \"a\")", kMin)
                .find("invalid destination label name"),
            std::string::npos);
  EXPECT_NE(error("holt_winters(g[5m], 1, 0.5)", kMin).find("invalid smoothing factor"),
            std::string::npos);
  EXPECT_NE(error("holt_winters(g[5m], 0.5, 0)", kMin).find("invalid trend factor"),
            std::string::npos);
  // Checked only when a series is there to smooth, as 2.42.
  EXPECT_EQ(count("holt_winters(nosuch[5m], 1, 0.5)", kMin), 0u);
  EXPECT_NEAR(one("holt_winters(g[5m], 0.5, 0.5)", kMin), 2, 1e-12);
}

TEST_F(PromqlEngine, LabelReplaceAndJoin) {
  add(L({{"__name__", "g"}, {"src", "a-b"}}), {{0, 1}});
  auto r = instant("label_replace(g, \"dst\", \"${2}_$1\", \"src\", \"(.*)-(.*)\")", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(labelValue(r->series[0].labels, "dst"), "b_a");
  // $1x names a group "1x", which does not exist: empty.
  auto r2 = instant("label_replace(g, \"dst\", \"$1x\", \"src\", \"(.*)-(.*)\")", 0);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(labelValue(r2->series[0].labels, "dst"), "");
  auto j = instant("label_join(g, \"j\", \"+\", \"src\", \"__name__\")", 0);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(labelValue(j->series[0].labels, "j"), "a-b+g");
}

TEST_F(PromqlEngine, SortAndClampWithNaN) {
  add(L({{"__name__", "g"}, {"i", "1"}}), {{0, 3}});
  add(L({{"__name__", "g"}, {"i", "2"}}), {{0, NAN}});
  add(L({{"__name__", "g"}, {"i", "3"}}), {{0, 1}});
  auto s = instant("sort(g)", 0);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->series.size(), 3u);
  EXPECT_EQ(s->series[0].points[0].v, 1);
  EXPECT_TRUE(std::isnan(s->series[2].points[0].v));
  auto d = instant("sort_desc(g)", 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->series[0].points[0].v, 3);
  EXPECT_TRUE(std::isnan(d->series[2].points[0].v));
  EXPECT_EQ(count("clamp(g, 2, 1)", 0), 0u);
  EXPECT_TRUE(std::isnan(one("clamp_max(g{i=\"1\"}, NaN)", 0)));
}

TEST_F(PromqlEngine, TimestampReturnsSampleTime) {
  add(L({{"__name__", "g"}}), {{10000, 1}});
  EXPECT_EQ(one("timestamp(g)", 60000), 10);
  EXPECT_EQ(one("timestamp(sum(g))", 60000), 60);
}

TEST_F(PromqlEngine, OverTimeFunctions) {
  add(L({{"__name__", "g"}}), {{0, 1}, {10000, 2}, {20000, 4}, {30000, 8}});
  EXPECT_EQ(one("sum_over_time(g[1m])", 30000), 15);
  EXPECT_EQ(one("avg_over_time(g[1m])", 30000), 3.75);
  EXPECT_EQ(one("min_over_time(g[1m])", 30000), 1);
  EXPECT_EQ(one("max_over_time(g[1m])", 30000), 8);
  EXPECT_EQ(one("last_over_time(g[1m])", 30000), 8);
  EXPECT_EQ(one("present_over_time(g[1m])", 30000), 1);
  EXPECT_EQ(one("quantile_over_time(0.5, g[1m])", 30000), 3);
  EXPECT_NEAR(one("stdvar_over_time(g[1m])", 30000), 7.1875, 1e-12);
  EXPECT_NEAR(one("stddev_over_time(g[1m])", 30000), std::sqrt(7.1875), 1e-12);
  // deriv: least squares slope of (0,1) (10,2) (20,4) (30,8).
  EXPECT_NEAR(one("deriv(g[1m])", 30000), 0.23, 1e-12);
  EXPECT_NEAR(one("predict_linear(g[1m], 10)", 30000), 7.2 + 0.23 * 10, 1e-12);
}

// The deadline (the API's ?timeout=) is checked during evaluation, not after.
class PromqlDeadline : public PromqlEngine {
 protected:
  void SetUp() override {
    for (int s = 0; s < 50; ++s) {
      Labels ls = L({{"__name__", "x"}, {"i", std::to_string(s)}});
      for (int64_t t = 0; t <= 3600; ++t)
        st_.append(ls, t * 1000, static_cast<double>(t + s));
    }
  }
  static Deadline in(std::chrono::milliseconds d) {
    return std::chrono::steady_clock::now() + d;
  }
  Result<QueryResult> instantBy(const std::string& q, int64_t t, Deadline d) {
    auto e = parseExpr(q);
    EXPECT_TRUE(e.ok()) << q;
    return engine_.instantQuery(st_, **e, t, d);
  }
  Result<QueryResult> rangeBy(const std::string& q, int64_t s, int64_t e, int64_t step,
                              Deadline d) {
    auto x = parseExpr(q);
    EXPECT_TRUE(x.ok()) << q;
    return engine_.rangeQuery(st_, **x, s, e, step, d);
  }
  static void expectTimeout(const Result<QueryResult>& r) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().err, ETIMEDOUT);
    EXPECT_EQ(r.error().detail, "query timed out in expression evaluation");
  }
};

TEST_F(PromqlDeadline, PassedDeadlineFailsBeforeEvaluating) {
  const Deadline past = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  expectTimeout(instantBy("1+1", 0, past));
  expectTimeout(rangeBy("x", 0, 60000, 1000, past));
  // No deadline and a far one answer as before.
  auto r = instantBy("sum(x)", 3600000, kNoDeadline);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->series[0].points[0].v, 50 * 3600 + 49 * 50 / 2);
  auto f = instantBy("sum(x)", 3600000, in(std::chrono::minutes(10)));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->series[0].points[0].v, r->series[0].points[0].v);
}

// 3.6 million subquery steps over 50 series (minutes of work): the query
// stops at its 50 ms deadline, inside the subquery loop.
TEST_F(PromqlDeadline, PathologicalInstantQueryStopsAtItsDeadline) {
  const auto t0 = std::chrono::steady_clock::now();
  expectTimeout(instantBy("count_over_time(sum(x)[1h:1ms])", 3600000,
                          in(std::chrono::milliseconds(50))));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Generous for a loaded machine; evaluating to the end takes far longer.
  EXPECT_LT(secs, 20.0);
}

// A range query: per step and per series of the inner loops.
TEST_F(PromqlDeadline, PathologicalRangeQueryStopsAtItsDeadline) {
  expectTimeout(rangeBy("max_over_time(sum by (i) (x)[10m:1ms])", 600000, 3600000, 60000,
                        in(std::chrono::milliseconds(50))));
}

}  // namespace
}  // namespace memcg::promql
