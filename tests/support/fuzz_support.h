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
#include "tests/support/temp_tree.h"

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

/// A scratch tree under $TMPDIR (scripts/fuzz.sh points that into
/// build-fuzz/ and empties it after each run): the one temp-tree helper.
using ScratchDir = test::TempTree;

}  // namespace memcg::fuzz
