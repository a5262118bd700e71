// The kubepods collector: memcg_cgroup_info{cgroup,pod_uid,container_id,qos_class} 1
// for every pod and container cgroup of the walk (collectors/kubepods.h has the
// layouts). It reads no file: the labels come from the cgroup's path alone, so
// it is cheap enough to be on by default, and a host without kubelet exports
// nothing. One series per cgroup, so its cardinality is the walk's.
#include "collectors/kubepods.h"

#include <dirent.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <mutex>
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

// A DNS label or subdomain as Kubernetes allows in namespace, pod and container
// names: lowercase alphanumerics, '-' and '.', at most 253 characters.
bool isKubeName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

// Splits "a_b_c" into exactly three non-empty parts.
std::optional<std::array<std::string_view, 3>> split3(std::string_view s) {
  const size_t a = s.find('_');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = s.find('_', a + 1);
  if (b == std::string_view::npos || s.find('_', b + 1) != std::string_view::npos)
    return std::nullopt;
  std::array<std::string_view, 3> out = {s.substr(0, a), s.substr(a + 1, b - a - 1),
                                         s.substr(b + 1)};
  for (auto p : out) {
    if (p.empty()) return std::nullopt;
  }
  return out;
}

struct Listing {
  std::vector<std::string> names;
  int err = 0;  // errno of opendir; ENOENT: the directory is not there
};

Listing listDir(const std::string& dir, size_t limit, size_t& skipped) {
  Listing out;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    out.err = errno;
    return out;
  }
  while (dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    if (out.names.size() >= limit) {
      ++skipped;
      continue;
    }
    out.names.emplace_back(n);
  }
  closedir(d);
  return out;
}

}  // namespace

std::optional<std::pair<std::string, PodNames>> parsePodLogDir(std::string_view name) {
  auto p = split3(name);
  if (!p || !isKubeName((*p)[0]) || !isKubeName((*p)[1])) return std::nullopt;
  // the UID as kubelet writes it: the API server's UUID, or a static pod's hash
  auto uid = podUid((*p)[2], false);
  if (!uid) return std::nullopt;
  return std::make_pair(std::move(*uid), PodNames{std::string((*p)[0]), std::string((*p)[1]), {}});
}

std::optional<std::pair<std::string, PodNames>> parseContainerLog(std::string_view name) {
  if (!consumeSuffix(name, ".log")) return std::nullopt;
  auto p = split3(name);
  if (!p) return std::nullopt;
  std::string_view last = (*p)[2];
  const size_t dash = last.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view ctr = last.substr(0, dash);
  auto id = containerId(last.substr(dash + 1));
  if (!id || !isKubeName((*p)[0]) || !isKubeName((*p)[1]) || !isKubeName(ctr))
    return std::nullopt;
  return std::make_pair(std::move(*id), PodNames{std::string((*p)[1]), std::string((*p)[0]),
                                                 std::string(ctr)});
}

Result<KubeletLogs> readKubeletLogs(const std::string& root, size_t limit) {
  KubeletLogs out;
  struct stat st {};
  if (stat(root.c_str(), &st) != 0) return makeError(errno, root, "kubelet log directory");
  for (const bool pods : {true, false}) {
    const std::string dir = root + (pods ? "/pods" : "/containers");
    Listing l = listDir(dir, limit, out.skipped);
    if (l.err && l.err != ENOENT) return makeError(l.err, dir, "kubelet log directory");
    for (const auto& n : l.names) {
      auto r = pods ? parsePodLogDir(n) : parseContainerLog(n);
      if (!r) {
        ++out.skipped;
        continue;
      }
      (pods ? out.pods : out.containers).insert_or_assign(std::move(r->first), std::move(r->second));
    }
  }
  return out;
}

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

// Entries read at most from each kubelet log directory: far above the pods and
// containers kubelet runs on one node (its --max-pods defaults to 110).
constexpr size_t kKubeletLogLimit = 20000;

const metrics::Desc kInfo = cgroupGauge(
    "memcg_cgroup_info",
    "Kubernetes pod (and container) of a kubepods cgroup, from its path; 1 per pod and "
    "container cgroup (join with kube-state-metrics' kube_pod_info on pod_uid = uid).",
    {"pod_uid", "container_id", "qos_class"});

// A family of its own (not three more labels on memcg_cgroup_info): the names are
// only known with --path.kubelet-logs and once kubelet has written the directories,
// and memcg_cgroup_info's series must not change identity when they appear.
const metrics::Desc kPodInfo = cgroupGauge(
    "memcg_cgroup_pod_info",
    "Namespace, pod and container (empty for the pod's own cgroup) of a kubepods cgroup, "
    "from kubelet's log directories (--path.kubelet-logs); 1 per named pod and container "
    "cgroup (joins kube-state-metrics on namespace and pod).",
    {"namespace", "pod", "container"});

class KubepodsCollector : public Collector {
 public:
  explicit KubepodsCollector(KubepodsOptions o) : opts_(std::move(o)) {}

  void collect(ScrapeContext& ctx, metrics::Sink& sink) override {
    const bool names = !opts_.kubeletLogs.empty();
    std::lock_guard<std::mutex> g(mu_);
    if (names) refresh(ctx);
    for (const Cgroup& cg : ctx.tree.cgroups) {
      auto pod = kubepods::parsePath(cg.path);
      if (!pod) continue;
      if (names) addNames(sink, cg, *pod);
      sink.add(kInfo,
               {cg.path, sink.keep(std::move(pod->podUid)),
                sink.keep(std::move(pod->containerId)), kubepods::qosName(pod->qos)},
               1);
    }
  }
  std::vector<const metrics::Desc*> describe() const override {
    if (opts_.kubeletLogs.empty()) return {&kInfo};
    return {&kInfo, &kPodInfo};
  }

 private:
  // The container's own log names it; its pod's directory names the pod (and a
  // container whose log kubelet has not written yet). Unknown: no series.
  void addNames(metrics::Sink& sink, const Cgroup& cg, const kubepods::PodCgroup& pod) const {
    const kubepods::PodNames* n = nullptr;
    if (!pod.containerId.empty()) {
      if (auto it = logs_.containers.find(pod.containerId); it != logs_.containers.end())
        n = &it->second;
    }
    if (!n) {
      auto it = logs_.pods.find(pod.podUid);
      if (it == logs_.pods.end()) return;
      n = &it->second;
    }
    // copies: the sink outlives this scrape's hold on logs_
    sink.add(kPodInfo, {cg.path, sink.keep(n->ns), sink.keep(n->pod), sink.keep(n->container)}, 1);
  }

  // Re-reads the log directories when one of them changed (mtime), or after a failure.
  void refresh(ScrapeContext& ctx) {
    auto mtime = [](const std::string& p) {
      struct stat st {};
      if (stat(p.c_str(), &st) != 0) return std::pair<int64_t, int64_t>{-1, -1};
      return std::pair<int64_t, int64_t>{st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    };
    const auto stamp = std::make_pair(mtime(opts_.kubeletLogs + "/pods"),
                                      mtime(opts_.kubeletLogs + "/containers"));
    if (fresh_ && stamp == stamp_) return;
    auto r = kubepods::readKubeletLogs(opts_.kubeletLogs, kKubeletLogLimit);
    if (!r.ok()) {
      fresh_ = false;
      logs_ = {};
      ctx.fail(r.error());
      return;
    }
    logs_ = std::move(*r);
    stamp_ = stamp;
    fresh_ = true;
  }

  KubepodsOptions opts_;
  std::mutex mu_;
  kubepods::KubeletLogs logs_;
  std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> stamp_;
  bool fresh_ = false;
};

}  // namespace

FlagList kubepodsFlags(KubepodsOptions& o) {
  return {{"path.kubelet-logs",
           "kubelet's log directory (the node's /var/log; its pods/ and containers/ name "
           "every pod and container): exports memcg_cgroup_pod_info{namespace,pod,container}. "
           "Empty: off.",
           false, [&o](const std::string& v) { o.kubeletLogs = v; }, ""}};
}

std::unique_ptr<Collector> makeKubepodsCollector(const KubepodsOptions& o) {
  return std::make_unique<KubepodsCollector>(o);
}

std::unique_ptr<Collector> makeKubepodsCollector() { return makeKubepodsCollector({}); }

}  // namespace memcg
