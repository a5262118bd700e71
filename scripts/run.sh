#!/usr/bin/env bash
# Installs what is missing, builds, and runs the exporter with its defaults
# (listening on :9712). Flags are passed through: scripts/run.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
scripts/build.sh >/dev/null
exec build/exporter/memcg_exporter "$@"
