#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit tests on
# fixtures, golden expositions, promtool lint, real-kernel tests (root), the
# end-to-end test with a real Prometheus, and the qemu cgroup v2 lane.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 "$@"
