#include "exporter/flags.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace memcg {
namespace {

Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "memcg_exporter");
  return parseFlags(static_cast<int>(args.size()), args.data());
}

TEST(Flags, Defaults) {
  Options o = parse({});
  EXPECT_EQ(o.listenAddress, ":9712");
  EXPECT_EQ(o.telemetryPath, "/metrics");
  EXPECT_EQ(o.discovery.cgroupfsRoot, "/sys/fs/cgroup");
  auto on = o.enabledCollectors();
  EXPECT_EQ(on.size(), 8u);  // every default-on collector, vmscan and kubepods included
  EXPECT_EQ(std::count(on.begin(), on.end(), "taskstats"), 0);
}

TEST(Flags, NodeExporterStyle) {
  Options o = parse({"--web.listen-address=127.0.0.1:9999", "--web.telemetry-path", "/m",
                     "--no-collector.vmstat", "--path.cgroupfs=/host/cg", "--path.procfs=/host/proc",
                     "--log.level=debug", "--cgroup.limit=10", "--collector.memory_stat.fields=cache"});
  EXPECT_EQ(o.listenAddress, "127.0.0.1:9999");
  EXPECT_EQ(o.telemetryPath, "/m");
  EXPECT_EQ(o.discovery.cgroupfsRoot, "/host/cg");
  EXPECT_EQ(o.discovery.procfsRoot, "/host/proc");
  EXPECT_EQ(o.discovery.limit, 10u);
  EXPECT_EQ(o.collectors.memoryStat.fields, "cache");
  auto on = o.enabledCollectors();
  EXPECT_EQ(std::count(on.begin(), on.end(), "vmstat"), 0);
}

TEST(Flags, VmscanDetailEventsAreOffUntilAsked) {
  Options d = parse({});
  EXPECT_FALSE(d.collectors.vmscan.lruDetail);
  EXPECT_FALSE(d.collectors.vmscan.shrinkSlab);
  Options o = parse({"--collector.vmscan.lru-detail", "--collector.vmscan.shrink-slab=true"});
  EXPECT_TRUE(o.collectors.vmscan.lruDetail);
  EXPECT_TRUE(o.collectors.vmscan.shrinkSlab);
  auto on = o.enabledCollectors();
  EXPECT_EQ(std::count(on.begin(), on.end(), "vmscan"), 1);  // an option, not a collector
  EXPECT_FALSE(parse({"--no-collector.vmscan.lru-detail"}).collectors.vmscan.lruDetail);
  EXPECT_THROW(parse({"--collector.vmscan.shrink-slab=yes"}), std::invalid_argument);
}

TEST(Flags, VmscanInstanceNameIsCheckedAtParse) {
  EXPECT_EQ(parse({}).collectors.vmscan.instance, "memcg_exporter");
  EXPECT_EQ(parse({"--collector.vmscan.instance=memcg_exporter_b"}).collectors.vmscan.instance,
            "memcg_exporter_b");
  EXPECT_THROW(parse({"--collector.vmscan.instance=other"}), std::invalid_argument);
  EXPECT_THROW(parse({"--collector.vmscan.instance=memcg_exporter/../x"}), std::invalid_argument);
  EXPECT_THROW(parse({"--collector.vmscan.instance=memcg_exporter x"}), std::invalid_argument);
}

TEST(Flags, VmscanLockProbesOffByDefault) {
  Options d = parse({});
  EXPECT_FALSE(d.collectors.vmscan.locks);
  EXPECT_FALSE(d.collectors.vmscan.lockCallers);
  EXPECT_FALSE(d.collectors.vmscan.lockAddresses);
  Options o = parse({"--collector.vmscan.locks", "--collector.vmscan.lock-callers=true"});
  EXPECT_TRUE(o.collectors.vmscan.locks);
  EXPECT_TRUE(o.collectors.vmscan.lockCallers);
  Options n = parse({"--collector.vmscan.locks", "--no-collector.vmscan.locks"});
  EXPECT_FALSE(n.collectors.vmscan.locks);
  // Options of a collector are not collectors: vmscan stays enabled.
  auto on = o.enabledCollectors();
  EXPECT_EQ(std::count(on.begin(), on.end(), "vmscan"), 1);
  EXPECT_THROW(parse({"--collector.vmscan.locks=yes"}), std::invalid_argument);
  // Raw kernel addresses in /api/v1/locks: a separate opt-in, not implied by the others.
  EXPECT_FALSE(o.collectors.vmscan.lockAddresses);
  EXPECT_TRUE(parse({"--collector.vmscan.lock-addresses"}).collectors.vmscan.lockAddresses);
  EXPECT_FALSE(parse({"--collector.vmscan.lock-addresses", "--no-collector.vmscan.lock-addresses"})
                   .collectors.vmscan.lockAddresses);
  EXPECT_NE(usage().find("--collector.vmscan.lock-addresses"), std::string::npos);
}

TEST(Flags, DisableDefaultsThenEnableOne) {
  Options o = parse({"--collector.disable-defaults", "--collector.pressure"});
  EXPECT_EQ(o.enabledCollectors(), std::vector<std::string>{"pressure"});
}

TEST(Flags, BadInputHasAOneLineReason) {
  auto reason = [](std::vector<const char*> a) {
    try {
      parse(a);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(reason({"--bogus"}).find("unknown flag --bogus"), std::string::npos);
  EXPECT_NE(reason({"--web.listen-address=nohost"}).find("[host]:port"), std::string::npos);
  EXPECT_NE(reason({"--web.listen-address=:99999"}).find("bad port"), std::string::npos);
  EXPECT_NE(reason({"--cgroup.limit=0"}).find("--cgroup.limit"), std::string::npos);
  EXPECT_NE(reason({"--log.level=loud"}).find("--log.level"), std::string::npos);
  EXPECT_NE(reason({"--web.telemetry-path"}).find("needs a value"), std::string::npos);
  EXPECT_NE(reason({"stray"}).find("unexpected argument"), std::string::npos);
  EXPECT_NE(reason({"--collector.vmstat=yes"}).find("takes no value"), std::string::npos);
}

TEST(Flags, ControllerWake) {
  Options d = parse({});
  EXPECT_EQ(d.controller.pollIntervalMs, 50);
  EXPECT_TRUE(d.controller.v2WakeEvents);
  EXPECT_TRUE(d.controller.v2WakePsi);
  EXPECT_EQ(d.controller.psiTrigger, "some 1000 500000");
  Options o = parse({"--controller.poll-interval-ms=10000", "--controller.v2-wake=psi",
                     "--controller.psi-trigger=full 5000 1000000"});
  EXPECT_EQ(o.controller.pollIntervalMs, 10000);
  EXPECT_FALSE(o.controller.v2WakeEvents);
  EXPECT_TRUE(o.controller.v2WakePsi);
  EXPECT_EQ(o.controller.psiTrigger, "full 5000 1000000");
  Options none = parse({"--controller.v2-wake="});
  EXPECT_FALSE(none.controller.v2WakeEvents || none.controller.v2WakePsi);
  EXPECT_THROW(parse({"--controller.v2-wake=events,bogus"}), std::invalid_argument);
  EXPECT_THROW(parse({"--controller.poll-interval-ms=0"}), std::invalid_argument);
  // Refused at parse time on any host, not when a v2 controller starts.
  EXPECT_THROW(parse({"--controller.psi-trigger=bogus"}), std::invalid_argument);
  EXPECT_THROW(parse({"--controller.psi-trigger=some 1000 100"}), std::invalid_argument);
}

TEST(Flags, CivetListeningPort) {
  EXPECT_EQ(listenSpec(":9712"), "9712");
  EXPECT_EQ(listenSpec("127.0.0.1:9712"), "127.0.0.1:9712");
  EXPECT_EQ(listenSpec("[::1]:9712"), "[::1]:9712");  // our server binds IPv6
  EXPECT_THROW(listenSpec("::1:9712"), std::invalid_argument);
}

TEST(Flags, BadRegexesAndPoliciesAreBadFlags) {
  for (const char* f : {"--cgroup.include=(", "--cgroup.exclude=[", "--controller.allow=(",
                        "--collector.memory_stat.fields=*x", "--controller.sched-policy=fifo"}) {
    const char* argv[] = {"memcg_exporter", f};
    EXPECT_THROW(parseFlags(2, const_cast<char**>(argv)), std::invalid_argument) << f;
  }
}

// Durations are flags' one spelling ("10s", "500ms"); the old whole-number
// "-ms" flags (and a bare number of seconds for --web.read-timeout) still work,
// give the same value, and log once that they are deprecated.
TEST(Flags, DurationsAndTheirDeprecatedMsSpellings) {
  struct Case {
    const char* now;
    const char* old;
    const char* oldName;
  };
  const Case cases[] = {
      {"--cgroup.refresh-interval=1500ms", "--cgroup.refresh-interval-ms=1500",
       "--cgroup.refresh-interval-ms"},
      {"--controller.poll-interval=2s", "--controller.poll-interval-ms=2000",
       "--controller.poll-interval-ms"},
      {"--controller.cooldown=250ms", "--controller.cooldown-ms=250", "--controller.cooldown-ms"},
      {"--web.read-timeout=30s", "--web.read-timeout=30", "--web.read-timeout"},
  };
  for (const auto& c : cases) {
    testing::internal::CaptureStderr();
    Options a = parse({c.now});
    const std::string quiet = testing::internal::GetCapturedStderr();
    EXPECT_EQ(quiet.find("deprecated"), std::string::npos) << c.now << ": " << quiet;
    testing::internal::CaptureStderr();
    Options b = parse({c.old, c.old});  // given twice: one log line
    const std::string logged = testing::internal::GetCapturedStderr();
    EXPECT_EQ(a.discovery.refreshInterval, b.discovery.refreshInterval) << c.old;
    EXPECT_EQ(a.controller.pollIntervalMs, b.controller.pollIntervalMs) << c.old;
    EXPECT_EQ(a.controller.cooldownMs, b.controller.cooldownMs) << c.old;
    EXPECT_EQ(a.webReadTimeoutMs, b.webReadTimeoutMs) << c.old;
    const size_t at = logged.find("deprecated flag");
    ASSERT_NE(at, std::string::npos) << c.old << ": " << logged;
    EXPECT_NE(logged.find(c.oldName), std::string::npos) << logged;
    EXPECT_EQ(logged.find("deprecated flag", at + 1), std::string::npos)
        << "logged more than once: " << logged;
  }
  Options o = parse({"--cgroup.refresh-interval=1500ms", "--controller.poll-interval=2s",
                     "--controller.cooldown=250ms", "--web.read-timeout=30s"});
  EXPECT_EQ(o.discovery.refreshInterval, std::chrono::milliseconds(1500));
  EXPECT_EQ(o.controller.pollIntervalMs, 2000);
  EXPECT_EQ(o.controller.cooldownMs, 250);
  EXPECT_EQ(o.webReadTimeoutMs, 30000);
  Options d = parse({});
  EXPECT_EQ(d.discovery.refreshInterval, std::chrono::milliseconds(5000));
  EXPECT_EQ(d.webReadTimeoutMs, 10000);
  for (const char* bad : {"--cgroup.refresh-interval=2h", "--controller.poll-interval=0s",
                          "--controller.cooldown=1.5s", "--web.read-timeout=500ms",
                          "--web.read-timeout=11m", "--controller.poll-interval-ms=1s"})
    EXPECT_THROW(parse({bad}), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace memcg
