#!/usr/bin/env bash
# Configures and builds into build/ (RelWithDebInfo).
#   scripts/build.sh [--target NAME]... [cmake configure args]
# Without --target everything is built (tests and benchmarks too); scripts/run.sh
# builds only --target memcg_exporter. A compiler warning in the product code fails
# the build (MEMCG_WERROR; scripts/test.sh builds through here, so CI keeps the
# product build warning-free). MEMCG_FAST_BUILD is on by default (unity batches,
# -g1, mold or gold; top CMakeLists.txt): pass -DMEMCG_FAST_BUILD=OFF for full
# debug info and one object per source file.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [ "${1:-}" = --target ]; do
  targets+=(--target "$2")
  shift 2
done
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMCG_WERROR=ON "$@" >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
