// Parser: what it accepts (structure, precedence, modifiers) and every
// rejection path, with the construct named.
#include "promql/parser.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>

#include "promql/lexer.h"

namespace memcg::promql {
namespace {

ExprPtr mustParse(const std::string& q) {
  auto r = parseExpr(q);
  EXPECT_TRUE(r.ok()) << q << ": " << (r.ok() ? "" : r.error().detail);
  if (!r.ok()) return nullptr;
  return std::move(r).value();
}

template <typename T>
const T* as(const Expr* e, NodeKind k) {
  EXPECT_NE(e, nullptr);
  if (e == nullptr) return nullptr;
  EXPECT_EQ(static_cast<int>(e->kind), static_cast<int>(k));
  return e->kind == k ? static_cast<const T*>(e) : nullptr;
}

TEST(PromqlParser, MulBindsTighterThanAdd) {
  auto e = mustParse("a + b * c");
  auto* b = as<BinaryExpr>(e.get(), NodeKind::kBinary);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, BinOp::kAdd);
  auto* r = as<BinaryExpr>(b->rhs.get(), NodeKind::kBinary);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op, BinOp::kMul);
}

TEST(PromqlParser, PowIsRightAssociative) {
  auto e = mustParse("a ^ b ^ c");
  auto* b = as<BinaryExpr>(e.get(), NodeKind::kBinary);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->lhs->kind, NodeKind::kVectorSelector);
  auto* r = as<BinaryExpr>(b->rhs.get(), NodeKind::kBinary);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op, BinOp::kPow);
}

TEST(PromqlParser, MinusIsLeftAssociative) {
  auto e = mustParse("a - b - c");
  auto* b = as<BinaryExpr>(e.get(), NodeKind::kBinary);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->rhs->kind, NodeKind::kVectorSelector);
  EXPECT_EQ(b->lhs->kind, NodeKind::kBinary);
}

TEST(PromqlParser, UnaryMinusBindsLikeMulButBelowPow) {
  // -a ^ b is -(a ^ b); -a * b is (-a) * b.
  auto e = mustParse("-a ^ b");
  auto* u = as<UnaryExpr>(e.get(), NodeKind::kUnary);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->expr->kind, NodeKind::kBinary);
  auto e2 = mustParse("-a * b");
  auto* b = as<BinaryExpr>(e2.get(), NodeKind::kBinary);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->lhs->kind, NodeKind::kUnary);
  // A negated literal folds into the literal.
  auto n = mustParse("-2");
  auto* lit = as<NumberLiteral>(n.get(), NodeKind::kNumber);
  ASSERT_NE(lit, nullptr);
  EXPECT_EQ(lit->value, -2);
}

TEST(PromqlParser, SetOperatorPrecedence) {
  // or < and/unless < comparison
  auto e = mustParse("a or b and c");
  auto* b = as<BinaryExpr>(e.get(), NodeKind::kBinary);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, BinOp::kOr);
  EXPECT_EQ(b->matching.card, Card::kManyToMany);
  auto e2 = mustParse("a and b > 1");
  auto* b2 = as<BinaryExpr>(e2.get(), NodeKind::kBinary);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(b2->op, BinOp::kAnd);
}

TEST(PromqlParser, SelectorMatchersOffsetAndAt) {
  auto e = mustParse(R"(foo{a="1", b!="2", c=~"x.*", d!~"y",} offset 5m @ 100.5)");
  auto* vs = as<VectorSelector>(e.get(), NodeKind::kVectorSelector);
  ASSERT_NE(vs, nullptr);
  EXPECT_EQ(vs->name, "foo");
  ASSERT_EQ(vs->matchers.size(), 5u);  // plus __name__="foo"
  EXPECT_EQ(vs->matchers[2].type(), MatchType::kRegex);
  EXPECT_TRUE(vs->matchers[2].matches("xyz"));
  EXPECT_FALSE(vs->matchers[2].matches("axyz"));  // anchored
  EXPECT_EQ(vs->offset, 300000);
  EXPECT_EQ(vs->at.kind, AtKind::kTimestamp);
  EXPECT_EQ(vs->at.ms, 100500);
  auto e2 = mustParse("foo @ end() offset -1h30m");
  auto* vs2 = as<VectorSelector>(e2.get(), NodeKind::kVectorSelector);
  ASSERT_NE(vs2, nullptr);
  EXPECT_EQ(vs2->at.kind, AtKind::kEnd);
  EXPECT_EQ(vs2->offset, -5400000);
}

TEST(PromqlParser, MatrixAndSubquery) {
  auto e = mustParse("rate(foo[5m] offset 1m)");
  auto* c = as<Call>(e.get(), NodeKind::kCall);
  ASSERT_NE(c, nullptr);
  auto* m = as<MatrixSelector>(c->args[0].get(), NodeKind::kMatrixSelector);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->range, 300000);
  EXPECT_EQ(m->vs->offset, 60000);
  auto e2 = mustParse("max_over_time(rate(foo[1m])[10m:30s] @ start())");
  auto* c2 = as<Call>(e2.get(), NodeKind::kCall);
  ASSERT_NE(c2, nullptr);
  auto* s = as<SubqueryExpr>(c2->args[0].get(), NodeKind::kSubquery);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->range, 600000);
  EXPECT_EQ(s->step, 30000);
  EXPECT_EQ(s->at.kind, AtKind::kStart);
  auto e3 = mustParse("foo[5m:]");
  auto* s3 = as<SubqueryExpr>(e3.get(), NodeKind::kSubquery);
  ASSERT_NE(s3, nullptr);
  EXPECT_EQ(s3->step, 0);
}

TEST(PromqlParser, AggregationsAndMatching) {
  auto e = mustParse("sum without (b, a) (foo)");
  auto* a = as<AggregateExpr>(e.get(), NodeKind::kAggregate);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->without);
  EXPECT_EQ(a->grouping, (std::vector<std::string>{"a", "b"}));
  auto e2 = mustParse("topk(3, foo) by (job)");
  auto* t = as<AggregateExpr>(e2.get(), NodeKind::kAggregate);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->op, AggOp::kTopk);
  EXPECT_NE(t->param, nullptr);
  EXPECT_EQ(t->grouping, std::vector<std::string>{"job"});
  auto e3 = mustParse("a * on (x, y) group_left (z) b");
  auto* b = as<BinaryExpr>(e3.get(), NodeKind::kBinary);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->matching.on);
  EXPECT_EQ(b->matching.card, Card::kManyToOne);
  EXPECT_EQ(b->matching.include, std::vector<std::string>{"z"});
  auto e4 = mustParse("a > bool ignoring (x) group_right b");
  auto* b4 = as<BinaryExpr>(e4.get(), NodeKind::kBinary);
  ASSERT_NE(b4, nullptr);
  EXPECT_TRUE(b4->returnBool);
  EXPECT_FALSE(b4->matching.on);
  EXPECT_EQ(b4->matching.card, Card::kOneToMany);
}

TEST(PromqlParser, KeywordsAsNamesAndCaseInsensitiveKeywords) {
  EXPECT_NE(mustParse("sum"), nullptr);  // a metric called sum
  EXPECT_NE(mustParse("SUM BY (job) (foo)"), nullptr);
  EXPECT_NE(mustParse("foo{and=\"1\", by=\"2\"}"), nullptr);
  EXPECT_NE(mustParse("sum by (on, bool) (foo)"), nullptr);
  EXPECT_NE(mustParse("job:requests:rate5m"), nullptr);
  auto colon = mustParse(":leading:colon[5m:1m]");  // ':' starts a name outside brackets
  auto* sq = as<SubqueryExpr>(colon.get(), NodeKind::kSubquery);
  ASSERT_NE(sq, nullptr);
  EXPECT_EQ(as<VectorSelector>(sq->expr.get(), NodeKind::kVectorSelector)->name,
            ":leading:colon");
}

TEST(PromqlParser, NumbersAndStrings) {
  double v;
  ASSERT_TRUE(parseNumber("0x1F", v));
  EXPECT_EQ(v, 31);
  ASSERT_TRUE(parseNumber("010", v));  // Go's base prefix: octal
  EXPECT_EQ(v, 8);
  ASSERT_TRUE(parseNumber("1e3", v));
  EXPECT_EQ(v, 1000);
  ASSERT_TRUE(parseNumber("-Inf", v));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  ASSERT_TRUE(parseNumber("NaN", v));
  EXPECT_TRUE(std::isnan(v));
  EXPECT_FALSE(parseNumber("1x", v));
  auto e = mustParse(R"("a\n\x41\u00e9\101" )");
  auto* s = as<StringLiteral>(e.get(), NodeKind::kString);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value,
            "a\nA\xc3\xa9"
            "A");
  auto raw = mustParse("`a\\n`");
  EXPECT_EQ(as<StringLiteral>(raw.get(), NodeKind::kString)->value, "a\\n");
}

TEST(PromqlParser, Durations) {
  int64_t ms;
  ASSERT_TRUE(parseDurationMs("1h30m", ms));
  EXPECT_EQ(ms, 5400000);
  ASSERT_TRUE(parseDurationMs("1y2w3d", ms));
  EXPECT_EQ(ms, (365LL + 14 + 3) * 86400000);
  ASSERT_TRUE(parseDurationMs("150ms", ms));
  EXPECT_EQ(ms, 150);
  EXPECT_FALSE(parseDurationMs("30m1h", ms));  // units out of order
  EXPECT_FALSE(parseDurationMs("5x", ms));
  EXPECT_FALSE(parseDurationMs("", ms));
}

struct Rejection {
  const char* query;
  const char* message;  // a part of the error
};

class PromqlParserRejects : public ::testing::TestWithParam<Rejection> {};

TEST_P(PromqlParserRejects, WithMessage) {
  auto r = parseExpr(GetParam().query);
  ASSERT_FALSE(r.ok()) << GetParam().query;
  EXPECT_EQ(r.error().err, EINVAL);
  EXPECT_NE(r.error().detail.find(GetParam().message), std::string::npos)
      << GetParam().query << " -> " << r.error().detail;
}

INSTANTIATE_TEST_SUITE_P(
    All, PromqlParserRejects,
    ::testing::Values(
        Rejection{"", "no expression found"}, Rejection{"foo $", "unexpected character"},
        Rejection{"\"abc", "unterminated quoted string"},
        Rejection{"\"a\\qb\"", "unknown escape sequence"},
        Rejection{"\"\\xZZ\"", "invalid escape sequence"},
        Rejection{"`abc", "unterminated raw string"},
        Rejection{"1a", "bad number or duration syntax"},
        Rejection{"foo bar", "unexpected identifier \"bar\""},
        Rejection{"(foo", "expected \")\""}, Rejection{"foo[5m", "expected \"]\""},
        Rejection{"foo[5m:1m", "expected \"]\""}, Rejection{"foo[]", "expected duration"},
        Rejection{"foo[5]", "expected duration"},
        Rejection{"foo[30m1h]", "bad number or duration syntax"},
        Rejection{"5m", "unexpected duration"}, Rejection{"bool", "unexpected \"bool\""},
        Rejection{"a + group_left b", "needs on() or ignoring()"},
        Rejection{"a + on(x b", "expected \",\" or \")\""},
        Rejection{"a + on(1) b", "expected label"},
        Rejection{"a + bool b", "bool modifier can only be used on comparison operators"},
        Rejection{"1 > 2", "comparisons between scalars must use BOOL modifier"},
        Rejection{"a + on(x) group_left(x) b",
                  "must not occur in ON and GROUP clause at once"},
        Rejection{"foo[5m] + 1",
                  "binary expression must contain only scalar and instant vector types"},
        Rejection{"\"s\" + 1",
                  "binary expression must contain only scalar and instant vector types"},
        Rejection{"1 + on(x) foo",
                  "vector matching only allowed between instant vectors"},
        Rejection{"1 and foo", "not allowed in binary scalar expression"},
        Rejection{"a and on(x) group_left b",
                  "no grouping allowed for \"and\" operation"},
        Rejection{"-foo[5m]",
                  "unary expression only allowed on expressions of type scalar or "
                  "instant vector"},
        Rejection{"-\"s\"", "unary expression only allowed"},
        Rejection{"foo @ 1 @ 2", "@ <timestamp> may not be set multiple times"},
        Rejection{"foo @ start(", "expected \")\""},
        Rejection{"foo @ bar", "expected timestamp"},
        Rejection{"foo @ Inf", "timestamp out of bounds for @ modifier"},
        Rejection{"foo @ 1e300", "timestamp out of bounds for @ modifier"},
        Rejection{"foo[5m][10m:]",
                  "subquery is only allowed on instant vector, got range vector"},
        Rejection{"(foo)[5m]", "ranges only allowed for vector selectors"},
        Rejection{"foo offset 1m [5m]", "no offset modifiers allowed before range"},
        Rejection{"foo @ 1 [5m]", "no @ modifiers allowed before range"},
        Rejection{"(foo) offset 1m",
                  "offset modifier must be preceded by an instant vector selector"},
        Rejection{"sum(foo) @ 10",
                  "@ modifier must be preceded by an instant vector selector"},
        Rejection{"foo offset 1m offset 2m", "offset may not be set multiple times"},
        Rejection{"foo offset", "expected duration"},
        Rejection{"foo{1=\"a\"}", "expected label"},
        Rejection{"foo{a==\"b\"}", "expected one of"},
        Rejection{"foo{a=b}", "expected string"},
        Rejection{"foo{a=\"b\" c=\"d\"}", "expected \",\" or \"}\""},
        Rejection{"foo{a=~\"(\"}", "invalid regular expression"},
        Rejection{"foo{__name__=\"bar\"}", "metric name must not be set twice"},
        Rejection{"{}", "vector selector must contain at least one non-empty matcher"},
        Rejection{"{a=~\".*\"}",
                  "vector selector must contain at least one non-empty matcher"},
        Rejection{"nosuchfunc(foo)", "unknown function with name \"nosuchfunc\""},
        Rejection{"abs(foo bar)", "in function call, expected \",\" or \")\""},
        Rejection{"abs(foo, bar)", "expected 1 argument(s) in call to \"abs\", got 2"},
        Rejection{"label_join(foo, \"a\")", "expected at least 3 argument(s)"},
        Rejection{"round(foo, 1, 2)", "expected at most 2 argument(s)"},
        Rejection{"rate(foo)",
                  "expected type range vector in call to function \"rate\", got instant "
                  "vector"},
        Rejection{"abs(\"x\")",
                  "expected type instant vector in call to function \"abs\", got string"},
        Rejection{"sum(foo bar)", "in aggregation, expected \",\" or \")\""},
        Rejection{"sum()", "no arguments for aggregate expression provided"},
        Rejection{"topk(foo)",
                  "wrong number of arguments for aggregate expression provided, expected "
                  "2, got 1"},
        Rejection{"sum(1, foo)", "wrong number of arguments"},
        Rejection{"topk(\"a\", foo)",
                  "expected type scalar in aggregation parameter, got string"},
        Rejection{"count_values(1, foo)",
                  "expected type string in aggregation parameter, got scalar"},
        Rejection{"sum(1)",
                  "expected type instant vector in aggregation expression, got scalar"},
        Rejection{
            "sum(foo[5m])",
            "expected type instant vector in aggregation expression, got range vector"},
        Rejection{"sum by (a) (foo) by (b)", "unexpected \"by\""},
        Rejection{"foo )", "unexpected \")\""}));

TEST(PromqlParser, NativeHistogramFunctionsAreRefusedAsUnsupported) {
  for (const char* q :
       {"histogram_count(foo)", "histogram_sum(foo)", "histogram_fraction(0, 1, foo)"}) {
    auto r = parseExpr(q);
    ASSERT_FALSE(r.ok()) << q;
    EXPECT_EQ(r.error().err, ENOTSUP) << q;
    EXPECT_NE(r.error().detail.find("unsupported function"), std::string::npos);
  }
}

TEST(PromqlLexer, TokensCarryPositions) {
  auto toks = lex("sum(rate(x[5m])) > bool 1");
  ASSERT_GE(toks.size(), 2u);
  EXPECT_EQ(toks.back().type, Tok::kEof);
  EXPECT_EQ(toks[0].type, Tok::kKeyword);
  EXPECT_EQ(toks[0].pos, 0u);
  bool sawDuration = false;
  for (const auto& t : toks) sawDuration |= t.type == Tok::kDuration && t.text == "5m";
  EXPECT_TRUE(sawDuration);
}

}  // namespace
}  // namespace memcg::promql
