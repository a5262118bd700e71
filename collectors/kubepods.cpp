// The kubepods collector: memcg_cgroup_info{cgroup,pod_uid,container_id,qos_class} 1
// for every pod and container cgroup of the walk (collectors/kubepods.h has the
// layouts). It reads no file: the labels come from the cgroup's path alone, so
// it is cheap enough to be on by default, and a host without kubelet exports
// nothing. One series per cgroup, so its cardinality is the walk's.
#include "collectors/kubepods.h"

#include <array>
#include <span>
#include <vector>

#include "collectors/collector.h"

namespace memcg {
namespace kubepods {
namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool consumePrefix(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool consumeSuffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

bool isHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Runtime ids are 64 lowercase hex digits (containerd, CRI-O, Docker); any
// length up to 128 is taken, nothing else.
std::optional<std::string> containerId(std::string_view s) {
  if (s.empty() || s.size() > 128) return std::nullopt;
  for (char c : s) {
    if (!isHex(c)) return std::nullopt;
  }
  return std::string(s);
}

// A pod UID, lowercase: a UUID from the API server (8-4-4-4-12 hex digits),
// or a static pod's config hash (kubelet: md5, 32 hex digits). The systemd
// driver writes the UUID's '-' as '_' ('-' separates slice levels).
std::optional<std::string> podUid(std::string_view s, bool systemd) {
  const char sep = systemd ? '_' : '-';
  const bool uuid = s.size() == 36;
  if (!uuid && s.size() != 32) return std::nullopt;
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    if (uuid && (i == 8 || i == 13 || i == 18 || i == 23)) {
      if (out[i] != sep) return std::nullopt;
      out[i] = '-';
    } else if (!isHex(out[i])) {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<QosClass> qosSlice(std::string_view s) {
  if (s == "burstable") return QosClass::kBurstable;
  if (s == "besteffort") return QosClass::kBestEffort;
  return std::nullopt;
}

constexpr std::array<std::string_view, 3> kRuntimePrefixes = {"cri-containerd-", "crio-",
                                                              "docker-"};

// rest = the components after "kubepods" (cgroupfs driver).
std::optional<PodCgroup> parseCgroupfs(std::span<const std::string_view> rest) {
  PodCgroup out;
  size_t i = 0;
  if (rest.empty()) return std::nullopt;
  if (auto q = qosSlice(rest[0])) {
    out.qos = *q;
    i = 1;
  } else {
    out.qos = QosClass::kGuaranteed;
  }
  if (i >= rest.size() || rest.size() > i + 2) return std::nullopt;
  std::string_view pod = rest[i];
  if (!consumePrefix(pod, "pod")) return std::nullopt;
  auto uid = podUid(pod, false);
  if (!uid) return std::nullopt;
  out.podUid = std::move(*uid);
  if (rest.size() == i + 2) {
    std::string_view c = rest[i + 1];
    for (auto p : kRuntimePrefixes) {
      if (consumePrefix(c, p)) break;
    }
    auto id = containerId(c);
    if (!id) return std::nullopt;
    out.containerId = std::move(*id);
  }
  return out;
}

// prefix = the root slice's name without ".slice" ("kubepods", "foo-kubepods");
// rest = the components after it (systemd driver).
std::optional<PodCgroup> parseSystemd(std::string_view prefix,
                                      std::span<const std::string_view> rest) {
  const std::string level = std::string(prefix) + "-";
  auto slice = [&](std::string_view s,
                   std::string_view parent) -> std::optional<std::string_view> {
    if (!consumeSuffix(s, ".slice") || !consumePrefix(s, parent)) return std::nullopt;
    return s;
  };
  PodCgroup out;
  size_t i = 0;
  if (rest.empty()) return std::nullopt;
  auto first = slice(rest[0], level);
  if (!first) return std::nullopt;
  std::string_view pod;
  if (auto q = qosSlice(*first)) {
    out.qos = *q;
    if (rest.size() < 2) return std::nullopt;
    auto p = slice(rest[1], level + std::string(*first) + "-");
    if (!p) return std::nullopt;
    pod = *p;
    i = 2;
  } else {
    out.qos = QosClass::kGuaranteed;
    pod = *first;
    i = 1;
  }
  if (rest.size() > i + 1) return std::nullopt;
  if (!consumePrefix(pod, "pod")) return std::nullopt;
  auto uid = podUid(pod, true);
  if (!uid) return std::nullopt;
  out.podUid = std::move(*uid);
  if (rest.size() == i + 1) {
    std::string_view c = rest[i];
    if (!consumeSuffix(c, ".scope")) return std::nullopt;
    bool known = false;
    for (auto p : kRuntimePrefixes) {
      if (consumePrefix(c, p)) {
        known = true;
        break;
      }
    }
    if (!known) return std::nullopt;
    auto id = containerId(c);
    if (!id) return std::nullopt;
    out.containerId = std::move(*id);
  }
  return out;
}

}  // namespace

std::string_view qosName(QosClass q) {
  switch (q) {
    case QosClass::kGuaranteed:
      return "Guaranteed";
    case QosClass::kBurstable:
      return "Burstable";
    case QosClass::kBestEffort:
      return "BestEffort";
  }
  return "BestEffort";
}

std::optional<PodCgroup> parsePath(std::string_view cgroupPath) {
  const auto comps = components(cgroupPath);
  for (size_t i = 0; i < comps.size(); ++i) {
    const auto rest = std::span<const std::string_view>(comps).subspan(i + 1);
    std::string_view c = comps[i];
    if (c == "kubepods") {
      if (auto r = parseCgroupfs(rest)) return r;
      continue;
    }
    if (consumeSuffix(c, ".slice") && (c == "kubepods" || c.ends_with("-kubepods"))) {
      if (auto r = parseSystemd(c, rest)) return r;
    }
  }
  return std::nullopt;
}

}  // namespace kubepods

namespace {

const metrics::Desc kInfo = cgroupGauge(
    "memcg_cgroup_info",
    "Kubernetes pod (and container) of a kubepods cgroup, from its path; 1 per pod and "
    "container cgroup (join with kube-state-metrics' kube_pod_info on pod_uid = uid).",
    {"pod_uid", "container_id", "qos_class"});

class KubepodsCollector : public Collector {
 public:
  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    for (const Cgroup& cg : ctx.tree.cgroups) {
      auto pod = kubepods::parsePath(cg.path);
      if (!pod) continue;
      sink.add(kInfo,
               {cg.path, sink.keep(std::move(pod->podUid)),
                sink.keep(std::move(pod->containerId)), kubepods::qosName(pod->qos)},
               1);
    }
  }
  std::vector<const metrics::Desc*> describe() const override { return {&kInfo}; }
};

}  // namespace

std::unique_ptr<Collector> makeKubepodsCollector() {
  return std::make_unique<KubepodsCollector>();
}

}  // namespace memcg
