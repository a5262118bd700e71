#!/usr/bin/env bash
# Rules benchmark (root, cgroup v1 memory; not in ctest), two parts:
#
# 1. Condition-to-actuation latency, side by side in one run (rules_latency.py
#    alternates the runs): from a memcg's first limit hit (memory.failcnt
#    turns non-zero) to the controller's first reclaiming write (its audit
#    log), for
#    (a) in-process: a rule group with interval 100ms, `rate(failcnt[1s]) > 0`,
#        action: protect; the history samples the rule's selection at the
#        group's interval (--history.interval=100ms: the selection's interval
#        is rounded up to a multiple of the base interval);
#    (b) the standard path tuned to the bone: Prometheus 2.42 scraping the same
#        exporter every 1 s, evaluating `rate(failcnt[3s]) > 0` (for: 0s) every
#        1 s, Alertmanager 0.25 with group_wait 0s posting to the exporter's
#        webhook POST /api/v1/alertmanager.
#    Targets: (a) p50 <= 150 ms and max <= 300 ms; (b)/(a) >= 3 at the median.
# 2. Rule evaluation CPU of the shipped alert rules (alerts/*.rules.yml) at
#    1,000 fixture cgroups (history_bench.sh's tree shape), evaluated every 1 s
#    (--rules.evaluation-interval=1s: the shipped groups set none) to measure
#    many rounds: utime+stime of the exporter's rule thread (memcg-rules) per
#    round of all groups, and from it the share of a core at 1 s, 15 s and the
#    default 1m. Target <= 1% of a core (checked at 1m and 15s). The [5m]
#    windows fill as the run goes on: the window starts after `warm` seconds
#    (warm=300 for full windows).
# usage: bench/rules_latency.sh path/to/memcg_exporter [runs=10] [cpu_seconds=30] [cgroups=1000] [warm=300]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/e2e/lib.sh"
exporter=$(realpath "$1")
runs=${2:-10}
cpu_secs=${3:-30}
n=${4:-1000}
warm=${5:-300}
[ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || { echo "needs root and cgroup v1 memory"; exit 77; }
prom_bin=$(command -v prometheus) || { echo "needs prometheus (scripts/deps.sh test)"; exit 77; }
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager) || { echo "needs prometheus-alertmanager"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_rules_bench_XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for d in /sys/fs/cgroup/memory/memcg_exporter_test_rules_bench_*; do
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    sleep 0.1; rmdir "$d" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# --- 1. latency
echo "rules-bench-token" > "$tmp/token"
port=$(free_port); amport=$(free_port); promport=$(free_port)
base="http://127.0.0.1:$port"
margins='start_margin: 16MiB, target_margin: 32MiB'
cat > "$tmp/inproc.rules.yml" <<YML
groups:
  - name: bench.inproc
    interval: 100ms
    rules:
      - alert: BenchLimitHitsInProcess
        expr: rate(memcg_memory_failcnt_total{cgroup=~"/memcg_exporter_test_rules_bench_in_.*"}[1s]) > 0
        labels: {action: protect, $margins}
YML
cat > "$tmp/std.rules.yml" <<YML
groups:
  - name: bench.std
    rules:
      - alert: BenchLimitHitsStandard
        expr: rate(memcg_memory_failcnt_total{cgroup=~"/memcg_exporter_test_rules_bench_std_.*"}[3s]) > 0
        for: 0s
        labels: {action: protect, $margins}
YML
cat > "$tmp/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$tmp/std.rules.yml]
alerting:
  alertmanagers: [{static_configs: [{targets: ['127.0.0.1:$amport']}]}]
scrape_configs:
  - job_name: memcg
    static_configs: [{targets: ['127.0.0.1:$port']}]
YML
cat > "$tmp/am.yml" <<YML
route:
  receiver: memcg
  group_by: [alertname, cgroup]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: memcg
    webhook_configs:
      - url: '$base/api/v1/alertmanager'
        http_config: {authorization: {type: Bearer, credentials_file: $tmp/token}}
YML
"$exporter" --web.listen-address="127.0.0.1:$port" --cgroup.include="/|/memcg_exporter_test_rules_bench_.*" \
  --no-collector.vmscan --controller.enable --controller.allow="/memcg_exporter_test_rules_bench_.*" \
  --controller.token-file="$tmp/token" --controller.journal="$tmp/journal" --controller.audit-log="$tmp/audit.jsonl" \
  --rules.file="$tmp/inproc.rules.yml" --history.interval=100ms --rules.protect-hold=0s \
  2>"$tmp/exporter.log" &
pids+=($!)
"$am_bin" --config.file="$tmp/am.yml" --storage.path="$tmp/am" --web.listen-address="127.0.0.1:$amport" \
  --cluster.listen-address= 2>"$tmp/am.log" &
pids+=($!)
"$prom_bin" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom" \
  --web.listen-address="127.0.0.1:$promport" 2>"$tmp/prom.log" &
pids+=($!)
for u in "$base/-/ready" "http://127.0.0.1:$amport/-/ready" "http://127.0.0.1:$promport/-/ready"; do
  wait_http "$u" 30 || { echo "not ready: $u"; tail -5 "$tmp"/*.log; exit 1; }
done
touch "$tmp/audit.jsonl"
echo "== condition-to-actuation latency ($runs runs each, alternating; load: $(cut -d' ' -f1-3 /proc/loadavg))"
python3 "$here/rules_latency.py" "$tmp" "$base" "http://127.0.0.1:$promport" "$tmp/audit.jsonl" "$runs"
lat_rc=$?
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
pids=()

# --- 2. rule evaluation CPU at $n cgroups
src="$here/../tests/fixtures/cgroupfs/v1"
cp -r "$src" "$tmp/fs"
for i in $(seq -w 1 "$n"); do
  d="$tmp/fs/memory/bench/c$i"
  mkdir -p "$d"
  find "$src/memory/web" -maxdepth 1 -type f -exec cp {} "$d/" \;
done
port=$(free_port)
"$exporter" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$tmp/fs" --no-collector.vmscan \
  --cgroup.limit=5000 --rules.evaluation-interval=1s --rules.file="$here/../alerts/*.rules.yml" \
  2>"$tmp/exporter_cpu.log" &
pid=$!
pids+=($pid)
wait_http "http://127.0.0.1:$port/-/ready" 30 || { echo "exporter not ready"; tail -5 "$tmp/exporter_cpu.log"; exit 1; }
tid=$(grep -l '^memcg-rules$' /proc/$pid/task/*/comm | head -1 | cut -d/ -f5)
[ -n "$tid" ] || { echo "no memcg-rules thread"; exit 1; }
tick=$(getconf CLK_TCK)
sleep "$warm"
m() { curl -fsS "http://127.0.0.1:$port/metrics" | awk -v m="$1" 'index($1, m) == 1 {s += $2} END {print s + 0}'; }
e0=$(m memcg_exporter_rule_evaluations_total)
read -r u0 s0 < <(awk '{print $14, $15}' /proc/$pid/task/$tid/stat)
read -r pu0 ps0 < <(awk '{print $14, $15}' /proc/$pid/stat)
t0=$(date +%s.%N)
sleep "$cpu_secs"
read -r u1 s1 < <(awk '{print $14, $15}' /proc/$pid/task/$tid/stat)
read -r pu1 ps1 < <(awk '{print $14, $15}' /proc/$pid/stat)
t1=$(date +%s.%N)
e1=$(m memcg_exporter_rule_evaluations_total)
series=$(curl -fsS "http://127.0.0.1:$port/metrics" | grep -c '^memcg_memory_usage_bytes{')
groups=$(curl -fsS "http://127.0.0.1:$port/api/v1/rules" | jq '.data.groups | length')
rules=$(curl -fsS "http://127.0.0.1:$port/api/v1/rules" | jq '[.data.groups[].rules[]] | length')
health=$(curl -fsS "http://127.0.0.1:$port/api/v1/rules" | jq '[.data.groups[].rules[] | select(.health != "ok")] | length')
# CPU of one round (every group once), then the share of a core at intervals.
round_ms=$(echo "scale=3; 1000 * ($u1 + $s1 - $u0 - $s0) / $tick / (($e1 - $e0) / $groups)" | bc)
all_cpu=$(echo "scale=2; 100 * ($pu1 + $ps1 - $pu0 - $ps0) / $tick / ($t1 - $t0)" | bc)
pct() { echo "scale=3; 100 * $round_ms / $1" | bc; }
echo
echo "== rule evaluation CPU: shipped rules ($groups groups, $rules rules, $health not ok), $series cgroups"
echo "measured every 1 s for ${cpu_secs} s after ${warm} s ([2m]/[5m] windows hold min(run, window) of 1 s samples)"
echo "rule thread (memcg-rules): $round_ms ms CPU per round of all groups ($((e1 - e0)) group evaluations)"
echo "share of a core: every 1s $(pct 1000)%, every 15s $(pct 15000)%, every 1m (the default) $(pct 60000)%"
echo "whole exporter meanwhile (history sampler, 1 s, included): ${all_cpu}%"
cpu_ok=$(echo "$(pct 60000) <= 1 && $(pct 15000) <= 1" | bc)
echo "target (rule evaluation <= 1% of a core at the default 1m and at 15s): $([ "$cpu_ok" = 1 ] && echo met || echo 'NOT met')"
[ "$lat_rc" = 0 ] && [ "$cpu_ok" = 1 ]
