// memcgtool's test-script runner and query rendering.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "promql/storage.h"
#include "tools/memcgtool/promql_test.h"
#include "tools/memcgtool/query.h"

namespace memcg::tool {
namespace {

TEST(PromqlScript, SeriesNotationExpands) {
  promql::Labels ls;
  std::vector<SeqValue> v;
  std::string err;
  ASSERT_TRUE(parseSeriesDesc(
      R"(foo{a="x", b="y\"z"} 1 _ 2+3x2 _x2 stale 5x1 -1-1x1 Inf)", ls, v, err))
      << err;
  EXPECT_EQ(ls, promql::makeLabels({{"__name__", "foo"}, {"a", "x"}, {"b", "y\"z"}}));
  ASSERT_EQ(v.size(), 13u);
  EXPECT_EQ(v[0].v, 1);
  EXPECT_TRUE(v[1].omitted);
  EXPECT_EQ(v[2].v, 2);
  EXPECT_EQ(v[3].v, 5);
  EXPECT_EQ(v[4].v, 8);
  EXPECT_TRUE(v[5].omitted && v[6].omitted);
  EXPECT_TRUE(promql::isStaleNaN(v[7].v));
  EXPECT_EQ(v[8].v, 5);
  EXPECT_EQ(v[9].v, 5);
  EXPECT_EQ(v[10].v, -1);
  EXPECT_EQ(v[11].v, -2);
  EXPECT_TRUE(std::isinf(v[12].v));
  ASSERT_TRUE(parseSeriesDesc("{} 3", ls, v, err)) << err;
  EXPECT_TRUE(ls.empty());
  ASSERT_TRUE(parseSeriesDesc("bare", ls, v, err)) << err;
  EXPECT_FALSE(parseSeriesDesc("foo{a=1} 2", ls, v, err));
  EXPECT_FALSE(parseSeriesDesc("foo 1+x", ls, v, err));
  EXPECT_FALSE(parseSeriesDesc("foo abc", ls, v, err));
  EXPECT_FALSE(parseSeriesDesc("foo{a=\"1\" 2", ls, v, err));
}

TEST(PromqlScript, PassFailAndUnsupportedAreCounted) {
  ScriptReport r = runScript(R"(
load 1m
  m{a="1"} 0+1x5
  m{a="2"} 10 _ 30

# passes
eval instant at 2m m
  m{a="1"} 2
  m{a="2"} 30

# fails: wrong value
eval instant at 2m m{a="1"}
  m{a="1"} 3

# fails: a series is missing
eval instant at 2m m
  m{a="1"} 2

eval_fail instant at 0m m + on(nosuch) m

eval instant at 0m histogram_count(m)

eval range from 0 to 2m step 1m m{a="2"}
  m{a="2"} 10 10 30

eval_ordered instant at 5m sort_desc(m)
  m{a="2"} 30
  m{a="1"} 5

eval instant at 1m scalar(m{a="1"})
  1

clear

eval instant at 1m m
)",
                             ScriptOptions{});
  EXPECT_TRUE(r.fatal.empty()) << r.fatal;
  EXPECT_EQ(r.passed(), 6);
  EXPECT_EQ(r.failed(), 2);
  EXPECT_EQ(r.unsupported(), 1);
  ASSERT_EQ(r.evals.size(), 9u);
  EXPECT_EQ(r.evals[1].kind, EvalOutcome::Kind::kFailed);
  EXPECT_NE(r.evals[1].message.find("expected 3"), std::string::npos);
  EXPECT_EQ(r.evals[1].line, 12);
  EXPECT_NE(r.evals[2].message.find("unexpected metric"), std::string::npos);
  EXPECT_NE(r.evals[4].message.find("histogram_count"), std::string::npos);
}

TEST(PromqlScript, OrderedEvalChecksPositions) {
  ScriptReport r = runScript(R"(
load 1m
  m{a="1"} 1
  m{a="2"} 2

eval_ordered instant at 0m sort(m)
  m{a="2"} 2
  m{a="1"} 1
)",
                             ScriptOptions{});
  EXPECT_EQ(r.failed(), 1);
  EXPECT_NE(r.evals[0].message.find("position"), std::string::npos);
}

TEST(PromqlScript, EpsilonIsRelative) {
  const char* script = R"(
eval instant at 0m 1.0000001
  1
)";
  EXPECT_EQ(runScript(script, ScriptOptions{}).passed(), 1);
  ScriptOptions tight;
  tight.epsilon = 1e-9;
  EXPECT_EQ(runScript(script, tight).failed(), 1);
}

TEST(PromqlScript, EvalFailWithoutErrorFails) {
  ScriptReport r = runScript("eval_fail instant at 0m 1 + 1\n", ScriptOptions{});
  EXPECT_EQ(r.failed(), 1);
}

TEST(PromqlScript, RangeEvalComparesEveryStep) {
  ScriptReport r = runScript(R"(
load 1m
  m 1 2 3

eval range from 0 to 2m step 1m m
  m 1 2 4

eval range from 0 to 10m step 5m m
  m 1 3 3
)",
                             ScriptOptions{});
  EXPECT_EQ(r.failed(), 2);  // wrong value; no point at 10m (lookback over)
  EXPECT_NE(r.evals[0].message.find("expected 4"), std::string::npos);
}

TEST(PromqlScript, BadCommandsAreFatal) {
  EXPECT_FALSE(runScript("frobnicate\n", ScriptOptions{}).fatal.empty());
  EXPECT_FALSE(runScript("load xyz\n m 1\n", ScriptOptions{}).fatal.empty());
  EXPECT_FALSE(runScript("load 1m\n m 1+\n", ScriptOptions{}).fatal.empty());
  EXPECT_FALSE(
      runScript("eval instant at 0m m\n m 1 2\n", ScriptOptions{}).fatal.empty());
  EXPECT_FALSE(runScript("eval instant at xyz m\n", ScriptOptions{}).fatal.empty());
  EXPECT_EQ(runScript("frobnicate\n", ScriptOptions{}).failed(), 1);
}

TEST(PromqlQuery, RendersLikePromtool) {
  std::string text;
  ASSERT_TRUE(renderQueryResponse(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1.5,"1"]}]}})",
      text));
  EXPECT_EQ(text, "up{job=\"a\"} => 1 @[1.5]\n");
  ASSERT_TRUE(renderQueryResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"],[2,"3"]]}]}})",
      text));
  EXPECT_EQ(text, "{} =>\n2 @[1]\n3 @[2]\n");
  ASSERT_TRUE(renderQueryResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1,"7"]}})", text));
  EXPECT_EQ(text, "scalar: 7 @[1]\n");
  EXPECT_FALSE(renderQueryResponse(
      R"({"status":"error","errorType":"bad_data","error":"parse error"})", text));
  EXPECT_EQ(text, "bad_data: parse error");
  EXPECT_FALSE(renderQueryResponse("not json", text));
}

}  // namespace
}  // namespace memcg::tool

// `memcgtool test promql`: an UNSUPPORTED eval checked nothing, so it fails
// the run unless --allow-unsupported says it is expected.
namespace memcg::tool {
namespace {

int runMain(const std::string& script, std::vector<std::string> args, std::string& out) {
  char path[] = "/tmp/memcg_exporter_test_promql_XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return -1;
  ::close(fd);
  std::ofstream(path) << script;
  args.push_back(path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream os;
  int rc = testPromqlMain(static_cast<int>(argv.size()), argv.data(), os);
  ::unlink(path);
  out = os.str();
  return rc;
}

constexpr const char* kPassing = R"(
load 1m
  m 1

eval instant at 0m m
  m 1
)";

TEST(PromqlTestMain, UnsupportedEvalFailsTheRun) {
  std::string out;
  EXPECT_EQ(runMain(kPassing, {}, out), 0) << out;
  const std::string unsupported =
      std::string(kPassing) + "\neval instant at 0m histogram_count(m)\n";
  EXPECT_EQ(runMain(unsupported, {}, out), 1) << out;
  EXPECT_NE(out.find("UNSUPPORTED"), std::string::npos) << out;
  EXPECT_NE(out.find("1 eval(s) UNSUPPORTED"), std::string::npos) << out;
  EXPECT_EQ(runMain(unsupported, {"--allow-unsupported"}, out), 0) << out;
  // A failed eval fails the run with or without the option.
  const std::string failing = std::string(kPassing) + "\neval instant at 0m m\n  m 2\n";
  EXPECT_EQ(runMain(failing, {"--allow-unsupported"}, out), 1) << out;
}

}  // namespace
}  // namespace memcg::tool
