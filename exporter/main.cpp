// memcg_exporter: Prometheus exporter for Linux memory cgroups and reclaim.
#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <unistd.h>

#include <filesystem>

#include "collectors/cgroupfs/cgroup_dir.h"
#include "controller/api.h"
#include "controller/controller_collector.h"
#include "common/log.h"
#include "exporter/flags.h"
#include "exporter/http_server.h"
#include "exporter/scraper.h"
#include "exporter/version.h"

using namespace memcg;

namespace {

std::vector<EnabledCollector> makeCollectors(const Options& o, const MountLayout& layout) {
  CollectorConfig cfg = o.collector;
  cfg.layout = layout;
  std::vector<EnabledCollector> out;
  for (const auto& name : o.enabledCollectors()) {
    for (const auto& info : collectorRegistry()) {
      if (info.name == name) out.push_back({name, info.make(cfg)});
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  try {
    opts = parseFlags(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memcg_exporter: error: %s\n", e.what());
    return 2;
  }
  if (opts.showHelp) {
    std::cout << usage();
    return 0;
  }
  if (opts.showVersion) {
    std::cout << "memcg_exporter, version " << kVersion << " (revision: " << kRevision << ")\n";
    return 0;
  }
  // One malloc arena per civetweb worker would keep each scrape's peak
  // (megabytes at 1,000 cgroups) resident once per thread.
  mallopt(M_ARENA_MAX, 2);

  log::Level level = log::Level::kInfo;
  log::parseLevel(opts.logLevel, level);
  log::setLevel(level);

  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Descriptors: cgroup directories and the files kept open, leaving a margin
  // for sockets and everything else.
  long fdLimit = cgroupfs::raiseFdLimit();
  cgroupfs::CgroupDir::setFdBudget(std::max(0L, fdLimit - 1024));

  try {
    Discovery discovery(opts.discovery);
    const auto& layout = discovery.layout();
    log::info("starting memcg_exporter",
              std::string("version=") + kVersion + " revision=" + kRevision +
                  " mode=" + std::string(modeName(layout.mode)) +
                  " memory_root=" + log::quote(layout.memoryRoot) +
                  (layout.unifiedRoot.empty() ? "" : " unified_root=" + log::quote(layout.unifiedRoot)));
    // Collectors first: the vmscan collector starts tracing, and the
    // controller marks its reclaim thread in the tracer.
    auto collectors = makeCollectors(opts, layout);
    // The controller: off unless enabled. A limit a crash left lowered is
    // put back at start either way.
    std::unique_ptr<controller::Controller> ctl;
    if (opts.controller.enable) {
      std::error_code ec;
      std::filesystem::create_directories(
          std::filesystem::path(opts.controller.journal).parent_path(), ec);
      ctl = std::make_unique<controller::Controller>(opts.controller, discovery);
      ctl->start();
      log::info("controller enabled", std::string("dry_run=") +
                                          (opts.controller.dryRun ? "true" : "false") +
                                          " allow=" + log::quote(opts.controller.allow));
    } else if (::access(opts.controller.journal.c_str(), F_OK) == 0) {
      auto r = controller::recoverJournal(opts.controller);
      log::info("controller journal replayed", "restored=" + std::to_string(r.restored) +
                                                    " conflicts=" + std::to_string(r.conflicts) +
                                                    " failed=" + std::to_string(r.failed));
    }
    controller::ControllerApi controllerApi(
        ctl.get(), opts.controller.tokenFile.empty()
                       ? std::string()
                       : controller::ControllerApi::readTokenFile(opts.controller.tokenFile));
    if (ctl) collectors.push_back({"controller", controller::makeControllerCollector(*ctl)});
    Scraper scraper(discovery, std::move(collectors));
    for (const auto& n : opts.enabledCollectors()) log::info("collector enabled", "collector=" + n);
    if (auto t = discovery.refresh(); !t.ok()) {
      log::warn("first cgroup discovery failed", "err=" + log::quote(t.error().message()));
    } else {
      log::info("cgroups discovered", "count=" + std::to_string((*t)->cgroups.size()) +
                                          " dropped=" + std::to_string((*t)->dropped));
    }
    HttpServer server(opts, scraper, &controllerApi);
    log::info("listening", "address=" + opts.listenAddress + " port=" +
                               std::to_string(server.port()) + " telemetry_path=" + opts.telemetryPath);
    int sig = 0;
    sigwait(&sigs, &sig);
    log::info("shutting down", "signal=" + std::to_string(sig));
  } catch (const std::exception& e) {
    log::error("fatal", "err=" + log::quote(e.what()));
    return 1;
  }
  return 0;
}
