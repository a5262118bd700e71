#!/usr/bin/env bash
# End-to-end, no root: the exporter on the committed fixture tree with the
# history sampling everything; the requests Grafana's Prometheus data source
# sends (connect, init, editor, variables, panels; the list and where it was
# read are in grafana_replay.py) all get Prometheus' answer shapes from the
# real binary, GET and POST (form body, and parameters in the URL); a query
# past its ?timeout= stops at it (503 timeout) in a fraction of the time the
# same query takes to the end.
# usage: history_grafana_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
fixtures=$(cd "$here/../fixtures" && pwd)
command -v python3 >/dev/null || { echo "e2e: SKIPPED: python3 not installed"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_histg_XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
for attempt in 1 2 3; do
  port=$(free_port)
  "$exporter" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$fixtures/cgroupfs/v1" \
    --path.procfs="$fixtures/procfs" --no-collector.vmscan --history.match='{__name__=~".+"}' \
    2>"$tmp/exporter.log" &
  pid=$!
  wait_http "http://127.0.0.1:$port/-/ready" 30 && break
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""
done
check "exporter ready" test -n "$pid"
# Two sampler passes, so rate() and range queries have points.
check "history has samples" poll_until 60 bash -c \
  "curl -fsS http://127.0.0.1:$port/metrics | awk '\$1==\"memcg_exporter_history_sampler_passes_total\" && \$2>=3 {ok=1} END {exit !ok}'"
check "grafana replay" python3 "$here/grafana_replay.py" "http://127.0.0.1:$port" memcg_memory_usage_bytes cgroup
check "--history.interval=0s refused" bash -c "! '$exporter' --history.interval=0s --path.cgroupfs='$fixtures/cgroupfs/v1' 2>/dev/null"
check "a bad --history.match refused" bash -c "'$exporter' --history.match='rate(x[1m])' --web.listen-address=127.0.0.1:0 --path.cgroupfs='$fixtures/cgroupfs/v1' --no-collector.vmscan 2>&1 | grep -q 'history.match'"
summary "e2e.history_grafana"
