#!/usr/bin/env bash
# Every metric name alerts/*.rules.yml and dashboards/*.json read must be in the
# exporter's metric table, and every label they match on or group by one of its labels,
# so that a rename fails the build instead of a dashboard.
# The table is the built binary's GET /api/v1/metrics, served from the committed
# fixture trees (v1, v2, hybrid; united) with every collector and option that adds
# metrics switched on. Recording-rule names (level:metric:ops) and Prometheus' own
# series (up, ALERTS) are not looked up.
#
# usage: alerts_metric_names.sh path/to/memcg_exporter
# No root needed. The vmscan collector cannot start on the fixture procfs (it has no
# /proc/cgroups), so no tracefs instance is created; it still describes its metrics.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
python3 -c 'import yaml' 2>/dev/null || { echo "metric names: SKIPPED: python3-yaml not installed (scripts/deps.sh test)"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_alerts_names_XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

tables=()
for mode in v1 v2 hybrid; do
  # A port free a moment ago can be taken by then (another test's outgoing connection
  # in the ephemeral range): a few tries.
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    "$exporter" --web.listen-address="127.0.0.1:$port" \
      --path.cgroupfs="$repo/tests/fixtures/cgroupfs/$mode" --path.procfs="$repo/tests/fixtures/procfs" \
      --path.tracefs="$tmp/no-tracefs" --collector.vmscan.instance="memcg_exporter_test_alerts_names_$$" \
      --collector.vmscan.locks --collector.vmscan.lock-callers --collector.vmscan.lru-detail \
      --collector.vmscan.shrink-slab --collector.taskstats \
      --controller.enable --controller.dry-run --controller.journal="$tmp/journal" \
      --path.kubelet-logs="$repo/tests/fixtures/kubelet_logs" 2>"$tmp/$mode.log" &
    pid=$!
    serving "$pid" "http://127.0.0.1:$port/-/healthy" 10 && break
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""
  done
  if [ -z "$pid" ] || ! curl -fsS "http://127.0.0.1:$port/api/v1/metrics" -o "$tmp/$mode.json"; then
    echo "FAIL the exporter did not serve /api/v1/metrics on the $mode fixture"; tail -5 "$tmp/$mode.log"
    exit 1
  fi
  kill "$pid"; wait "$pid" 2>/dev/null; pid=""
  tables+=(--table "$tmp/$mode.json")
done
python3 "$here/dashboards_promql.py" names "${tables[@]}" \
  --rules "$repo"/alerts/*.rules.yml --dashboards "$repo"/dashboards/*.json
