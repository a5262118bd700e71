#!/usr/bin/env bash
# Configures and builds into build/ (RelWithDebInfo). Extra args go to cmake.
# A compiler warning in the product code fails it (MEMCG_WERROR; scripts/test.sh
# builds through here, so CI keeps the product build warning-free).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMCG_WERROR=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
