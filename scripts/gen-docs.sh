#!/usr/bin/env bash
# Regenerates the references made from the binaries' own tables:
#   docs/flags.md            memcg_exporter --help-format=markdown
#   docs/metrics.md          memcg_exporter --help-format=metrics
#   docs/man/memcg_exporter.1  memcg_exporter --help-format=man
#   docs/man/memcgtool.1     memcgtool --help-format=man
# Run it after adding or changing a flag, a collector or a metric, and commit
# the result: the lint test lint.generated_docs fails while they are stale.
#   scripts/gen-docs.sh [BUILD_DIR]          build both binaries, rewrite the files
#   scripts/gen-docs.sh --check BUILD_DIR    compare only (the test): exit 1 when stale
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
build=${1:-$root/build}
if [ $check = 0 ]; then
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" --target memcg_exporter memcgtool >/dev/null
fi
exporter=$build/exporter/memcg_exporter
tool=$build/tools/memcgtool/memcgtool
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/man"
"$exporter" --help-format=markdown >"$out/flags.md"
"$exporter" --help-format=metrics >"$out/metrics.md"
"$exporter" --help-format=man >"$out/man/memcg_exporter.1"
"$tool" --help-format=man >"$out/man/memcgtool.1"
stale=0
for f in flags.md metrics.md man/memcg_exporter.1 man/memcgtool.1; do
  if [ $check = 1 ]; then
    if ! diff -u "$root/docs/$f" "$out/$f" >"$out/diff" 2>&1; then
      echo "docs/$f is stale (a flag, collector or metric changed): run scripts/gen-docs.sh and commit it"
      head -n 40 "$out/diff"
      stale=1
    fi
  else
    mkdir -p "$(dirname "$root/docs/$f")"
    cp "$out/$f" "$root/docs/$f"
    echo "wrote docs/$f"
  fi
done
exit $stale
