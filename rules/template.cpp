#include "rules/template.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

namespace memcg::rules {
namespace {

// kNum is Go's float64 ($value, float literals), kInt an integer literal (Go
// templates type `3` as int: printf "%d" 3 prints 3, printf "%d" $value does not).
struct Val {
  enum Kind { kStr, kNum, kMap, kInt } kind = kStr;
  std::string s;
  double n = 0;
  const std::map<std::string, std::string>* m = nullptr;
  int64_t i = 0;
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
    case Val::kInt: return std::to_string(v.i);
    case Val::kMap: return v.m ? mapString(*v.m) : "map[]";
  }
  return {};
}

bool toFloat(const Val& v, double& out, std::string& err) {
  if (v.kind == Val::kNum) {
    out = v.n;
    return true;
  }
  if (v.kind == Val::kInt) {
    out = static_cast<double>(v.i);
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
        // Go: a literal without '.', an exponent or hex is an int constant.
        if (t.text.find_first_of(".eEpPxX") == std::string::npos) {
          int64_t n = 0;
          auto [p, ec] = std::from_chars(t.text.data() + (t.text[0] == '+'),
                                         t.text.data() + t.text.size(), n);
          if (ec == std::errc() && p == t.text.data() + t.text.size()) {
            out = Val{Val::kInt, {}, 0, nullptr, n};
            return true;
          }
        }
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
    // $labels is a map[string]string: a missing key is "" (not "<no value>").
    std::string v;
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
          const auto u = static_cast<unsigned char>(c);
          start = !(std::isalnum(u) || c == '_' || u >= 0x80);
        }
      }
      out = Val{Val::kStr, s};
      return true;
    }
    double v = 0;
    if (!toFloat(args[0], v, err)) {
      // A label that is not a number is an error of one expansion (Prometheus
      // reports it in the annotation), not of the template: a check passes.
      if (!data_ || data_->checking) {
        err.clear();
        v = 0;
      } else {
        return false;
      }
    }
    if (f == "humanize") out = Val{Val::kStr, humanize(v)};
    else if (f == "humanize1024") out = Val{Val::kStr, humanize1024(v)};
    else if (f == "humanizeDuration") out = Val{Val::kStr, humanizeDuration(v)};
    else if (f == "humanizePercentage") out = Val{Val::kStr, humanizePercentage(v)};
    else if (f == "humanizeTimestamp") {
      if (std::isnan(v) || std::isinf(v)) {
        out = Val{Val::kStr, g4(v)};
      } else {
        // Go's time.Time String(): 2006-01-02 15:04:05.999999999 -0700 MST, UTC,
        // of model.TimeFromUnixNano(int64(v*1e9)): milliseconds, truncated.
        const int64_t ms = static_cast<int64_t>(v * 1e9) / 1'000'000;
        time_t sec = static_cast<time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
        long nsec = static_cast<long>(((ms % 1000) + 1000) % 1000) * 1'000'000;
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
    std::vector<FmtArg> args;
    for (const auto& v : vals) {
      if (v.kind == Val::kNum) args.push_back(FmtArg::ofFloat(v.n));
      else if (v.kind == Val::kInt) args.push_back(FmtArg::ofInt(v.i));
      else args.push_back(FmtArg::ofString(printVal(v)));
    }
    return goFormat(fmt, args);
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

namespace {

// One verb's flags, width and precision, as Go's fmt parses them.
struct Spec {
  bool plus = false, minus = false, sharp = false, space = false, zero = false;
  int width = -1, prec = -1;  // -1: absent
};

size_t runeCount(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

/// The first n runes of s.
std::string_view runePrefix(std::string_view s, size_t n) {
  size_t i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == 0) break;
      --n;
    }
  }
  return s.substr(0, i);
}

/// Go's fmt.pad: to the width in runes, left or right, spaces or (numbers) zeros.
void pad(std::string& out, std::string_view s, const Spec& sp, bool zeros = false) {
  const size_t n = runeCount(s);
  const size_t w = sp.width > 0 ? static_cast<size_t>(sp.width) : 0;
  if (n >= w) {
    out += s;
    return;
  }
  if (sp.minus) {
    out += s;
    out.append(w - n, ' ');
  } else {
    out.append(w - n, zeros ? '0' : ' ');
    out += s;
  }
}

void appendRune(std::string& out, uint32_t r) {
  if (r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) r = 0xFFFD;
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xC0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xE0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  }
}

/// strconv.Quote for ASCII-printable and UTF-8 text (other bytes as \x..).
std::string goQuote(std::string_view s, char q) {
  std::string out(1, q);
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (c >= 0x80) {
      out += static_cast<char>(c);  // UTF-8 letters print as they are
    } else {
      switch (c) {
        case '\a': out += "\\a"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\v': out += "\\v"; break;
        default: {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02x", c);
          out += b;
        }
      }
    }
  }
  return out + q;
}

std::string cSpec(const Spec& sp, char verb, bool withWidth = true) {
  std::string f = "%";
  if (sp.plus) f += '+';
  if (sp.minus) f += '-';
  if (sp.sharp) f += '#';
  if (sp.space) f += ' ';
  if (sp.zero && !sp.minus) f += '0';
  if (withWidth && sp.width > 0) f += std::to_string(sp.width);
  if (sp.prec >= 0) f += "." + std::to_string(sp.prec);
  return f + verb;
}

/// Go's fmtFloat for the verbs b, e, E, f, F, g, G, x, X (v is g).
void fmtFloat(std::string& out, double v, char verb, const Spec& sp) {
  if (std::isnan(v) || std::isinf(v)) {
    // No zero padding; +Inf keeps its sign, NaN gets one only with + or space.
    std::string s = std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v) && (sp.plus || sp.space)) s = (sp.plus ? "+" : " ") + s;
    else if (v > 0 && std::isinf(v) && sp.space && !sp.plus) s[0] = ' ';
    pad(out, s, sp);
    return;
  }
  // Go pads a number's sign first, then zeros (with the 0 flag) or spaces.
  auto padNum = [&](const std::string& num) {
    const size_t w = sp.width > 0 ? static_cast<size_t>(sp.width) : 0;
    if (sp.zero && !sp.minus && runeCount(num) < w) {
      const size_t signLen = (num[0] == '-' || num[0] == '+' || num[0] == ' ') ? 1 : 0;
      out += num.substr(0, signLen);
      out.append(w - runeCount(num), '0');
      out += num.substr(signLen);
      return;
    }
    pad(out, num, sp);
  };
  const char* sign = std::signbit(v) ? "" : sp.plus ? "+" : sp.space ? " " : "";
  if (verb == 'b') {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    const int bexp = static_cast<int>((bits >> 52) & 0x7FF);
    uint64_t mant = bits & ((uint64_t{1} << 52) - 1);
    int exp = -1074;
    if (bexp != 0) {
      mant |= uint64_t{1} << 52;
      exp = bexp - 1075;
    }
    padNum(std::string(std::signbit(v) ? "-" : sign) + std::to_string(mant) + "p" +
           (exp >= 0 ? "+" : "-") + std::to_string(std::abs(exp)));
    return;
  }
  if ((verb == 'g' || verb == 'G' || verb == 'v') && sp.prec < 0 && !sp.sharp) {
    std::string num = goFloat(v);  // shortest, as strconv 'g' -1
    if (verb == 'G')
      for (char& c : num) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    padNum(sign + num);
    return;
  }
  const char cverb = verb == 'v' ? 'g' : verb == 'x' ? 'a' : verb == 'X' ? 'A' : verb;
  char buf[512];
  const bool hex = verb == 'x' || verb == 'X';
  Spec c = sp;
  if (hex) c.sharp = false;  // Go's # for %x is its own, below
  std::snprintf(buf, sizeof buf, cSpec(c, cverb, false).c_str(), v);
  std::string num = buf;
  if (hex) {
    // Go writes the binary exponent with at least two digits (p+01; C: p+1).
    const size_t at = num.rfind(verb == 'x' ? 'p' : 'P');
    if (at != std::string::npos && at + 3 == num.size()) num.insert(at + 2, "0");
    if (sp.sharp) {
      // Go's # for %x: a decimal point and digits up to the precision (6 when
      // none), counted from the first non-zero character after the sign ('x'
      // counts, as Go's loop has it).
      int digits = sp.prec >= 0 ? sp.prec : 6;
      const size_t p = num.find_first_of("pP");
      std::string head = num.substr(0, p), tail = num.substr(p);
      const size_t from = (head[0] == '-' || head[0] == '+' || head[0] == ' ') ? 1 : 0;
      bool point = false, nonzero = false;
      for (size_t k = from; k < head.size(); ++k) {
        if (head[k] == '.') { point = true; continue; }
        if (head[k] != '0') nonzero = true;
        if (nonzero) --digits;
      }
      if (!point) head += '.';
      if (digits > 0) head.append(static_cast<size_t>(digits), '0');
      num = head + tail;
    }
  }
  padNum(num);
}

/// Go's fmtInteger for the verbs b, c, d, o, O, q, U, v, x, X.
void fmtInt(std::string& out, int64_t v, char verb, const Spec& sp) {
  if (verb == 'c') {
    std::string s;
    appendRune(s, static_cast<uint32_t>(v));
    pad(out, s, sp);
    return;
  }
  if (verb == 'q') {
    std::string s;
    appendRune(s, static_cast<uint32_t>(v));
    pad(out, goQuote(s, '\''), sp);
    return;
  }
  if (verb == 'U') {
    char b[32];
    std::snprintf(b, sizeof b, "U+%04llX", static_cast<unsigned long long>(v));
    std::string s = b;
    if (sp.sharp && v >= 0x20 && v <= 0x10FFFF) {
      std::string r;
      appendRune(r, static_cast<uint32_t>(v));
      s += " '" + r + "'";
    }
    pad(out, s, sp);
    return;
  }
  const bool neg = v < 0;
  uint64_t u = neg ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int base = 10;
  const char* digitsSet = "0123456789abcdefghijklmnopqrstuvwxyz";
  switch (verb) {
    case 'b': base = 2; break;
    case 'o': case 'O': base = 8; break;
    case 'x': base = 16; break;
    case 'X': base = 16; digitsSet = "0123456789ABCDEF"; break;
    default: break;
  }
  std::string digits;
  do {
    digits.insert(digits.begin(), digitsSet[u % static_cast<unsigned>(base)]);
    u /= static_cast<unsigned>(base);
  } while (u);
  int prec = -1;
  if (sp.prec >= 0) {
    prec = sp.prec;
    if (prec == 0 && v == 0) {
      pad(out, "", sp);
      return;
    }
  } else if (sp.zero && sp.width > 0 && !sp.minus) {
    prec = sp.width - ((neg || sp.plus || sp.space) ? 1 : 0);
  }
  if (prec > 0 && static_cast<int>(digits.size()) < prec)
    digits.insert(0, static_cast<size_t>(prec) - digits.size(), '0');
  std::string prefix;
  if (sp.sharp) {
    if (base == 2) prefix = "0b";
    else if (base == 8 && digits[0] != '0') prefix = "0";
    else if (base == 16) prefix = verb == 'X' ? "0X" : "0x";
  }
  if (verb == 'O') prefix = "0o";
  std::string s = (neg ? "-" : sp.plus ? "+" : sp.space ? " " : "") + prefix + digits;
  Spec noZero = sp;
  noZero.zero = false;
  pad(out, s, noZero);
}

/// Go's fmtString for s, v, q, x, X.
void fmtString(std::string& out, std::string_view s, char verb, const Spec& sp) {
  if (verb == 's' || verb == 'v') {
    pad(out, sp.prec >= 0 ? runePrefix(s, static_cast<size_t>(sp.prec)) : s, sp);
    return;
  }
  if (verb == 'q') {
    if (sp.prec >= 0) s = runePrefix(s, static_cast<size_t>(sp.prec));
    if (sp.sharp && s.find('`') == std::string_view::npos &&
        std::all_of(s.begin(), s.end(), [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return u == '\t' || (u >= 0x20 && u != 0x7F);
        })) {
      pad(out, "`" + std::string(s) + "`", sp);
      return;
    }
    pad(out, goQuote(s, '"'), sp);
    return;
  }
  // x, X: two hex digits per byte (precision: of the bytes); space separates, # adds 0x
  const char* hex = verb == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";
  size_t n = s.size();
  if (sp.prec >= 0 && static_cast<size_t>(sp.prec) < n) n = static_cast<size_t>(sp.prec);
  std::string h;
  for (size_t i = 0; i < n; ++i) {
    if (sp.space && i > 0) h += ' ';
    if (sp.sharp && (sp.space || i == 0)) h += verb == 'x' ? "0x" : "0X";
    const auto c = static_cast<unsigned char>(s[i]);
    h += hex[c >> 4];
    h += hex[c & 15];
  }
  pad(out, h, sp);
}

const char* typeName(FmtArg::Kind k) {
  return k == FmtArg::kFloat ? "float64" : k == FmtArg::kInt ? "int" : "string";
}

/// One argument with %v and the verb's flags (for %!verb(type=value) and EXTRA).
void fmtValue(std::string& out, const FmtArg& a, const Spec& sp) {
  switch (a.kind) {
    case FmtArg::kFloat: fmtFloat(out, a.f, 'v', sp); break;
    case FmtArg::kInt: fmtInt(out, a.i, 'v', sp); break;
    case FmtArg::kString: fmtString(out, a.s, 'v', sp); break;
  }
}

}  // namespace

std::string goFormat(std::string_view format, const std::vector<FmtArg>& args) {
  std::string out;
  size_t arg = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c != '%') {
      out += c;
      continue;
    }
    Spec sp;
    size_t j = i + 1;
    for (; j < format.size(); ++j) {
      const char f = format[j];
      if (f == '+') sp.plus = true;
      else if (f == '-') sp.minus = true;
      else if (f == '#') sp.sharp = true;
      else if (f == ' ') sp.space = true;
      else if (f == '0') sp.zero = true;
      else break;
    }
    auto number = [&](int& into) {
      size_t k = j;
      int n = 0;
      while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j])) && n < 1000000)
        n = n * 10 + (format[j++] - '0');
      if (j > k) into = n;
    };
    number(sp.width);
    if (j < format.size() && format[j] == '.') {
      ++j;
      sp.prec = 0;
      number(sp.prec);
    }
    if (j >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    // the verb: one UTF-8 rune
    size_t vlen = 1;
    const auto lead = static_cast<unsigned char>(format[j]);
    if (lead >= 0xF0) vlen = 4;
    else if (lead >= 0xE0) vlen = 3;
    else if (lead >= 0xC0) vlen = 2;
    const std::string verbStr(format.substr(j, vlen));
    const char verb = format[j];
    i = j + vlen - 1;
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (arg >= args.size()) {
      out += "%!" + verbStr + "(MISSING)";
      continue;
    }
    const FmtArg& a = args[arg++];
    bool ok = false;
    if (verb == 'v') {
      // Go: %+v and %#v are struct-field and Go-syntax forms; for these types
      // only %#v of a string differs (it is quoted).
      const bool sharpV = sp.sharp;
      sp.plus = sp.sharp = false;
      if (sharpV && a.kind == FmtArg::kString) {
        pad(out, goQuote(a.s, '"'), sp);
        continue;
      }
    }
    switch (a.kind) {
      case FmtArg::kFloat:
        ok = vlen == 1 && std::strchr("beEfFgGxXv", verb) != nullptr;
        if (ok) fmtFloat(out, a.f, verb, sp);
        break;
      case FmtArg::kInt:
        ok = vlen == 1 && std::strchr("bcdoOqxXUv", verb) != nullptr;
        if (ok) fmtInt(out, a.i, verb == 'v' ? 'd' : verb, sp);
        break;
      case FmtArg::kString:
        ok = vlen == 1 && std::strchr("svqxX", verb) != nullptr;
        if (ok) fmtString(out, a.s, verb, sp);
        break;
    }
    if (!ok) {
      out += "%!" + verbStr + "(" + typeName(a.kind) + "=";
      fmtValue(out, a, sp);
      out += ")";
    }
  }
  if (arg < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = arg; k < args.size(); ++k) {
      if (k > arg) out += ", ";
      out += std::string(typeName(args[k].kind)) + "=";
      fmtValue(out, args[k], Spec{});
    }
    out += ")";
  }
  return out;
}

std::string goSprintf(std::string_view format, const std::vector<std::string>& strArgs,
                      const std::vector<double>& numArgs, const std::vector<bool>& isNum) {
  std::vector<FmtArg> args;
  for (size_t k = 0; k < strArgs.size(); ++k)
    args.push_back(isNum[k] ? FmtArg::ofFloat(numArgs[k]) : FmtArg::ofString(strArgs[k]));
  return goFormat(format, args);
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
  TemplateData d{&empty, &empty, 0, true};
  auto r = expandTemplate(text, d);
  if (!r.ok()) return r.error();
  return Ok{};
}

}  // namespace memcg::rules
