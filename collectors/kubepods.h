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
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

}  // namespace memcg::kubepods
