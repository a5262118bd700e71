#!/usr/bin/env bash
# PromQL benchmark: our engine and Prometheus 2.42 side by side on the same data.
# Builds bench/promql_bench, then bench/promql_bench.py starts a Prometheus on loopback
# (temp storage, removed on exit), loads exporter-shaped data at 1,000 cgroups (15 min at
# 1 s) into both, times the queries and prints the table. Not part of the tests.
#
# usage: bench/promql_bench.sh [promql_bench.py options: --cgroups N --runs R --kinds K]
# env:   BUILD_DIR=build (configured here with -DBUILD_BENCH=ON if it is not yet)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test  # prometheus, python3: all this benchmark needs
build=${BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_BENCH=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target promql_bench >/dev/null
exec /usr/bin/python3 bench/promql_bench.py --bench "$build/bench/promql_bench" "$@"
