#include "metrics/descriptors.h"

#include <utility>

namespace memcg::metrics {
namespace {

Desc make(Type t, std::string name, std::string help, std::vector<std::string> labels,
          std::vector<double> buckets = {}) {
  return Desc{std::move(name), std::move(help), t, std::move(labels), std::move(buckets)};
}
std::vector<std::string> withCgroup(std::vector<std::string> extra) {
  extra.insert(extra.begin(), "cgroup");
  return extra;
}

}  // namespace

Desc cgroupGauge(std::string name, std::string help, std::vector<std::string> extra) {
  return make(Type::kGauge, std::move(name), std::move(help), withCgroup(std::move(extra)));
}
Desc cgroupCounter(std::string name, std::string help, std::vector<std::string> extra) {
  return make(Type::kCounter, std::move(name), std::move(help), withCgroup(std::move(extra)));
}
Desc nodeGauge(std::string name, std::string help, std::vector<std::string> labels) {
  return make(Type::kGauge, std::move(name), std::move(help), std::move(labels));
}
Desc nodeCounter(std::string name, std::string help, std::vector<std::string> labels) {
  return make(Type::kCounter, std::move(name), std::move(help), std::move(labels));
}
Desc cgroupHistogram(std::string name, std::string help, std::vector<std::string> extra,
                     std::vector<double> buckets) {
  return make(Type::kHistogram, std::move(name), std::move(help), withCgroup(std::move(extra)),
              std::move(buckets));
}
Desc nodeHistogram(std::string name, std::string help, std::vector<std::string> labels,
                   std::vector<double> buckets) {
  return make(Type::kHistogram, std::move(name), std::move(help), std::move(labels),
              std::move(buckets));
}

}  // namespace memcg::metrics
