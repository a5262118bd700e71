// PromQL parser (promql/parser.h): any input either parses or returns an
// error, never crashes. Parsed expressions without subqueries are also
// evaluated (instant, and a short range query when the type allows) over a
// small MemoryStorage, so the evaluator sees every shape the parser accepts.
//
// Input: a query text. Seeds: tests/fuzz/seeds/promql_parser.
#include <cerrno>
#include <string>

#include "promql/engine.h"
#include "promql/parser.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;

namespace {

bool hasSubquery(const promql::Expr* e) {
  using promql::NodeKind;
  switch (e->kind) {
    case NodeKind::kSubquery:
      return true;
    case NodeKind::kParen:
      return hasSubquery(static_cast<const promql::ParenExpr*>(e)->expr.get());
    case NodeKind::kUnary:
      return hasSubquery(static_cast<const promql::UnaryExpr*>(e)->expr.get());
    case NodeKind::kBinary: {
      auto* b = static_cast<const promql::BinaryExpr*>(e);
      return hasSubquery(b->lhs.get()) || hasSubquery(b->rhs.get());
    }
    case NodeKind::kAggregate: {
      auto* a = static_cast<const promql::AggregateExpr*>(e);
      return hasSubquery(a->expr.get()) || (a->param && hasSubquery(a->param.get()));
    }
    case NodeKind::kCall: {
      for (const auto& a : static_cast<const promql::Call*>(e)->args) {
        if (hasSubquery(a.get())) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

const promql::MemoryStorage& storage() {
  static const promql::MemoryStorage* s = [] {
    auto* st = new promql::MemoryStorage();
    for (int i = 0; i < 3; ++i) {
      promql::Labels ls = promql::makeLabels({{"__name__", "foo"},
                                              {"job", "j" + std::to_string(i)},
                                              {"le", i == 2 ? "+Inf" : "0.5"}});
      for (int64_t t = 0; t <= 600000; t += 15000)
        st->append(ls, t, static_cast<double>(t / 1000 * (i + 1)));
    }
    st->append(promql::makeLabels({{"__name__", "bar"}}), 30000, promql::staleNaN());
    return st;
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);
  auto parsed = promql::parseExpr(in);
  if (!parsed.ok()) {
    if (parsed.error().err != EINVAL && parsed.error().err != ENOTSUP) __builtin_trap();
    if (parsed.error().detail.empty()) __builtin_trap();
    return 0;
  }
  const promql::Expr& e = **parsed;
  if (hasSubquery(&e)) return 0;
  promql::Engine engine;
  (void)engine.instantQuery(storage(), e, 300000);
  auto t = e.type();
  if (t == promql::ValueType::kScalar || t == promql::ValueType::kVector) {
    (void)engine.rangeQuery(storage(), e, 0, 600000, 60000);
  }
  return 0;
}
