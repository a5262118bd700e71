// Flag and threshold parsers: the command line (exporter/flags.h; bad flags
// throw std::invalid_argument, which main turns into exit status 2, and
// nothing else may escape), the controller's PSI trigger
// (controller/controller.h parsePsiTrigger), --web.listen-address, the log
// level, and the HTTP API's query helpers (web/api/v1/exporter.h: queryParam and the
// report window, converted to steady_clock ticks as the reclaim report handler does).
//
// Input: argv elements separated by '\0' (argv[0] is added). The same bytes
// feed the single-value parsers. Seeds: tests/fuzz/seeds/flags.
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/log.h"
#include "controller/controller.h"
#include "web/api/v1/exporter.h"
#include "exporter/flags.h"
#include "tests/support/fuzz_support.h"

using namespace memcg;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::asText(data, size);

  std::vector<std::string> args{"memcg_exporter"};
  std::string_view rest = in;
  while (true) {
    size_t nul = rest.find('\0');
    args.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    Options o = parseFlags(static_cast<int>(argv.size()), argv.data());
    (void)o.enabledCollectors();
    (void)listenSpec(o.listenAddress);
  } catch (const std::invalid_argument&) {
  }

  if (auto t = controller::parsePsiTrigger(in); t.ok()) {
    FUZZ_CHECK(t->windowUs >= 500000 && t->windowUs <= 10000000);
    FUZZ_CHECK(t->stallUs > 0 && t->stallUs <= t->windowUs);
  }
  try {
    (void)listenSpec(std::string(in));
  } catch (const std::invalid_argument&) {
  }
  log::Level l;
  (void)log::parseLevel(in, l);

  const std::string query(in);
  const std::string w = api::queryParam(query, "window");
  (void)api::queryParam(query, "cgroup");
  if (auto secs = api::parseDuration(w)) {
    FUZZ_CHECK(*secs > 0);
    // What the reclaim report handler does with it.
    auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(*secs));
    auto t = std::chrono::steady_clock::now() - d;
    (void)t;
  }
  return 0;
}
