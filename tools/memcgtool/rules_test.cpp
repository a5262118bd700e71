#include "tools/memcgtool/rules_test.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "common/file.h"
#include "promql/engine.h"
#include "promql/parser.h"
#include "promql/storage.h"
#include "rules/group.h"
#include "rules/rule_file.h"
#include "rules/template.h"
#include "tools/memcgtool/promql_test.h"

namespace memcg::tool {
namespace {

using promql::Labels;

struct LabelsAndAnnotations {
  Labels labels, annotations;
};

std::string lsString(const Labels& ls) { return promql::labelsString(ls); }

bool lessLA(const LabelsAndAnnotations& a, const LabelsAndAnnotations& b) {
  int c = promql::compareLabels(a.labels, b.labels);
  if (c != 0) return c < 0;
  return promql::compareLabels(a.annotations, b.annotations) < 0;
}

std::string laString(const std::vector<LabelsAndAnnotations>& v, const std::string& indent) {
  if (v.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < v.size(); ++i)
    out += indent + std::to_string(i) + ":\n" + indent + "  Labels:" + lsString(v[i].labels) +
           "\n" + indent + "  Annotations:" + lsString(v[i].annotations) + "\n";
  return out + indent + "]";
}

Labels mapLabels(const YAML::Node& m) {
  Labels ls;
  if (m && m.IsMap())
    for (const auto& kv : m) ls.push_back({kv.first.as<std::string>(), kv.second.as<std::string>()});
  return promql::makeLabels(std::move(ls));
}

/// parser.ParseMetric: `name{a="b"}`, `{__name__="x"}`, or empty.
bool parseMetric(const std::string& s, Labels& out, std::string& err) {
  std::string t = s;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (t.empty() || t == "{}") {
    out.clear();
    return true;
  }
  promql::Labels ls;
  std::vector<SeqValue> vals;
  if (!parseSeriesDesc(t, ls, vals, err)) return false;
  if (!vals.empty()) {
    err = "unexpected values after the metric";
    return false;
  }
  out = ls;
  return true;
}

Result<int64_t> durationField(const YAML::Node& n, const char* what) {
  if (!n) return int64_t{0};
  auto d = rules::parseDurationMs(n.as<std::string>());
  if (!d.ok()) return makeError(EINVAL, what, d.error().detail);
  return *d;
}

const std::set<std::string> kTopKeys = {"rule_files", "evaluation_interval", "group_eval_order",
                                        "tests"};
const std::set<std::string> kGroupKeys = {"interval",         "name",
                                          "input_series",     "alert_rule_test",
                                          "promql_expr_test", "external_labels",
                                          "external_url"};

bool unknownKeys(const YAML::Node& m, const std::set<std::string>& known, const std::string& type,
                 std::ostream& out) {
  bool bad = false;
  for (const auto& kv : m) {
    auto k = kv.first.as<std::string>();
    if (!known.count(k)) {
      out << "  FAILED:\n    field " << k << " not found in type " << type << "\n";
      bad = true;
    }
  }
  return bad;
}

/// One test group; returns the error lines.
std::vector<std::string> runGroup(const YAML::Node& tg, int64_t evalIntervalMs,
                                  const std::vector<rules::GroupConfig>& groupCfgs,
                                  const std::map<std::string, int>& order) {
  std::vector<std::string> errs;
  const std::string tgName = tg["name"] ? tg["name"].as<std::string>() : "";
  auto intervalR = durationField(tg["interval"], "interval");
  if (!intervalR.ok()) return {intervalR.error().detail};
  const int64_t stepMs = *intervalR > 0 ? *intervalR : evalIntervalMs;

  std::map<std::string, std::string> ext;
  if (tg["external_labels"] && tg["external_labels"].IsMap())
    for (const auto& kv : tg["external_labels"]) ext[kv.first.as<std::string>()] = kv.second.as<std::string>();

  promql::MemoryStorage storage;
  if (tg["input_series"]) {
    for (const auto& s : tg["input_series"]) {
      std::string line = s["series"].as<std::string>("") + " " + s["values"].as<std::string>("");
      Labels ls;
      std::vector<SeqValue> vals;
      std::string err;
      if (!parseSeriesDesc(line, ls, vals, err)) return {"    " + err};
      int64_t t = 0;
      for (const auto& v : vals) {
        if (!v.omitted) storage.append(ls, t, v.v);
        t += stepMs;
      }
    }
  }

  std::vector<std::unique_ptr<rules::Group>> groups;
  for (const auto& gc : groupCfgs) groups.push_back(std::make_unique<rules::Group>(gc, stepMs, ext));
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    auto ia = order.find(a->name()), ib = order.find(b->name());
    return (ia == order.end() ? 0 : ia->second) < (ib == order.end() ? 0 : ib->second);
  });

  struct AlertTest {
    int64_t t;
    std::string evalTimeText, name;
    std::vector<LabelsAndAnnotations> exp;
  };
  std::vector<AlertTest> alertTests;
  int64_t maxT = 0;
  if (tg["alert_rule_test"]) {
    for (const auto& a : tg["alert_rule_test"]) {
      AlertTest at;
      auto t = durationField(a["eval_time"], "eval_time");
      if (!t.ok()) return {t.error().detail};
      at.t = *t;
      at.evalTimeText = rules::formatDuration(at.t);
      at.name = a["alertname"].as<std::string>("");
      if (at.name.empty())
        return {"an item under alert_rule_test misses required attribute alertname at eval_time " +
                at.evalTimeText + (tgName.empty() ? "" : " (in TestGroup " + tgName + ")")};
      if (a["exp_alerts"]) {
        for (const auto& e : a["exp_alerts"]) {
          Labels ls = mapLabels(e["exp_labels"]);
          std::erase_if(ls, [](const promql::Label& l) { return l.name == "alertname"; });
          ls.push_back({"alertname", at.name});
          at.exp.push_back({promql::makeLabels(std::move(ls)), mapLabels(e["exp_annotations"])});
        }
      }
      maxT = std::max(maxT, at.t);
      alertTests.push_back(std::move(at));
    }
  }
  struct ExprTest {
    int64_t t;
    std::string expr;
    std::vector<std::pair<std::string, double>> exp;
  };
  std::vector<ExprTest> exprTests;
  if (tg["promql_expr_test"]) {
    for (const auto& p : tg["promql_expr_test"]) {
      ExprTest et;
      auto t = durationField(p["eval_time"], "eval_time");
      if (!t.ok()) return {t.error().detail};
      et.t = *t;
      et.expr = p["expr"].as<std::string>("");
      if (p["exp_samples"])
        for (const auto& s : p["exp_samples"])
          et.exp.push_back({s["labels"].as<std::string>(""), s["value"].as<double>(0)});
      maxT = std::max(maxT, et.t);
      exprTests.push_back(std::move(et));
    }
  }
  std::stable_sort(alertTests.begin(), alertTests.end(),
                   [](const AlertTest& a, const AlertTest& b) { return a.t < b.t; });

  promql::EngineOptions eo;
  eo.defaultSubqueryStepMs = evalIntervalMs;
  promql::Engine engine(eo);
  auto append = [&](const Labels& ls, int64_t t, double v) { storage.append(ls, t, v); };
  size_t curr = 0;
  for (int64_t ts = 0; ts <= maxT; ts += evalIntervalMs) {
    std::vector<std::string> evalErrs;
    for (auto& g : groups) {
      g->eval(ts, engine, storage, append);
      for (const auto& r : g->rules())
        if (!r->lastError().empty())
          evalErrs.push_back("    rule: " + r->name() + ", time: " + rules::formatDuration(ts) +
                             ", err: " + r->lastError());
    }
    if (!evalErrs.empty()) {
      errs.insert(errs.end(), evalErrs.begin(), evalErrs.end());
      return errs;
    }
    while (curr < alertTests.size() && ts <= alertTests[curr].t &&
           alertTests[curr].t < ts + evalIntervalMs) {
      const int64_t t = alertTests[curr].t;
      for (; curr < alertTests.size() && alertTests[curr].t == t; ++curr) {
        const AlertTest& at = alertTests[curr];
        std::vector<LabelsAndAnnotations> got;
        for (const auto& g : groups)
          for (const auto& r : g->rules()) {
            if (!r->alerting() || r->name() != at.name) continue;
            for (const auto& a : r->alerts())
              if (a.state == rules::AlertState::kFiring) got.push_back({a.labels, a.annotations});
          }
        auto exp = at.exp;
        std::sort(got.begin(), got.end(), lessLA);
        std::sort(exp.begin(), exp.end(), lessLA);
        bool same = got.size() == exp.size();
        for (size_t i = 0; same && i < got.size(); ++i)
          same = got[i].labels == exp[i].labels && got[i].annotations == exp[i].annotations;
        if (!same)
          errs.push_back((tgName.empty() ? "" : "    name: " + tgName + ",\n") +
                         "    alertname: " + at.name + ", time: " + at.evalTimeText +
                         ", \n        exp:" + laString(exp, "            ") +
                         ", \n        got:" + laString(got, "            "));
      }
    }
  }

  for (const auto& et : exprTests) {
    auto parsed = promql::parseExpr(et.expr);
    std::vector<std::pair<Labels, double>> got;
    std::string qerr;
    if (!parsed.ok()) {
      qerr = parsed.error().detail;
    } else {
      auto q = engine.instantQuery(storage, **parsed, et.t);
      if (!q.ok()) qerr = q.error().detail;
      else if (q->type == promql::ValueType::kScalar) got.push_back({{}, q->scalar});
      else if (q->type == promql::ValueType::kVector) {
        for (const auto& s : q->series)
          if (!s.points.empty()) got.push_back({s.labels, s.points.back().v});
      } else qerr = "rule result is not a vector or scalar";
    }
    const std::string where = "    expr: " + promql::goQuote(et.expr) + ", time: " +
                              rules::formatDuration(et.t);
    if (!qerr.empty()) {
      errs.push_back(where + ", err: " + qerr);
      continue;
    }
    std::vector<std::pair<Labels, double>> exp;
    bool bad = false;
    for (const auto& [text, v] : et.exp) {
      Labels ls;
      std::string err;
      if (!parseMetric(text, ls, err)) {
        errs.push_back(where + ", err: labels " + promql::goQuote(text) + ": " + err);
        bad = true;
        break;
      }
      exp.push_back({ls, v});
    }
    if (bad) continue;
    auto cmp = [](const auto& a, const auto& b) { return promql::compareLabels(a.first, b.first) < 0; };
    std::stable_sort(exp.begin(), exp.end(), cmp);
    std::stable_sort(got.begin(), got.end(), cmp);
    bool same = exp.size() == got.size();
    for (size_t i = 0; same && i < exp.size(); ++i)
      same = exp[i].first == got[i].first && exp[i].second == got[i].second;
    if (!same) {
      auto str = [](const std::vector<std::pair<Labels, double>>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i)
          s += (i ? " " : "") + std::string("{") + lsString(v[i].first) + " " + rules::goFloat(v[i].second) + "}";
        return s + "]";
      };
      errs.push_back(where + ",\n        exp: " + str(exp) + "\n        got: " + str(got));
    }
  }
  return errs;
}

}  // namespace

bool runRuleTestFile(const std::string& path, std::ostream& out) {
  out << "Unit Testing:  " << path << "\n";
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    out << "  FAILED:\n    " << e.what() << "\n";
    return false;
  }
  if (!root.IsMap()) {
    out << "  FAILED:\n    not a unit test file\n";
    return false;
  }
  if (unknownKeys(root, kTopKeys, "main.unitTestFile", out)) return false;
  try {
    int64_t evalMs = 60000;
    if (root["evaluation_interval"]) {
      auto d = rules::parseDurationMs(root["evaluation_interval"].as<std::string>());
      if (!d.ok()) {
        out << "  FAILED:\n    " << d.error().detail << "\n";
        return false;
      }
      evalMs = *d;
    }
    if (evalMs <= 0) evalMs = 60000;
    const auto dir = std::filesystem::path(path).parent_path();
    std::vector<std::string> patterns;
    if (root["rule_files"])
      for (const auto& f : root["rule_files"]) {
        std::filesystem::path p = f.as<std::string>();
        patterns.push_back(p.is_absolute() || dir.empty() ? p.string() : (dir / p).string());
      }
    auto groups = rules::loadRuleFiles(patterns);
    if (!groups.ok()) {
      out << "  FAILED:\n    " << groups.error().path << ": " << groups.error().detail << "\n";
      return false;
    }
    std::map<std::string, int> order;
    if (root["group_eval_order"]) {
      int i = 0;
      for (const auto& n : root["group_eval_order"]) {
        auto name = n.as<std::string>();
        if (std::none_of(groups->begin(), groups->end(),
                         [&](const rules::GroupConfig& g) { return g.name == name; })) {
          out << "  FAILED:\n    group name " << name << " given in group_eval_order not found\n";
          return false;
        }
        order[name] = i++;
      }
    }
    // Without group_eval_order promtool 2.42 evaluates the groups in Go's map
    // order, i.e. at random: a test whose verdict depends on that order passes
    // there only sometimes. We evaluate in file order and say so when the
    // reverse order would give another verdict.
    std::map<std::string, int> reverse;
    if (order.empty() && groups->size() > 1)
      for (size_t i = 0; i < groups->size(); ++i)
        reverse[(*groups)[i].name] = static_cast<int>(groups->size() - i);
    std::vector<std::string> errs, warnings;
    if (root["tests"])
      for (const auto& tg : root["tests"]) {
        if (unknownKeys(tg, kGroupKeys, "main.testGroup", out)) return false;
        auto e = runGroup(tg, evalMs, *groups, order);
        if (!reverse.empty() && e.empty() != runGroup(tg, evalMs, *groups, reverse).empty())
          warnings.push_back("    test group " + (tg["name"] ? tg["name"].as<std::string>() : std::string("(unnamed)")) +
                             ": the verdict depends on the order the rule groups are evaluated in; promtool "
                             "evaluates them in random order unless group_eval_order is given");
        errs.insert(errs.end(), e.begin(), e.end());
      }
    if (!warnings.empty()) {
      out << "  WARNING:\n";
      for (const auto& w : warnings) out << w << "\n";
    }
    if (!errs.empty()) {
      out << "  FAILED:\n";
      for (const auto& e : errs) out << e << "\n";
      return false;
    }
  } catch (const YAML::Exception& e) {
    out << "  FAILED:\n    " << e.what() << "\n";
    return false;
  }
  out << "  SUCCESS\n";
  return true;
}

int testRulesMain(int argc, char** argv, std::ostream& out) {
  if (argc < 1) {
    out << "usage: memcgtool test rules FILE...\n";
    return 2;
  }
  bool ok = true;
  for (int i = 0; i < argc; ++i) {
    if (!runRuleTestFile(argv[i], out)) ok = false;
    out << "\n";
  }
  return ok ? 0 : 1;
}

int checkRulesMain(int argc, char** argv, std::ostream& out) {
  if (argc < 1) {
    out << "usage: memcgtool check rules FILE...\n";
    return 2;
  }
  bool ok = true;
  for (int i = 0; i < argc; ++i) {
    out << "Checking " << argv[i] << "\n";
    auto g = rules::loadRuleFile(argv[i]);
    if (!g.ok()) {
      out << "  FAILED:\n" << g.error().detail << "\n\n";
      ok = false;
      continue;
    }
    size_t n = 0;
    for (const auto& gc : *g) n += gc.rules.size();
    out << "  SUCCESS: " << n << " rules found\n\n";
  }
  return ok ? 0 : 1;
}

}  // namespace memcg::tool
