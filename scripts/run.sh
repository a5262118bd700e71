#!/usr/bin/env bash
# Installs what is missing, builds only the exporter (no tests, no benchmarks)
# and runs it with its defaults (listening on :9712, /metrics). Flags are passed
# through: scripts/run.sh --help. The full build and the tests: scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
echo "building memcg_exporter into build/ (a few minutes the first time)" >&2
# The same build/ tree scripts/test.sh uses; only the exporter's target is built.
scripts/build.sh --target memcg_exporter "${launcher[@]}" >/dev/null
exec build/exporter/memcg_exporter "$@"
