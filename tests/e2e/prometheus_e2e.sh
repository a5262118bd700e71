#!/usr/bin/env bash
# End-to-end: a real Prometheus server (Debian's package) scrapes the exporter
# on loopback; a query through Prometheus' HTTP API must return the test
# cgroup's series, and the scrape must be healthy. Also lints a scrape of this
# machine's real cgroups with promtool.
#
# usage: prometheus_e2e.sh path/to/memcg_exporter
# Needs root and cgroup v1 memory: it creates memcg_exporter_test_e2e_<pid>
# and scrapes the live hierarchy. Without them it exits 77 (SKIPPED) with the
# reason instead of scraping a committed fixture tree: a pass must mean that
# live cgroups were exported. Everything it starts or creates is removed on
# exit, also on failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
for tool in prometheus promtool curl; do
  command -v $tool >/dev/null || { echo "e2e: SKIPPED: $tool not installed (scripts/deps.sh test)"; exit 77; }
done

tmp=$(mktemp -d /tmp/memcg_exporter_test_e2e_XXXXXX)
cg=""
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
  echo "e2e: SKIPPED: needs root to create a live test cgroup"
  exit 77
fi
if [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "e2e: SKIPPED: needs the cgroup v1 memory controller at /sys/fs/cgroup/memory (a v2-only host); the fixture trees are covered by the unit goldens"
  exit 77
fi
label="/memcg_exporter_test_e2e_$$"
cg="/sys/fs/cgroup/memory$label"
mkdir "$cg" && echo $((64 << 20)) > "$cg/memory.limit_in_bytes"
args=(--cgroup.include="$label|/" --collector.vmscan.instance="memcg_exporter_test_e2e_$$")
want_limit=67108864

eport=$(free_port)
"$exporter" --web.listen-address="127.0.0.1:$eport" "${args[@]}" 2>"$tmp/exporter.log" &
pids+=($!)
check "exporter ready" wait_http "http://127.0.0.1:$eport/-/ready" 60

curl -fsS "http://127.0.0.1:$eport/metrics" > "$tmp/scrape.prom"
check "promtool check metrics (live scrape)" promtool check metrics < "$tmp/scrape.prom"
check "gzip when asked" bash -c "curl -fsS -H 'Accept-Encoding: gzip' http://127.0.0.1:$eport/metrics | gzip -dc | grep -q memcg_exporter_build_info"
check "landing page" bash -c "curl -fsS http://127.0.0.1:$eport/ | grep -q 'memcg_exporter'"
check "404 elsewhere" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$eport/nope) = 404 ]"

cat > "$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: memcg
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
start_prometheus "$tmp/prometheus.yml" "$tmp"
pport=$prom_port
[ -n "$prom_pid" ] && pids+=($prom_pid)
check "prometheus ready" [ -n "$prom_pid" ]

query() {
  curl -fsS -G "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1"
}
series_ok() {
  local deadline=$((SECONDS + 30)) out
  while [ $SECONDS -lt $deadline ]; do
    out=$(query "memcg_memory_limit_bytes{cgroup=\"$label\"}")
    if echo "$out" | grep -q "\"value\":\[[0-9.]*,\"$want_limit\"\]"; then return 0; fi
    sleep 0.5
  done
  echo "last answer: $out"
  return 1
}
check "query returns the test cgroup's series" series_ok
check "target up and healthy" bash -c "curl -fsS http://127.0.0.1:$pport/api/v1/targets | grep -q '\"health\":\"up\"'"
check "no scrape error in Prometheus" bash -c "curl -fsS http://127.0.0.1:$pport/api/v1/targets | grep -q '\"lastError\":\"\"'"
check "collectors all succeed" bash -c "[ \"\$(curl -fsS -G http://127.0.0.1:$pport/api/v1/query --data-urlencode 'query=min(memcg_exporter_collector_success)' | grep -o '\"1\"')\" = '\"1\"' ]"

if [ $fail -gt 0 ]; then
  echo "--- exporter log"; tail -20 "$tmp/exporter.log"
  echo "--- prometheus log"; tail -20 "$tmp/prometheus.log"
fi
summary e2e
