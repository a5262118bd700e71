#include "promql/lexer.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace memcg::promql {
namespace {

const char* const kKeywords[] = {
    "and",      "or",           "unless",      "atan2", "by",     "without", "on",
    "ignoring", "group_left",   "group_right", "bool",  "offset", "sum",     "avg",
    "count",    "min",          "max",         "group", "stddev", "stdvar",  "topk",
    "bottomk",  "count_values", "quantile",    "start", "end",    "inf",     "nan"};

bool isAlpha(char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isAlnum(char c) { return isAlpha(c) || isDigit(c); }

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

int hexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::vector<Token> lex(std::string_view in) {
  std::vector<Token> out;
  size_t i = 0;
  int brackets = 0;
  auto err = [&](size_t pos, std::string msg) {
    out.push_back({Tok::kError, std::move(msg), pos});
    return out;
  };
  while (true) {
    while (i < in.size() &&
           (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r'))
      ++i;
    if (i >= in.size()) break;
    char c = in[i];
    size_t start = i;
    if (c == '#') {
      while (i < in.size() && in[i] != '\n') ++i;
      continue;
    }
    if (isDigit(c) || (c == '.' && i + 1 < in.size() && isDigit(in[i + 1]))) {
      // Number, or duration when a unit follows.
      bool hex = false;
      if (c == '0' && i + 1 < in.size() && (in[i + 1] == 'x' || in[i + 1] == 'X')) {
        hex = true;
        i += 2;
        while (i < in.size() && hexVal(in[i]) >= 0) ++i;
      } else {
        while (i < in.size() && isDigit(in[i])) ++i;
      }
      if (!hex) {
        if (i < in.size() && in[i] == '.') {
          ++i;
          while (i < in.size() && isDigit(in[i])) ++i;
        }
        if (i < in.size() && (in[i] == 'e' || in[i] == 'E')) {
          size_t save = i;
          ++i;
          if (i < in.size() && (in[i] == '+' || in[i] == '-')) ++i;
          if (i < in.size() && isDigit(in[i])) {
            while (i < in.size() && isDigit(in[i])) ++i;
          } else {
            i = save + 1;  // "1e" is still consumed as a number prefix (and fails below)
          }
        }
      }
      if (i < in.size() && isAlnum(in[i])) {
        // A duration: digits and units only.
        size_t j = start;
        while (j < in.size() && isAlnum(in[j])) ++j;
        std::string_view word = in.substr(start, j - start);
        int64_t ms;
        bool digitsFirst = true;
        for (char ch : word.substr(0, 1)) digitsFirst = isDigit(ch);
        if (!hex && digitsFirst && word.find('.') == std::string_view::npos &&
            parseDurationMs(word, ms)) {
          out.push_back({Tok::kDuration, std::string(word), start});
          i = j;
          continue;
        }
        return err(start, "bad number or duration syntax: \"" + std::string(word) + "\"");
      }
      out.push_back({Tok::kNumber, std::string(in.substr(start, i - start)), start});
      continue;
    }
    if (c == ':' && brackets > 0) {
      // Inside [..:..] a colon separates range and step.
      out.push_back({Tok::kColon, ":", start});
      ++i;
      continue;
    }
    if (isAlpha(c) || c == ':') {  // outside brackets ':' may start a metric name
      while (i < in.size() && (isAlnum(in[i]) || in[i] == ':')) ++i;
      std::string word(in.substr(start, i - start));
      std::string lower;
      for (char ch : word)
        lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      bool kw = false;
      for (const char* k : kKeywords) {
        if (lower == k) kw = true;
      }
      if (kw) {
        if (lower == "inf" || lower == "nan") {
          out.push_back({Tok::kNumber, word, start});
        } else {
          out.push_back({Tok::kKeyword, lower, start});
          out.back().text = lower;
        }
      } else if (word.find(':') != std::string::npos) {
        out.push_back({Tok::kMetricIdentifier, word, start});
      } else {
        out.push_back({Tok::kIdentifier, word, start});
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      std::string val;
      ++i;
      while (true) {
        if (i >= in.size() || in[i] == '\n')
          return err(start, "unterminated quoted string");
        char ch = in[i];
        if (ch == c) {
          ++i;
          break;
        }
        if (ch != '\\') {
          val.push_back(ch);
          ++i;
          continue;
        }
        ++i;
        if (i >= in.size()) return err(start, "unterminated quoted string");
        char e = in[i++];
        switch (e) {
          case 'a':
            val.push_back('\a');
            break;
          case 'b':
            val.push_back('\b');
            break;
          case 'f':
            val.push_back('\f');
            break;
          case 'n':
            val.push_back('\n');
            break;
          case 'r':
            val.push_back('\r');
            break;
          case 't':
            val.push_back('\t');
            break;
          case 'v':
            val.push_back('\v');
            break;
          case '\\':
            val.push_back('\\');
            break;
          case '"':
          case '\'':
            if (e != c) return err(i - 2, "unknown escape sequence");
            val.push_back(e);
            break;
          case 'x':
          case 'u':
          case 'U': {
            int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < n; ++k) {
              if (i >= in.size() || hexVal(in[i]) < 0)
                return err(i, "invalid escape sequence");
              cp = cp * 16 + static_cast<uint32_t>(hexVal(in[i++]));
            }
            if (e == 'x') {
              val.push_back(static_cast<char>(cp));
            } else {
              if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) {
                return err(i, "invalid escape sequence");
              }
              appendUtf8(val, cp);
            }
            break;
          }
          default:
            if (e >= '0' && e <= '7') {
              uint32_t cp = static_cast<uint32_t>(e - '0');
              for (int k = 0; k < 2; ++k) {
                if (i >= in.size() || in[i] < '0' || in[i] > '7')
                  return err(i, "invalid escape sequence");
                cp = cp * 8 + static_cast<uint32_t>(in[i++] - '0');
              }
              if (cp > 255) return err(i, "invalid escape sequence");
              val.push_back(static_cast<char>(cp));
            } else {
              return err(i - 2, "unknown escape sequence");
            }
        }
      }
      out.push_back({Tok::kString, std::move(val), start});
      continue;
    }
    if (c == '`') {
      size_t end = in.find('`', i + 1);
      if (end == std::string_view::npos) return err(start, "unterminated raw string");
      out.push_back({Tok::kString, std::string(in.substr(i + 1, end - i - 1)), start});
      i = end + 1;
      continue;
    }
    auto two = [&](char a, char b) {
      return in[i] == a && i + 1 < in.size() && in[i + 1] == b;
    };
    Tok t;
    size_t len = 1;
    if (two('=', '=')) {
      t = Tok::kEqlC;
      len = 2;
    } else if (two('!', '=')) {
      t = Tok::kNeq;
      len = 2;
    } else if (two('<', '=')) {
      t = Tok::kLte;
      len = 2;
    } else if (two('>', '=')) {
      t = Tok::kGte;
      len = 2;
    } else if (two('=', '~')) {
      t = Tok::kEqlRegex;
      len = 2;
    } else if (two('!', '~')) {
      t = Tok::kNeqRegex;
      len = 2;
    } else {
      switch (c) {
        case '(':
          t = Tok::kLParen;
          break;
        case ')':
          t = Tok::kRParen;
          break;
        case '{':
          t = Tok::kLBrace;
          break;
        case '}':
          t = Tok::kRBrace;
          break;
        case '[':
          t = Tok::kLBracket;
          ++brackets;
          break;
        case ']':
          t = Tok::kRBracket;
          --brackets;
          break;
        case ',':
          t = Tok::kComma;
          break;
        case '@':
          t = Tok::kAt;
          break;
        case '=':
          t = Tok::kAssign;
          break;
        case '+':
          t = Tok::kAdd;
          break;
        case '-':
          t = Tok::kSub;
          break;
        case '*':
          t = Tok::kMul;
          break;
        case '/':
          t = Tok::kDiv;
          break;
        case '%':
          t = Tok::kMod;
          break;
        case '^':
          t = Tok::kPow;
          break;
        case '<':
          t = Tok::kLss;
          break;
        case '>':
          t = Tok::kGtr;
          break;
        default: {
          char buf[64];
          std::snprintf(buf, sizeof buf, "unexpected character: '%c'", c);
          return err(start, buf);
        }
      }
    }
    out.push_back({t, std::string(in.substr(i, len)), start});
    i += len;
  }
  out.push_back({Tok::kEof, "", in.size()});
  return out;
}

}  // namespace memcg::promql
