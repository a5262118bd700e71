// The exporter's vmscan collector alone, for bench/tracing_overhead.sh when
// the exporter binary cannot be used: its tracefs instance name is fixed
// ("memcg_exporter"), so while another exporter traces on the same host a
// second one cannot. This builds the very collector the exporter builds
// (collectorRegistry()'s "vmscan" entry, from the same flags parsed by
// parseFlags) under an instance name of the bench's own, prints one scrape
// of it (Prometheus text) and "ready", waits for SIGTERM or SIGINT, prints a
// second scrape and exits, removing its instance.
//
// usage: tracing_overhead_collector INSTANCE [exporter flags...]
//        INSTANCE must start with memcg_exporter (e.g. memcg_exporter_test_...).
#include <signal.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/discovery.h"
#include "common/log.h"
#include "exporter/flags.h"
#include "metrics/text_format.h"
#include "tracing/tracer.h"

using namespace memcg;

namespace {

bool scrape(Discovery& discovery, Collector& collector) {
  auto tree = discovery.refresh();
  if (!tree.ok()) {
    std::fprintf(stderr, "tracing_overhead_collector: %s\n", tree.error().message().c_str());
    return false;
  }
  ScrapeContext ctx(**tree);
  metrics::Sink sink;
  collector.collect(ctx, sink);
  std::string text;
  metrics::writeText(sink.families(), text);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s INSTANCE [exporter flags...]\n", argv[0]);
    return 2;
  }
  std::vector<const char*> args{argv[0]};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  Options opts;
  try {
    opts = parseFlags(static_cast<int>(args.size()), args.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tracing_overhead_collector: error: %s\n", e.what());
    return 2;
  }
  log::Level level = log::Level::kWarn;
  log::parseLevel(opts.logLevel, level);
  log::setLevel(level);

  // Signals are taken with sigwait, so block them before any thread starts.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  Discovery discovery(opts.discovery);
  CollectorConfig cfg = opts.collector;
  cfg.layout = discovery.layout();
  tracing::setCollectorInstanceName(argv[1]);
  std::unique_ptr<Collector> collector;
  for (const auto& info : collectorRegistry()) {
    if (info.name == "vmscan") collector = info.make(cfg);
  }
  if (!collector || !tracing::activeTracer()) {
    std::fprintf(stderr, "tracing_overhead_collector: vmscan tracing did not start\n");
    return 1;
  }
  // One scrape now (the start-time figures), "ready", one scrape at the end.
  if (!scrape(discovery, *collector)) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  if (!scrape(discovery, *collector)) return 1;
  return 0;
}
