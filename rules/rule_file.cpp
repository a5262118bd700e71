#include "rules/rule_file.h"

#include <glob.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/file.h"
#include "promql/lexer.h"
#include "promql/parser.h"
#include "rules/template.h"

namespace memcg::rules {
namespace {

bool labelNameOk(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool metricNameOk(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string scalarText(const YAML::Node& n) {
  return n.IsScalar() ? n.Scalar() : std::string();
}

}  // namespace


std::string RuleConfig::key() const {
  std::ostringstream k;
  k << (alerting ? "alert\x1f" : "record\x1f") << name << '\x1f' << exprText << '\x1f'
    << forMs << '\x1f' << keepFiringForMs;
  for (const auto& [n, v] : labels) k << '\x1f' << n << '=' << v;
  for (const auto& [n, v] : annotations) k << '\x1e' << n << '=' << v;
  return k.str();
}

Result<std::vector<GroupConfig>> parseRuleFile(const std::string& text,
                                               const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return makeError(EINVAL, path, std::string("yaml: ") + e.what());
  }
  std::vector<std::string> errs;
  std::vector<GroupConfig> groups;
  if (root.IsNull()) return groups;  // an empty file has no groups
  if (!root.IsMap()) return makeError(EINVAL, path, "not a map with a groups: key");
  for (const auto& kv : root) {
    if (kv.first.as<std::string>() != "groups")
      errs.push_back("field " + kv.first.as<std::string>() +
                     " not found in type rulefmt.RuleGroups");
  }
  YAML::Node gs = root["groups"];
  if (gs && !gs.IsNull() && !gs.IsSequence()) errs.push_back("groups must be a list");
  std::set<std::string> names;
  if (gs && gs.IsSequence()) {
    for (size_t gi = 0; gi < gs.size(); ++gi) {
      const YAML::Node& g = gs[gi];
      GroupConfig gc;
      gc.file = path;
      if (!g.IsMap()) {
        errs.push_back("group " + std::to_string(gi + 1) + ": not a map");
        continue;
      }
      for (const auto& kv : g) {
        std::string k = kv.first.as<std::string>();
        if (k != "name" && k != "interval" && k != "limit" && k != "rules")
          errs.push_back("group " + std::to_string(gi + 1) + ": field " + k +
                         " not found in type rulefmt.RuleGroup");
      }
      gc.name = scalarText(g["name"]);
      std::string where = "group \"" + gc.name + "\"";
      if (gc.name.empty())
        errs.push_back("group " + std::to_string(gi + 1) +
                       ": groupname must not be empty");
      else if (!names.insert(gc.name).second)
        errs.push_back(where + ": repeated in the same file");
      if (g["interval"]) {
        auto d = parseDurationMs(scalarText(g["interval"]));
        if (!d.ok())
          errs.push_back(where + ": interval: " + d.error().detail);
        else
          gc.intervalMs = *d;
      }
      if (g["limit"]) {
        try {
          gc.limit = g["limit"].as<int>();
        } catch (const YAML::Exception&) {
          errs.push_back(where + ": limit must be an integer");
        }
      }
      const YAML::Node rs = g["rules"];
      if (rs && !rs.IsNull() && !rs.IsSequence())
        errs.push_back(where + ": rules must be a list");
      for (size_t ri = 0; rs && rs.IsSequence() && ri < rs.size(); ++ri) {
        const YAML::Node& r = rs[ri];
        std::string rw = where + ", rule " + std::to_string(ri + 1);
        if (!r.IsMap()) {
          errs.push_back(rw + ": not a map");
          continue;
        }
        RuleConfig rc;
        for (const auto& kv : r) {
          std::string k = kv.first.as<std::string>();
          if (k != "alert" && k != "record" && k != "expr" && k != "for" &&
              k != "keep_firing_for" && k != "labels" && k != "annotations")
            errs.push_back(rw + ": field " + k + " not found in type rulefmt.Rule");
        }
        const bool hasAlert = r["alert"].IsDefined(), hasRecord = r["record"].IsDefined();
        if (hasAlert == hasRecord) {
          errs.push_back(rw + (hasAlert ? ": only one of 'record' and 'alert' must be set"
                                        : ": one of 'record' or 'alert' must be set"));
          continue;
        }
        rc.alerting = hasAlert;
        rc.name = scalarText(hasAlert ? r["alert"] : r["record"]);
        rw += " \"" + rc.name + "\"";
        if (rc.name.empty())
          errs.push_back(rw + ": " + (hasAlert ? "alert" : "record") +
                         " name must not be empty");
        if (!hasAlert && !rc.name.empty() && !metricNameOk(rc.name))
          errs.push_back(rw + ": invalid recording rule name: " + rc.name);
        rc.exprText = scalarText(r["expr"]);
        if (rc.exprText.empty()) {
          errs.push_back(rw + ": field 'expr' must be set in rule");
        } else {
          auto e = promql::parseExpr(rc.exprText);
          if (!e.ok()) {
            errs.push_back(rw + ": could not parse expression: " + e.error().detail);
          } else {
            auto vt = (*e)->type();
            if (vt != promql::ValueType::kVector && vt != promql::ValueType::kScalar)
              errs.push_back(rw + ": expression must be of type vector or scalar");
            rc.expr = std::shared_ptr<const promql::Expr>(std::move(*e));
          }
        }
        for (const char* f : {"for", "keep_firing_for"}) {
          if (!r[f]) continue;
          if (!hasAlert) {
            errs.push_back(rw + ": invalid field '" + f + "' in recording rule");
            continue;
          }
          auto d = parseDurationMs(scalarText(r[f]));
          if (!d.ok())
            errs.push_back(rw + ": " + f + ": " + d.error().detail);
          else
            (std::string(f) == "for" ? rc.forMs : rc.keepFiringForMs) = *d;
        }
        if (r["annotations"] && !hasAlert)
          errs.push_back(rw + ": invalid field 'annotations' in recording rule");
        for (const char* f : {"labels", "annotations"}) {
          const YAML::Node m = r[f];
          if (!m || m.IsNull()) continue;
          if (!m.IsMap()) {
            errs.push_back(rw + ": " + f + " must be a map");
            continue;
          }
          auto& dst = std::string(f) == "labels" ? rc.labels : rc.annotations;
          for (const auto& kv : m) {
            std::string n = kv.first.as<std::string>(), v = scalarText(kv.second);
            if (!labelNameOk(n))
              errs.push_back(rw + ": invalid " +
                             std::string(f).substr(0, std::string(f).size() - 1) +
                             " name: " + n);
            if (std::string(f) == "labels" && n == "__name__")
              errs.push_back(rw + ": invalid label name: __name__");
            if (hasAlert) {
              auto t = checkTemplate(v);
              if (!t.ok())
                errs.push_back(rw + ": " + f + " " + n +
                               ": template: " + t.error().detail);
            }
            dst[n] = v;
          }
        }
        gc.rules.push_back(std::move(rc));
      }
      groups.push_back(std::move(gc));
    }
  }
  if (!errs.empty()) {
    std::string d;
    for (const auto& e : errs) d += (d.empty() ? "" : "\n") + e;
    return makeError(EINVAL, path, d);
  }
  return groups;
}

Result<std::vector<GroupConfig>> loadRuleFile(const std::string& path) {
  auto text = readWholeFile(path);
  if (!text.ok()) return text.error();
  return parseRuleFile(*text, path);
}

Result<std::vector<GroupConfig>> loadRuleFiles(const std::vector<std::string>& patterns) {
  std::vector<GroupConfig> all;
  std::set<std::string> names;
  std::set<std::string> seenFiles;
  for (const auto& pat : patterns) {
    std::vector<std::string> files;
    if (pat.find_first_of("*?[") == std::string::npos) {
      files.push_back(pat);
    } else {
      glob_t g{};
      int rc = ::glob(pat.c_str(), 0, nullptr, &g);
      if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
      globfree(&g);
      if (rc != 0 && rc != GLOB_NOMATCH) return makeError(EINVAL, pat, "bad glob");
      std::sort(files.begin(), files.end());
    }
    for (const auto& f : files) {
      if (!seenFiles.insert(f).second) continue;
      auto gs = loadRuleFile(f);
      if (!gs.ok()) return gs.error();
      for (auto& g : *gs) {
        if (!names.insert(g.name).second)
          return makeError(EINVAL, f,
                           "group name \"" + g.name + "\" is used by another group");
        all.push_back(std::move(g));
      }
    }
  }
  return all;
}

void collectSelectors(const promql::Expr& e,
                      std::vector<std::vector<promql::Matcher>>& out) {
  using promql::NodeKind;
  switch (e.kind) {
    case NodeKind::kVectorSelector:
      out.push_back(static_cast<const promql::VectorSelector&>(e).matchers);
      break;
    case NodeKind::kMatrixSelector:
      out.push_back(static_cast<const promql::MatrixSelector&>(e).vs->matchers);
      break;
    case NodeKind::kSubquery:
      collectSelectors(*static_cast<const promql::SubqueryExpr&>(e).expr, out);
      break;
    case NodeKind::kParen:
      collectSelectors(*static_cast<const promql::ParenExpr&>(e).expr, out);
      break;
    case NodeKind::kUnary:
      collectSelectors(*static_cast<const promql::UnaryExpr&>(e).expr, out);
      break;
    case NodeKind::kBinary: {
      const auto& b = static_cast<const promql::BinaryExpr&>(e);
      collectSelectors(*b.lhs, out);
      collectSelectors(*b.rhs, out);
      break;
    }
    case NodeKind::kAggregate: {
      const auto& a = static_cast<const promql::AggregateExpr&>(e);
      collectSelectors(*a.expr, out);
      if (a.param) collectSelectors(*a.param, out);
      break;
    }
    case NodeKind::kCall:
      for (const auto& a : static_cast<const promql::Call&>(e).args)
        if (a) collectSelectors(*a, out);
      break;
    default:
      break;
  }
}

}  // namespace memcg::rules
