// Our exposition writer must be byte-identical to prometheus-cpp's
// TextSerializer on the same families.
#include "metrics/text_format.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <deque>
#include <limits>
#include <sstream>

#include "common/parse.h"
#include "tests/support/scrape_test_util.h"

namespace memcg::metrics {
namespace {

std::string reference(const std::vector<prometheus::MetricFamily>& fams) {
  std::ostringstream s;
  prometheus::TextSerializer().Serialize(s, fams);
  return s.str();
}

TEST(TextFormat, IdenticalToTextSerializerOnEveryFixture) {
  for (const char* fixture : {"v1", "v2", "hybrid", "malformed"}) {
    test::FixtureScrape s(test::fixturePath(std::string("cgroupfs/") + fixture));
    metrics::Sink sink;
    auto keep = s.scraper->scrape(sink);
    std::vector<prometheus::MetricFamily> pf;
    for (const auto& f : sink.families()) pf.push_back(toPrometheus(f));
    std::string ours;
    writeText(sink.families(), ours);
    ASSERT_GT(ours.size(), 1000u);
    EXPECT_EQ(ours, reference(pf)) << fixture;
    // And the prometheus-cpp-model writer (used for Registry families).
    std::string ours2;
    writeText(pf, ours2);
    EXPECT_EQ(ours2, reference(pf)) << fixture;
  }
}

TEST(TextFormat, IdenticalOnAwkwardValuesLabelsAndHistograms) {
  Desc g{"x_bytes", "help with \\ backslash", Type::kGauge, {"cgroup", "k"}, {}};
  Desc c{"y_total", "", Type::kCounter, {}, {}};
  Desc h{"z_seconds", "a histogram", Type::kHistogram, {"cgroup"}, {1e-6, 0.001, 0.5, 10}};
  Sink sink;
  const double values[] = {0,      0.1,     1,        1e20,      123456789012345678.0,
                           9223372036854771712.0, 1.5e-7, 3.0 / 7, 65536,   -2.5,
                           1e15,   999999999999999.0, 1e16, 4.9e-324,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), std::nan("")};
  std::string_view label = "/a\"b\\c\nd/e f";
  for (double v : values) sink.add(g, {label, "v"}, v);
  sink.add(c, {}, 42);
  sink.family(h).addHistogram({"/x"}, 7, 0.25, {1, 2, 5, 7});
  sink.family(h).addHistogram({"/y"}, 0, 0, {0, 0, 0, 0});
  std::vector<prometheus::MetricFamily> pf;
  for (const auto& f : sink.families()) pf.push_back(toPrometheus(f));
  std::string ours;
  writeText(sink.families(), ours);
  EXPECT_EQ(ours, reference(pf));
  EXPECT_NE(ours.find("x_bytes{cgroup=\"/a\\\"b\\\\c\\nd/e f\",k=\"v\"} +Inf\n"), std::string::npos);
  EXPECT_NE(ours.find("z_seconds_bucket{cgroup=\"/x\",le=\"+Inf\"} 7\n"), std::string::npos);
}

// Unlike TextSerializer, on purpose: a label value that is not UTF-8 (a
// cgroup directory may be named with any bytes) would make Prometheus reject
// the whole scrape, so each byte that starts no well-formed sequence is U+FFFD.
TEST(TextFormat, LabelValuesAreMadeValidUtf8) {
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  const std::pair<std::string, std::string> cases[] = {
      {"/ok-\xC3\xA9-\xE2\x82\xAC-\xF0\x9F\x98\x80", "/ok-\xC3\xA9-\xE2\x82\xAC-\xF0\x9F\x98\x80"},
      {"/a\xFF" "b", "/a" + r + "b"},
      {"/trunc\xC3", "/trunc" + r},
      {"/overlong\xC0\xAF", "/overlong" + r + r},
      {"/surrogate\xED\xA0\x80", "/surrogate" + r + r + r},
      {"/above-max\xF4\x90\x80\x80", "/above-max" + r + r + r + r},
      {"/q\"\xFE", "/q\\\"" + r},
  };
  Desc g{"x_bytes", "h", Type::kGauge, {"cgroup"}, {}};
  Sink sink;
  for (const auto& [in, _] : cases) sink.add(g, {in}, 1);
  std::string out;
  writeText(sink.families(), out);
  for (const auto& [in, want] : cases) {
    EXPECT_NE(out.find("x_bytes{cgroup=\"" + want + "\"} 1\n"), std::string::npos) << want;
  }
  for (size_t i = 0; i < out.size();) {
    size_t n = utf8SequenceLength(out, i);
    ASSERT_GT(n, 0u) << "invalid UTF-8 at byte " << i;
    i += n;
  }
}

// The writer's fast path (a line built at once) checks label values eight
// bytes at a time: a byte to escape anywhere in a value, in either label,
// must still take the escaping path, and plain values must be unchanged.
TEST(TextFormat, EscapesFoundAtEveryPositionOfBothLabels) {
  Desc g{"x_bytes", "h", Type::kGauge, {"cgroup", "k"}, {}};
  Sink sink;
  std::deque<std::string> values;
  for (char special : {'\\', '"', '\n', '\x7f', 'a'}) {
    for (size_t len : {1, 7, 8, 9, 16, 17, 23}) {
      for (size_t at = 0; at < len; ++at) {
        std::string v(len, 'c');
        v[at] = special;
        const std::string& kept = values.emplace_back(std::move(v));
        sink.add(g, {kept, "plain"}, static_cast<double>(at));
        sink.add(g, {"/plain/path", kept}, 0.5);
      }
    }
  }
  std::string v(9, 'c');
  v[8] = '\xFF';  // not UTF-8: becomes U+FFFD in our writer only
  sink.add(g, {v, "x"}, 1);
  std::vector<prometheus::MetricFamily> pf{toPrometheus(sink.families().front())};
  pf.front().metric.pop_back();
  std::string ours;
  writeText(sink.families(), ours);
  const std::string tail = "x_bytes{cgroup=\"cccccccc\xEF\xBF\xBD\",k=\"x\"} 1\n";
  ASSERT_GE(ours.size(), tail.size());
  EXPECT_EQ(ours.substr(ours.size() - tail.size()), tail);
  EXPECT_EQ(ours.substr(0, ours.size() - tail.size()), reference(pf));
}

TEST(TextFormat, FormatValue) {
  char b[32];
  auto f = [&](double v) { return std::string(b, formatValue(v, b)); };
  EXPECT_EQ(f(268435456), "268435456");
  EXPECT_EQ(f(0.065432), "0.065432");
  EXPECT_EQ(f(1.5e-7), "1.5e-07");
  EXPECT_EQ(f(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(f(std::nan("")), "Nan");
}

}  // namespace
}  // namespace memcg::metrics
