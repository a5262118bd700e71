#include "promql/labels.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace memcg::promql {
namespace {

constexpr uint64_t kSeed = 0x243f6a8885a308d3ull;
constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;

// Eight bytes at a time; the length goes in too, so "ab","c" and "a","bc"
// differ without a separator.
inline uint64_t mix(uint64_t h, std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w ^ (static_cast<uint64_t>(s.size()) << 56)) * kMul;
  h ^= h >> 32;
  return h;
}

inline uint64_t finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace

Labels makeLabels(std::vector<Label> labels) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const Label& a, const Label& b) { return a.name < b.name; });
  Labels out;
  out.reserve(labels.size());
  for (auto& l : labels) {
    if (!out.empty() && out.back().name == l.name) out.pop_back();
    if (!l.value.empty()) out.push_back(std::move(l));
  }
  return out;
}

std::string_view labelValue(const Labels& ls, std::string_view name) {
  for (const auto& l : ls) {
    if (l.name == name) return l.value;
  }
  return {};
}

uint64_t hashLabels(const Labels& ls) {
  uint64_t h = kSeed;
  for (const auto& l : ls) {
    h = mix(h, l.name);
    h = mix(h, l.value);
  }
  return finish(h);
}

uint64_t hashLabelsSubset(const Labels& ls, const std::vector<std::string>& names,
                          bool on) {
  uint64_t h = kSeed;
  if (on) {
    size_t j = 0;
    for (const auto& l : ls) {
      while (j < names.size() && names[j] < l.name) ++j;
      if (j == names.size()) break;
      if (names[j] == l.name) {
        h = mix(h, l.name);
        h = mix(h, l.value);
      }
    }
  } else {
    size_t j = 0;
    for (const auto& l : ls) {
      if (l.name == kMetricName) continue;
      while (j < names.size() && names[j] < l.name) ++j;
      if (j < names.size() && names[j] == l.name) continue;
      h = mix(h, l.name);
      h = mix(h, l.value);
    }
  }
  return finish(h);
}

std::string goQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string labelsString(const Labels& ls) {
  std::string out = "{";
  for (size_t i = 0; i < ls.size(); ++i) {
    if (i > 0) out += ", ";
    out += ls[i].name;
    out += '=';
    out += goQuote(ls[i].value);
  }
  out += '}';
  return out;
}

int compareLabels(const Labels& a, const Labels& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = a[i].name.compare(b[i].name); c != 0) return c < 0 ? -1 : 1;
    if (int c = a[i].value.compare(b[i].value); c != 0) return c < 0 ? -1 : 1;
  }
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

}  // namespace memcg::promql
