// memcg_exporter: Prometheus exporter for Linux memory cgroups and reclaim.
#include <malloc.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <stdexcept>

#include "cgroupfs/cgroup_dir.h"
#include "common/log.h"
#include "exporter/app.h"
#include "exporter/flags.h"
#include "common/version.h"
#include "exporter/reference.h"

using namespace memcg;

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
  if (!opts.helpFormat.empty()) {
    if (opts.helpFormat == "man") {
      std::cout << manPage();
    } else if (opts.helpFormat == "metrics") {
      std::cout << metricReferenceMarkdown();
    } else {
      std::cout << flagReferenceMarkdown();
    }
    return 0;
  }
  if (opts.showVersion) {
    std::cout << "memcg_exporter, version " << kVersion << " (revision: " << kRevision << ")\n";
    return 0;
  }
  // One malloc arena per HTTP worker would keep each scrape's peak
  // (megabytes at 1,000 cgroups) resident once per thread.
  mallopt(M_ARENA_MAX, 2);
  // A fixed mmap threshold: a scrape's large buffers (the 30 MB exposition
  // and the sample vectors at 10,000 cgroups) are mmapped and go back to the
  // kernel when freed; glibc's dynamic threshold would rise to their size
  // after the first free and keep them resident in the heap between scrapes.
  mallopt(M_MMAP_THRESHOLD, 8 << 20);

  log::Level level = log::Level::kInfo;
  log::parseLevel(opts.logLevel, level);
  log::setLevel(level);
  log::Format format = log::Format::kLogfmt;
  log::parseFormat(opts.logFormat, format);
  log::setFormat(format);

  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Descriptors: cgroup directories and the files kept open, leaving a margin
  // for sockets (--web.max-connections) and everything else.
  const long fdLimit = cgroupfs::raiseFdLimit();
  const long fdBudget = opts.discovery.fdBudget > 0
                            ? opts.discovery.fdBudget
                            : cgroupfs::defaultFdBudget(fdLimit, opts.webMaxConnections);
  opts.discovery.fdBudget = fdBudget;  // Discovery's FdBudget (discovery.h)
  log::debug("descriptor budget", "rlimit_nofile=" + std::to_string(fdLimit) +
                                      " budget=" + std::to_string(fdBudget));

  try {
    App app(opts);
    int sig = 0;
    // SIGHUP reloads the rule files (a bad file keeps the old rules). Every
    // 10 s the heap's free pages go back to the kernel: glibc keeps them
    // resident, so a burst of concurrent requests (each building a large
    // answer below the mmap threshold) would otherwise leave its peak in RSS
    // for good (measured: RssAnon 3.5 -> 7.3 MiB after 8 parallel clients,
    // staying there; bench/soak.sh prints RSS anonymous and file-backed).
    const timespec trimEvery{10, 0};
    for (;;) {
      sig = sigtimedwait(&sigs, nullptr, &trimEvery);
      if (sig < 0 && (errno == EAGAIN || errno == EINTR)) {
        malloc_trim(0);
        continue;
      }
      if (sig != SIGHUP) break;
      (void)app.reloadRules();
    }
    log::info("shutting down", "signal=" + std::to_string(sig));
  } catch (const std::exception& e) {
    log::error("fatal", "err=" + log::quote(e.what()));
    return 1;
  }
  return 0;
}
