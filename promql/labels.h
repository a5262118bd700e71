// Label sets of the PromQL engine: a series is named by a sorted list of
// (name, value) pairs, like Prometheus' labels.Labels.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memcg::promql {

inline constexpr std::string_view kMetricName = "__name__";

struct Label {
  std::string name;
  std::string value;
  bool operator==(const Label&) const = default;
};

/// Sorted by name, names unique, no empty values (an empty value is the
/// same as an absent label, as in Prometheus).
using Labels = std::vector<Label>;

/// Sorts by name and drops empty values; duplicate names keep the last.
Labels makeLabels(std::vector<Label> labels);
/// The value of `name`, or "" when absent.
std::string_view labelValue(const Labels& ls, std::string_view name);
/// A 64-bit hash of the whole set (names and values).
uint64_t hashLabels(const Labels& ls);
/// Hash of only the `names` (on=true) or of all but `names` and __name__
/// (on=false); names must be sorted. Used for matching signatures and
/// grouping keys.
uint64_t hashLabelsSubset(const Labels& ls, const std::vector<std::string>& names,
                          bool on);
/// Prometheus' rendering: {a="1", b="2"} (Go-quoted values).
std::string labelsString(const Labels& ls);
/// Go's strconv.Quote of a string (as Prometheus prints label values).
std::string goQuote(std::string_view s);
/// Lexicographic order by (name, value) pairs, as labels.Compare.
int compareLabels(const Labels& a, const Labels& b);

}  // namespace memcg::promql
