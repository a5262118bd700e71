// The kubepods path parser on the path shapes kubelet makes with both cgroup
// drivers and the three runtimes, and the memcg_cgroup_info collector.
#include "collectors/kubepods.h"

#include <gtest/gtest.h>

#include "collectors/collector.h"
#include "collectors/registry.h"
#include "metrics/text_format.h"
#include "tests/support/temp_tree.h"

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


// kubelet's log directory names, split as kubelet joins them.
TEST(KubeletLogs, ParsesPodDirectoriesAndContainerLogs) {
  auto p = kubepods::parsePodLogDir(s("shop_web-7d9f8c6b5-x2x9q_") + kUid);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, kUid);
  EXPECT_EQ(p->second.ns, "shop");
  EXPECT_EQ(p->second.pod, "web-7d9f8c6b5-x2x9q");
  auto st = kubepods::parsePodLogDir(s("kube-system_etcd-node1_") + kStaticUid);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->first, kStaticUid);
  auto c = kubepods::parseContainerLog(s("web-7d9f8c6b5-x2x9q_shop_log-shipper-") + kId + ".log");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->first, kId);
  EXPECT_EQ(c->second.ns, "shop");
  EXPECT_EQ(c->second.pod, "web-7d9f8c6b5-x2x9q");
  EXPECT_EQ(c->second.container, "log-shipper");
  // not kubelet's: too few or too many parts, a bad UID or id, no .log, names with
  // characters Kubernetes does not allow
  for (const std::string& bad :
       {s("shop_web"), s("shop_web_x_") + kUid, s("shop_web_not-a-uid"), s("Shop_web_") + kUid,
        s("_web_") + kUid}) {
    EXPECT_FALSE(kubepods::parsePodLogDir(bad)) << bad;
  }
  for (const std::string& bad :
       {s("web_shop_nginx-") + kId, s("web_shop_nginx-xyz.log"), s("web_shop_nginx.log"),
        s("web_shop_-") + kId + ".log", s("web_shop_ng_inx-") + kId + ".log"}) {
    EXPECT_FALSE(kubepods::parseContainerLog(bad)) << bad;
  }
}

// The committed layout (tests/fixtures/kubelet_logs): two pods, two container logs,
// a stray entry in each directory that is skipped and counted.
TEST(KubeletLogs, ReadsTheFixtureLayout) {
  auto r = kubepods::readKubeletLogs(test::fixturePath("kubelet_logs"), 100);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pods.size(), 2u);
  EXPECT_EQ(r->containers.size(), 2u);
  EXPECT_EQ(r->skipped, 2u);
  EXPECT_EQ(r->pods.at(kUid).pod, "web-7d9f8c6b5-x2x9q");
  EXPECT_EQ(r->pods.at(kStaticUid).ns, "kube-system");
  EXPECT_EQ(r->containers.at(kId).container, "nginx");
  // bounded: at most `limit` entries of each directory are read
  auto few = kubepods::readKubeletLogs(test::fixturePath("kubelet_logs"), 1);
  ASSERT_TRUE(few.ok());
  EXPECT_LE(few->pods.size() + few->containers.size(), 2u);
  EXPECT_FALSE(kubepods::readKubeletLogs("/nonexistent/memcg_exporter_test", 100).ok());
}

// With --path.kubelet-logs, memcg_cgroup_pod_info names pod and container cgroups:
// the container's from its own log, a pod's (and a container without a log yet)
// from the pod's directory; a pod kubelet has no directory for is not named.
// memcg_cgroup_info is the same with and without the flag. A directory that
// changes is read again at the next scrape.
TEST(KubepodsCollector, NamesFromKubeletLogs) {
  test::TempTree t;
  t.copyFixture("kubelet_logs", "logs");
  const std::string pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                          s(kUidSystemd) + ".slice";
  const std::string ctr = pod + "/cri-containerd-" + kId + ".scope";
  const std::string other = pod + "/cri-containerd-" + std::string(64, 'b') + ".scope";
  const std::string staticPod = "/kubepods/pod" + s(kStaticUid);
  const std::string unknown = "/kubepods/besteffort/pod11111111-2222-4333-8444-555555555555";
  CgroupTree tree;
  for (const std::string& p : {s("/"), pod, ctr, other, staticPod, unknown})
    tree.cgroups.push_back(Cgroup{p, 0, 0, nullptr, nullptr});
  KubepodsOptions o;
  o.kubeletLogs = t.path("logs");
  auto c = makeKubepodsCollector(o);
  auto scrape = [&](Collector& col) {
    ScrapeContext ctx(tree);
    metrics::Sink sink;
    col.collect(ctx, sink);
    EXPECT_TRUE(ctx.errors.empty());
    std::string text;
    metrics::writeText(sink.families(), text);
    return text;
  };
  auto line = [](const std::string& cg, const std::string& ns, const std::string& p,
                 const std::string& cn) {
    return "memcg_cgroup_pod_info{cgroup=\"" + cg + "\",namespace=\"" + ns + "\",pod=\"" + p +
           "\",container=\"" + cn + "\"} 1\n";
  };
  std::string text = scrape(*c);
  const std::string web = "web-7d9f8c6b5-x2x9q";
  EXPECT_NE(text.find(line(pod, "shop", web, "")), std::string::npos) << text;
  EXPECT_NE(text.find(line(ctr, "shop", web, "nginx")), std::string::npos) << text;
  EXPECT_NE(text.find(line(other, "shop", web, "")), std::string::npos) << text;
  EXPECT_NE(text.find(line(staticPod, "kube-system", "etcd-node1", "")), std::string::npos) << text;
  EXPECT_EQ(text.find("memcg_cgroup_pod_info{cgroup=\"" + unknown + "\""), std::string::npos) << text;
  // the other container's log appears: the next scrape names it
  t.write("logs/containers/" + web + "_shop_sidecar-" + std::string(64, 'b') + ".log", "");
  text = scrape(*c);
  EXPECT_NE(text.find(line(other, "shop", web, "sidecar")), std::string::npos) << text;
  // memcg_cgroup_info: the same four labels as without the flag
  auto plain = makeKubepodsCollector(KubepodsOptions{});
  const std::string ptext = scrape(*plain);
  EXPECT_EQ(ptext.find("memcg_cgroup_pod_info"), std::string::npos) << ptext;
  const std::string ctrInfo = "memcg_cgroup_info{cgroup=\"" + ctr + "\",pod_uid=\"" + kUid +
                              "\",container_id=\"" + kId + "\",qos_class=\"Burstable\"} 1\n";
  EXPECT_NE(ptext.find(ctrInfo), std::string::npos) << ptext;
  EXPECT_NE(text.find(ctrInfo), std::string::npos) << text;
}

// An unreadable log directory fails the collector's scrape (one error) and keeps
// memcg_cgroup_info, without names.
TEST(KubepodsCollector, MissingKubeletLogsDegrade) {
  CgroupTree tree;
  const std::string pod = "/kubepods/pod" + s(kUid);
  tree.cgroups.push_back(Cgroup{pod, 0, 0, nullptr, nullptr});
  KubepodsOptions o;
  o.kubeletLogs = "/nonexistent/memcg_exporter_test_kubelet_logs";
  auto c = makeKubepodsCollector(o);
  ScrapeContext ctx(tree);
  metrics::Sink sink;
  c->collect(ctx, sink);
  EXPECT_EQ(ctx.errors.size(), 1u);
  EXPECT_EQ(sink.sampleCount(), 1u);
}

}  // namespace
}  // namespace memcg
