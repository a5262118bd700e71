// Command-line flags, named after node_exporter's:
//   --web.listen-address, --web.telemetry-path, --collector.NAME,
//   --no-collector.NAME, --collector.disable-defaults, --path.cgroupfs,
//   --path.procfs, --log.level, --version, --help
// plus the discovery bounds (--cgroup.*), collector options
// (--collector.NAME.OPTION) and --controller.*. Each part declares its own
// flags beside its options (common/flag_spec.h); this file composes them.
// Both "--flag=value" and "--flag value" work.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cgroupfs/discovery.h"
#include "collectors/registry.h"
#include "controller/options.h"
#include "rules/options.h"
#include "history/history.h"

namespace memcg {

inline constexpr int kDefaultPort = 9712;

struct Options {
  std::string listenAddress = ":9712";
  std::string telemetryPath = "/metrics";
  int gzipLevel = 1;
  int webThreads = 4;
  int64_t webReadTimeoutMs = 10000;  ///< --web.read-timeout
  int webMaxConnections = 4096;
  std::string webConfigFile;  ///< --web.config.file (web_config.h); empty: open
  bool dropCapabilities = true;  ///< --[no-]capabilities.drop (privileges.h)
  std::string logLevel = "info";
  std::string logFormat = "logfmt";  ///< --log.format (common/log.h)
  /// --web.disable-exporter-metrics: no process_*, HTTP server or privilege
  /// families on /metrics (the collectors' success and duration stay).
  bool disableExporterMetrics = false;
  DiscoveryOptions discovery;
  CollectorOptions collectors;  ///< each collector's own options
  controller::ControllerOptions controller;
  rules::RulesOptions rules;
  history::Options history;
  bool disableDefaults = false;
  std::map<std::string, bool> collectorSwitch;  ///< explicit --[no-]collector.NAME
  bool showVersion = false;
  bool showHelp = false;
  std::string helpFormat;  ///< --help-format (exporter/reference.h); empty: serve

  /// Names of the collectors to run, in registry order.
  std::vector<std::string> enabledCollectors() const;
};

/// Parses argv. Throws std::invalid_argument with a one-line reason.
Options parseFlags(int argc, const char* const* argv);

std::string usage();

/// Every flag, bound to `o`, in --help order (the generated references read it too).
FlagList flagTable(Options& o);

/// ":9712" -> "9712" (all interfaces), "127.0.0.1:9712", "[::1]:9712" as they
/// are (the syntax web/http_server.h binds). Throws std::invalid_argument.
std::string listenSpec(const std::string& listenAddress);

}  // namespace memcg
