#!/usr/bin/env bash
# Scrape cost at 1,000 and 10,000 cgroups side by side: the
# exporter (plain and gzip, wall and CPU), the pread floor of the files it
# reads, series, bytes, RSS, and node_exporter's cost per series.
#   bench/scale_bench.sh [build/exporter/memcg_exporter] [counts=1000,10000] [runs=21]
# Root and cgroup v1 memory; not part of the tests. scrape_bench makes its
# memcgs as memcg_exporter_test_scale_bench_<pid>_<count> and removes them;
# this script removes any of them a killed run left behind (theirs pid gone).
set -euo pipefail
cd "$(dirname "$0")/.."
exporter=${1:-build/exporter/memcg_exporter}
counts=${2:-1000,10000}
runs=${3:-21}
bench=${SCRAPE_BENCH:-$(dirname "$exporter")/../bench/scrape_bench}
if [[ $(id -u) != 0 || ! -e /sys/fs/cgroup/memory/memory.stat ]]; then
  echo "scale_bench: SKIPPED: needs root and cgroup v1 memory"
  exit 77
fi
sweep() {
  local d pid
  for d in /sys/fs/cgroup/memory/memcg_exporter_test_scale_bench_*; do
    [[ -d $d ]] || continue
    pid=${d##*/memcg_exporter_test_scale_bench_}
    pid=${pid%%_*}
    kill -0 "$pid" 2>/dev/null && continue  # a run still going
    find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
    rmdir "$d" 2>/dev/null || true
  done
}
trap sweep EXIT
sweep
echo "command: $bench $exporter $counts $runs"
"$bench" "$exporter" "$counts" "$runs"
