// memcgtool: the companion tool installed beside memcg_exporter (like
// promtool beside Prometheus).
#include <curl/curl.h>

#include <cstring>
#include <iostream>

#include "tools/memcgtool/promql_test.h"
#include "tools/memcgtool/query.h"
#include "tools/memcgtool/rules_test.h"

namespace {

int usage() {
  std::cerr << "usage: memcgtool test promql [--epsilon E] [--no-range-check]\n"
               "                           [--allow-unsupported] FILE...\n"
               "       memcgtool test rules FILE...\n"
               "       memcgtool check rules FILE...\n"
               "       memcgtool query instant [--time T] URL EXPR\n"
               "       memcgtool query range --start T --end T [--step D] URL EXPR\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  if (std::strcmp(argv[1], "test") == 0) {
    if (argc >= 3 && std::strcmp(argv[2], "rules") == 0)
      return memcg::tool::testRulesMain(argc - 3, argv + 3, std::cout);
    if (argc < 3 || std::strcmp(argv[2], "promql") != 0) return usage();
    return memcg::tool::testPromqlMain(argc - 3, argv + 3, std::cout);
  }
  if (std::strcmp(argv[1], "check") == 0) {
    if (argc < 3 || std::strcmp(argv[2], "rules") != 0) return usage();
    return memcg::tool::checkRulesMain(argc - 3, argv + 3, std::cout);
  }
  if (std::strcmp(argv[1], "query") == 0) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = memcg::tool::queryMain(argc - 2, argv + 2, std::cout, std::cerr);
    curl_global_cleanup();
    return rc;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage();
    return 0;
  }
  return usage();
}
