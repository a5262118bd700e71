#include "metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "common/parse.h"

namespace memcg::metrics {
namespace {

// True if `v` is written as it is: every byte ASCII and none of \\ \" \n.
// Eight bytes at a time (a cgroup path is ~20-100 bytes, and one is written
// per sample).
bool plainAscii(std::string_view v) {
  constexpr uint64_t k01 = 0x0101010101010101ULL, k80 = 0x8080808080808080ULL;
  // Non-zero iff some byte of x equals c (the classic has-zero-byte test on
  // x ^ c repeated; exact as to whether there is one).
  auto hasByte = [](uint64_t x, unsigned char c) {
    const uint64_t y = x ^ (k01 * c);
    return (y - k01) & ~y & k80;
  };
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, v.data() + i, 8);
    if (x & k80) return false;
    if (hasByte(x, '\\') | hasByte(x, '"') | hasByte(x, '\n')) return false;
  }
  for (; i < v.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c >= 0x80 || c == '\\' || c == '"' || c == '\n') return false;
  }
  return true;
}

// Label values are free text from the kernel (cgroup directory names). The
// format requires UTF-8 and Prometheus rejects the whole scrape otherwise, so
// a byte that starts no well-formed sequence becomes U+FFFD.
void appendEscaped(std::string& out, std::string_view v) {
  if (plainAscii(v)) {
    out.append(v);
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    char c = v[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (size_t n = utf8SequenceLength(v, i)) {
        i += n - 1;
      } else {
        out.append(v.data() + start, i - start);
        out += "\xEF\xBF\xBD";
        start = i + 1;
      }
    } else if (c == '\\' || c == '"' || c == '\n') {
      out.append(v.data() + start, i - start);
      out += '\\';
      out += c == '\n' ? 'n' : c;
      start = i + 1;
    }
  }
  out.append(v.data() + start, v.size() - start);
}

void appendValue(std::string& out, double v) {
  char buf[32];
  out.append(buf, formatValue(v, buf));
}

void appendUint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

struct Label {
  std::string_view name, value;
};

// name{l1="v1",...,extra="x"}<space>
template <typename Labels>
void appendHead(std::string& out, std::string_view name, std::string_view suffix,
                const Labels& labels, size_t n, std::string_view extraName = {},
                std::string_view extraValue = {}) {
  out.append(name);
  out.append(suffix);
  if (n > 0 || !extraName.empty()) {
    out += '{';
    const char* sep = "";
    for (size_t i = 0; i < n; ++i) {
      out.append(sep);
      out.append(labels[i].name);
      out.append("=\"");
      appendEscaped(out, labels[i].value);
      out += '"';
      sep = ",";
    }
    if (!extraName.empty()) {
      out.append(sep);
      out.append(extraName);
      out.append("=\"");
      out.append(extraValue);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

std::string_view typeName(Type t) {
  switch (t) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

void appendHeader(std::string& out, std::string_view name, std::string_view help,
                  std::string_view type) {
  if (!help.empty()) {
    out.append("# HELP ");
    out.append(name);
    out += ' ';
    out.append(help);
    out += '\n';
  }
  out.append("# TYPE ");
  out.append(name);
  out += ' ';
  out.append(type);
  out += '\n';
}

template <typename Labels>
void appendHistogram(std::string& out, std::string_view name, const Labels& labels, size_t n,
                     uint64_t count, double sum, const double* bounds,
                     const uint64_t* cumulative, size_t buckets) {
  appendHead(out, name, "_count", labels, n);
  appendUint(out, count);
  out += '\n';
  appendHead(out, name, "_sum", labels, n);
  appendValue(out, sum);
  out += '\n';
  double last = -INFINITY;
  char le[32];
  for (size_t b = 0; b < buckets; ++b) {
    size_t len = formatValue(bounds[b], le);
    appendHead(out, name, "_bucket", labels, n, "le", std::string_view(le, len));
    appendUint(out, cumulative[b]);
    out += '\n';
    last = bounds[b];
  }
  if (last != INFINITY) {
    appendHead(out, name, "_bucket", labels, n, "le", "+Inf");
    appendUint(out, count);
    out += '\n';
  }
}

}  // namespace

size_t formatValue(double v, char* buf) {
  if (std::isnan(v)) {
    std::memcpy(buf, "Nan", 3);
    return 3;
  }
  if (std::isinf(v)) {
    std::memcpy(buf, v < 0 ? "-Inf" : "+Inf", 4);
    return 4;
  }
  // Integers below 1e15 print the same under %.16g: take the cheap path.
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    auto r = std::to_chars(buf, buf + 32, static_cast<int64_t>(v));
    return static_cast<size_t>(r.ptr - buf);
  }
  auto r = std::to_chars(buf, buf + 32, v, std::chars_format::general, 16);
  return static_cast<size_t>(r.ptr - buf);
}

namespace {

// One sample line, `name{l0="v0",l1="v1"} value\n`, built in a stack buffer
// and appended once (not ~10 appends per line); `head` is `name{l0="` (or
// `name ` without labels). False (nothing written) when a label value needs
// escaping or the line might not fit: the caller then takes appendHead().
bool appendLine(std::string& out, std::string_view head, const Desc& d, size_t n,
                const LabelValues& values, double value) {
  char line[1024];
  size_t bound = head.size() + 40;  // value (at most 24), separators
  for (size_t i = 0; i < n; ++i) bound += d.labels[i].size() + values[i].size() + 4;
  if (bound > sizeof line) return false;
  for (size_t i = 0; i < n; ++i) {
    if (!plainAscii(values[i])) return false;
  }
  char* p = line;
  auto put = [&p](std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  };
  put(head);
  if (n > 0) {
    put(values[0]);
    for (size_t i = 1; i < n; ++i) {
      put("\",");
      put(d.labels[i]);
      put("=\"");
      put(values[i]);
    }
    put("\"} ");
  }
  p += formatValue(value, p);
  *p++ = '\n';
  out.append(line, static_cast<size_t>(p - line));
  return true;
}

}  // namespace

void writeText(const std::deque<Family>& families, std::string& out) {
  std::array<Label, kMaxLabels> labels;
  // One growth of the output, not a doubling series over megabytes: the
  // first sample of each family stands for the others.
  size_t estimate = out.size();
  for (const Family& f : families) {
    const Desc& d = *f.desc;
    estimate += d.name.size() + d.help.size() + 32;
    if (f.samples.empty()) continue;
    size_t line = d.name.size() + 32;
    for (size_t i = 0; i < d.labels.size() && i < kMaxLabels; ++i) {
      line += d.labels[i].size() + f.samples.front().values[i].size() + 4;
    }
    estimate += line * f.samples.size();
  }
  out.reserve(estimate);
  std::string head;
  for (const Family& f : families) {
    const Desc& d = *f.desc;
    const size_t n = std::min(d.labels.size(), kMaxLabels);
    for (size_t i = 0; i < n; ++i) labels[i].name = d.labels[i];
    appendHeader(out, d.name, d.help, typeName(d.type));
    head = d.name;
    if (n > 0) {
      head += '{';
      head += d.labels[0];
      head += "=\"";
    } else {
      head += ' ';
    }
    if (d.type == Type::kHistogram) {
      for (const auto& h : f.histograms) {
        for (size_t i = 0; i < n; ++i) labels[i].value = h.values[i];
        appendHistogram(out, d.name, labels, n, h.count, h.sum, d.buckets.data(),
                        h.cumulative.data(), std::min(d.buckets.size(), h.cumulative.size()));
      }
      continue;
    }
    for (const auto& s : f.samples) {
      if (appendLine(out, head, d, n, s.values, s.value)) continue;
      for (size_t i = 0; i < n; ++i) labels[i].value = s.values[i];
      appendHead(out, d.name, "", labels, n);
      appendValue(out, s.value);
      out += '\n';
    }
  }
}

void writeText(const std::vector<prometheus::MetricFamily>& families, std::string& out) {
  using prometheus::MetricType;
  std::vector<Label> labels;
  for (const auto& f : families) {
    std::string_view type;
    switch (f.type) {
      case MetricType::Counter: type = "counter"; break;
      case MetricType::Gauge: type = "gauge"; break;
      case MetricType::Histogram: type = "histogram"; break;
      case MetricType::Summary: type = "summary"; break;
      default: type = "untyped"; break;
    }
    appendHeader(out, f.name, f.help, type);
    for (const auto& m : f.metric) {
      labels.clear();
      for (const auto& l : m.label) labels.push_back({l.name, l.value});
      if (f.type == MetricType::Histogram) {
        std::vector<double> bounds;
        std::vector<uint64_t> cum;
        for (const auto& b : m.histogram.bucket) {
          bounds.push_back(b.upper_bound);
          cum.push_back(b.cumulative_count);
        }
        appendHistogram(out, f.name, labels, labels.size(), m.histogram.sample_count,
                        m.histogram.sample_sum, bounds.data(), cum.data(), bounds.size());
        continue;
      }
      if (f.type == MetricType::Summary) {
        appendHead(out, f.name, "_count", labels, labels.size());
        appendUint(out, m.summary.sample_count);
        out += '\n';
        appendHead(out, f.name, "_sum", labels, labels.size());
        appendValue(out, m.summary.sample_sum);
        out += '\n';
        for (const auto& q : m.summary.quantile) {
          char qb[32];
          size_t len = formatValue(q.quantile, qb);
          appendHead(out, f.name, "", labels, labels.size(), "quantile",
                     std::string_view(qb, len));
          appendValue(out, q.value);
          out += '\n';
        }
        continue;
      }
      double v = f.type == MetricType::Counter ? m.counter.value
                 : f.type == MetricType::Gauge ? m.gauge.value
                                               : m.untyped.value;
      appendHead(out, f.name, "", labels, labels.size());
      appendValue(out, v);
      if (m.timestamp_ms != 0) {
        out += ' ';
        char tb[24];
        auto r = std::to_chars(tb, tb + sizeof tb, m.timestamp_ms);
        out.append(tb, r.ptr);
      }
      out += '\n';
    }
  }
}

prometheus::MetricFamily toPrometheus(const Family& f) {
  prometheus::MetricFamily pf;
  const Desc& d = *f.desc;
  pf.name = d.name;
  pf.help = d.help;
  const size_t n = std::min(d.labels.size(), kMaxLabels);
  auto labelsOf = [&](const LabelValues& v) {
    std::vector<prometheus::ClientMetric::Label> ls;
    for (size_t i = 0; i < n; ++i) ls.push_back({d.labels[i], std::string(v[i])});
    return ls;
  };
  switch (d.type) {
    case Type::kCounter: pf.type = prometheus::MetricType::Counter; break;
    case Type::kGauge: pf.type = prometheus::MetricType::Gauge; break;
    case Type::kHistogram: pf.type = prometheus::MetricType::Histogram; break;
  }
  for (const auto& s : f.samples) {
    prometheus::ClientMetric m;
    m.label = labelsOf(s.values);
    if (d.type == Type::kCounter) m.counter.value = s.value;
    else m.gauge.value = s.value;
    pf.metric.push_back(std::move(m));
  }
  for (const auto& h : f.histograms) {
    prometheus::ClientMetric m;
    m.label = labelsOf(h.values);
    m.histogram.sample_count = h.count;
    m.histogram.sample_sum = h.sum;
    for (size_t b = 0; b < d.buckets.size() && b < h.cumulative.size(); ++b) {
      m.histogram.bucket.push_back({h.cumulative[b], d.buckets[b]});
    }
    pf.metric.push_back(std::move(m));
  }
  return pf;
}

}  // namespace memcg::metrics
