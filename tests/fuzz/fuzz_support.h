// Shared bits of the libFuzzer targets (tests/fuzz, MEMCG_FUZZ=ON; see
// scripts/fuzz.sh): an invariant check that crashes so libFuzzer keeps the
// input, and a scratch directory for targets that read files.
#pragma once

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "common/log.h"

/// Aborts (a libFuzzer crash, input saved) when `cond` is false.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace memcg::fuzz {

inline std::string_view asText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// No log lines: the code under test logs every bad input (a collector
/// failure is an error), which would drown libFuzzer's output and slow it.
inline void quietLogs() {
  log::setLevel(static_cast<log::Level>(static_cast<int>(log::Level::kError) + 1));
}

/// A directory named memcg_exporter_test_fuzz_* under $TMPDIR (scripts/fuzz.sh
/// points that into build-fuzz/ and empties it after each run), removed at
/// exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = ::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/memcg_exporter_test_fuzz_XXXXXX";
    if (const char* d = ::mkdtemp(tmpl.data())) root_ = d;
    if (root_.empty()) {
      std::perror("mkdtemp");
      std::abort();
    }
  }
  ~ScratchDir() {
    ::nftw(
        root_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); },
        16, FTW_DEPTH | FTW_PHYS);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }
  void mkdir(const std::string& rel) const { ::mkdir(path(rel).c_str(), 0755); }
  void write(const std::string& rel, std::string_view content) const {
    std::ofstream f(path(rel), std::ios::binary | std::ios::trunc);
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
  }

 private:
  std::string root_;
};

}  // namespace memcg::fuzz
