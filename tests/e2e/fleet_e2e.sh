#!/usr/bin/env bash
# e2e.fleet (root, cgroup v1 memory): one central ruler drives two nodes'
# controllers through Alertmanager, each exporter pulling its own alerts
# (--rules.alertmanager.pull), on loopback:
#  - a real Prometheus scrapes two exporters standing for two nodes (target
#    labels node=n1 / node=n2; each exporter sees and may protect only its own
#    64 MiB test memcg) and evaluates an action: protect rule over both;
#    a real Alertmanager receives its alerts (no receiver for them);
#  - three cycles (n1, n2, n1): a workload streams a file 4x the memcg's
#    limit; the node's exporter protects its memcg and the other exporter
#    protects nothing; the workload stops, the alert goes, the protection ends
#    after the hold. Each cycle times the alert appearing in Alertmanager's
#    API -> the protection in the exporter's controller state, and the first
#    limit hit -> the protection; the medians are printed beside the
#    in-process path's figures (bench/rules_latency.sh);
#  - Alertmanager stopped while n1 is protected and n2 comes under pressure:
#    n2 is not protected (nothing new), n1's protection ends on its hold
#    counted from the failed pull (not sooner), the failure is a metric and
#    one log line.
# usage: fleet_e2e.sh path/to/memcg_exporter
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "fleet e2e: SKIPPED: needs root and cgroup v1 memory"
  exit 77
fi
command -v prometheus >/dev/null || { echo "fleet e2e: SKIPPED: no prometheus (scripts/deps.sh test)"; exit 77; }
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager) ||
  { echo "fleet e2e: SKIPPED: no prometheus-alertmanager (scripts/deps.sh test)"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_fleet_e2e_XXXXXX)
cg1="/memcg_exporter_test_fleet_n1_$$"
cg2="/memcg_exporter_test_fleet_n2_$$"
hold=4
pids=()
wls=()
cleanup() {
  for p in "${wls[@]}" "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${wls[@]}" "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for l in "$cg1" "$cg2"; do
    d=/sys/fs/cgroup/memory$l
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    sleep 0.1; rmdir "$d" 2>/dev/null
  done
  rm -rf "$tmp"
  free_ports_release
}
trap cleanup EXIT
for l in "$cg1" "$cg2"; do
  mkdir /sys/fs/cgroup/memory$l
  echo $((64 << 20)) > /sys/fs/cgroup/memory$l/memory.limit_in_bytes
done
echo "fleet-e2e-token" > "$tmp/token"
auth="Authorization: Bearer fleet-e2e-token"

cat > "$tmp/am.yml" <<'YML'
route:
  receiver: nowhere
  group_wait: 0s
receivers:
  - name: nowhere
YML
start_alertmanager "$am_bin" "$tmp/am.yml" "$tmp"
ampid=$am_pid amport=$am_port am=$am_url
[ -n "$ampid" ] && pids+=($ampid)
check "alertmanager ready" [ -n "$ampid" ]

p1=$(free_port); p2=$(free_port)
start_exporter() {  # start_exporter N PORT CGROUP
  "$exporter" --web.listen-address="127.0.0.1:$2" --cgroup.include="/|$3" --no-collector.vmscan \
    --controller.enable --controller.allow="$3" --controller.token-file="$tmp/token" \
    --controller.journal="$tmp/journal$1" --rules.protect-hold=${hold}s \
    --rules.alertmanager-url="$am" --rules.alertmanager.timeout=2s \
    --rules.alertmanager.pull --rules.alertmanager.pull-interval=500ms \
    --rules.alertmanager.pull-matcher="node=\"n$1\"" 2>"$tmp/exporter$1.log" &
  pids+=($!)
}
start_exporter 1 "$p1" "$cg1"
start_exporter 2 "$p2" "$cg2"
e1="http://127.0.0.1:$p1"; e2="http://127.0.0.1:$p2"
check "exporter n1 ready" wait_http "$e1/-/ready" 60
check "exporter n2 ready" wait_http "$e2/-/ready" 60

cat > "$tmp/fleet.rules.yml" <<'YML'
groups:
  - name: fleet
    rules:
      - alert: MemcgExporterTestFleet
        expr: rate(memcg_memory_failcnt_total{cgroup=~"/memcg_exporter_test_fleet_.*"}[3s]) > 0
        labels: {action: protect, start_margin: 8MiB, target_margin: 16MiB}
YML
cat > "$tmp/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ['$tmp/fleet.rules.yml']
alerting:
  alertmanagers: [{static_configs: [{targets: ['127.0.0.1:$amport']}]}]
scrape_configs:
  - job_name: memcg
    static_configs:
      - {targets: ['127.0.0.1:$p1'], labels: {node: n1}}
      - {targets: ['127.0.0.1:$p2'], labels: {node: n2}}
YML
start_prometheus "$tmp/prometheus.yml" "$tmp" --rules.alert.resend-delay=1s
[ -n "$prom_pid" ] && pids+=($prom_pid)
check "prometheus ready" [ -n "$prom_pid" ]

state() { curl -s -H "$auth" "$1/api/v1/controller/state"; }
protected() { state "$1" | jq -e --arg c "$2" 'any(.protections[]; .cgroup == $c)' >/dev/null; }
none_protected() { local s; s=$(state "$1") && jq -e '(.protections | length) == 0' >/dev/null <<<"$s"; }
am_has() {
  curl -s "$am/api/v2/alerts?active=true&filter=alertname%3D%22MemcgExporterTestFleet%22" |
    jq -e --arg c "$1" 'any(.[]; .labels.cgroup == $c)' >/dev/null
}
am_gone() { curl -fsS "$am/api/v2/alerts" >/dev/null && ! am_has "$1"; }
now() { date +%s.%N; }
workload() {  # workload CGROUP: a fresh 256 MiB file again and again (4x the limit)
  ( echo $BASHPID > /sys/fs/cgroup/memory$1/cgroup.procs
    while :; do rm -f "$tmp/big$BASHPID"; dd if=/dev/zero of="$tmp/big$BASHPID" bs=1M count=256 status=none; done ) &
  wl=$!
  wls+=($wl)
}
m() { metric "$1/metrics" "$2"; }

am_lat=(); hit_lat=()
cycle() {  # cycle N: node N's memcg under pressure; its exporter protects it, the other nothing
  local n=$1 cg base other t_hit="" t_am="" t_prot="" f0 deadline other_clean=1
  if [ "$n" = 1 ]; then cg=$cg1; base=$e1; other=$e2; else cg=$cg2; base=$e2; other=$e1; fi
  f0=$(cat /sys/fs/cgroup/memory$cg/memory.failcnt)
  workload "$cg"
  deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ] && { [ -z "$t_am" ] || [ -z "$t_prot" ]; }; do
    [ -z "$t_hit" ] && [ "$(cat /sys/fs/cgroup/memory$cg/memory.failcnt)" -gt "$f0" ] && t_hit=$(now)
    [ -z "$t_am" ] && am_has "$cg" && t_am=$(now)
    [ -z "$t_prot" ] && protected "$base" "$cg" && t_prot=$(now)
    none_protected "$other" || other_clean=0
    sleep 0.05
  done
  check "cycle on n$n: Alertmanager lists the alert" [ -n "$t_am" ]
  check "cycle on n$n: exporter n$n protects $cg" [ -n "$t_prot" ]
  if [ -n "$t_am" ] && [ -n "$t_prot" ] && [ -n "$t_hit" ]; then
    am_lat+=("$(echo "($t_prot - $t_am) * 1000" | bc)")
    hit_lat+=("$(echo "($t_prot - $t_hit) * 1000" | bc)")
    printf '  n%s: limit hit -> protected %.0f ms; alert in Alertmanager -> protected %.0f ms\n' \
      "$n" "${hit_lat[-1]}" "${am_lat[-1]}"
  fi
  sleep 2
  none_protected "$other" || other_clean=0
  check "cycle on n$n: the other exporter protected nothing" [ "$other_clean" = 1 ]
  kill -9 "$wl"; wait "$wl" 2>/dev/null
  check "cycle on n$n: the alert leaves Alertmanager" poll_until 60 am_gone "$cg"
  local t_gone; t_gone=$(now)
  check "cycle on n$n: unprotected after the hold" poll_until 60 bash -c "! curl -s -H '$auth' '$base/api/v1/controller/state' | jq -e --arg c '$cg' 'any(.protections[]; .cgroup == \$c)' >/dev/null"
  printf '  n%s: unprotected %.1f s after the alert left Alertmanager (hold %s s)\n' "$n" "$(echo "$(now) - $t_gone" | bc)" "$hold"
}
cycle 1
cycle 2
cycle 1
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "%.0f", a[int((NR+1)/2)]}'; }
echo "FLEET LATENCY (median of ${#am_lat[@]}): alert in Alertmanager -> protected $(median "${am_lat[@]}") ms;" \
  "limit hit -> protected $(median "${hit_lat[@]}") ms (pull interval 500 ms, scrape and evaluation 1 s)"
echo "  in-process path (bench/rules_latency.sh, README): limit hit -> first reclaiming write p50 125-141 ms;" \
  "Prometheus + Alertmanager webhook p50 675-1,293 ms"
check "three cycles timed" [ "${#am_lat[@]}" = 3 ]
r=$(m "$e1" "memcg_exporter_rule_actions_total{rule=\"MemcgExporterTestFleet\",action=\"protect\",result=\"ok\"}")
check "n1's protections counted (2 cycles): $r" [ "$r" = 2 ]
r=$(m "$e2" "memcg_exporter_rule_actions_total{rule=\"MemcgExporterTestFleet\",action=\"protect\",result=\"ok\"}")
check "n2's protections counted (1 cycle): $r" [ "$r" = 1 ]

# Alertmanager stopped: nothing new, the held protection ends on its hold.
workload "$cg1"; wl1=$wl
check "n1 protected again" poll_until 60 protected "$e1" "$cg1"
sleep 1
lines=$(wc -l <"$tmp/exporter1.log")
# Before the kill: the first failed pull, where the hold starts, comes after it.
t_stop=$(now)
kill "$ampid"; wait "$ampid" 2>/dev/null
workload "$cg2"; wl2=$wl
t_end=""; clean2=1
deadline=$((SECONDS + hold + 20))
while [ $SECONDS -lt $deadline ]; do
  none_protected "$e2" || clean2=0
  if [ -z "$t_end" ] && ! protected "$e1" "$cg1"; then t_end=$(now); fi
  [ -n "$t_end" ] && [ "$(echo "$(now) - $t_end > 3" | bc)" = 1 ] && break
  sleep 0.1
done
check "Alertmanager stopped: n2 under pressure is not protected (nothing new)" [ "$clean2" = 1 ]
check "Alertmanager stopped: n1's protection ended" [ -n "$t_end" ]
if [ -n "$t_end" ]; then
  took=$(echo "$t_end - $t_stop" | bc)
  echo "  n1 unprotected ${took} s after Alertmanager stopped (hold ${hold} s, pull 500 ms)"
  check "not before its hold (${took} >= ${hold})" [ "$(echo "$took >= $hold" | bc)" = 1 ]
  check "within the hold plus a pull, a timeout and a tick (${took} <= $((hold + 4)))" \
    [ "$(echo "$took <= $hold + 4" | bc)" = 1 ]
fi
check "n1 logged the outage once" [ "$(tail -n +$((lines + 1)) "$tmp/exporter1.log" | grep -c 'no Alertmanager answered')" = 1 ]
check "n1's pull errors counted" [ "$(m "$e1" "memcg_exporter_alert_pull_errors_total{alertmanager=\"$am\"}")" -ge 1 ]
check "n1 reachable Alertmanagers 0" [ "$(m "$e1" memcg_exporter_alert_pull_alertmanagers_reachable)" = 0 ]
kill -9 "$wl1" "$wl2" 2>/dev/null; wait "$wl1" "$wl2" 2>/dev/null
summary fleet
