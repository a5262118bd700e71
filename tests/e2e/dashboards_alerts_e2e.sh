#!/usr/bin/env bash
# End to end, real kernel: a real Prometheus (Debian's package) scrapes the exporter every
# second and evaluates alerts/memcg_exporter.rules.yml unchanged, while a real reclaim
# storm runs in one test memcg and another sits idle.
#   (c) MemcgReclaimStallLatencyHigh fires for the storm cgroup, and no alert of ours
#       ever fires (nor pends) for the idle one; every rule evaluates without error;
#   (b) every PromQL expression of dashboards/*.json (panel targets, template variables,
#       annotations), with Grafana's variables substituted, runs without error against
#       that Prometheus, and the core panels return data for the storm cgroup.
# Prints which alerts fired, for which cgroup, and when (seconds after the storm began).
#
# usage: dashboards_alerts_e2e.sh path/to/memcg_exporter
# Needs root and cgroup v1 memory (exit 77 otherwise: SKIPPED). Creates
# memcg_exporter_test_alerts_{storm,idle.}<pid> (64 MiB and 128 MiB), a file in
# /var/tmp, a private tracefs instance; removes all of it on exit, also on failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "dashboards/alerts e2e: SKIPPED: needs root and cgroup v1 memory"
  exit 77
fi
for tool in prometheus curl python3; do
  command -v $tool >/dev/null || { echo "dashboards/alerts e2e: SKIPPED: $tool not installed (scripts/deps.sh test)"; exit 77; }
done

# How long the storm may take to make the alert fire: its `for` (1m) plus the time the
# 2m-window p99 needs to cross the threshold, plus slack for a loaded machine: one
# scrape that misses its 1 s timeout marks the series stale, the expression is empty
# for an evaluation and the `for` starts again, so 120 s (one restart's worth) was
# too tight under load; 240 s allows a few. Polled: a quick run still ends at ~65 s.
fire_deadline=${MEMCG_E2E_FIRE_DEADLINE:-240}
storm_label="/memcg_exporter_test_alerts_storm_$$"
idle_label="/memcg_exporter_test_alerts_idle.$$"  # a dot: the regex escaping of $cgroup is exercised
storm="/sys/fs/cgroup/memory$storm_label"
idle="/sys/fs/cgroup/memory$idle_label"
tmp=$(mktemp -d /var/tmp/memcg_exporter_test_alerts_XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for d in "$storm" "$idle"; do
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for d in "$storm" "$idle"; do
    [ -d "$d" ] || continue
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$d" 2>/dev/null && break; sleep 0.2; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir "$storm" "$idle" || exit 1
echo $((64 << 20)) > "$storm/memory.limit_in_bytes"
echo $((128 << 20)) > "$idle/memory.limit_in_bytes"

start_listening -/ready 15 "$tmp/exporter.log" "$exporter" --web.listen-address=127.0.0.1:@PORT@ \
  --cgroup.include="/|/memcg_exporter_test_alerts_.*" \
  --collector.vmscan.instance="memcg_exporter_test_alerts_$$" --collector.vmscan.locks \
  --collector.taskstats \
  --controller.enable --controller.allow="/memcg_exporter_test_alerts_none" \
  --controller.journal="$tmp/journal"
epid=$listen_pid eport=$listen_port
[ -n "$epid" ] && pids+=($epid)
check "exporter ready" [ -n "$epid" ]

cat > "$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $repo/alerts/memcg_exporter.rules.yml
scrape_configs:
  - job_name: memcg
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
start_prometheus "$tmp/prometheus.yml" "$tmp"
ppid=$prom_pid pport=$prom_port
[ -n "$ppid" ] && pids+=($ppid)
check "prometheus ready" [ -n "$ppid" ]
if [ $fail -gt 0 ]; then
  tail -5 "$tmp/exporter.log" "$tmp/prometheus.log"
  summary "dashboards/alerts e2e"; exit 1
fi
purl="http://127.0.0.1:$pport"
query() { curl -fsS -G "$purl/api/v1/query" --data-urlencode "query=$1"; }
count_of() {  # count_of PROMQL -> number of series in an instant result
  query "$1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))'
}

# The idle cgroup: one sleeping task and a small file read once, far below its limit.
dd if=/dev/zero of="$tmp/small" bs=1M count=8 status=none
sh -c "echo \$\$ > $idle/cgroup.procs; cat $tmp/small > /dev/null; exec sleep 600" &
pids+=($!)

# The storm: the 64 MiB cgroup streams a 512 MiB file (8x its limit) over and over, its
# page cache dropped before each pass, while a second task writes and rewrites 256 MiB
# (dirty pages: limit reclaim waits on writeback). Everything charged to the cgroup.
dd if=/dev/zero of="$tmp/big" bs=1M count=512 status=none && sync
drop='import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)'
sh -c "echo \$\$ > $storm/cgroup.procs; while :; do python3 -c '$drop' $tmp/big; cat $tmp/big > /dev/null; done" &
pids+=($!)
sh -c "echo \$\$ > $storm/cgroup.procs; while :; do dd if=/dev/zero of=$tmp/w bs=1M count=256 status=none; done" &
pids+=($!)
t0=$SECONDS
t0_unix=$(date +%s)

alert_state() {  # alert_state NAME CGROUP -> firing | pending | none
  curl -fsS "$purl/api/v1/alerts" | python3 -c '
import json, sys
name, cg = sys.argv[1], sys.argv[2]
st = [a["state"] for a in json.load(sys.stdin)["data"]["alerts"]
      if a["labels"].get("alertname") == name and a["labels"].get("cgroup") == cg]
print("firing" if "firing" in st else "pending" if st else "none")' "$1" "$2"
}
fired_at=""
pending_at=""
while [ $((SECONDS - t0)) -lt "$fire_deadline" ]; do
  s=$(alert_state MemcgReclaimStallLatencyHigh "$storm_label")
  [ "$s" = pending ] && [ -z "$pending_at" ] && pending_at=$((SECONDS - t0))
  if [ "$s" = firing ]; then fired_at=$((SECONDS - t0)); break; fi
  sleep 1
done
elapsed=$((SECONDS - t0))
echo "storm: MemcgReclaimStallLatencyHigh pending after ${pending_at:-never} s, firing after ${fired_at:-never} s"
query "memcg:reclaim_stall_seconds:p99_2m{cgroup=\"$storm_label\"}" | python3 -c '
import json,sys; r=json.load(sys.stdin)["data"]["result"]; print("storm: p99 (2m) now", [x["value"][1] for x in r])'
query "memcg:reclaim_stalls:rate2m{cgroup=\"$storm_label\"}" | python3 -c '
import json,sys; r=json.load(sys.stdin)["data"]["result"]; print("storm: stalls/s (2m) now", [x["value"][1] for x in r])'
check "(c) MemcgReclaimStallLatencyHigh fires for the storm cgroup (within ${fire_deadline}s)" [ -n "$fired_at" ]

# Every rule of the file evaluates on real data without error (a matching error would
# silently keep an alert from ever firing).
rules_health() {
  curl -fsS "$purl/api/v1/rules" | python3 -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
bad = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
print("rules: %d evaluated, %d not ok %s" % (len(rules), len(bad), bad))
sys.exit(1 if bad or not rules else 0)'
}
check "every rule of alerts/memcg_exporter.rules.yml evaluates without error" rules_health

# (b) every dashboard query, over the run so far, against this Prometheus.
check "(b) every dashboard query runs; core panels have data for $storm_label" \
  python3 "$here/dashboards_promql.py" queries --prometheus "$purl" \
    --dashboards "$repo"/dashboards/*.json --cgroup "$storm_label" --cgroup "$idle_label" \
    --scrape-interval 1s --range $((elapsed + 5)) --report "$tmp/queries.txt" \
    --core "memcg-cgroup-drilldown:Usage vs limit:ABCD" \
    --core "memcg-cgroup-drilldown:Reclaim stall latency percentiles" \
    --core "memcg-cgroup-drilldown:Reclaim rates" \
    --core "memcg-cgroup-drilldown:Limit hits (failcnt / memory.events):A" \
    --core "memcg-node-overview:Reclaim stall time by cgroup (top 10)" \
    --core "memcg-node-overview:Reclaim stall p99 by cgroup (top 10)" \
    --core "memcg-node-overview:Limit hits by cgroup (top 10)" \
    --core "memcg-reclaim-report:Reclaim per cgroup:BFGK" \
    --core "memcg-reclaim-report:Reclaim per process"
[ -f "$tmp/queries.txt" ] && sed 's/^/  /' "$tmp/queries.txt"

# (c) the idle cgroup: no alert of ours, firing or pending, at any point of the run. The
# stall series of an idle cgroup may be absent: it is also checked that the exporter
# did export the idle cgroup (its limit) so the silence is not a missing target.
check "(c) the idle cgroup is scraped (its limit is 128 MiB)" \
  [ "$(count_of "max_over_time(memcg_memory_limit_bytes{cgroup=\"$idle_label\"}[$((elapsed + 30))s]) == 134217728")" = 1 ]
query "count_over_time(up[$((elapsed + 30))s]) - sum_over_time(up[$((elapsed + 30))s])" | python3 -c '
import json,sys; r=json.load(sys.stdin)["data"]["result"]; print("scrapes failed during the run:", [x["value"][1] for x in r])'
check "(c) no alert ever pending or firing for the idle cgroup" \
  [ "$(count_of "max_over_time(ALERTS{cgroup=\"$idle_label\"}[$((elapsed + 30))s])")" = 0 ]
check "(c) its stall p99 never crossed the threshold" \
  [ "$(count_of "max_over_time(memcg:reclaim_stall_seconds:p99_2m{cgroup=\"$idle_label\"}[$((elapsed + 30))s]) > on() group_left() memcg_exporter:threshold:reclaim_stall_p99_seconds")" = 0 ]

# Which alerts pended or fired in this run, for which cgroup, and when.
curl -fsS -G "$purl/api/v1/query_range" --data-urlencode 'query=ALERTS' \
  --data-urlencode "start=$t0_unix" --data-urlencode "end=$(date +%s)" --data-urlencode step=1 |
  python3 -c '
import json, sys
t0 = float(sys.argv[1])
rows = sorted(json.load(sys.stdin)["data"]["result"], key=lambda s: (s["metric"]["alertname"], s["metric"].get("cgroup", ""), s["metric"]["alertstate"] != "pending"))
for s in rows:
    m = s["metric"]
    print("%-7s %-32s cgroup=%-44s from +%ds to +%ds" % (m["alertstate"] + ":", m["alertname"], m.get("cgroup", "-"),
          float(s["values"][0][0]) - t0, float(s["values"][-1][0]) - t0))' "$t0_unix"

if [ $fail -gt 0 ]; then
  echo "--- exporter log"; tail -20 "$tmp/exporter.log"
  echo "--- prometheus log"; tail -20 "$tmp/prometheus.log"
fi
summary "dashboards/alerts e2e"
