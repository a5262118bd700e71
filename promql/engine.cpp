#include "promql/engine.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <unordered_set>

#include "promql/eval.h"

namespace memcg::promql {
namespace detail {

void fail(std::string msg) { throw EvalError{std::move(msg)}; }

const Expr* unwrapParens(const Expr* e) {
  while (e->kind == NodeKind::kParen) e = static_cast<const ParenExpr*>(e)->expr.get();
  return e;
}

bool validLabelName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool goParseFloat(std::string_view s, double& out) {
  if (!s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return true;
  }
  std::string lower;
  for (char c : s)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view b = lower;
  bool neg = false;
  if (!b.empty() && (b[0] == '+' || b[0] == '-')) {
    neg = b[0] == '-';
    b.remove_prefix(1);
  }
  if (b == "inf" || b == "infinity") {
    out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (b == "nan") {
    out = NAN;
    return true;
  }
  if (b.empty() || b[0] == '+' || b[0] == '-') return false;
  double v = 0;
  auto r = std::from_chars(b.data(), b.data() + b.size(), v);
  if (r.ptr != b.data() + b.size()) return false;
  if (r.ec == std::errc::result_out_of_range) {
    v = std::strtod(std::string(b).c_str(), nullptr);
  } else if (r.ec != std::errc()) {
    return false;
  }
  out = neg ? -v : v;
  return true;
}

std::string goFormatFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[512];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

const LSet* LabelPool::find(const Labels& ls, uint64_t h) const {
  if (table_.empty()) return nullptr;
  size_t mask = table_.size() - 1;
  for (size_t i = h & mask; table_[i] != nullptr; i = (i + 1) & mask) {
    const LSet* s = table_[i];
    if (s->hash == h && *s->ls == ls) return s;
  }
  return nullptr;
}

const LSet* LabelPool::insert(const Labels* ls, uint64_t h) {
  if ((count_ + 1) * 2 > table_.size()) {
    std::vector<const LSet*> bigger(std::max<size_t>(64, table_.size() * 2), nullptr);
    size_t mask = bigger.size() - 1;
    for (const LSet* s : table_) {
      if (s == nullptr) continue;
      size_t i = s->hash & mask;
      while (bigger[i] != nullptr) i = (i + 1) & mask;
      bigger[i] = s;
    }
    table_ = std::move(bigger);
  }
  sets_.push_back({ls, h});
  const LSet* s = &sets_.back();
  size_t mask = table_.size() - 1;
  size_t i = h & mask;
  while (table_[i] != nullptr) i = (i + 1) & mask;
  table_[i] = s;
  ++count_;
  return s;
}

const LSet* LabelPool::intern(const Labels* external, uint64_t hash) {
  uint64_t h = hash != 0 ? hash : hashLabels(*external);
  if (const LSet* s = find(*external, h)) return s;
  return insert(external, h);
}

const LSet* LabelPool::intern(Labels&& owned) {
  uint64_t h = hashLabels(owned);
  if (const LSet* s = find(owned, h)) return s;
  owned_.push_back(std::move(owned));
  return insert(&owned_.back(), h);
}

Evaluator::Evaluator(const Storage& storage, const EngineOptions& opts, int64_t start,
                     int64_t end, Deadline deadline)
    : storage_(storage),
      opts_(opts),
      start_(start),
      end_(end),
      deadline_(deadline) {
  checkDeadline();
  querier_ = storage_.querier(std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max());
}

Evaluator::~Evaluator() = default;

void Evaluator::checkDeadline() const {
  if (deadline_ != kNoDeadline && std::chrono::steady_clock::now() >= deadline_)
    throw EvalError{std::string(kTimeoutMessage), true};
}

const LSet* Evaluator::dropName(const LSet* s) {
  if (s->dropped != nullptr) return s->dropped;
  const LSet* out = s;
  if (!labelValue(*s->ls, kMetricName).empty()) {
    Labels copy;
    copy.reserve(s->ls->size());
    for (const auto& l : *s->ls) {
      if (l.name != kMetricName) copy.push_back(l);
    }
    out = pool_.intern(std::move(copy));
  }
  s->dropped = out;
  return out;
}

const LSet* Evaluator::memoGet(const Expr* node, const LSet* s, double* num) {
  if (s->memoNode == node) {
    if (num != nullptr) *num = s->memoNum;
    return s->memoVal;
  }
  if (s->memoNode == nullptr) return nullptr;
  NodeCache& nc = cache(node);
  auto it = nc.map.find(s);
  if (it == nc.map.end()) return nullptr;
  if (num != nullptr) *num = nc.nums[s];
  return it->second;
}

void Evaluator::memoPut(const Expr* node, const LSet* s, const LSet* v, double num) {
  if (s->memoNode == nullptr) {
    s->memoNode = node;
    s->memoVal = v;
    s->memoNum = num;
    return;
  }
  NodeCache& nc = cache(node);
  nc.map.emplace(s, v);
  if (num != 0) nc.nums[s] = num;
}

int64_t Evaluator::atTime(const AtModifier& at, int64_t ts) const {
  switch (at.kind) {
    case AtKind::kNone:
      return ts;
    case AtKind::kTimestamp:
      return at.ms;
    case AtKind::kStart:
      return start_;
    case AtKind::kEnd:
      return end_;
  }
  return ts;
}

const Evaluator::Selected& Evaluator::select(const VectorSelector* vs) {
  auto it = selected_.find(vs);
  if (it != selected_.end()) return it->second;
  Selected sel;
  querier_->select(vs->matchers, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max(), sel.series);
  // Storage order (creation order for MemoryStorage), as Prometheus' head
  // returns series to the engine unsorted.
  sel.sets.reserve(sel.series.size());
  sel.hasStale.reserve(sel.series.size());
  for (const auto& s : sel.series) {
    sel.sets.push_back(pool_.intern(s.labels, s.labelsHash));
    bool stale = false;
    if (s.mayHaveStale) {
      for (const auto& p : s.samples) {
        if (isStaleNaN(p.v)) {
          stale = true;
          break;
        }
      }
    }
    sel.hasStale.push_back(stale);
  }
  return selected_.emplace(vs, std::move(sel)).first->second;
}

Value Evaluator::evalVectorSelector(const VectorSelector* vs, int64_t ts,
                                    bool timestamps) {
  const Selected& sel = select(vs);
  int64_t ref = atTime(vs->at, ts) - vs->offset;
  int64_t mint = ref - opts_.lookbackDeltaMs;
  Value out;
  out.type = ValueType::kVector;
  out.vec.reserve(sel.series.size());
  for (size_t i = 0; i < sel.series.size(); ++i) {
    tick();
    auto pts = sel.series[i].samples;
    auto it = std::upper_bound(pts.begin(), pts.end(), ref,
                               [](int64_t r, const Sample& s) { return r < s.t; });
    if (it == pts.begin()) continue;
    --it;
    if (it->t < mint || isStaleNaN(it->v)) continue;
    out.vec.push_back(
        {sel.sets[i], timestamps ? static_cast<double>(it->t) / 1000 : it->v});
  }
  return out;
}

Matrix Evaluator::evalMatrixSelector(const MatrixSelector* ms, int64_t ts) {
  const VectorSelector* vs = ms->vs.get();
  const Selected& sel = select(vs);
  Matrix m;
  m.rangeEnd = atTime(vs->at, ts) - vs->offset;
  m.rangeStart = m.rangeEnd - ms->range;
  m.range = ms->range;
  m.series.reserve(sel.series.size());
  // Steps move forward: start from the last window and walk a few samples
  // before falling back to a binary search.
  NodeCache& nc = cache(ms);
  constexpr uint32_t kUnset = UINT32_MAX;
  if (nc.lo.size() != sel.series.size()) {
    nc.lo.assign(sel.series.size(), kUnset);
    nc.hi.assign(sel.series.size(), kUnset);
  }
  const int64_t mint = m.rangeStart, maxt = m.rangeEnd;
  for (size_t i = 0; i < sel.series.size(); ++i) {
    tick();
    auto pts = sel.series[i].samples;
    const size_t n = pts.size();
    size_t lo = nc.lo[i], hi = nc.hi[i];
    if (lo == kUnset || lo > n || (lo > 0 && pts[lo - 1].t >= mint)) {
      lo = static_cast<size_t>(
          std::lower_bound(pts.begin(), pts.end(), mint,
                           [](const Sample& s, int64_t r) { return s.t < r; }) -
          pts.begin());
    } else {
      for (int k = 0; lo < n && pts[lo].t < mint; ++k, ++lo) {
        if (k == 16) {
          lo = static_cast<size_t>(
              std::lower_bound(pts.begin() + lo, pts.end(), mint,
                               [](const Sample& s, int64_t r) { return s.t < r; }) -
              pts.begin());
          break;
        }
      }
    }
    if (hi == kUnset || hi > n || hi < lo || (hi > 0 && pts[hi - 1].t > maxt)) {
      hi = static_cast<size_t>(
          std::upper_bound(pts.begin() + lo, pts.end(), maxt,
                           [](int64_t r, const Sample& s) { return r < s.t; }) -
          pts.begin());
    } else {
      for (int k = 0; hi < n && pts[hi].t <= maxt; ++k, ++hi) {
        if (k == 16) {
          hi = static_cast<size_t>(
              std::upper_bound(pts.begin() + hi, pts.end(), maxt,
                               [](int64_t r, const Sample& s) { return r < s.t; }) -
              pts.begin());
          break;
        }
      }
    }
    nc.lo[i] = static_cast<uint32_t>(lo);
    nc.hi[i] = static_cast<uint32_t>(hi);
    if (lo >= hi) continue;
    std::span<const Sample> window(pts.data() + lo, hi - lo);
    if (sel.hasStale[i]) {
      std::vector<Sample> kept;
      for (const auto& s : window) {
        if (!isStaleNaN(s.v)) kept.push_back(s);
      }
      if (kept.empty()) continue;
      m.owned.push_back(std::move(kept));
      window = std::span<const Sample>(m.owned.back());
    }
    m.series.push_back({sel.sets[i], window});
  }
  return m;
}

Matrix Evaluator::evalSubquery(const SubqueryExpr* sq, int64_t ts) {
  int64_t interval = sq->step > 0 ? sq->step : opts_.defaultSubqueryStepMs;
  Matrix m;
  m.rangeEnd = atTime(sq->at, ts) - sq->offset;
  m.rangeStart = m.rangeEnd - sq->range;
  m.range = sq->range;
  int64_t first = interval * (m.rangeStart / interval);
  if (first < m.rangeStart) first += interval;
  NodeCache& nc = cache(sq);
  std::vector<const LSet*> order;
  std::unordered_map<const LSet*, size_t> index;
  std::vector<std::vector<Sample>> points;
  for (int64_t t = first; t <= m.rangeEnd; t += interval) {
    auto it = nc.byTime.find(t);
    if (it == nc.byTime.end()) {
      if (++subqueryPoints_ > opts_.maxSubqueryPoints) {
        fail(
            "query processing would load too many samples into memory in subquery "
            "evaluation");
      }
      Value v = eval(sq->expr.get(), t);
      it = nc.byTime.emplace(t, std::move(v.vec)).first;
    }
    for (const auto& s : it->second) {
      auto [pos, inserted] = index.emplace(s.m, order.size());
      if (inserted) {
        order.push_back(s.m);
        points.emplace_back();
      }
      points[pos->second].push_back({t, s.v});
    }
  }
  for (size_t i = 0; i < order.size(); ++i) {
    m.owned.push_back(std::move(points[i]));
    m.series.push_back({order[i], std::span<const Sample>(m.owned.back())});
  }
  return m;
}

Matrix Evaluator::evalMatrixArg(const Expr* e, int64_t ts) {
  e = unwrapParens(e);
  if (e->kind == NodeKind::kMatrixSelector) {
    return evalMatrixSelector(static_cast<const MatrixSelector*>(e), ts);
  }
  if (e->kind == NodeKind::kSubquery)
    return evalSubquery(static_cast<const SubqueryExpr*>(e), ts);
  fail("expected a range vector");
}

void Evaluator::checkDuplicates(const Vector& v) {
  if (v.size() < 2) return;
  uint64_t epoch = nextEpoch();
  for (const auto& s : v) {
    if (s.m->mark == epoch) fail("vector cannot contain metrics with the same labelset");
    s.m->mark = epoch;
  }
}

void Evaluator::checkAcrossSteps(const Expr* node, const LSet* out, const LSet* in) {
  if (!rangeMode()) return;
  auto& m = cache(node).outFrom;
  auto [it, inserted] = m.emplace(out, in);
  if (!inserted && it->second != in)
    fail("vector cannot contain metrics with the same labelset");
}

namespace {

double scalarArith(BinOp op, double l, double r) {
  switch (op) {
    case BinOp::kAdd:
      return l + r;
    case BinOp::kSub:
      return l - r;
    case BinOp::kMul:
      return l * r;
    case BinOp::kDiv:
      return l / r;
    case BinOp::kPow:
      return std::pow(l, r);
    case BinOp::kMod:
      return std::fmod(l, r);
    case BinOp::kAtan2:
      return std::atan2(l, r);
    case BinOp::kEql:
      return l == r ? 1 : 0;
    case BinOp::kNeq:
      return l != r ? 1 : 0;
    case BinOp::kGtr:
      return l > r ? 1 : 0;
    case BinOp::kLss:
      return l < r ? 1 : 0;
    case BinOp::kGte:
      return l >= r ? 1 : 0;
    case BinOp::kLte:
      return l <= r ? 1 : 0;
    default:
      return NAN;
  }
}

// Value and whether to keep the element (false for failed comparisons).
inline double elemBinop(BinOp op, double l, double r, bool& keep) {
  keep = true;
  switch (op) {
    case BinOp::kEql:
      keep = l == r;
      return l;
    case BinOp::kNeq:
      keep = l != r;
      return l;
    case BinOp::kGtr:
      keep = l > r;
      return l;
    case BinOp::kLss:
      keep = l < r;
      return l;
    case BinOp::kGte:
      keep = l >= r;
      return l;
    case BinOp::kLte:
      keep = l <= r;
      return l;
    default:
      return scalarArith(op, l, r);
  }
}

// As 2.42's shouldDropMetricName: atan2 keeps the name.
inline bool dropsName(BinOp op) { return op <= BinOp::kPow; }

}  // namespace

const LSet* Evaluator::signature(const BinaryExpr* b, const LSet* s) {
  if (const LSet* memo = memoGet(b, s)) return memo;
  Labels out;
  const auto& names = b->matching.labels;
  for (const auto& l : *s->ls) {
    bool listed = std::binary_search(names.begin(), names.end(), l.name);
    if (b->matching.on ? listed : (!listed && l.name != kMetricName)) out.push_back(l);
  }
  const LSet* sig = pool_.intern(std::move(out));
  memoPut(b, s, sig);
  return sig;
}

const LSet* Evaluator::resultMetric(const BinaryExpr* b, const LSet* l, const LSet* r) {
  auto& pm = cache(b).pairMap;
  uint64_t key = l->hash * 31 + r->hash;
  auto& bucket = pm[key];
  for (const auto& e : bucket) {
    if (e.first.first == l && e.first.second == r) return e.second;
  }
  Labels out = *l->ls;
  auto del = [&](std::string_view name) {
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const Label& x) { return x.name == name; }),
              out.end());
  };
  if (dropsName(b->op) || b->returnBool) del(kMetricName);
  const VectorMatching& vm = b->matching;
  if (vm.card == Card::kOneToOne) {
    if (vm.on) {
      out.erase(std::remove_if(out.begin(), out.end(),
                               [&](const Label& x) {
                                 return !std::binary_search(vm.labels.begin(),
                                                            vm.labels.end(), x.name);
                               }),
                out.end());
    } else {
      for (const auto& n : vm.labels) del(n);
    }
  }
  if (!vm.include.empty()) {
    for (const auto& n : vm.include) {
      std::string_view v = labelValue(*r->ls, n);
      del(n);
      if (!v.empty()) out.push_back({n, std::string(v)});
    }
    std::sort(out.begin(), out.end(),
              [](const Label& a, const Label& c) { return a.name < c.name; });
  }
  const LSet* res = pool_.intern(std::move(out));
  bucket.push_back({{l, r}, res});
  return res;
}

Vector Evaluator::setOp(const BinaryExpr* b, Vector&& lhs, Vector&& rhs) {
  Vector out;
  switch (b->op) {
    case BinOp::kAnd: {
      if (lhs.empty() || rhs.empty()) return out;
      uint64_t epoch = nextEpoch();
      for (const auto& s : rhs) signature(b, s.m)->mark = epoch;
      for (const auto& s : lhs) {
        if (signature(b, s.m)->mark == epoch) out.push_back(s);
      }
      return out;
    }
    case BinOp::kOr: {
      if (lhs.empty()) return std::move(rhs);
      if (rhs.empty()) return std::move(lhs);
      uint64_t epoch = nextEpoch();
      for (const auto& s : lhs) signature(b, s.m)->mark = epoch;
      out = std::move(lhs);
      for (const auto& s : rhs) {
        if (signature(b, s.m)->mark != epoch) out.push_back(s);
      }
      return out;
    }
    case BinOp::kUnless: {
      if (lhs.empty() || rhs.empty()) return std::move(lhs);
      uint64_t epoch = nextEpoch();
      for (const auto& s : rhs) signature(b, s.m)->mark = epoch;
      for (const auto& s : lhs) {
        if (signature(b, s.m)->mark != epoch) out.push_back(s);
      }
      return out;
    }
    default:
      return out;
  }
}

Vector Evaluator::vectorBinop(const BinaryExpr* b, Vector&& lhsIn, Vector&& rhsIn) {
  const VectorMatching& vm = b->matching;
  Vector out;
  // As 2.42: nothing can match, and no duplicate check runs on the other side.
  if (lhsIn.empty() || rhsIn.empty()) return out;
  bool swapped = vm.card == Card::kOneToMany;
  Vector& lhs = swapped ? rhsIn : lhsIn;  // the "many" side
  Vector& rhs = swapped ? lhsIn : rhsIn;  // the "one" side
  // The right side by signature: sig->mark == epoch, sig->slot = index.
  uint64_t epoch = nextEpoch();
  for (uint32_t i = 0; i < rhs.size(); ++i) {
    const VSample& rs = rhs[i];
    const LSet* sig = signature(b, rs.m);
    if (sig->mark == epoch) {
      Labels matched;
      for (const auto& l : *rs.m->ls) {
        bool listed = std::binary_search(vm.labels.begin(), vm.labels.end(), l.name);
        if (vm.on ? listed : (!listed && l.name != kMetricName)) matched.push_back(l);
      }
      fail("found duplicate series for the match group " + labelsString(matched) +
           " on the " + (swapped ? "left" : "right") + " hand-side of the operation: [" +
           labelsString(*rs.m->ls) + ", " + labelsString(*rhs[sig->slot].m->ls) +
           "];many-to-many matching not allowed: matching labels must be unique on one "
           "side");
    }
    sig->mark = epoch;
    sig->slot = i;
  }
  std::vector<char> matchedOne;
  std::vector<std::unique_ptr<std::unordered_set<const LSet*>>> matchedMany;
  if (vm.card == Card::kOneToOne) {
    matchedOne.assign(rhs.size(), 0);
  } else {
    matchedMany.resize(rhs.size());
  }
  out.reserve(lhs.size());
  for (const auto& ls : lhs) {
    tick();
    const LSet* sig = signature(b, ls.m);
    if (sig->mark != epoch) continue;
    uint32_t ri = sig->slot;
    const VSample& rs = rhs[ri];
    double vl = ls.v, vr = rs.v;
    if (swapped) std::swap(vl, vr);
    bool keep;
    double value = elemBinop(b->op, vl, vr, keep);
    if (b->returnBool) {
      value = keep ? 1 : 0;
    } else if (!keep) {
      continue;
    }
    const LSet* metric = resultMetric(b, ls.m, rs.m);
    if (vm.card == Card::kOneToOne) {
      if (matchedOne[ri]) {
        fail(
            "multiple matches for labels: many-to-one matching must be explicit "
            "(group_left/group_right)");
      }
      matchedOne[ri] = 1;
    } else {
      auto& set = matchedMany[ri];
      if (!set) set = std::make_unique<std::unordered_set<const LSet*>>();
      if (!set->insert(metric).second) {
        fail("multiple matches for labels: grouping labels must ensure unique matches");
      }
    }
    out.push_back({metric, value});
  }
  return out;
}

Value Evaluator::evalBinary(const BinaryExpr* b, int64_t ts) {
  Value l = eval(b->lhs.get(), ts);
  Value r = eval(b->rhs.get(), ts);
  Value out;
  if (l.type == ValueType::kScalar && r.type == ValueType::kScalar) {
    out.type = ValueType::kScalar;
    out.scalar = scalarArith(b->op, l.scalar, r.scalar);
    return out;
  }
  out.type = ValueType::kVector;
  if (l.type == ValueType::kVector && r.type == ValueType::kVector) {
    if (isSetOp(b->op)) {
      out.vec = setOp(b, std::move(l.vec), std::move(r.vec));
    } else {
      out.vec = vectorBinop(b, std::move(l.vec), std::move(r.vec));
    }
    checkDuplicates(out.vec);
    return out;
  }
  // Vector and scalar.
  bool swap = l.type == ValueType::kScalar;
  Vector& vec = swap ? r.vec : l.vec;
  double sc = swap ? l.scalar : r.scalar;
  out.vec.reserve(vec.size());
  bool comparison = isComparison(b->op);
  for (auto& s : vec) {
    double lv = s.v, rv = sc;
    if (swap) std::swap(lv, rv);
    bool keep;
    double value = elemBinop(b->op, lv, rv, keep);
    if (comparison && swap) value = rv;
    if (b->returnBool) {
      value = keep ? 1 : 0;
      keep = true;
    }
    if (!keep) continue;
    const LSet* m = (dropsName(b->op) || b->returnBool) ? dropName(s.m) : s.m;
    out.vec.push_back({m, value});
  }
  checkDuplicates(out.vec);
  return out;
}

namespace {

// Go's container/heap on a slice, with a "less" that puts NaN first.
template <typename Less>
void heapUp(std::vector<VSample>& h, size_t j, Less less) {
  while (j > 0) {
    size_t i = (j - 1) / 2;
    if (i == j || !less(h[j], h[i])) break;
    std::swap(h[i], h[j]);
    j = i;
  }
}
template <typename Less>
void heapDown(std::vector<VSample>& h, size_t i0, size_t n, Less less) {
  size_t i = i0;
  while (true) {
    size_t j1 = 2 * i + 1;
    if (j1 >= n) break;
    size_t j = j1;
    if (size_t j2 = j1 + 1; j2 < n && less(h[j2], h[j1])) j = j2;
    if (!less(h[j], h[i])) break;
    std::swap(h[i], h[j]);
    i = j;
  }
}
template <typename Less>
void heapPush(std::vector<VSample>& h, VSample s, Less less) {
  h.push_back(s);
  heapUp(h, h.size() - 1, less);
}
template <typename Less>
void heapPop(std::vector<VSample>& h, Less less) {
  size_t n = h.size() - 1;
  std::swap(h[0], h[n]);
  heapDown(h, 0, n, less);
  h.pop_back();
}

}  // namespace

double quantileOf(double q, std::vector<double>& values) {
  if (values.empty()) return NAN;
  if (q < 0) return -INFINITY;
  if (q > 1) return INFINITY;
  std::sort(values.begin(), values.end(), [](double a, double b) {
    return (std::isnan(a) && !std::isnan(b)) || a < b;
  });
  double n = static_cast<double>(values.size());
  double rank = q * (n - 1);
  double lower = std::max(0.0, std::floor(rank));
  double upper = std::min(n - 1, lower + 1);
  double weight = rank - std::floor(rank);
  return values[static_cast<size_t>(lower)] * (1 - weight) +
         values[static_cast<size_t>(upper)] * weight;
}

Value Evaluator::evalAggregate(const AggregateExpr* a, int64_t ts) {
  double param = 0;
  std::string strParam;
  if (a->param) {
    Value p = eval(a->param.get(), ts);
    if (p.type == ValueType::kString) {
      strParam = p.str;
    } else {
      param = p.scalar;
    }
  }
  Value in = eval(a->expr.get(), ts);
  Value out;
  out.type = ValueType::kVector;
  int64_t k = 0;
  if (a->op == AggOp::kTopk || a->op == AggOp::kBottomk) {
    if (!(param <= 9.2233720368547758e18 && param >= -9.2233720368547758e18)) {
      fail("Scalar value " + goFormatFloat(param) + " overflows int64");
    }
    k = static_cast<int64_t>(param);
    if (k < 1) return out;
  }
  if (a->op == AggOp::kCountValues && !validLabelName(strParam)) {
    fail("invalid label name " + goQuote(strParam));
  }
  struct Group {
    const LSet* labels;
    double value;
    double mean;
    double count;
    std::vector<VSample> heap;
    std::vector<double> values;
  };
  std::vector<Group> groups;
  uint64_t epoch = nextEpoch();  // group labels: mark == epoch, slot = index in groups
  const auto& grouping = a->grouping;
  auto groupLabels = [&](const Labels& ls) {
    Labels g;
    for (const auto& l : ls) {
      bool listed = std::binary_search(grouping.begin(), grouping.end(), l.name);
      if (a->without ? (!listed && l.name != kMetricName) : listed) g.push_back(l);
    }
    return g;
  };
  auto topLess = [](const VSample& x, const VSample& y) {
    if (std::isnan(x.v)) return true;
    return x.v < y.v;
  };
  auto bottomLess = [](const VSample& x, const VSample& y) {
    if (std::isnan(x.v)) return true;
    return x.v > y.v;
  };
  for (const auto& s : in.vec) {
    tick();
    const LSet* g;
    if (a->op == AggOp::kCountValues) {
      Labels ls = *s.m->ls;
      std::string val = goFormatFloat(s.v);
      bool set = false;
      for (auto& l : ls) {
        if (l.name == strParam) {
          l.value = val;
          set = true;
        }
      }
      if (!set) {
        ls.push_back({strParam, val});
        std::sort(ls.begin(), ls.end(),
                  [](const Label& x, const Label& y) { return x.name < y.name; });
      }
      Labels gl;
      for (const auto& l : ls) {
        bool listed = std::binary_search(grouping.begin(), grouping.end(), l.name);
        if (a->without ? (!listed && l.name != kMetricName)
                       : (listed || l.name == strParam)) {
          gl.push_back(l);
        }
      }
      g = pool_.intern(std::move(gl));
    } else {
      g = memoGet(a, s.m);
      if (g == nullptr) {
        g = pool_.intern(groupLabels(*s.m->ls));
        memoPut(a, s.m, g);
      }
    }
    if (g->mark != epoch) {
      g->mark = epoch;
      g->slot = static_cast<uint32_t>(groups.size());
      Group ng{g, s.v, s.v, 1, {}, {}};
      switch (a->op) {
        case AggOp::kStddev:
        case AggOp::kStdvar:
          ng.value = 0;
          break;
        case AggOp::kTopk:
        case AggOp::kBottomk:
          ng.heap.push_back(s);
          break;
        case AggOp::kQuantile:
          ng.values.push_back(s.v);
          break;
        case AggOp::kGroup:
          ng.value = 1;
          break;
        default:
          break;
      }
      groups.push_back(std::move(ng));
      continue;
    }
    Group& gr = groups[g->slot];
    switch (a->op) {
      case AggOp::kSum:
        gr.value += s.v;
        break;
      case AggOp::kAvg:
        gr.count++;
        if (std::isinf(gr.mean)) {
          if (std::isinf(s.v) && (gr.mean > 0) == (s.v > 0)) break;
          if (!std::isinf(s.v) && !std::isnan(s.v)) break;
        }
        gr.mean += s.v / gr.count - gr.mean / gr.count;
        break;
      case AggOp::kGroup:
        break;
      case AggOp::kMax:
        if (gr.value < s.v || std::isnan(gr.value)) gr.value = s.v;
        break;
      case AggOp::kMin:
        if (gr.value > s.v || std::isnan(gr.value)) gr.value = s.v;
        break;
      case AggOp::kCount:
      case AggOp::kCountValues:
        gr.count++;
        break;
      case AggOp::kStddev:
      case AggOp::kStdvar: {
        gr.count++;
        double delta = s.v - gr.mean;
        gr.mean += delta / gr.count;
        gr.value += delta * (s.v - gr.mean);
        break;
      }
      case AggOp::kTopk:
        if (static_cast<int64_t>(gr.heap.size()) < k || gr.heap[0].v < s.v ||
            std::isnan(gr.heap[0].v)) {
          if (static_cast<int64_t>(gr.heap.size()) == k) {
            if (k == 1) {
              gr.heap[0] = s;
              break;
            }
            heapPop(gr.heap, topLess);
          }
          heapPush(gr.heap, s, topLess);
        }
        break;
      case AggOp::kBottomk:
        if (static_cast<int64_t>(gr.heap.size()) < k || gr.heap[0].v > s.v ||
            std::isnan(gr.heap[0].v)) {
          if (static_cast<int64_t>(gr.heap.size()) == k) {
            if (k == 1) {
              gr.heap[0] = s;
              break;
            }
            heapPop(gr.heap, bottomLess);
          }
          heapPush(gr.heap, s, bottomLess);
        }
        break;
      case AggOp::kQuantile:
        gr.values.push_back(s.v);
        break;
    }
  }
  out.vec.reserve(groups.size());
  for (auto& gr : groups) {
    double v = gr.value;
    switch (a->op) {
      case AggOp::kAvg:
        v = gr.mean;
        break;
      case AggOp::kCount:
      case AggOp::kCountValues:
        v = gr.count;
        break;
      case AggOp::kStdvar:
        v = gr.value / gr.count;
        break;
      case AggOp::kStddev:
        v = std::sqrt(gr.value / gr.count);
        break;
      case AggOp::kTopk:
        if (gr.heap.size() > 1) {
          std::stable_sort(
              gr.heap.begin(), gr.heap.end(),
              [&](const VSample& x, const VSample& y) { return topLess(y, x); });
        }
        for (const auto& h : gr.heap) out.vec.push_back(h);
        continue;
      case AggOp::kBottomk:
        if (gr.heap.size() > 1) {
          std::stable_sort(
              gr.heap.begin(), gr.heap.end(),
              [&](const VSample& x, const VSample& y) { return bottomLess(y, x); });
        }
        for (const auto& h : gr.heap) out.vec.push_back(h);
        continue;
      case AggOp::kQuantile:
        v = quantileOf(param, gr.values);
        break;
      default:
        break;
    }
    out.vec.push_back({gr.labels, v});
  }
  return out;
}

Value Evaluator::eval(const Expr* e, int64_t ts) {
  tick();
  switch (e->kind) {
    case NodeKind::kNumber: {
      Value v;
      v.type = ValueType::kScalar;
      v.scalar = static_cast<const NumberLiteral*>(e)->value;
      return v;
    }
    case NodeKind::kString: {
      Value v;
      v.type = ValueType::kString;
      v.str = static_cast<const StringLiteral*>(e)->value;
      return v;
    }
    case NodeKind::kParen:
      return eval(static_cast<const ParenExpr*>(e)->expr.get(), ts);
    case NodeKind::kVectorSelector:
      return evalVectorSelector(static_cast<const VectorSelector*>(e), ts, false);
    case NodeKind::kMatrixSelector: {
      Value v;
      v.type = ValueType::kMatrix;
      v.mat = evalMatrixSelector(static_cast<const MatrixSelector*>(e), ts);
      return v;
    }
    case NodeKind::kSubquery: {
      Value v;
      v.type = ValueType::kMatrix;
      v.mat = evalSubquery(static_cast<const SubqueryExpr*>(e), ts);
      return v;
    }
    case NodeKind::kUnary: {
      auto* u = static_cast<const UnaryExpr*>(e);
      Value v = eval(u->expr.get(), ts);
      if (!u->negate) return v;
      if (v.type == ValueType::kScalar) {
        v.scalar = -v.scalar;
        return v;
      }
      for (auto& s : v.vec) {
        const LSet* in = s.m;
        s.m = dropName(s.m);
        s.v = -s.v;
        checkAcrossSteps(e, s.m, in);
      }
      checkDuplicates(v.vec);
      return v;
    }
    case NodeKind::kBinary:
      return evalBinary(static_cast<const BinaryExpr*>(e), ts);
    case NodeKind::kAggregate:
      return evalAggregate(static_cast<const AggregateExpr*>(e), ts);
    case NodeKind::kCall:
      return evalCall(static_cast<const Call*>(e), ts);
  }
  fail("unknown expression");
}

}  // namespace detail

namespace {

Result<QueryResult> errorResult(const std::string& msg) {
  return makeError(EINVAL, "eval", msg);
}
Result<QueryResult> errorResult(const detail::EvalError& e) {
  return makeError(e.timeout ? ETIMEDOUT : EINVAL, "eval", e.msg);
}

}  // namespace

Result<QueryResult> Engine::instantQuery(const Storage& storage, const Expr& expr,
                                         int64_t t, Deadline deadline) const {
  try {
    detail::Evaluator ev(storage, opts_, t, t, deadline);
    detail::Value v = ev.eval(&expr, t);
    QueryResult r;
    r.type = v.type;
    r.t = t;
    switch (v.type) {
      case ValueType::kScalar:
        r.scalar = v.scalar;
        break;
      case ValueType::kString:
        r.str = v.str;
        break;
      case ValueType::kVector:
        r.series.reserve(v.vec.size());
        for (const auto& s : v.vec) r.series.push_back({*s.m->ls, {{t, s.v}}});
        break;
      case ValueType::kMatrix:
        for (const auto& s : v.mat.series) {
          r.series.push_back({*s.m->ls, std::vector<Sample>(s.pts.begin(), s.pts.end())});
        }
        std::sort(r.series.begin(), r.series.end(),
                  [](const ResultSeries& a, const ResultSeries& b) {
                    return compareLabels(a.labels, b.labels) < 0;
                  });
        break;
      default:
        break;
    }
    return r;
  } catch (const detail::EvalError& e) {
    return errorResult(e);
  } catch (
      const std::exception& e) {  // e.g. out of memory: the query fails, not the process
    return errorResult(std::string("query failed: ") + e.what());
  }
}

Result<QueryResult> Engine::rangeQuery(const Storage& storage, const Expr& expr,
                                       int64_t start, int64_t end, int64_t step,
                                       Deadline deadline) const {
  ValueType et = expr.type();
  if (et != ValueType::kScalar && et != ValueType::kVector) {
    return errorResult(std::string("invalid expression type \"") + valueTypeName(et) +
                       "\" for range query, must be Scalar or instant Vector");
  }
  if (step <= 0)
    return errorResult("zero or negative query resolution step widths are not accepted");
  if (end < start) return errorResult("end timestamp must not be before start time");
  if ((end - start) / step > opts_.maxRangeSteps) {
    return errorResult(
        "exceeded maximum resolution of " + std::to_string(opts_.maxRangeSteps) +
        " points per timeseries. Try decreasing the query resolution (?step=XX)");
  }
  try {
    detail::Evaluator ev(storage, opts_, start, end, deadline);
    std::unordered_map<const detail::LSet*, size_t> index;
    QueryResult r;
    r.type = ValueType::kMatrix;
    for (int64_t t = start; t <= end; t += step) {
      detail::Value v = ev.eval(&expr, t);
      if (v.type == ValueType::kScalar) {
        if (r.series.empty()) r.series.push_back({{}, {}});
        r.series[0].points.push_back({t, v.scalar});
        continue;
      }
      for (const auto& s : v.vec) {
        auto [it, inserted] = index.emplace(s.m, r.series.size());
        if (inserted) r.series.push_back({*s.m->ls, {}});
        r.series[it->second].points.push_back({t, s.v});
      }
    }
    std::sort(r.series.begin(), r.series.end(),
              [](const ResultSeries& a, const ResultSeries& b) {
                return compareLabels(a.labels, b.labels) < 0;
              });
    return r;
  } catch (const detail::EvalError& e) {
    return errorResult(e);
  } catch (
      const std::exception& e) {  // e.g. out of memory: the query fails, not the process
    return errorResult(std::string("query failed: ") + e.what());
  }
}

}  // namespace memcg::promql
