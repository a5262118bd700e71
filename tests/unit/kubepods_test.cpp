// The kubepods path parser on the path shapes kubelet makes with both cgroup
// drivers and the three runtimes, and the memcg_cgroup_info collector.
#include "collectors/kubepods.h"

#include <gtest/gtest.h>

#include "collectors/collector.h"
#include "collectors/registry.h"
#include "metrics/text_format.h"

namespace memcg {
namespace {

using kubepods::parsePath;
using kubepods::QosClass;

constexpr const char* kUid = "0f8b5c3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
constexpr const char* kUidSystemd = "0f8b5c3a_1c2d_4e5f_8a9b_0c1d2e3f4a5b";
// A static (mirror) pod's UID: kubelet's md5 of the manifest.
constexpr const char* kStaticUid = "6b3e8d9a2f4c1e7b5a0d9c8b7a6f5e4d";
constexpr const char* kId =
    "5b6e9a0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e";

std::string s(const char* a) { return a; }

void expectPod(const std::string& path, const std::string& uid, const std::string& id,
               QosClass qos) {
  auto p = parsePath(path);
  ASSERT_TRUE(p) << path;
  EXPECT_EQ(p->podUid, uid) << path;
  EXPECT_EQ(p->containerId, id) << path;
  EXPECT_EQ(p->qos, qos) << path;
}

TEST(Kubepods, SystemdDriverContainerdBurstable) {
  expectPod("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                s(kUidSystemd) + ".slice/cri-containerd-" + kId + ".scope",
            kUid, kId, QosClass::kBurstable);
}

TEST(Kubepods, SystemdDriverCrioBestEffort) {
  expectPod("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
                s(kUidSystemd) + ".slice/crio-" + kId + ".scope",
            kUid, kId, QosClass::kBestEffort);
}

TEST(Kubepods, SystemdDriverDockerGuaranteed) {
  // Guaranteed pods sit directly under kubepods.slice.
  expectPod(
      "/kubepods.slice/kubepods-pod" + s(kUidSystemd) + ".slice/docker-" + kId + ".scope",
      kUid, kId, QosClass::kGuaranteed);
}

TEST(Kubepods, SystemdDriverPodCgroupHasNoContainer) {
  expectPod("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                s(kUidSystemd) + ".slice",
            kUid, "", QosClass::kBurstable);
  expectPod("/kubepods.slice/kubepods-pod" + s(kUidSystemd) + ".slice", kUid, "",
            QosClass::kGuaranteed);
}

TEST(Kubepods, CgroupfsDriverContainerdAndDocker) {
  // containerd and Docker name the container's directory by its bare id.
  expectPod("/kubepods/burstable/pod" + s(kUid) + "/" + kId, kUid, kId,
            QosClass::kBurstable);
  expectPod("/kubepods/besteffort/pod" + s(kUid) + "/" + kId, kUid, kId,
            QosClass::kBestEffort);
  expectPod("/kubepods/pod" + s(kUid) + "/" + kId, kUid, kId, QosClass::kGuaranteed);
}

TEST(Kubepods, CgroupfsDriverCrio) {
  expectPod("/kubepods/burstable/pod" + s(kUid) + "/crio-" + kId, kUid, kId,
            QosClass::kBurstable);
}

TEST(Kubepods, CgroupfsDriverPodCgroup) {
  expectPod("/kubepods/besteffort/pod" + s(kUid), kUid, "", QosClass::kBestEffort);
  expectPod("/kubepods/pod" + s(kUid), kUid, "", QosClass::kGuaranteed);
}

TEST(Kubepods, StaticPodUid) {
  expectPod("/kubepods/burstable/pod" + s(kStaticUid) + "/" + kId, kStaticUid, kId,
            QosClass::kBurstable);
  expectPod("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                s(kStaticUid) + ".slice/cri-containerd-" + kId + ".scope",
            kStaticUid, kId, QosClass::kBurstable);
}

TEST(Kubepods, KubeletCgroupRootAndNodesInContainers) {
  // kubelet --cgroup-root=/kubelet.slice with the systemd driver (kind's
  // nodes), seen from the host below the node container's own scope.
  expectPod(
      "/system.slice/docker-" + s(kId) +
          ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
          "kubelet-kubepods-burstable-pod" +
          kUidSystemd + ".slice/cri-containerd-" + kId + ".scope",
      kUid, kId, QosClass::kBurstable);
  // --cgroup-root=/custom with the cgroupfs driver.
  expectPod("/custom/kubepods/pod" + s(kUid) + "/" + kId, kUid, kId,
            QosClass::kGuaranteed);
}

TEST(Kubepods, MatchedInsideASubtree) {
  // The exporter's live test lays the tree out below its own cgroup, whose
  // name contains "kubepods" without being a kubepods root.
  expectPod("/memcg_exporter_test_deploy_kubepods_42/kubepods/burstable/pod" + s(kUid) +
                "/" + kId,
            kUid, kId, QosClass::kBurstable);
}

TEST(Kubepods, NotPodCgroups) {
  for (const std::string& p : {
           s("/"),
           s("/kubepods"),
           s("/kubepods.slice"),
           s("/kubepods/burstable"),
           s("/kubepods.slice/kubepods-burstable.slice"),
           s("/kubepods.slice/kubepods-besteffort.slice"),
           s("/system.slice/containerd.service"),
           s("/system.slice/docker-") + kId + ".scope",
           s("/user.slice/user-1000.slice"),
           s("/kubepods/pod-a"),  // the v2 fixture's pod: not a UID
           s("/kubepods-pod") + kUid,
       }) {
    EXPECT_FALSE(parsePath(p)) << p;
  }
}

TEST(Kubepods, MalformedPathsAreRefused) {
  for (const std::string& p : {
           // UID with the wrong separator for the driver.
           s("/kubepods.slice/kubepods-pod") + kUid + ".slice",
           s("/kubepods/pod") + kUidSystemd,
           // Truncated, uppercase or non-hex UIDs.
           s("/kubepods/pod0f8b5c3a-1c2d-4e5f-8a9b-0c1d2e3f4a5"),
           s("/kubepods/pod0F8B5C3A-1C2D-4E5F-8A9B-0C1D2E3F4A5B"),
           s("/kubepods/podzf8b5c3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"),
           // A pod slice under the wrong QoS parent, or of another root.
           s("/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod") +
               kUidSystemd + ".slice",
           s("/kubepods.slice/other-pod") + kUidSystemd + ".slice",
           // An unknown QoS directory.
           s("/kubepods/platinum/pod") + kUid,
           // Children of a pod that are not a runtime's container.
           s("/kubepods.slice/kubepods-pod") + kUidSystemd + ".slice/crio-conmon-" + kId +
               ".scope",
           s("/kubepods.slice/kubepods-pod") + kUidSystemd + ".slice/runc-" + kId +
               ".scope",
           s("/kubepods.slice/kubepods-pod") + kUidSystemd + ".slice/cri-containerd-" +
               kId,
           s("/kubepods/pod") + kUid + "/not-an-id",
           s("/kubepods/pod") + kUid + "/" + std::string(129, 'a'),
           // Cgroups nested inside a container's own.
           s("/kubepods/pod") + kUid + "/" + kId + "/nested",
           s("/kubepods.slice/kubepods-pod") + kUidSystemd + ".slice/cri-containerd-" +
               kId + ".scope/init.scope",
       }) {
    EXPECT_FALSE(parsePath(p)) << p;
  }
}

TEST(Kubepods, QosNamesAreKubernetes) {
  EXPECT_EQ(kubepods::qosName(QosClass::kGuaranteed), "Guaranteed");
  EXPECT_EQ(kubepods::qosName(QosClass::kBurstable), "Burstable");
  EXPECT_EQ(kubepods::qosName(QosClass::kBestEffort), "BestEffort");
}

// The collector: one memcg_cgroup_info series per pod or container cgroup,
// none for the rest of the walk.
TEST(KubepodsCollector, OneInfoSeriesPerPodAndContainerCgroup) {
  CgroupTree tree;
  const std::string pod = "/kubepods/burstable/pod" + s(kUid);
  const std::string ctr = pod + "/" + kId;
  const std::string sysPod = "/kubepods.slice/kubepods-pod" + s(kUidSystemd) + ".slice";
  const std::string sysCtr = sysPod + "/crio-" + kId + ".scope";
  for (const std::string& p : {s("/"), s("/kubepods"), s("/kubepods/burstable"), pod, ctr,
                               s("/system.slice"), sysPod, sysCtr}) {
    tree.cgroups.push_back(Cgroup{p, 0, 0, nullptr, nullptr});
  }
  std::unique_ptr<Collector> c;
  for (const auto& info : collectorRegistry()) {
    if (info.name == "kubepods") {
      EXPECT_TRUE(info.defaultEnabled);
      EXPECT_FALSE(info.live);
      c = info.make(CollectorInputs{});
    }
  }
  ASSERT_TRUE(c) << "kubepods is not in the registry";
  ScrapeContext ctx(tree);
  metrics::Sink sink;
  c->collect(ctx, sink);
  EXPECT_TRUE(ctx.errors.empty());
  ASSERT_EQ(sink.families().size(), 1u);
  EXPECT_EQ(sink.sampleCount(), 4u);
  std::string text;
  metrics::writeText(sink.families(), text);
  auto line = [](const std::string& cg, const std::string& uid, const std::string& id,
                 const std::string& qos) {
    return "memcg_cgroup_info{cgroup=\"" + cg + "\",pod_uid=\"" + uid +
           "\",container_id=\"" + id + "\",qos_class=\"" + qos + "\"} 1\n";
  };
  EXPECT_NE(text.find("# TYPE memcg_cgroup_info gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find(line(pod, kUid, "", "Burstable")), std::string::npos) << text;
  EXPECT_NE(text.find(line(ctr, kUid, kId, "Burstable")), std::string::npos) << text;
  EXPECT_NE(text.find(line(sysPod, kUid, "", "Guaranteed")), std::string::npos) << text;
  EXPECT_NE(text.find(line(sysCtr, kUid, kId, "Guaranteed")), std::string::npos) << text;
  EXPECT_EQ(text.find("cgroup=\"/kubepods\""), std::string::npos) << text;
  EXPECT_EQ(text.find("cgroup=\"/system.slice\""), std::string::npos) << text;
}

}  // namespace
}  // namespace memcg
