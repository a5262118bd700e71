#include "tools/memcgtool/promql_test.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "promql/engine.h"
#include "promql/lexer.h"
#include "promql/parser.h"
#include "promql/storage.h"

namespace memcg::tool {

using promql::Labels;

int ScriptReport::passed() const {
  return static_cast<int>(std::count_if(
      evals.begin(), evals.end(),
      [](const EvalOutcome& e) { return e.kind == EvalOutcome::Kind::kPassed; }));
}
int ScriptReport::failed() const {
  return static_cast<int>(std::count_if(
             evals.begin(), evals.end(),
             [](const EvalOutcome& e) { return e.kind == EvalOutcome::Kind::kFailed; })) +
         (fatal.empty() ? 0 : 1);
}
int ScriptReport::unsupported() const {
  return static_cast<int>(std::count_if(
      evals.begin(), evals.end(),
      [](const EvalOutcome& e) { return e.kind == EvalOutcome::Kind::kUnsupported; }));
}

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string fmtValue(double v) {
  if (promql::isStaleNaN(v)) return "stale";
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

// Scans a number of the series notation at s[i] (sign, digits, '.', exponent,
// or Inf/NaN); no hex (the 'x' is the repetition).
bool scanNumber(std::string_view s, size_t& i, double& out) {
  size_t start = i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  auto lowerAt = [&](size_t k, const char* w) {
    size_t n = std::strlen(w);
    if (k + n > s.size()) return false;
    for (size_t j = 0; j < n; ++j) {
      if (std::tolower(static_cast<unsigned char>(s[k + j])) != w[j]) return false;
    }
    return true;
  };
  if (lowerAt(i, "inf")) {
    i += 3;
  } else if (lowerAt(i, "nan")) {
    i += 3;
  } else {
    size_t digits = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i == digits) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      size_t save = i++;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      } else {
        i = save;
      }
    }
  }
  std::string num(s.substr(start, i - start));
  return promql::parseNumber(num, out) ||
         (num.size() > 1 && num[0] == '+' && promql::parseNumber(num.substr(1), out));
}

bool parseUint(std::string_view s, size_t& i, uint64_t& out) {
  size_t start = i;
  out = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    out = out * 10 + static_cast<uint64_t>(s[i] - '0');
    ++i;
  }
  return i > start;
}

bool parseItem(std::string_view item, std::vector<SeqValue>& vals, std::string& err) {
  if (item == "_") {
    vals.push_back({true, 0});
    return true;
  }
  if (item.size() > 2 && item[0] == '_' && item[1] == 'x') {
    size_t i = 2;
    uint64_t n;
    if (!parseUint(item, i, n) || i != item.size()) {
      err = "bad repetition \"" + std::string(item) + "\"";
      return false;
    }
    for (uint64_t k = 0; k < n; ++k) vals.push_back({true, 0});
    return true;
  }
  if (item == "stale") {
    vals.push_back({false, promql::staleNaN()});
    return true;
  }
  size_t i = 0;
  double a;
  if (!scanNumber(item, i, a)) {
    err = "bad series value \"" + std::string(item) + "\"";
    return false;
  }
  if (i == item.size()) {
    vals.push_back({false, a});
    return true;
  }
  double b = 0;
  if (item[i] == '+' || item[i] == '-') {
    if (!scanNumber(item, i, b)) {
      err = "bad series increment in \"" + std::string(item) + "\"";
      return false;
    }
  }
  if (i >= item.size() || item[i] != 'x') {
    err = "bad series value \"" + std::string(item) + "\"";
    return false;
  }
  ++i;
  uint64_t n;
  if (!parseUint(item, i, n) || i != item.size()) {
    err = "bad repetition count in \"" + std::string(item) + "\"";
    return false;
  }
  for (uint64_t k = 0; k <= n; ++k) {
    vals.push_back({false, a});
    a += b;
  }
  return true;
}

}  // namespace

bool parseSeriesDesc(std::string_view line, Labels& labels, std::vector<SeqValue>& vals,
                     std::string& err) {
  // The metric part ends at the closing brace, or at the first space.
  size_t end;
  size_t brace = line.find('{');
  size_t space = line.find_first_of(" \t");
  std::vector<promql::Label> ls;
  if (brace != std::string_view::npos &&
      (space == std::string_view::npos || brace < space)) {
    std::string name = trim(line.substr(0, brace));
    if (!name.empty()) ls.push_back({std::string(promql::kMetricName), name});
    // Lex the braces with the PromQL lexer (quoted values, escapes).
    auto toks = promql::lex(line.substr(brace));
    size_t k = 1;
    end = std::string_view::npos;
    while (k < toks.size()) {
      const auto& t = toks[k];
      if (t.type == promql::Tok::kRBrace) {
        end = brace + t.pos + 1;
        break;
      }
      if (t.type == promql::Tok::kComma) {
        ++k;
        continue;
      }
      if ((t.type != promql::Tok::kIdentifier && t.type != promql::Tok::kKeyword) ||
          k + 2 >= toks.size() || toks[k + 1].type != promql::Tok::kAssign ||
          toks[k + 2].type != promql::Tok::kString) {
        err = "bad label set in \"" + std::string(line) + "\"";
        return false;
      }
      ls.push_back({t.text, toks[k + 2].text});
      k += 3;
    }
    if (end == std::string_view::npos) {
      err = "unterminated label set in \"" + std::string(line) + "\"";
      return false;
    }
  } else {
    end = space == std::string_view::npos ? line.size() : space;
    std::string name = trim(line.substr(0, end));
    if (name.empty()) {
      err = "missing metric in \"" + std::string(line) + "\"";
      return false;
    }
    ls.push_back({std::string(promql::kMetricName), name});
  }
  labels = promql::makeLabels(std::move(ls));
  std::string_view rest = line.substr(end);
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && std::isspace(static_cast<unsigned char>(rest[i]))) ++i;
    if (i >= rest.size()) break;
    size_t j = i;
    while (j < rest.size() && !std::isspace(static_cast<unsigned char>(rest[j]))) ++j;
    if (!parseItem(rest.substr(i, j - i), vals, err)) return false;
    i = j;
  }
  return true;
}

namespace {

bool almostEqual(double a, double b, double eps) {
  if (std::isnan(a) && std::isnan(b)) return true;
  if (a == b) return true;
  const double minNormal = 2.2250738585072014e-308;
  double diff = std::abs(a - b);
  if (a == 0 || b == 0 || diff < minNormal) return diff < eps * minNormal;
  return diff / (std::abs(a) + std::abs(b)) < eps;
}

struct Expected {
  Labels labels;
  std::vector<SeqValue> vals;
  int pos;
};

struct EvalCmd {
  int line;
  std::string text;
  std::string expr;
  bool fail = false, ordered = false, range = false;
  int64_t start = 0, end = 0, step = 0;
  bool scalarExpected = false;
  double scalar = 0;
  std::vector<Expected> expected;
};

std::string describeVector(const promql::QueryResult& r) {
  std::string out;
  for (const auto& s : r.series) {
    out += "    " + promql::labelsString(s.labels) + " ";
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (i > 0) out += " ";
      if (r.type == promql::ValueType::kMatrix)
        out += "@" + std::to_string(s.points[i].t) + ":";
      out += fmtValue(s.points[i].v);
    }
    out += "\n";
  }
  if (r.series.empty()) out = "    (no series)\n";
  return out;
}

std::string describeExpected(const EvalCmd& c) {
  if (c.scalarExpected) return "    scalar " + fmtValue(c.scalar) + "\n";
  std::string out;
  for (const auto& e : c.expected) {
    out += "    " + promql::labelsString(e.labels) + " ";
    for (size_t i = 0; i < e.vals.size(); ++i) {
      if (i > 0) out += " ";
      out += e.vals[i].omitted ? "_" : fmtValue(e.vals[i].v);
    }
    out += "\n";
  }
  if (c.expected.empty()) out = "    (no series)\n";
  return out;
}

// Empty when the instant result matches.
std::string compareInstant(const EvalCmd& c, const promql::QueryResult& r, double eps,
                           bool ordered) {
  if (r.type == promql::ValueType::kMatrix)
    return "received range result on instant evaluation";
  if (r.type == promql::ValueType::kScalar) {
    if (!c.scalarExpected)
      return "got scalar " + fmtValue(r.scalar) + ", expected a vector";
    if (!almostEqual(c.scalar, r.scalar, eps)) {
      return "expected scalar " + fmtValue(c.scalar) + " but got " + fmtValue(r.scalar);
    }
    return {};
  }
  if (r.type == promql::ValueType::kString) return "got a string result";
  if (c.scalarExpected) return "expected scalar " + fmtValue(c.scalar) + ", got a vector";
  std::vector<bool> seen(c.expected.size(), false);
  for (size_t pos = 0; pos < r.series.size(); ++pos) {
    const auto& s = r.series[pos];
    auto it = std::find_if(c.expected.begin(), c.expected.end(),
                           [&](const Expected& e) { return e.labels == s.labels; });
    if (it == c.expected.end())
      return "unexpected metric " + promql::labelsString(s.labels) + " in result";
    size_t idx = static_cast<size_t>(it - c.expected.begin());
    if (ordered && it->pos != static_cast<int>(pos) + 1) {
      return "expected metric " + promql::labelsString(s.labels) + " at position " +
             std::to_string(it->pos) + " but was at " + std::to_string(pos + 1);
    }
    double want = it->vals.empty() ? NAN : it->vals[0].v;
    if (!almostEqual(want, s.points[0].v, eps)) {
      return "expected " + fmtValue(want) + " for " + promql::labelsString(s.labels) +
             " but got " + fmtValue(s.points[0].v);
    }
    seen[idx] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i])
      return "expected metric " + promql::labelsString(c.expected[i].labels) +
             " not found";
  }
  return {};
}

std::string compareRange(const EvalCmd& c, const promql::QueryResult& r, double eps) {
  std::vector<bool> seen(c.expected.size(), false);
  for (const auto& s : r.series) {
    auto it = std::find_if(c.expected.begin(), c.expected.end(),
                           [&](const Expected& e) { return e.labels == s.labels; });
    if (it == c.expected.end())
      return "unexpected series " + promql::labelsString(s.labels) + " in result";
    seen[static_cast<size_t>(it - c.expected.begin())] = true;
    std::vector<promql::Sample> want;
    for (size_t i = 0; i < it->vals.size(); ++i) {
      if (!it->vals[i].omitted)
        want.push_back({c.start + static_cast<int64_t>(i) * c.step, it->vals[i].v});
    }
    if (want.size() != s.points.size()) {
      return "series " + promql::labelsString(s.labels) + ": expected " +
             std::to_string(want.size()) + " points, got " +
             std::to_string(s.points.size());
    }
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i].t != s.points[i].t) {
        return "series " + promql::labelsString(s.labels) + ": expected a point at " +
               std::to_string(want[i].t) + " ms, got one at " +
               std::to_string(s.points[i].t);
      }
      if (!almostEqual(want[i].v, s.points[i].v, eps)) {
        return "series " + promql::labelsString(s.labels) + " at " +
               std::to_string(want[i].t) + " ms: expected " + fmtValue(want[i].v) +
               " but got " + fmtValue(s.points[i].v);
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i])
      return "expected series " + promql::labelsString(c.expected[i].labels) +
             " not found";
  }
  return {};
}

bool parseDur(const std::string& s, int64_t& ms) {
  if (promql::parseDurationMs(s, ms)) return true;
  // Plain numbers are seconds (the newer format allows them).
  double v;
  if (promql::parseNumber(s, v) && std::isfinite(v)) {
    ms = static_cast<int64_t>(std::llround(v * 1000));
    return true;
  }
  if (!s.empty() && s[0] == '-' && promql::parseDurationMs(s.substr(1), ms)) {
    ms = -ms;
    return true;
  }
  return false;
}

void pinAt(promql::Expr* e, int64_t ts, bool frozen, bool& unsafe) {
  using promql::NodeKind;
  auto pin = [&](promql::AtModifier& at) {
    // start()/end() count as unset: 2.42 keeps them apart from the timestamp.
    if (!frozen && at.kind != promql::AtKind::kTimestamp) {
      at.kind = promql::AtKind::kTimestamp;
      at.ms = ts;
    }
  };
  switch (e->kind) {
    case NodeKind::kVectorSelector:
      pin(static_cast<promql::VectorSelector*>(e)->at);
      break;
    case NodeKind::kMatrixSelector:
      pin(static_cast<promql::MatrixSelector*>(e)->vs->at);
      break;
    case NodeKind::kSubquery: {
      auto* sq = static_cast<promql::SubqueryExpr*>(e);
      pin(sq->at);
      pinAt(sq->expr.get(), ts, frozen || sq->at.kind == promql::AtKind::kTimestamp,
            unsafe);
      break;
    }
    case NodeKind::kParen:
      pinAt(static_cast<promql::ParenExpr*>(e)->expr.get(), ts, frozen, unsafe);
      break;
    case NodeKind::kUnary:
      pinAt(static_cast<promql::UnaryExpr*>(e)->expr.get(), ts, frozen, unsafe);
      break;
    case NodeKind::kBinary: {
      auto* b = static_cast<promql::BinaryExpr*>(e);
      pinAt(b->lhs.get(), ts, frozen, unsafe);
      pinAt(b->rhs.get(), ts, frozen, unsafe);
      break;
    }
    case NodeKind::kAggregate: {
      auto* a = static_cast<promql::AggregateExpr*>(e);
      if (a->param) pinAt(a->param.get(), ts, frozen, unsafe);
      pinAt(a->expr.get(), ts, frozen, unsafe);
      break;
    }
    case NodeKind::kCall: {
      auto* c = static_cast<promql::Call*>(e);
      static const char* const kUnsafe[] = {
          "days_in_month",  "day_of_month", "day_of_week", "day_of_year",
          "hour",           "minute",       "month",       "year",
          "predict_linear", "time",         "timestamp"};
      for (const char* n : kUnsafe) {
        if (std::strcmp(c->func->name, n) == 0) unsafe = true;
      }
      for (auto& a : c->args) pinAt(a.get(), ts, frozen, unsafe);
      break;
    }
    default:
      break;
  }
}

// Runs one instant evaluation at t (and, as 2.42 does, the same query as a
// range query around t); empty when it matches the expectation.
std::string checkInstant(const EvalCmd& c, const promql::Engine& engine,
                         const promql::MemoryStorage& storage, const promql::Expr& expr,
                         int64_t t, const ScriptOptions& opts) {
  auto r = engine.instantQuery(storage, expr, t);
  if (!r.ok()) {
    if (c.fail) return {};
    return "error evaluating query: " + r.error().detail;
  }
  if (c.fail) return "expected an error but got none";
  std::string diff = compareInstant(c, *r, opts.epsilon, c.ordered);
  if (!diff.empty()) {
    return diff + "\n  expected:\n" + describeExpected(c) + "  got:\n" +
           describeVector(*r);
  }
  if (!opts.checkRangeMode || c.ordered) return {};
  auto rr = engine.rangeQuery(storage, expr, t - 60000, t + 60000, 60000);
  if (!rr.ok()) return "error evaluating query in range mode: " + rr.error().detail;
  promql::QueryResult mid;
  mid.type = r->type == promql::ValueType::kScalar ? promql::ValueType::kScalar
                                                   : promql::ValueType::kVector;
  for (const auto& s : rr->series) {
    for (const auto& p : s.points) {
      if (p.t == t) {
        mid.series.push_back({s.labels, {p}});
        mid.scalar = p.v;
      }
    }
  }
  diff = compareInstant(c, mid, opts.epsilon, false);
  if (!diff.empty()) {
    return "range mode: " + diff + "\n  expected:\n" + describeExpected(c) + "  got:\n" +
           describeVector(mid);
  }
  return {};
}

EvalOutcome runEval(const EvalCmd& c, const promql::MemoryStorage& storage,
                    const ScriptOptions& opts) {
  EvalOutcome o{EvalOutcome::Kind::kPassed, c.line, c.text, {}};
  auto parsed = promql::parseExpr(c.expr);
  if (!parsed.ok()) {
    if (parsed.error().err == ENOTSUP) {
      o.kind = EvalOutcome::Kind::kUnsupported;
      o.message = parsed.error().detail;
      return o;
    }
    if (c.fail) return o;
    o.kind = EvalOutcome::Kind::kFailed;
    o.message = parsed.error().detail;
    return o;
  }
  promql::Engine engine;
  const promql::Expr& expr = **parsed;
  if (c.range) {
    auto r = engine.rangeQuery(storage, expr, c.start, c.end, c.step);
    if (!r.ok()) {
      if (c.fail) return o;
      o.kind = EvalOutcome::Kind::kFailed;
      o.message = "error evaluating range query: " + r.error().detail;
      return o;
    }
    if (c.fail) {
      o.kind = EvalOutcome::Kind::kFailed;
      o.message = "expected an error but got none";
      return o;
    }
    std::string diff = compareRange(c, *r, opts.epsilon);
    if (!diff.empty()) {
      o.kind = EvalOutcome::Kind::kFailed;
      o.message = diff + "\n  expected:\n" + describeExpected(c) + "  got:\n" +
                  describeVector(*r);
    }
    return o;
  }
  std::string diff = checkInstant(c, engine, storage, expr, c.start, opts);
  if (diff.empty()) {
    // As 2.42's runner: pin every selector to the eval time with @ and
    // evaluate at other times; the answer must not change.
    bool unsafe = false;
    pinAt(parsed->get(), c.start, false, unsafe);
    if (!unsafe) {
      std::vector<int64_t> times = {-10 * c.start, 0, c.start / 5, c.start, 10 * c.start};
      if (c.start == 0) times = {-1000, 0, 1000};
      for (int64_t t : times) {
        diff = checkInstant(c, engine, storage, expr, t, opts);
        if (!diff.empty()) {
          diff = "with every selector pinned by @ " + std::to_string(c.start) +
                 " ms, evaluated at " + std::to_string(t) + " ms: " + diff;
          break;
        }
      }
    }
  }
  if (!diff.empty()) {
    o.kind = EvalOutcome::Kind::kFailed;
    o.message = diff;
  }
  return o;
}

}  // namespace

ScriptReport runScript(std::string_view text, const ScriptOptions& opts) {
  ScriptReport rep;
  std::vector<std::string> lines;
  {
    std::string cur;
    for (char ch : text) {
      if (ch == '\n') {
        lines.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(ch);
      }
    }
    lines.push_back(cur);
  }
  for (auto& l : lines) {
    l = trim(l);
    if (!l.empty() && l[0] == '#') l.clear();
  }
  promql::MemoryStorage storage;
  static const std::regex kLoad(R"(^load\s+(\S+?)\s*$)", std::regex::icase);
  static const std::regex kInstant(
      R"(^eval(?:_(fail|ordered))?\s+instant\s+(?:at\s+(.+?))?\s+(.+)$)");
  static const std::regex kRange(
      R"(^eval(?:_(fail|ordered))?\s+range\s+from\s+(.+?)\s+to\s+(.+?)\s+step\s+(.+?)\s+(.+)$)");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty()) continue;
    std::string word = l.substr(0, l.find_first_of(" \t"));
    std::transform(word.begin(), word.end(), word.begin(), ::tolower);
    std::smatch m;
    if (word == "clear") {
      storage.clear();
      continue;
    }
    if (word == "load") {
      int64_t stepMs;
      if (!std::regex_match(l, m, kLoad) ||
          !promql::parseDurationMs(m[1].str(), stepMs)) {
        rep.fatal = "line " + std::to_string(i + 1) + ": invalid load command: " + l;
        return rep;
      }
      while (i + 1 < lines.size() && !lines[i + 1].empty()) {
        ++i;
        Labels ls;
        std::vector<SeqValue> vals;
        std::string err;
        if (!parseSeriesDesc(lines[i], ls, vals, err)) {
          rep.fatal = "line " + std::to_string(i + 1) + ": " + err;
          return rep;
        }
        int64_t t = 0;
        for (const auto& v : vals) {
          if (!v.omitted) storage.append(ls, t, v.v);
          t += stepMs;
        }
      }
      continue;
    }
    if (word.rfind("eval", 0) == 0) {
      EvalCmd c;
      c.line = static_cast<int>(i + 1);
      c.text = l;
      std::string mod;
      if (std::regex_match(l, m, kRange)) {
        mod = m[1].str();
        c.range = true;
        if (!parseDur(m[2].str(), c.start) || !parseDur(m[3].str(), c.end) ||
            !parseDur(m[4].str(), c.step)) {
          rep.fatal =
              "line " + std::to_string(i + 1) + ": invalid range evaluation: " + l;
          return rep;
        }
        c.expr = m[5].str();
      } else if (std::regex_match(l, m, kInstant)) {
        mod = m[1].str();
        std::string at = m[2].str();
        if (!at.empty() && !parseDur(at, c.start)) {
          rep.fatal = "line " + std::to_string(i + 1) + ": invalid step definition \"" +
                      at + "\"";
          return rep;
        }
        c.expr = m[3].str();
      } else {
        rep.fatal =
            "line " + std::to_string(i + 1) + ": invalid evaluation command: " + l;
        return rep;
      }
      c.fail = mod == "fail";
      c.ordered = mod == "ordered";
      for (int pos = 1; i + 1 < lines.size() && !lines[i + 1].empty(); ++pos) {
        ++i;
        const std::string& d = lines[i];
        double num;
        if (!c.range && promql::parseNumber(d, num)) {
          c.scalarExpected = true;
          c.scalar = num;
          break;
        }
        Expected e;
        e.pos = pos;
        std::string err;
        if (!parseSeriesDesc(d, e.labels, e.vals, err)) {
          rep.fatal = "line " + std::to_string(i + 1) + ": " + err;
          return rep;
        }
        if (!c.range && e.vals.size() > 1) {
          rep.fatal = "line " + std::to_string(i + 1) +
                      ": expecting multiple values in instant evaluation not allowed";
          return rep;
        }
        c.expected.push_back(std::move(e));
      }
      rep.evals.push_back(runEval(c, storage, opts));
      continue;
    }
    rep.fatal = "line " + std::to_string(i + 1) + ": invalid command \"" + l + "\"";
    return rep;
  }
  return rep;
}

int testPromqlMain(int argc, char** argv, std::ostream& out) {
  ScriptOptions opts;
  // An eval our engine cannot run checks nothing: it fails the run (like a
  // failed one) unless the caller says it expects some.
  bool allowUnsupported = false;
  std::vector<std::string> files;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--epsilon" && i + 1 < argc) {
      double e;
      if (!promql::parseNumber(argv[++i], e) || !(e > 0)) {
        out << "memcgtool: bad --epsilon " << argv[i] << "\n";
        return 2;
      }
      opts.epsilon = e;
    } else if (a.rfind("--epsilon=", 0) == 0) {
      double e;
      if (!promql::parseNumber(a.substr(10), e) || !(e > 0)) {
        out << "memcgtool: bad " << a << "\n";
        return 2;
      }
      opts.epsilon = e;
    } else if (a == "--no-range-check") {
      opts.checkRangeMode = false;
    } else if (a == "--allow-unsupported") {
      allowUnsupported = true;
    } else if (!a.empty() && a[0] == '-') {
      out << "memcgtool: unknown option " << a << "\n";
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    out << "usage: memcgtool test promql [--epsilon E] [--no-range-check] "
           "[--allow-unsupported] FILE...\n";
    return 2;
  }
  int totalPassed = 0, totalFailed = 0, totalUnsupported = 0, filesFailed = 0;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) {
      out << f << ": cannot read: " << std::strerror(errno) << "\n";
      ++filesFailed;
      ++totalFailed;
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    ScriptReport r = runScript(ss.str(), opts);
    for (const auto& e : r.evals) {
      if (e.kind == EvalOutcome::Kind::kFailed) {
        out << f << ":" << e.line << ": FAILED: " << e.command << "\n  " << e.message
            << "\n";
      } else if (e.kind == EvalOutcome::Kind::kUnsupported) {
        out << f << ":" << e.line << ": UNSUPPORTED: " << e.command << "\n  " << e.message
            << "\n";
      }
    }
    if (!r.fatal.empty()) out << f << ": FAILED: " << r.fatal << "\n";
    out << f << ": " << r.passed() << " passed, " << r.failed() << " failed, "
        << r.unsupported() << " unsupported\n";
    totalPassed += r.passed();
    totalFailed += r.failed();
    totalUnsupported += r.unsupported();
    if (r.failed() > 0) ++filesFailed;
  }
  out << "summary: " << files.size() << " files (" << filesFailed << " with failures), "
      << totalPassed << " passed, " << totalFailed << " failed, " << totalUnsupported
      << " unsupported\n";
  if (totalFailed > 0) return 1;
  if (totalUnsupported > 0 && !allowUnsupported) {
    out << "memcgtool: " << totalUnsupported
        << " eval(s) UNSUPPORTED by our engine: they checked nothing "
           "(--allow-unsupported "
           "accepts that)\n";
    return 1;
  }
  return 0;
}

}  // namespace memcg::tool
