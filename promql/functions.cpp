// PromQL functions (Prometheus 2.42's functions.go and quantile.go
// semantics, float samples).
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "promql/eval.h"

namespace memcg::promql::detail {

double quantileOf(double q, std::vector<double>& values);  // engine.cpp

namespace {

inline void kahanInc(double inc, double& sum, double& c) {
  double t = sum + inc;
  if (std::abs(sum) >= std::abs(inc)) {
    c += (sum - t) + inc;
  } else {
    c += (inc - t) + sum;
  }
  sum = t;
}

void linearRegression(std::span<const Sample> s, int64_t interceptTime, double& slope,
                      double& intercept) {
  double n = 0, sumX = 0, cX = 0, sumY = 0, cY = 0, sumXY = 0, cXY = 0, sumX2 = 0,
         cX2 = 0;
  double initY = s[0].v;
  bool constY = true;
  for (size_t i = 0; i < s.size(); ++i) {
    if (constY && i > 0 && s[i].v != initY) constY = false;
    n += 1.0;
    double x = static_cast<double>(s[i].t - interceptTime) / 1e3;
    kahanInc(x, sumX, cX);
    kahanInc(s[i].v, sumY, cY);
    kahanInc(x * s[i].v, sumXY, cXY);
    kahanInc(x * x, sumX2, cX2);
  }
  if (constY) {
    if (std::isinf(initY)) {
      slope = intercept = NAN;
      return;
    }
    slope = 0;
    intercept = initY;
    return;
  }
  sumX += cX;
  sumY += cY;
  sumXY += cXY;
  sumX2 += cX2;
  double covXY = sumXY - sumX * sumY / n;
  double varX = sumX2 - sumX * sumX / n;
  slope = covXY / varX;
  intercept = sumY / n - slope * sumX / n;
}

// extrapolatedRate: rate(), increase(), delta().
bool extrapolatedRate(const Matrix& m, std::span<const Sample> s, bool isCounter,
                      bool isRate, double& out) {
  if (s.size() < 2) return false;
  double result = s.back().v - s.front().v;
  if (isCounter) {
    double last = 0;
    for (const auto& p : s) {
      if (p.v < last) result += last;
      last = p.v;
    }
  }
  double durationToStart = static_cast<double>(s.front().t - m.rangeStart) / 1000;
  double durationToEnd = static_cast<double>(m.rangeEnd - s.back().t) / 1000;
  double sampledInterval = static_cast<double>(s.back().t - s.front().t) / 1000;
  double avgBetween = sampledInterval / static_cast<double>(s.size() - 1);
  if (isCounter && result > 0 && s.front().v >= 0) {
    double durationToZero = sampledInterval * (s.front().v / result);
    if (durationToZero < durationToStart) durationToStart = durationToZero;
  }
  double threshold = avgBetween * 1.1;
  double interval = sampledInterval;
  interval += durationToStart < threshold ? durationToStart : avgBetween / 2;
  interval += durationToEnd < threshold ? durationToEnd : avgBetween / 2;
  double factor = interval / sampledInterval;
  if (isRate) factor /= static_cast<double>(m.range) / 1000;
  out = result * factor;
  return true;
}

bool instantValue(std::span<const Sample> s, bool isRate, double& out) {
  if (s.size() < 2) return false;
  const Sample& last = s[s.size() - 1];
  const Sample& prev = s[s.size() - 2];
  double v = (isRate && last.v < prev.v) ? last.v : last.v - prev.v;
  int64_t interval = last.t - prev.t;
  if (interval == 0) return false;
  if (isRate) v /= static_cast<double>(interval) / 1000;
  out = v;
  return true;
}

struct Civil {
  int64_t year;
  unsigned month, day;  // 1-based
  int weekday;          // 0 = Sunday
  int yday;             // 1-based
  int hour, minute;
};

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Civil civilFromUnix(int64_t secs) {
  int64_t days = floorDiv(secs, 86400);
  int64_t rem = secs - days * 86400;
  Civil c{};
  c.hour = static_cast<int>(rem / 3600);
  c.minute = static_cast<int>((rem % 3600) / 60);
  c.weekday = static_cast<int>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
  int64_t z = days + 719468;
  int64_t era = floorDiv(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  c.day = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  c.year = y + (c.month <= 2);
  static const int cum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  bool leap = (c.year % 4 == 0 && c.year % 100 != 0) || c.year % 400 == 0;
  c.yday = cum[c.month - 1] + static_cast<int>(c.day) + (leap && c.month > 2 ? 1 : 0);
  return c;
}

double dateValue(FuncId id, int64_t secs) {
  Civil c = civilFromUnix(secs);
  switch (id) {
    case FuncId::kDaysInMonth: {
      static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      bool leap = (c.year % 4 == 0 && c.year % 100 != 0) || c.year % 400 == 0;
      return c.month == 2 && leap ? 29 : dim[c.month - 1];
    }
    case FuncId::kDayOfMonth:
      return c.day;
    case FuncId::kDayOfWeek:
      return c.weekday;
    case FuncId::kDayOfYear:
      return c.yday;
    case FuncId::kHour:
      return c.hour;
    case FuncId::kMinute:
      return c.minute;
    case FuncId::kMonth:
      return c.month;
    case FuncId::kYear:
      return static_cast<double>(c.year);
    default:
      return NAN;
  }
}

// Go's math.Max / math.Min: NaN wins, and +0 > -0.
double goMax(double a, double b) {
  if (std::isinf(a) && a > 0) return a;
  if (std::isinf(b) && b > 0) return b;
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == 0 && a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double goMin(double a, double b) {
  if (std::isinf(a) && a < 0) return a;
  if (std::isinf(b) && b < 0) return b;
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == 0 && a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// Go's conversion int64(f) on amd64 yields the "integer indefinite" value
// for NaN and out-of-range values.
int64_t goInt64(double f) {
  if (std::isnan(f) || f >= 9.2233720368547758e18 || f < -9.2233720368547758e18) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(f);
}

double simple(FuncId id, double v) {
  switch (id) {
    case FuncId::kAbs:
      return std::abs(v);
    case FuncId::kCeil:
      return std::ceil(v);
    case FuncId::kFloor:
      return std::floor(v);
    case FuncId::kExp:
      return std::exp(v);
    case FuncId::kSqrt:
      return std::sqrt(v);
    case FuncId::kLn:
      return std::log(v);
    case FuncId::kLog2:
      return std::log2(v);
    case FuncId::kLog10:
      return std::log10(v);
    case FuncId::kSin:
      return std::sin(v);
    case FuncId::kCos:
      return std::cos(v);
    case FuncId::kTan:
      return std::tan(v);
    case FuncId::kAsin:
      return std::asin(v);
    case FuncId::kAcos:
      return std::acos(v);
    case FuncId::kAtan:
      return std::atan(v);
    case FuncId::kSinh:
      return std::sinh(v);
    case FuncId::kCosh:
      return std::cosh(v);
    case FuncId::kTanh:
      return std::tanh(v);
    case FuncId::kAsinh:
      return std::asinh(v);
    case FuncId::kAcosh:
      return std::acosh(v);
    case FuncId::kAtanh:
      return std::atanh(v);
    case FuncId::kRad:
      return v * M_PI / 180;
    case FuncId::kDeg:
      return v * 180 / M_PI;
    case FuncId::kSgn:
      return v < 0 ? -1 : v > 0 ? 1 : v;
    default:
      return NAN;
  }
}

struct Bucket {
  double upper;
  double count;
};

double bucketQuantile(double q, std::vector<Bucket>& b) {
  if (std::isnan(q)) return NAN;
  if (q < 0) return -INFINITY;
  if (q > 1) return INFINITY;
  std::stable_sort(b.begin(), b.end(),
                   [](const Bucket& x, const Bucket& y) { return x.upper < y.upper; });
  if (!(std::isinf(b.back().upper) && b.back().upper > 0)) return NAN;
  // Coalesce buckets with the same upper bound.
  size_t w = 0;
  for (size_t i = 1; i < b.size(); ++i) {
    if (b[i].upper == b[w].upper) {
      b[w].count += b[i].count;
    } else {
      b[++w] = b[i];
    }
  }
  b.resize(w + 1);
  // Force monotonic counts.
  double max = -INFINITY;
  for (auto& x : b) {
    if (x.count > max) {
      max = x.count;
    } else if (x.count < max) {
      x.count = max;
    }
  }
  if (b.size() < 2) return NAN;
  double observations = b.back().count;
  if (observations == 0) return NAN;
  double rank = q * observations;
  size_t lo = 0, hi = b.size() - 1;  // search in [0, n-1)
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b[mid].count >= rank) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  size_t i = lo;
  if (i == b.size() - 1) return b[b.size() - 2].upper;
  if (i == 0 && b[0].upper <= 0) return b[0].upper;
  double start = 0, end = b[i].upper, count = b[i].count;
  if (i > 0) {
    start = b[i - 1].upper;
    count -= b[i - 1].count;
    rank -= b[i - 1].count;
  }
  return start + (end - start) * (rank / count);
}

Labels absentLabels(const Expr* arg) {
  arg = unwrapParens(arg);
  const VectorSelector* vs = nullptr;
  if (arg->kind == NodeKind::kVectorSelector)
    vs = static_cast<const VectorSelector*>(arg);
  if (arg->kind == NodeKind::kMatrixSelector)
    vs = static_cast<const MatrixSelector*>(arg)->vs.get();
  Labels out;
  if (vs == nullptr) return out;
  std::vector<std::string> empty;
  for (const auto& m : vs->matchers) {
    if (m.name() == kMetricName) continue;
    bool has = !labelValue(out, m.name()).empty();
    if (m.type() == MatchType::kEqual && !has) {
      out.push_back({m.name(), m.value()});
      std::sort(out.begin(), out.end(),
                [](const Label& a, const Label& b) { return a.name < b.name; });
    } else {
      empty.push_back(m.name());
    }
  }
  for (const auto& n : empty) {
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const Label& l) { return l.name == n; }),
              out.end());
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [](const Label& l) { return l.value.empty(); }),
            out.end());
  return out;
}

const std::string& stringArg(const Call* c, size_t i) {
  const Expr* e = unwrapParens(c->args[i].get());
  return static_cast<const StringLiteral*>(e)->value;
}

// Go's regexp.Expand template syntax: $1, ${1}, $name, ${name}, $$.
void expandTemplate(const RE2& re, std::string_view tmpl,
                    const std::vector<re2::StringPiece>& groups, std::string& out) {
  const auto& named = re.NamedCapturingGroups();
  size_t i = 0;
  while (i < tmpl.size()) {
    char c = tmpl[i];
    if (c != '$') {
      out.push_back(c);
      ++i;
      continue;
    }
    ++i;
    if (i < tmpl.size() && tmpl[i] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    std::string name;
    bool brace = i < tmpl.size() && tmpl[i] == '{';
    size_t j = brace ? i + 1 : i;
    while (j < tmpl.size() &&
           (std::isalnum(static_cast<unsigned char>(tmpl[j])) || tmpl[j] == '_')) {
      name.push_back(tmpl[j]);
      ++j;
    }
    bool ok = !name.empty();
    if (brace) {
      if (j >= tmpl.size() || tmpl[j] != '}') ok = false;
      ++j;
    }
    if (!ok) {
      out.push_back('$');
      continue;
    }
    i = j;
    bool numeric = std::all_of(name.begin(), name.end(),
                               [](char ch) { return ch >= '0' && ch <= '9'; });
    int idx = -1;
    if (numeric) {
      if (name.size() < 10) idx = std::stoi(name);
    } else {
      auto it = named.find(name);
      if (it != named.end()) idx = it->second;
    }
    if (idx >= 0 && static_cast<size_t>(idx) < groups.size() &&
        groups[idx].data() != nullptr) {
      out.append(groups[idx].data(), groups[idx].size());
    }
  }
}

}  // namespace

Vector Evaluator::labelReplace(const Call* c, const Vector& in) {
  const std::string& dst = stringArg(c, 1);
  const std::string& repl = stringArg(c, 2);
  const std::string& src = stringArg(c, 3);
  const std::string& regex = stringArg(c, 4);
  NodeCache& nc = cache(c);
  if (!nc.re) {
    RE2::Options opts;
    opts.set_log_errors(false);
    auto re = std::make_shared<RE2>("^(?:" + regex + ")$", opts);
    if (!re->ok()) fail("invalid regular expression in label_replace(): " + regex);
    nc.re = std::move(re);
  }
  if (!validLabelName(dst))
    fail("invalid destination label name in label_replace(): " + dst);
  Vector out;
  out.reserve(in.size());
  std::vector<re2::StringPiece> groups(
      static_cast<size_t>(nc.re->NumberOfCapturingGroups()) + 1);
  for (const auto& s : in) {
    const LSet* m = memoGet(c, s.m);
    if (m == nullptr) {
      std::string_view srcVal = labelValue(*s.m->ls, src);
      re2::StringPiece text(srcVal.data(), srcVal.size());
      if (!nc.re->Match(text, 0, text.size(), RE2::ANCHOR_BOTH, groups.data(),
                        static_cast<int>(groups.size()))) {
        m = s.m;
      } else {
        std::string res;
        expandTemplate(*nc.re, repl, groups, res);
        Labels ls;
        for (const auto& l : *s.m->ls) {
          if (l.name != dst) ls.push_back(l);
        }
        if (!res.empty()) {
          ls.push_back({dst, res});
          std::sort(ls.begin(), ls.end(),
                    [](const Label& a, const Label& b) { return a.name < b.name; });
        }
        m = pool_.intern(std::move(ls));
      }
      memoPut(c, s.m, m);
    }
    out.push_back({m, s.v});
  }
  return out;
}

Vector Evaluator::labelJoin(const Call* c, const Vector& in) {
  const std::string& dst = stringArg(c, 1);
  const std::string& sep = stringArg(c, 2);
  std::vector<const std::string*> srcs;
  for (size_t i = 3; i < c->args.size(); ++i) {
    const std::string& s = stringArg(c, i);
    if (!validLabelName(s)) fail("invalid source label name in label_join(): " + s);
    srcs.push_back(&s);
  }
  if (!validLabelName(dst))
    fail("invalid destination label name in label_join(): " + dst);
  Vector out;
  out.reserve(in.size());
  for (const auto& s : in) {
    const LSet* m = memoGet(c, s.m);
    if (m == nullptr) {
      std::string joined;
      for (size_t i = 0; i < srcs.size(); ++i) {
        if (i > 0) joined += sep;
        joined += labelValue(*s.m->ls, *srcs[i]);
      }
      Labels ls;
      for (const auto& l : *s.m->ls) {
        if (l.name != dst) ls.push_back(l);
      }
      if (!joined.empty()) {
        ls.push_back({dst, joined});
        std::sort(ls.begin(), ls.end(),
                  [](const Label& a, const Label& b) { return a.name < b.name; });
      }
      m = pool_.intern(std::move(ls));
      memoPut(c, s.m, m);
    }
    out.push_back({m, s.v});
  }
  return out;
}

Vector Evaluator::histogramQuantile(const Call* c, double q, const Vector& in) {
  struct Info {
    const LSet* out;  // labels without le and __name__
    double upper;
    bool ok;
  };
  struct Group {
    const LSet* out;
    std::vector<Bucket> buckets;
  };
  std::vector<Group> groups;
  uint64_t epoch = nextEpoch();  // signatures: mark == epoch, slot = index in groups
  for (const auto& s : in) {
    double upper = NAN;
    const LSet* sig = memoGet(c, s.m, &upper);
    if (sig == nullptr) {
      if (!goParseFloat(labelValue(*s.m->ls, "le"), upper)) continue;  // no or a bad le
      Labels ls;
      for (const auto& l : *s.m->ls) {
        if (l.name != "le") ls.push_back(l);
      }
      sig = pool_.intern(std::move(ls));
      memoPut(c, s.m, sig, upper);
    }
    if (sig->mark != epoch) {
      sig->mark = epoch;
      sig->slot = static_cast<uint32_t>(groups.size());
      groups.push_back({dropName(sig), {}});
    }
    groups[sig->slot].buckets.push_back({upper, s.v});
  }
  Vector out;
  out.reserve(groups.size());
  for (auto& g : groups) out.push_back({g.out, bucketQuantile(q, g.buckets)});
  return out;
}

Value Evaluator::rangeFunction(const Call* c, int64_t ts) {
  FuncId id = c->func->id;
  size_t matIdx = 0;
  for (size_t i = 0; i < c->func->args.size(); ++i) {
    if (c->func->args[i] == ValueType::kMatrix) matIdx = i;
  }
  double p1 = 0, p2 = 0;
  std::vector<double> other;
  for (size_t i = 0; i < c->args.size(); ++i) {
    if (i == matIdx) continue;
    Value v = eval(c->args[i].get(), ts);
    other.push_back(v.scalar);
  }
  if (!other.empty()) p1 = other[0];
  if (other.size() > 1) p2 = other[1];
  Matrix m = evalMatrixArg(c->args[matIdx].get(), ts);
  Value out;
  out.type = ValueType::kVector;
  if (id == FuncId::kAbsentOverTime) {
    if (m.series.empty())
      out.vec.push_back({pool_.intern(absentLabels(c->args[0].get())), 1});
    return out;
  }
  // As 2.42: the factors are checked when a series is evaluated.
  if (id == FuncId::kHoltWinters && !m.series.empty()) {
    if (p1 <= 0 || p1 >= 1)
      fail("invalid smoothing factor. Expected: 0 < sf < 1, got: " + std::to_string(p1));
    if (p2 <= 0 || p2 >= 1)
      fail("invalid trend factor. Expected: 0 < tf < 1, got: " + std::to_string(p2));
  }
  out.vec.reserve(m.series.size());
  std::vector<double> scratch;
  // Range mode: an output label set must come from one series over the whole
  // query. For a plain selector that holds when no two selected series are
  // equal once renamed (checked once); else every output is tracked.
  bool track = false;
  if (rangeMode()) {
    NodeCache& nc = cache(c);
    const Expr* arg = unwrapParens(c->args[matIdx].get());
    if (arg->kind == NodeKind::kMatrixSelector && id != FuncId::kLastOverTime) {
      if (nc.collisionFree < 0) {
        const Selected& sel = select(static_cast<const MatrixSelector*>(arg)->vs.get());
        uint64_t epoch = nextEpoch();
        nc.collisionFree = 1;
        for (const LSet* in : sel.sets) {
          const LSet* d = dropName(in);
          if (d->mark == epoch) nc.collisionFree = 0;
          d->mark = epoch;
        }
      }
      track = nc.collisionFree == 0;
    } else {
      track = id != FuncId::kLastOverTime;
    }
  }
  for (const auto& s : m.series) {
    tick();
    auto pts = s.pts;
    double v = 0;
    bool ok = true;
    switch (id) {
      case FuncId::kRate:
        ok = extrapolatedRate(m, pts, true, true, v);
        break;
      case FuncId::kIncrease:
        ok = extrapolatedRate(m, pts, true, false, v);
        break;
      case FuncId::kDelta:
        ok = extrapolatedRate(m, pts, false, false, v);
        break;
      case FuncId::kIrate:
        ok = instantValue(pts, true, v);
        break;
      case FuncId::kIdelta:
        ok = instantValue(pts, false, v);
        break;
      case FuncId::kDeriv: {
        if (pts.size() < 2) {
          ok = false;
          break;
        }
        double slope, icpt;
        linearRegression(pts, pts[0].t, slope, icpt);
        v = slope;
        break;
      }
      case FuncId::kPredictLinear: {
        if (pts.size() < 2) {
          ok = false;
          break;
        }
        double slope, icpt;
        linearRegression(pts, ts, slope, icpt);
        v = slope * p1 + icpt;
        break;
      }
      case FuncId::kHoltWinters: {
        size_t l = pts.size();
        if (l < 2) {
          ok = false;
          break;
        }
        double s0 = 0, s1 = pts[0].v, b = pts[1].v - pts[0].v;
        for (size_t i = 1; i < l; ++i) {
          double x = p1 * pts[i].v;
          if (i - 1 != 0) b = p2 * (s1 - s0) + (1 - p2) * b;
          double y = (1 - p1) * (s1 + b);
          s0 = s1;
          s1 = x + y;
        }
        v = s1;
        break;
      }
      case FuncId::kResets: {
        int n = 0;
        double prev = pts[0].v;
        for (size_t i = 1; i < pts.size(); ++i) {
          if (pts[i].v < prev) ++n;
          prev = pts[i].v;
        }
        v = n;
        break;
      }
      case FuncId::kChanges: {
        int n = 0;
        double prev = pts[0].v;
        for (size_t i = 1; i < pts.size(); ++i) {
          double cur = pts[i].v;
          if (cur != prev && !(std::isnan(cur) && std::isnan(prev))) ++n;
          prev = cur;
        }
        v = n;
        break;
      }
      case FuncId::kAvgOverTime: {
        double mean = 0, count = 0, comp = 0;
        for (const auto& p : pts) {
          count++;
          if (std::isinf(mean)) {
            if (std::isinf(p.v) && (mean > 0) == (p.v > 0)) continue;
            if (!std::isinf(p.v) && !std::isnan(p.v)) continue;
          }
          kahanInc(p.v / count - mean / count, mean, comp);
        }
        v = std::isinf(mean) ? mean : mean + comp;
        break;
      }
      case FuncId::kCountOverTime:
        v = static_cast<double>(pts.size());
        break;
      case FuncId::kLastOverTime:
        v = pts.back().v;
        break;
      case FuncId::kPresentOverTime:
        v = 1;
        break;
      case FuncId::kMaxOverTime: {
        v = pts[0].v;
        for (const auto& p : pts) {
          if (p.v > v || std::isnan(v)) v = p.v;
        }
        break;
      }
      case FuncId::kMinOverTime: {
        v = pts[0].v;
        for (const auto& p : pts) {
          if (p.v < v || std::isnan(v)) v = p.v;
        }
        break;
      }
      case FuncId::kSumOverTime: {
        double sum = 0, comp = 0;
        for (const auto& p : pts) kahanInc(p.v, sum, comp);
        v = std::isinf(sum) ? sum : sum + comp;
        break;
      }
      case FuncId::kQuantileOverTime: {
        scratch.clear();
        for (const auto& p : pts) scratch.push_back(p.v);
        v = quantileOf(p1, scratch);
        break;
      }
      case FuncId::kStddevOverTime:
      case FuncId::kStdvarOverTime: {
        double count = 0, mean = 0, cMean = 0, aux = 0, cAux = 0;
        for (const auto& p : pts) {
          count++;
          double delta = p.v - (mean + cMean);
          kahanInc(delta / count, mean, cMean);
          kahanInc(delta * (p.v - (mean + cMean)), aux, cAux);
        }
        v = (aux + cAux) / count;
        if (id == FuncId::kStddevOverTime) v = std::sqrt(v);
        break;
      }
      default:
        fail(std::string("function not implemented: ") + c->func->name);
    }
    if (!ok) continue;
    const LSet* lbl = id == FuncId::kLastOverTime ? s.m : dropName(s.m);
    if (track) checkAcrossSteps(c, lbl, s.m);
    out.vec.push_back({lbl, v});
  }
  checkDuplicates(out.vec);
  return out;
}

Value Evaluator::evalCall(const Call* c, int64_t ts) {
  FuncId id = c->func->id;
  for (auto t : c->func->args) {
    if (t == ValueType::kMatrix) return rangeFunction(c, ts);
  }
  Value out;
  out.type = ValueType::kVector;
  switch (id) {
    case FuncId::kTime:
      out.type = ValueType::kScalar;
      out.scalar = static_cast<double>(ts) / 1000;
      return out;
    case FuncId::kPi:
      out.type = ValueType::kScalar;
      out.scalar = M_PI;
      return out;
    case FuncId::kScalar: {
      Value v = eval(c->args[0].get(), ts);
      out.type = ValueType::kScalar;
      out.scalar = v.vec.size() == 1 ? v.vec[0].v : NAN;
      return out;
    }
    case FuncId::kVector: {
      Value v = eval(c->args[0].get(), ts);
      out.vec.push_back({pool_.intern(Labels{}), v.scalar});
      return out;
    }
    case FuncId::kTimestamp: {
      const Expr* arg = unwrapParens(c->args[0].get());
      Value v =
          arg->kind == NodeKind::kVectorSelector
              ? evalVectorSelector(static_cast<const VectorSelector*>(arg), ts, true)
              : eval(arg, ts);
      if (arg->kind != NodeKind::kVectorSelector) {
        for (auto& s : v.vec) s.v = static_cast<double>(ts) / 1000;
      }
      for (auto& s : v.vec) s.m = dropName(s.m);
      checkDuplicates(v.vec);
      return v;
    }
    case FuncId::kDaysInMonth:
    case FuncId::kDayOfMonth:
    case FuncId::kDayOfWeek:
    case FuncId::kDayOfYear:
    case FuncId::kHour:
    case FuncId::kMinute:
    case FuncId::kMonth:
    case FuncId::kYear: {
      if (c->args.empty()) {
        out.vec.push_back({pool_.intern(Labels{}), dateValue(id, floorDiv(ts, 1000))});
        return out;
      }
      Value v = eval(c->args[0].get(), ts);
      for (auto& s : v.vec) {
        s.m = dropName(s.m);
        s.v = dateValue(id, goInt64(s.v));
      }
      checkDuplicates(v.vec);
      return v;
    }
    default:
      break;
  }
  std::vector<Value> args;
  args.reserve(c->args.size());
  for (const auto& a : c->args) {
    if (a->type() == ValueType::kString) {
      args.emplace_back();
      continue;
    }
    args.push_back(eval(a.get(), ts));
  }
  Vector& in = args[0].vec;
  switch (id) {
    case FuncId::kAbsent:
      if (in.empty())
        out.vec.push_back({pool_.intern(absentLabels(c->args[0].get())), 1});
      return out;
    case FuncId::kClamp: {
      double lo = args[1].scalar, hi = args[2].scalar;
      if (hi < lo) return out;
      for (auto& s : in) out.vec.push_back({dropName(s.m), goMax(lo, goMin(hi, s.v))});
      break;
    }
    case FuncId::kClampMax: {
      double hi = args[1].scalar;
      for (auto& s : in) out.vec.push_back({dropName(s.m), goMin(hi, s.v)});
      break;
    }
    case FuncId::kClampMin: {
      double lo = args[1].scalar;
      for (auto& s : in) out.vec.push_back({dropName(s.m), goMax(lo, s.v)});
      break;
    }
    case FuncId::kRound: {
      double toNearest = args.size() >= 2 ? args[1].scalar : 1;
      double inv = 1.0 / toNearest;
      for (auto& s : in)
        out.vec.push_back({dropName(s.m), std::floor(s.v * inv + 0.5) / inv});
      break;
    }
    case FuncId::kSort:
    case FuncId::kSortDesc: {
      out.vec = std::move(in);
      bool desc = id == FuncId::kSortDesc;
      // Go: sort.Sort(sort.Reverse(heap)); NaN sorts last either way.
      std::stable_sort(out.vec.begin(), out.vec.end(),
                       [desc](const VSample& a, const VSample& b) {
                         if (std::isnan(b.v)) return !std::isnan(a.v);
                         if (std::isnan(a.v)) return false;
                         return desc ? a.v > b.v : a.v < b.v;
                       });
      return out;
    }
    case FuncId::kHistogramQuantile:
      out.vec = histogramQuantile(c, args[0].scalar, args[1].vec);
      break;
    case FuncId::kLabelReplace:
      out.vec = labelReplace(c, in);
      break;
    case FuncId::kLabelJoin:
      out.vec = labelJoin(c, in);
      break;
    default:
      out.vec.reserve(in.size());
      for (auto& s : in) out.vec.push_back({dropName(s.m), simple(id, s.v)});
      break;
  }
  checkDuplicates(out.vec);
  return out;
}

}  // namespace memcg::promql::detail
