// Kubernetes pods and containers from kubelet's cgroup paths (no file is read).
//
// kubelet lays pods out under a "kubepods" cgroup, by QoS class, one cgroup per
// pod and one per container below it. The two cgroup drivers spell it so:
//
//   systemd:  /kubepods.slice/kubepods-burstable.slice/
//                 kubepods-burstable-pod<uid, '-' written '_'>.slice/<runtime scope>
//             /kubepods.slice/kubepods-pod<uid>.slice/...          (Guaranteed)
//             runtime scopes: cri-containerd-<id>.scope, crio-<id>.scope,
//                             docker-<id>.scope
//   cgroupfs: /kubepods/burstable/pod<uid>/<id>
//             /kubepods/pod<uid>/<id>                               (Guaranteed)
//             <id> is bare (containerd, Docker) or crio-<id> (CRI-O)
//
// QoS slices are burstable and besteffort; a pod directly under kubepods is
// Guaranteed. The kubepods part is matched anywhere in the path, so a kubelet
// with --cgroup-root (systemd: /foo.slice/foo-kubepods.slice/foo-kubepods-...),
// a node inside a container (kind: /system.slice/docker-<node>.scope/
// kubelet.slice/kubelet-kubepods.slice/...) and a test subtree all parse: the
// first component that is `kubepods`, `kubepods.slice` or `<prefix>-kubepods.slice`
// starts it, and what follows must match the layout exactly.
//
// Only pod and container cgroups parse; the kubepods root, the QoS slices,
// cgroups below a container's own (nested cgroups inside a container) and
// other children of a pod (e.g. CRI-O's crio-conmon-<id>.scope) do not.
//
// With --path.kubelet-logs (the node's /var/log, read-only), pod and container
// cgroups also get memcg_cgroup_pod_info{cgroup,namespace,pod,container}: kubelet
// names its log directories after them,
//   <logs>/pods/<namespace>_<pod>_<uid>/<container>/          (one per pod)
//   <logs>/containers/<pod>_<namespace>_<container>-<id>.log  (one per container)
// and none of the three names can hold a '_' (DNS labels and subdomains), so the
// names split unambiguously. What is read is bounded by the pods on the node
// (kubelet removes a pod's directory with the pod) and re-read only when a
// directory changes (its mtime).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/flag_spec.h"
#include "common/result.h"

namespace memcg::kubepods {

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };

/// Kubernetes' own spelling (pod.status.qosClass; kube-state-metrics'
/// kube_pod_status_qos_class{qos_class}): Guaranteed, Burstable, BestEffort.
std::string_view qosName(QosClass q);

struct PodCgroup {
  std::string podUid;       ///< as the API server has it (with '-')
  std::string containerId;  ///< the runtime's id (hex); empty for the pod's own cgroup
  QosClass qos = QosClass::kBestEffort;
};

/// The pod (and container) a cgroup path belongs to, or nullopt when it is
/// not a pod or container cgroup of kubelet's layout.
std::optional<PodCgroup> parsePath(std::string_view cgroupPath);

struct PodNames {
  std::string ns, pod, container;  ///< container: empty for a pod
};

/// Names from kubelet's log directories: pods by UID, containers by runtime id.
struct KubeletLogs {
  std::unordered_map<std::string, PodNames> pods, containers;
  size_t skipped = 0;  ///< entries that are not kubelet's layout
};

/// "<namespace>_<pod>_<uid>" (a directory of <logs>/pods): uid and names.
std::optional<std::pair<std::string, PodNames>> parsePodLogDir(std::string_view name);
/// "<pod>_<namespace>_<container>-<id>.log" (a file of <logs>/containers): id and names.
std::optional<std::pair<std::string, PodNames>> parseContainerLog(std::string_view name);

/// Reads <root>/pods and <root>/containers (at most `limit` entries each; a
/// missing directory is empty). Fails only when root itself cannot be read.
Result<KubeletLogs> readKubeletLogs(const std::string& root, size_t limit);

}  // namespace memcg::kubepods

namespace memcg {

struct KubepodsOptions {
  /// --path.kubelet-logs: the directory holding kubelet's pods/ and containers/
  /// log directories (the node's /var/log); empty: no namespace/pod/container.
  std::string kubeletLogs;
};

FlagList kubepodsFlags(KubepodsOptions& o);

class Collector;
std::unique_ptr<Collector> makeKubepodsCollector(const KubepodsOptions& o);

}  // namespace memcg
