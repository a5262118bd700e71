#include "rules/template.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

namespace memcg::rules {
namespace {

struct Val {
  enum Kind { kStr, kNum, kMap } kind = kStr;
  std::string s;
  double n = 0;
  const std::map<std::string, std::string>* m = nullptr;
};

std::string cfmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Go's %.4g: C's, except NaN and the infinities.
std::string g4(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return cfmt("%.4g", v);
}

std::string mapString(const std::map<std::string, std::string>& m) {
  std::string out = "map[";
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ' ';
    first = false;
    out += k + ":" + v;
  }
  return out + "]";
}

std::string printVal(const Val& v) {
  switch (v.kind) {
    case Val::kStr: return v.s;
    case Val::kNum: return goFloat(v.n);
    case Val::kMap: return v.m ? mapString(*v.m) : "map[]";
  }
  return {};
}

bool toFloat(const Val& v, double& out, std::string& err) {
  if (v.kind == Val::kNum) {
    out = v.n;
    return true;
  }
  if (v.kind == Val::kStr) {
    // Go's strconv.ParseFloat: also "Inf", "NaN".
    const std::string& s = v.s;
    if (s == "NaN") { out = std::nan(""); return true; }
    if (s == "+Inf" || s == "Inf") { out = HUGE_VAL; return true; }
    if (s == "-Inf") { out = -HUGE_VAL; return true; }
    char* end = nullptr;
    errno = 0;
    out = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return true;
  }
  err = "cannot convert " + printVal(v) + " to float";
  return false;
}

// ---- the parser: one action's pipeline -----------------------------------

struct Token {
  enum Kind { kIdent, kVar, kField, kString, kNumber, kPipe, kLParen, kRParen } kind;
  std::string text;
};

bool lexAction(std::string_view s, std::vector<Token>& out, std::string& err) {
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') { ++i; continue; }
    if (c == '|') { out.push_back({Token::kPipe, "|"}); ++i; continue; }
    if (c == '(') { out.push_back({Token::kLParen, "("}); ++i; continue; }
    if (c == ')') { out.push_back({Token::kRParen, ")"}); ++i; continue; }
    if (c == '"') {
      std::string v;
      ++i;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) {
          char e = s[i + 1];
          v += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          i += 2;
        } else {
          v += s[i++];
        }
      }
      if (i >= s.size()) { err = "unterminated quoted string"; return false; }
      ++i;
      out.push_back({Token::kString, v});
      continue;
    }
    if (c == '`') {
      size_t e = s.find('`', i + 1);
      if (e == std::string_view::npos) { err = "unterminated raw string"; return false; }
      out.push_back({Token::kString, std::string(s.substr(i + 1, e - i - 1))});
      i = e + 1;
      continue;
    }
    auto word = [&](size_t from) {
      size_t j = from;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
                              s[j] == '.' || s[j] == '$'))
        ++j;
      return j;
    };
    if (c == '$' || c == '.') {
      size_t j = word(i + 1);
      out.push_back({c == '$' ? Token::kVar : Token::kField, std::string(s.substr(i, j - i))});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
      size_t j = i + 1;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
                              ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
        ++j;
      out.push_back({Token::kNumber, std::string(s.substr(i, j - i))});
      i = j;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = word(i);
      out.push_back({Token::kIdent, std::string(s.substr(i, j - i))});
      i = j;
      continue;
    }
    err = std::string("unexpected character '") + c + "'";
    return false;
  }
  return true;
}

const char* kFuncs[] = {"humanize",          "humanize1024", "humanizeDuration",
                        "humanizePercentage", "humanizeTimestamp", "printf",
                        "toUpper",           "toLower",      "title"};

bool knownFunc(const std::string& f) {
  for (const char* k : kFuncs)
    if (f == k) return true;
  return false;
}

class Evaluator {
 public:
  Evaluator(const TemplateData* data, std::vector<Token> toks)
      : data_(data), toks_(std::move(toks)) {}

  bool run(Val& out, std::string& err) {
    if (toks_.empty()) { err = "missing value for command"; return false; }
    if (toks_[0].kind == Token::kIdent &&
        (toks_[0].text == "if" || toks_[0].text == "range" || toks_[0].text == "with" ||
         toks_[0].text == "end" || toks_[0].text == "else" || toks_[0].text == "define" ||
         toks_[0].text == "template" || toks_[0].text == "block")) {
      err = "'" + toks_[0].text + "' is not supported by memcg_exporter's templates";
      return false;
    }
    // A leading `$x := ...` is Prometheus' own preamble shape; refuse others.
    if (!pipeline(out, err)) return false;
    if (pos_ != toks_.size()) { err = "unexpected \"" + toks_[pos_].text + "\""; return false; }
    return true;
  }

 private:
  bool pipeline(Val& out, std::string& err) {
    bool have = false;
    Val prev;
    for (;;) {
      if (!command(have ? &prev : nullptr, out, err)) return false;
      have = true;
      prev = out;
      if (pos_ < toks_.size() && toks_[pos_].kind == Token::kPipe) {
        ++pos_;
        continue;
      }
      return true;
    }
  }

  bool command(const Val* piped, Val& out, std::string& err) {
    if (pos_ >= toks_.size()) { err = "missing command"; return false; }
    if (toks_[pos_].kind == Token::kIdent) {
      std::string f = toks_[pos_++].text;
      if (!knownFunc(f)) { err = "function \"" + f + "\" not defined"; return false; }
      std::vector<Val> args;
      while (pos_ < toks_.size() && toks_[pos_].kind != Token::kPipe &&
             toks_[pos_].kind != Token::kRParen) {
        Val a;
        if (!operand(a, err)) return false;
        args.push_back(std::move(a));
      }
      if (piped) args.push_back(*piped);
      return call(f, args, out, err);
    }
    if (piped) { err = "can't give argument to non-function"; return false; }
    if (!operand(out, err)) return false;
    if (pos_ < toks_.size() && toks_[pos_].kind != Token::kPipe &&
        toks_[pos_].kind != Token::kRParen) {
      err = "can't give argument to non-function";
      return false;
    }
    return true;
  }

  bool operand(Val& out, std::string& err) {
    const Token& t = toks_[pos_++];
    switch (t.kind) {
      case Token::kString: out = Val{Val::kStr, t.text}; return true;
      case Token::kNumber: {
        double d = 0;
        auto [p, ec] = std::from_chars(t.text.data() + (t.text[0] == '+'), t.text.data() + t.text.size(), d);
        if (ec != std::errc() || p != t.text.data() + t.text.size()) {
          err = "bad number syntax: " + t.text;
          return false;
        }
        out = Val{Val::kNum, {}, d};
        return true;
      }
      case Token::kVar:
      case Token::kField: return reference(t.text, out, err);
      case Token::kLParen: {
        if (!pipeline(out, err)) return false;
        if (pos_ >= toks_.size() || toks_[pos_].kind != Token::kRParen) {
          err = "unclosed left paren";
          return false;
        }
        ++pos_;
        return true;
      }
      default: err = "unexpected \"" + t.text + "\""; return false;
    }
  }

  bool reference(const std::string& ref, Val& out, std::string& err) {
    // $labels[.x], .Labels[.x], $value, .Value, $externalLabels[.x], .ExternalLabels[.x]
    std::string base = ref, field;
    size_t dot = ref.find('.', 1);
    if (ref[0] == '.' ) {
      dot = ref.find('.', 1);
    }
    if (dot != std::string::npos) {
      base = ref.substr(0, dot);
      field = ref.substr(dot + 1);
    }
    const std::map<std::string, std::string>* m = nullptr;
    bool isMap = false;
    if (base == "$labels" || base == ".Labels") {
      isMap = true;
      m = data_ ? data_->labels : nullptr;
    } else if (base == "$externalLabels" || base == ".ExternalLabels") {
      isMap = true;
      m = data_ ? data_->externalLabels : nullptr;
    } else if ((base == "$value" || base == ".Value") && field.empty()) {
      out = Val{Val::kNum, {}, data_ ? data_->value : 0};
      return true;
    } else if (base == "$" && field.empty()) {
      err = "'$' alone is not supported";
      return false;
    } else {
      err = "undefined variable or field \"" + ref + "\"";
      return false;
    }
    if (!isMap) return false;
    if (field.empty()) {
      out = Val{Val::kMap, {}, 0, m};
      return true;
    }
    if (field.find('.') != std::string::npos) {
      err = "can't evaluate field " + field;
      return false;
    }
    // A missing key prints Go's "<no value>".
    std::string v = "<no value>";
    if (m) {
      auto it = m->find(field);
      if (it != m->end()) v = it->second;
    }
    out = Val{Val::kStr, v};
    return true;
  }

  bool call(const std::string& f, const std::vector<Val>& args, Val& out, std::string& err) {
    if (f == "printf") {
      if (args.empty() || args[0].kind != Val::kStr) {
        err = "printf needs a format string";
        return false;
      }
      std::vector<Val> rest(args.begin() + 1, args.end());
      out = Val{Val::kStr, sprintfVals(args[0].s, rest)};
      return true;
    }
    if (args.size() != 1) {
      err = "wrong number of args for " + f + ": want 1 got " + std::to_string(args.size());
      return false;
    }
    if (f == "toUpper" || f == "toLower" || f == "title") {
      std::string s = printVal(args[0]);
      bool start = true;
      for (char& c : s) {
        if (f == "toUpper") c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        else if (f == "toLower") c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else {
          if (start) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          start = !std::isalnum(static_cast<unsigned char>(c));
        }
      }
      out = Val{Val::kStr, s};
      return true;
    }
    double v = 0;
    if (!toFloat(args[0], v, err)) return false;
    if (f == "humanize") out = Val{Val::kStr, humanize(v)};
    else if (f == "humanize1024") out = Val{Val::kStr, humanize1024(v)};
    else if (f == "humanizeDuration") out = Val{Val::kStr, humanizeDuration(v)};
    else if (f == "humanizePercentage") out = Val{Val::kStr, humanizePercentage(v)};
    else if (f == "humanizeTimestamp") {
      if (std::isnan(v) || std::isinf(v)) {
        out = Val{Val::kStr, g4(v)};
      } else {
        // Go's time.Time String(): 2006-01-02 15:04:05.999999999 -0700 MST, UTC.
        time_t sec = static_cast<time_t>(std::floor(v));
        long nsec = std::lround((v - std::floor(v)) * 1e9);
        struct tm tm {};
        gmtime_r(&sec, &tm);
        char buf[64];
        std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
        std::string s = buf;
        if (nsec > 0) {
          char frac[32];
          std::snprintf(frac, sizeof frac, ".%09ld", nsec);
          std::string fs = frac;
          while (fs.back() == '0') fs.pop_back();
          s += fs;
        }
        out = Val{Val::kStr, s + " +0000 UTC"};
      }
    }
    return true;
  }

  static std::string sprintfVals(const std::string& fmt, const std::vector<Val>& vals) {
    std::vector<std::string> strs;
    std::vector<double> nums;
    std::vector<bool> isNum;
    for (const auto& v : vals) {
      isNum.push_back(v.kind == Val::kNum);
      nums.push_back(v.n);
      strs.push_back(printVal(v));
    }
    return goSprintf(fmt, strs, nums, isNum);
  }

  const TemplateData* data_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
};

/// Walks `text`, calling `onAction(inner)` for each action; literal text is
/// appended to `out`. Handles `{{-` / `-}}` trimming.
template <typename Fn>
Result<std::string> walk(std::string_view text, Fn&& onAction) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, open - i));
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos)
      return makeError(EINVAL, "template", "unclosed action");
    std::string_view inner = text.substr(open + 2, close - open - 2);
    if (inner.size() >= 2 && inner[0] == '-' && (inner[1] == ' ' || inner[1] == '\t' || inner[1] == '\n')) {
      inner.remove_prefix(1);
      while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
    }
    bool trimRight = false;
    if (inner.size() >= 2 && inner.back() == '-' &&
        std::isspace(static_cast<unsigned char>(inner[inner.size() - 2]))) {
      inner.remove_suffix(1);
      trimRight = true;
    }
    // Comments {{/* ... */}}.
    std::string_view t = inner;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    if (t.substr(0, 2) != "/*") {
      std::string piece, err;
      if (!onAction(inner, piece, err)) return makeError(EINVAL, "template", err);
      out += piece;
    }
    i = close + 2;
    if (trimRight)
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  }
  return out;
}

}  // namespace

std::string goFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // d.ddde[+-]XX
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 6) {  // shortest: precision 6 decides, as strconv
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
    out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
  }
  return out;
}

std::string goSprintf(std::string_view format, const std::vector<std::string>& strArgs,
                      const std::vector<double>& numArgs, const std::vector<bool>& isNum) {
  std::string out;
  size_t arg = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c != '%') {
      out += c;
      continue;
    }
    size_t j = i + 1;
    while (j < format.size() && std::strchr("+-# 0", format[j])) ++j;
    while (j < format.size() && (std::isdigit(static_cast<unsigned char>(format[j])) || format[j] == '.')) ++j;
    if (j >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    char verb = format[j];
    std::string spec(format.substr(i, j - i));
    i = j;
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (arg >= strArgs.size()) {
      out += std::string("%!") + verb + "(MISSING)";
      continue;
    }
    const bool num = isNum[arg];
    const double d = numArgs[arg];
    const std::string& s = strArgs[arg];
    ++arg;
    switch (verb) {
      case 'g': case 'e': case 'f': case 'E': case 'G': case 'F':
        if (!num) {
          out += std::string("%!") + verb + "(string=" + s + ")";
        } else if (std::isnan(d) || std::isinf(d)) {
          out += std::isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf";
        } else if ((verb == 'g' || verb == 'G') && spec.find('.') == std::string::npos) {
          out += goFloat(d);  // Go's %g without precision: shortest
        } else {
          char buf[512];
          std::snprintf(buf, sizeof buf, (spec + verb).c_str(), d);
          out += buf;
        }
        break;
      case 'v': out += num ? goFloat(d) : s; break;
      case 's': out += num ? "%!s(float64=" + goFloat(d) + ")" : s; break;
      case 'd':
        if (num) out += "%!d(float64=" + goFloat(d) + ")";
        else out += "%!d(string=" + s + ")";
        break;
      case 'q': out += "\"" + s + "\""; break;
      default: out += std::string("%!") + verb + "(" + s + ")";
    }
  }
  if (arg < strArgs.size()) {
    out += "%!(EXTRA ";
    for (size_t k = arg; k < strArgs.size(); ++k) {
      if (k > arg) out += ", ";
      out += (isNum[k] ? "float64=" : "string=") + strArgs[k];
    }
    out += ")";
  }
  return out;
}

std::string humanize(double v) {
  if (v == 0 || std::isnan(v) || std::isinf(v)) return g4(v);
  std::string prefix;
  if (std::fabs(v) >= 1) {
    for (const char* p : {"k", "M", "G", "T", "P", "E", "Z", "Y"}) {
      if (std::fabs(v) < 1000) break;
      prefix = p;
      v /= 1000;
    }
    return g4(v) + prefix;
  }
  for (const char* p : {"m", "u", "n", "p", "f", "a", "z", "y"}) {
    if (std::fabs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return g4(v) + prefix;
}

std::string humanize1024(double v) {
  if (std::fabs(v) <= 1 || std::isnan(v) || std::isinf(v)) return g4(v);
  std::string prefix;
  for (const char* p : {"ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"}) {
    if (std::fabs(v) < 1024) break;
    prefix = p;
    v /= 1024;
  }
  return g4(v) + prefix;
}

std::string humanizeDuration(double v) {
  if (std::isnan(v) || std::isinf(v)) return g4(v);
  if (v == 0) return g4(v) + "s";
  if (std::fabs(v) >= 1) {
    std::string sign;
    if (v < 0) {
      sign = "-";
      v = -v;
    }
    int64_t d = static_cast<int64_t>(v);
    int64_t s = d % 60, m = (d / 60) % 60, h = (d / 3600) % 24, days = d / 86400;
    auto I = [](int64_t x) { return std::to_string(x); };
    if (days) return sign + I(days) + "d " + I(h) + "h " + I(m) + "m " + I(s) + "s";
    if (h) return sign + I(h) + "h " + I(m) + "m " + I(s) + "s";
    if (m) return sign + I(m) + "m " + I(s) + "s";
    return sign + g4(v) + "s";
  }
  std::string prefix;
  for (const char* p : {"m", "u", "n", "p", "f", "a", "z", "y"}) {
    if (std::fabs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return g4(v) + prefix + "s";
}

std::string humanizePercentage(double v) { return g4(v * 100) + "%"; }

Result<std::string> expandTemplate(std::string_view text, const TemplateData& data) {
  return walk(text, [&](std::string_view inner, std::string& piece, std::string& err) {
    std::vector<Token> toks;
    if (!lexAction(inner, toks, err)) return false;
    Evaluator ev(&data, std::move(toks));
    Val v;
    if (!ev.run(v, err)) return false;
    piece = printVal(v);
    return true;
  });
}

Status checkTemplate(std::string_view text) {
  std::map<std::string, std::string> empty;
  TemplateData d{&empty, &empty, 0};
  auto r = expandTemplate(text, d);
  if (!r.ok()) return r.error();
  return Ok{};
}

}  // namespace memcg::rules
