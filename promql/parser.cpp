#include "promql/parser.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "promql/lexer.h"

namespace memcg::promql {
namespace {

struct ParseFailure {
  int err;
  size_t pos;
  std::string msg;
};

const char* const kAggregators[] = {"sum",  "avg",     "count",    "min",
                                    "max",  "group",   "stddev",   "stdvar",
                                    "topk", "bottomk", "quantile", "count_values"};

bool isAggregatorWord(const std::string& w) {
  for (const char* a : kAggregators) {
    if (w == a) return true;
  }
  return false;
}

AggOp aggOpOf(const std::string& w) {
  for (int i = 0; i < 12; ++i) {
    if (w == kAggregators[i]) {
      static const AggOp ops[] = {AggOp::kSum,     AggOp::kAvg,      AggOp::kCount,
                                  AggOp::kMin,     AggOp::kMax,      AggOp::kGroup,
                                  AggOp::kStddev,  AggOp::kStdvar,   AggOp::kTopk,
                                  AggOp::kBottomk, AggOp::kQuantile, AggOp::kCountValues};
      return ops[i];
    }
  }
  return AggOp::kSum;
}

// Keywords that may also name a metric (Prometheus' metric_identifier).
bool keywordCanBeMetric(const std::string& w) {
  return isAggregatorWord(w) || w == "by" || w == "and" || w == "or" || w == "unless" ||
         w == "offset" || w == "without" || w == "start" || w == "end";
}

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::kEof:
      return "end of input";
    case Tok::kNumber:
      return "number \"" + t.text + "\"";
    case Tok::kDuration:
      return "duration \"" + t.text + "\"";
    case Tok::kString:
      return "string " + goQuote(t.text);
    case Tok::kIdentifier:
    case Tok::kMetricIdentifier:
      return "identifier \"" + t.text + "\"";
    case Tok::kKeyword:
      return "\"" + t.text + "\"";
    default:
      return "\"" + t.text + "\"";
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  ExprPtr parseTop() {
    if (toks_.back().type == Tok::kError) {
      fail(toks_.back().pos, toks_.back().text);
    }
    if (peek().type == Tok::kEof) fail(0, "no expression found in input");
    ExprPtr e = parseBinary(1);
    if (peek().type != Tok::kEof) unexpected("");
    return e;
  }

 private:
  [[noreturn]] void fail(size_t pos, std::string msg, int err = EINVAL) {
    throw ParseFailure{err, pos, std::move(msg)};
  }
  [[noreturn]] void unexpected(const std::string& context) {
    std::string m = "unexpected " + describe(peek());
    if (!context.empty()) m += " " + context;
    fail(peek().pos, m);
  }

  const Token& peek(size_t k = 0) const {
    size_t i = std::min(i_ + k, toks_.size() - 1);
    return toks_[i];
  }
  Token next() {
    Token t = peek();
    if (i_ < toks_.size() - 1) ++i_;
    return t;
  }
  bool isKw(const Token& t, const char* kw) const {
    return t.type == Tok::kKeyword && t.text == kw;
  }
  void expect(Tok t, const char* what, const std::string& context) {
    if (peek().type != t) {
      fail(peek().pos,
           "unexpected " + describe(peek()) + " " + context + ", expected " + what);
    }
    next();
  }

  // Binary operator precedence, 0 when the token is none.
  int precedence(const Token& t, BinOp& op) const {
    switch (t.type) {
      case Tok::kAdd:
        op = BinOp::kAdd;
        return 4;
      case Tok::kSub:
        op = BinOp::kSub;
        return 4;
      case Tok::kMul:
        op = BinOp::kMul;
        return 5;
      case Tok::kDiv:
        op = BinOp::kDiv;
        return 5;
      case Tok::kMod:
        op = BinOp::kMod;
        return 5;
      case Tok::kPow:
        op = BinOp::kPow;
        return 6;
      case Tok::kEqlC:
        op = BinOp::kEql;
        return 3;
      case Tok::kNeq:
        op = BinOp::kNeq;
        return 3;
      case Tok::kGtr:
        op = BinOp::kGtr;
        return 3;
      case Tok::kLss:
        op = BinOp::kLss;
        return 3;
      case Tok::kGte:
        op = BinOp::kGte;
        return 3;
      case Tok::kLte:
        op = BinOp::kLte;
        return 3;
      case Tok::kKeyword:
        if (t.text == "atan2") {
          op = BinOp::kAtan2;
          return 5;
        }
        if (t.text == "and") {
          op = BinOp::kAnd;
          return 2;
        }
        if (t.text == "unless") {
          op = BinOp::kUnless;
          return 2;
        }
        if (t.text == "or") {
          op = BinOp::kOr;
          return 1;
        }
        return 0;
      default:
        return 0;
    }
  }

  std::vector<std::string> parseLabelList(const char* context) {
    std::vector<std::string> out;
    expect(Tok::kLParen, "\"(\"", context);
    while (peek().type != Tok::kRParen) {
      const Token& t = peek();
      if (t.type != Tok::kIdentifier && t.type != Tok::kKeyword) {
        fail(t.pos, "unexpected " + describe(t) + " in " + context + ", expected label");
      }
      if (t.type == Tok::kKeyword && (t.text == "inf" || t.text == "nan")) {
        fail(t.pos, "unexpected " + describe(t) + " in " + context + ", expected label");
      }
      out.push_back(next().text);
      if (peek().type == Tok::kComma) {
        next();
      } else if (peek().type != Tok::kRParen) {
        fail(peek().pos, "unexpected " + describe(peek()) + " in " + context +
                             ", expected \",\" or \")\"");
      }
    }
    next();
    return out;
  }

  ExprPtr parseBinary(int minPrec) {
    ExprPtr lhs = parseUnary();
    while (true) {
      BinOp op;
      int prec = precedence(peek(), op);
      if (prec == 0 || prec < minPrec) break;
      size_t opPos = next().pos;
      auto b = std::make_unique<BinaryExpr>();
      b->op = op;
      b->pos = opPos;
      bool matchingGiven = false;
      if (isKw(peek(), "bool")) {
        next();
        b->returnBool = true;
      }
      if (isKw(peek(), "on") || isKw(peek(), "ignoring")) {
        b->matching.on = next().text == "on";
        b->matching.labels = parseLabelList("grouping opts");
        matchingGiven = true;
        if (isKw(peek(), "group_left") || isKw(peek(), "group_right")) {
          b->matching.card =
              next().text == "group_left" ? Card::kManyToOne : Card::kOneToMany;
          if (peek().type == Tok::kLParen)
            b->matching.include = parseLabelList("grouping opts");
        }
      } else if (isKw(peek(), "group_left") || isKw(peek(), "group_right")) {
        fail(peek().pos, "unexpected <group_left/group_right>: needs on() or ignoring()");
      }
      ExprPtr rhs = parseBinary(op == BinOp::kPow ? prec : prec + 1);
      b->lhs = std::move(lhs);
      b->rhs = std::move(rhs);
      checkBinary(*b, matchingGiven);
      lhs = std::move(b);
    }
    return lhs;
  }

  void checkBinary(BinaryExpr& b, bool matchingGiven) {
    ValueType lt = b.lhs->type(), rt = b.rhs->type();
    auto okType = [](ValueType t) {
      return t == ValueType::kScalar || t == ValueType::kVector;
    };
    if (b.returnBool && !isComparison(b.op)) {
      fail(b.pos, "bool modifier can only be used on comparison operators");
    }
    if (isComparison(b.op) && !b.returnBool && lt == ValueType::kScalar &&
        rt == ValueType::kScalar) {
      fail(b.pos, "comparisons between scalars must use BOOL modifier");
    }
    if (isSetOp(b.op) && b.matching.card == Card::kOneToOne)
      b.matching.card = Card::kManyToMany;
    if (matchingGiven && b.matching.on) {
      for (const auto& l : b.matching.include) {
        if (std::find(b.matching.labels.begin(), b.matching.labels.end(), l) !=
            b.matching.labels.end()) {
          fail(b.pos,
               "label " + goQuote(l) + " must not occur in ON and GROUP clause at once");
        }
      }
    }
    if (!okType(lt) || !okType(rt)) {
      fail(b.pos, "binary expression must contain only scalar and instant vector types");
    }
    if ((lt != ValueType::kVector || rt != ValueType::kVector) && matchingGiven) {
      fail(b.pos, "vector matching only allowed between instant vectors");
    }
    if (isSetOp(b.op)) {
      if (lt == ValueType::kScalar || rt == ValueType::kScalar) {
        fail(b.pos, std::string("set operator \"") + binOpName(b.op) +
                        "\" not allowed in binary scalar expression");
      }
      if (b.matching.card == Card::kManyToOne || b.matching.card == Card::kOneToMany) {
        fail(b.pos, std::string("no grouping allowed for \"") + binOpName(b.op) +
                        "\" operation");
      }
    }
    std::sort(b.matching.labels.begin(), b.matching.labels.end());
  }

  ExprPtr parseUnary() {
    const Token& t = peek();
    if (t.type == Tok::kAdd || t.type == Tok::kSub) {
      bool neg = t.type == Tok::kSub;
      size_t pos = next().pos;
      ExprPtr operand = parseBinary(6);  // binds like '*': only '^' binds tighter
      ValueType ty = operand->type();
      if (ty != ValueType::kScalar && ty != ValueType::kVector) {
        fail(pos,
             "unary expression only allowed on expressions of type scalar or instant "
             "vector");
      }
      if (operand->kind == NodeKind::kNumber) {
        auto* n = static_cast<NumberLiteral*>(operand.get());
        if (neg) n->value = -n->value;
        n->pos = pos;
        return operand;
      }
      auto u = std::make_unique<UnaryExpr>();
      u->negate = neg;
      u->pos = pos;
      u->expr = std::move(operand);
      return u;
    }
    return parsePostfix(parsePrimary());
  }

  int64_t parseDurationTok(const char* context) {
    const Token& t = peek();
    if (t.type != Tok::kDuration) {
      fail(t.pos, "unexpected " + describe(t) + " in " + context + ", expected duration");
    }
    int64_t ms = 0;
    if (!parseDurationMs(t.text, ms))
      fail(t.pos, "not a valid duration string: \"" + t.text + "\"");
    next();
    return ms;
  }

  void setAt(AtModifier& at, size_t pos) {
    if (at.kind != AtKind::kNone)
      fail(pos, "@ <timestamp> may not be set multiple times");
    const Token& t = peek();
    if (isKw(t, "start") || isKw(t, "end")) {
      at.kind = t.text == "start" ? AtKind::kStart : AtKind::kEnd;
      next();
      expect(Tok::kLParen, "\"(\"", "in @ modifier");
      expect(Tok::kRParen, "\")\"", "in @ modifier");
      return;
    }
    bool neg = false;
    if (t.type == Tok::kAdd || t.type == Tok::kSub) {
      neg = next().type == Tok::kSub;
    }
    if (peek().type != Tok::kNumber) {
      fail(peek().pos, "unexpected " + describe(peek()) + " in @, expected timestamp");
    }
    double v;
    if (!parseNumber(peek().text, v)) fail(peek().pos, "bad number: " + peek().text);
    next();
    if (neg) v = -v;
    if (std::isinf(v) || std::isnan(v) || v >= 9.2233720368547758e18 ||
        v <= -9.2233720368547758e18 || std::abs(v * 1000) >= 9.2233720368547758e18) {
      fail(pos, "timestamp out of bounds for @ modifier: " + std::to_string(v));
    }
    at.kind = AtKind::kTimestamp;
    at.ms = static_cast<int64_t>(std::round(v * 1000));
  }

  ExprPtr parsePostfix(ExprPtr e) {
    while (true) {
      const Token& t = peek();
      if (t.type == Tok::kLBracket) {
        size_t pos = next().pos;
        int64_t range = parseDurationTok("range or subquery");
        if (peek().type == Tok::kColon) {
          next();
          int64_t step = 0;
          if (peek().type != Tok::kRBracket) step = parseDurationTok("subquery");
          expect(Tok::kRBracket, "\"]\"", "in subquery selector");
          if (e->type() != ValueType::kVector) {
            fail(pos, std::string("subquery is only allowed on instant vector, got ") +
                          valueTypeName(e->type()) + " instead");
          }
          auto s = std::make_unique<SubqueryExpr>();
          s->pos = e->pos;
          s->range = range;
          s->step = step;
          s->expr = std::move(e);
          e = std::move(s);
          continue;
        }
        expect(Tok::kRBracket, "\"]\"", "in range selector");
        if (e->kind != NodeKind::kVectorSelector) {
          fail(pos, "ranges only allowed for vector selectors");
        }
        auto* vs = static_cast<VectorSelector*>(e.get());
        if (vs->offsetSet) fail(pos, "no offset modifiers allowed before range");
        if (vs->at.kind != AtKind::kNone)
          fail(pos, "no @ modifiers allowed before range");
        auto m = std::make_unique<MatrixSelector>();
        m->pos = e->pos;
        m->range = range;
        m->vs.reset(static_cast<VectorSelector*>(e.release()));
        e = std::move(m);
        continue;
      }
      if (isKw(t, "offset") || t.type == Tok::kAt) {
        bool isOffset = t.type != Tok::kAt;
        size_t pos = next().pos;
        int64_t* offset = nullptr;
        bool* offsetSet = nullptr;
        AtModifier* at = nullptr;
        switch (e->kind) {
          case NodeKind::kVectorSelector: {
            auto* vs = static_cast<VectorSelector*>(e.get());
            offset = &vs->offset, offsetSet = &vs->offsetSet, at = &vs->at;
            break;
          }
          case NodeKind::kMatrixSelector: {
            auto* vs = static_cast<MatrixSelector*>(e.get())->vs.get();
            offset = &vs->offset, offsetSet = &vs->offsetSet, at = &vs->at;
            break;
          }
          case NodeKind::kSubquery: {
            auto* s = static_cast<SubqueryExpr*>(e.get());
            offset = &s->offset, offsetSet = &s->offsetSet, at = &s->at;
            break;
          }
          default:
            if (isOffset) {
              fail(pos,
                   "offset modifier must be preceded by an instant vector selector or "
                   "range "
                   "vector selector or a subquery");
            }
            fail(pos,
                 "@ modifier must be preceded by an instant vector selector or range "
                 "vector "
                 "selector or a subquery");
        }
        if (isOffset) {
          if (*offsetSet) fail(pos, "offset may not be set multiple times");
          bool neg = false;
          if (peek().type == Tok::kSub || peek().type == Tok::kAdd)
            neg = next().type == Tok::kSub;
          int64_t d = parseDurationTok("offset");
          *offset = neg ? -d : d;
          *offsetSet = true;
        } else {
          setAt(*at, pos);
        }
        continue;
      }
      return e;
    }
  }

  void parseMatchers(VectorSelector& vs) {
    expect(Tok::kLBrace, "\"{\"", "in label matching");
    while (peek().type != Tok::kRBrace) {
      const Token& name = peek();
      if (name.type != Tok::kIdentifier && name.type != Tok::kKeyword) {
        fail(name.pos,
             "unexpected " + describe(name) + " in label matching, expected label");
      }
      std::string lname = next().text;
      MatchType mt;
      switch (peek().type) {
        case Tok::kAssign:
          mt = MatchType::kEqual;
          break;
        case Tok::kNeq:
          mt = MatchType::kNotEqual;
          break;
        case Tok::kEqlRegex:
          mt = MatchType::kRegex;
          break;
        case Tok::kNeqRegex:
          mt = MatchType::kNotRegex;
          break;
        default:
          fail(peek().pos,
               "unexpected " + describe(peek()) +
                   " in label matching, expected one of \"=\", \"!=\", \"=~\", \"!~\"");
      }
      next();
      if (peek().type != Tok::kString) {
        fail(peek().pos,
             "unexpected " + describe(peek()) + " in label matching, expected string");
      }
      std::string value = next().text;
      Matcher m(mt, lname, value);
      if (!m.error().empty()) fail(name.pos, "invalid regular expression: " + m.error());
      vs.matchers.push_back(std::move(m));
      if (peek().type == Tok::kComma) {
        next();
      } else if (peek().type != Tok::kRBrace) {
        fail(peek().pos, "unexpected " + describe(peek()) +
                             " in label matching, expected \",\" or \"}\"");
      }
    }
    next();
  }

  ExprPtr finishSelector(std::unique_ptr<VectorSelector> vs) {
    if (!vs->name.empty()) {
      for (const auto& m : vs->matchers) {
        if (m.name() == kMetricName) {
          fail(vs->pos, "metric name must not be set twice: " + goQuote(vs->name) +
                            " or " + goQuote(m.value()));
        }
      }
      vs->matchers.emplace_back(MatchType::kEqual, std::string(kMetricName), vs->name);
    } else {
      bool nonEmpty = false;
      for (const auto& m : vs->matchers) {
        if (!m.matches("")) nonEmpty = true;
      }
      if (!nonEmpty)
        fail(vs->pos, "vector selector must contain at least one non-empty matcher");
    }
    return vs;
  }

  ExprPtr parseCall(const Token& name) {
    const FunctionInfo* f = findFunction(name.text);
    if (f == nullptr) {
      if (isRefusedFunction(name.text)) {
        fail(name.pos,
             "unsupported function \"" + name.text +
                 "\" (native histograms are not implemented)",
             ENOTSUP);
      }
      fail(name.pos, "unknown function with name " + goQuote(name.text));
    }
    auto c = std::make_unique<Call>();
    c->pos = name.pos;
    c->func = f;
    expect(Tok::kLParen, "\"(\"", "in function call");
    while (peek().type != Tok::kRParen) {
      c->args.push_back(parseBinary(1));
      if (peek().type == Tok::kComma) {
        next();
      } else if (peek().type != Tok::kRParen) {
        fail(peek().pos, "unexpected " + describe(peek()) +
                             " in function call, expected \",\" or \")\"");
      }
    }
    next();
    size_t nargs = f->args.size();
    size_t got = c->args.size();
    if (f->variadic == 0) {
      if (got != nargs) {
        fail(c->pos, "expected " + std::to_string(nargs) + " argument(s) in call to " +
                         goQuote(f->name) + ", got " + std::to_string(got));
      }
    } else {
      size_t na = nargs - 1;
      if (na > got) {
        fail(c->pos, "expected at least " + std::to_string(na) +
                         " argument(s) in call to " + goQuote(f->name) + ", got " +
                         std::to_string(got));
      }
      if (f->variadic > 0 && na + static_cast<size_t>(f->variadic) < got) {
        fail(c->pos, "expected at most " + std::to_string(na + f->variadic) +
                         " argument(s) in call to " + goQuote(f->name) + ", got " +
                         std::to_string(got));
      }
    }
    for (size_t i = 0; i < got; ++i) {
      ValueType want = i < nargs ? f->args[i] : f->args.back();
      ValueType have = c->args[i]->type();
      if (want != have) {
        fail(c->args[i]->pos, std::string("expected type ") + valueTypeName(want) +
                                  " in call to function " + goQuote(f->name) + ", got " +
                                  valueTypeName(have));
      }
    }
    return c;
  }

  ExprPtr parseAggregate(const Token& kw) {
    auto a = std::make_unique<AggregateExpr>();
    a->pos = kw.pos;
    a->op = aggOpOf(kw.text);
    bool groupingDone = false;
    if (isKw(peek(), "by") || isKw(peek(), "without")) {
      a->without = next().text == "without";
      a->grouping = parseLabelList("grouping opts");
      groupingDone = true;
    }
    expect(Tok::kLParen, "\"(\"", "in aggregation");
    std::vector<ExprPtr> args;
    while (peek().type != Tok::kRParen) {
      args.push_back(parseBinary(1));
      if (peek().type == Tok::kComma) {
        next();
      } else if (peek().type != Tok::kRParen) {
        fail(peek().pos, "unexpected " + describe(peek()) +
                             " in aggregation, expected \",\" or \")\"");
      }
    }
    next();
    if (!groupingDone && (isKw(peek(), "by") || isKw(peek(), "without"))) {
      a->without = next().text == "without";
      a->grouping = parseLabelList("grouping opts");
    }
    bool hasParam = a->op == AggOp::kTopk || a->op == AggOp::kBottomk ||
                    a->op == AggOp::kQuantile || a->op == AggOp::kCountValues;
    size_t want = hasParam ? 2 : 1;
    if (args.empty()) fail(a->pos, "no arguments for aggregate expression provided");
    if (args.size() != want) {
      fail(a->pos,
           "wrong number of arguments for aggregate expression provided, expected " +
               std::to_string(want) + ", got " + std::to_string(args.size()));
    }
    if (hasParam) {
      a->param = std::move(args[0]);
      a->expr = std::move(args[1]);
      ValueType pt = a->param->type();
      ValueType wantT =
          a->op == AggOp::kCountValues ? ValueType::kString : ValueType::kScalar;
      if (pt != wantT) {
        fail(a->param->pos, std::string("expected type ") + valueTypeName(wantT) +
                                " in aggregation parameter, got " + valueTypeName(pt));
      }
    } else {
      a->expr = std::move(args[0]);
    }
    if (a->expr->type() != ValueType::kVector) {
      fail(a->expr->pos,
           std::string("expected type instant vector in aggregation expression, got ") +
               valueTypeName(a->expr->type()));
    }
    std::sort(a->grouping.begin(), a->grouping.end());
    return a;
  }

  ExprPtr parsePrimary() {
    Token t = peek();
    switch (t.type) {
      case Tok::kNumber: {
        next();
        auto n = std::make_unique<NumberLiteral>();
        n->pos = t.pos;
        if (!parseNumber(t.text, n->value))
          fail(t.pos, "bad number or duration syntax: \"" + t.text + "\"");
        return n;
      }
      case Tok::kString: {
        next();
        auto s = std::make_unique<StringLiteral>();
        s->pos = t.pos;
        s->value = t.text;
        return s;
      }
      case Tok::kLParen: {
        next();
        auto p = std::make_unique<ParenExpr>();
        p->pos = t.pos;
        p->expr = parseBinary(1);
        expect(Tok::kRParen, "\")\"", "in paren expression");
        return p;
      }
      case Tok::kLBrace: {
        auto vs = std::make_unique<VectorSelector>();
        vs->pos = t.pos;
        parseMatchers(*vs);
        return finishSelector(std::move(vs));
      }
      case Tok::kIdentifier:
      case Tok::kMetricIdentifier:
      case Tok::kKeyword: {
        if (t.type == Tok::kKeyword) {
          bool aggregate = isAggregatorWord(t.text) &&
                           (peek(1).type == Tok::kLParen || isKw(peek(1), "by") ||
                            isKw(peek(1), "without"));
          if (aggregate) {
            next();
            return parseAggregate(t);
          }
          if (!keywordCanBeMetric(t.text)) unexpected("");
        } else if (t.type == Tok::kIdentifier && peek(1).type == Tok::kLParen) {
          next();
          return parseCall(t);
        }
        next();
        auto vs = std::make_unique<VectorSelector>();
        vs->pos = t.pos;
        vs->name = t.text;
        if (peek().type == Tok::kLBrace) parseMatchers(*vs);
        return finishSelector(std::move(vs));
      }
      case Tok::kDuration:
        fail(t.pos, "unexpected duration \"" + t.text + "\"");
      default:
        unexpected("");
    }
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
};

}  // namespace

bool parseNumber(std::string_view s, double& out) {
  std::string str(s);
  std::string lower;
  for (char c : str)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view body = lower;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") {
    out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (body == "nan") {
    out = NAN;
    return true;
  }
  if (body.empty()) return false;
  // Integers first, with Go's base prefixes (0x hex, leading 0 octal).
  bool allDigits =
      std::all_of(body.begin(), body.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (body.size() > 2 && body[0] == '0' && body[1] == 'x') {
    uint64_t v = 0;
    auto r = std::from_chars(body.data() + 2, body.data() + body.size(), v, 16);
    if (r.ec != std::errc() || r.ptr != body.data() + body.size()) return false;
    out = neg ? -static_cast<double>(v) : static_cast<double>(v);
    return true;
  }
  if (allDigits && body.size() > 1 && body[0] == '0') {
    uint64_t v = 0;
    auto r = std::from_chars(body.data() + 1, body.data() + body.size(), v, 8);
    if (r.ec == std::errc() && r.ptr == body.data() + body.size()) {
      out = neg ? -static_cast<double>(v) : static_cast<double>(v);
      return true;
    }
  }
  double v = 0;
  auto r = std::from_chars(body.data(), body.data() + body.size(), v);
  if (r.ptr != body.data() + body.size()) return false;
  if (r.ec == std::errc::result_out_of_range) {
    // Go returns ±Inf (or 0) for out-of-range literals.
    v = std::strtod(std::string(body).c_str(), nullptr);
  } else if (r.ec != std::errc()) {
    return false;
  }
  out = neg ? -v : v;
  return true;
}

Result<ExprPtr> parseExpr(std::string_view input) {
  try {
    Parser p(lex(input));
    return p.parseTop();
  } catch (const ParseFailure& f) {
    return makeError(f.err, "promql",
                     "parse error at char " + std::to_string(f.pos + 1) + ": " + f.msg);
  }
}

}  // namespace memcg::promql
