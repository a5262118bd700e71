#!/usr/bin/env bash
# End-to-end over HTTP: every path of README's Endpoints table and every flag
# of its Flags tables, on the real binary (root, cgroup v1 memory; the parts
# that need neither run first on the committed fixture tree).
#
#   fixture tree (no root): --web.telemetry-path, /-/healthy, /-/ready, the
#     landing page, /api/v1/metrics against the scrape,
#     --path.cgroupfs/--path.procfs, a corrupted
#     memory.stat (collector failure, scrape error counted, the log line with
#     the path and the line, the rest served), --collector.* switches,
#     --collector.memory_stat.fields, --collector.memory_usage.kmem (and .memsw),
#     --cgroup.include/exclude/max-depth/limit/refresh-interval-ms,
#     --web.gzip-level, --log.level.
#   live (root, v1): /api/v1/cgroups (ids = directory inodes), /api/v1/delays
#     with the taskstats collector, /api/v1/reclaim/report and ?window=,
#     /api/v1/locks with the lock probes (and lock-callers, lock-addresses),
#     --collector.vmscan.instance/lru-detail/shrink-slab in the instance,
#     --path.tracefs, the controller endpoints' 401/403/400/404/405/409/503,
#     --controller.sched-policy on the controller's threads,
#     memcg_exporter_cgroups_vanished_total above 0 (cgroups removed while
#     scrapes run).
# Not here: the 500 answer of a handler that throws (no request makes one
# throw): unit.HttpServer.AThrowingHandlerAnswers500AndTheServerStaysUp gives
# the real server a throwing route and asks it over HTTP.
#
# Bad flags (exit 2): bad_flags_e2e.sh.
#
# usage: http_surface_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
for tool in curl jq python3; do
  command -v $tool >/dev/null || { echo "http e2e: SKIPPED: $tool not installed (scripts/deps.sh test)"; exit 77; }
done
fixtures=$(cd "$here/../fixtures" && pwd)
tmp=$(mktemp -d /var/tmp/memcg_exporter_test_tests_http_XXXXXX)
mem=/sys/fs/cgroup/memory
base="/memcg_exporter_test_tests_http_$$"
inst="memcg_exporter_test_tests_http_$$"
pids=()
cgs=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  # Children the vanish loop may have left when the script was cut short.
  for d in "$mem$base"/v* "$mem$base"/t*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
  for ((i = ${#cgs[@]} - 1; i >= 0; i--)); do
    d=${cgs[$i]}
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in $(seq 1 30); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
  done
  [ -n "${tfs_mounted:-}" ] && umount "$tmp/tracefs"
  rm -rf "$tmp"
}
trap cleanup EXIT

start() {  # start NAME ARGS...: exporter on a free port; sets $url and $epid; log in $tmp/NAME.log
  local name=$1 try; shift
  for try in 1 2 3; do  # another process may take the free port first
    port=$(free_port)
    "$exporter" --web.listen-address="127.0.0.1:$port" "$@" 2>"$tmp/$name.log" &
    epid=$!
    pids+=($epid)
    url="http://127.0.0.1:$port"
    wait_http "$url/-/healthy" 20 && return 0
    grep -q 'cannot listen' "$tmp/$name.log" || return 1
    # It exited (reaped here, so its pid is never signalled again): try another port.
    wait "${pids[-1]}" 2>/dev/null
    unset 'pids[-1]'
  done
  return 1
}
stop() {
  kill "$epid" 2>/dev/null; wait "$epid" 2>/dev/null
  local keep=()
  for p in "${pids[@]}"; do [ "$p" != "$epid" ] && keep+=("$p"); done
  pids=("${keep[@]}")
}
code() { curl -s -o "$tmp/body" -w '%{http_code}' "$@"; }
has() { curl -fsS "$1" > "$tmp/has" && grep -qE "$2" "$tmp/has"; }
fixargs=(--path.cgroupfs="$fixtures/cgroupfs/v1" --path.procfs="$fixtures/procfs" --no-collector.vmscan)

# --- fixture tree: paths, telemetry path, parse failure -------------------------
check "fixture: exporter up (--web.telemetry-path=/custom/m)" \
  start fix "${fixargs[@]}" --web.telemetry-path=/custom/m
check "/-/healthy: 200" [ "$(code "$url/-/healthy")" = 200 ]
check "/-/ready: 200" [ "$(code "$url/-/ready")" = 200 ]
check "telemetry path /custom/m serves the exposition" has "$url/custom/m" '^memcg_memory_usage_bytes\{cgroup="/web"\}'
check "/metrics is 404 when the telemetry path is elsewhere" [ "$(code "$url/metrics")" = 404 ]
check "landing page links the telemetry path and lists the collectors" \
  bash -c "curl -fsS $url/ | grep -q '/custom/m' && curl -fsS $url/ | grep -q memory_stat"
check "/api/v1/metrics: 200 JSON" bash -c "[ \"\$(curl -fsS $url/api/v1/metrics | jq -r '.metrics | length')\" -gt 20 ]"
# Every family the scrape has is in the metric table, with its type.
curl -fsS "$url/custom/m" | awk '/^# TYPE/ {print $3, $4}' | sort > "$tmp/scrape_types"
curl -fsS "$url/api/v1/metrics" | jq -r '.metrics[] | "\(.name) \(.type)"' | sort > "$tmp/api_types"
missing=$(comm -23 "$tmp/scrape_types" "$tmp/api_types")
check "/api/v1/metrics has every scraped family with its type ($(wc -l < "$tmp/scrape_types") families; missing: ${missing:-none})" [ -z "$missing" ]
check "/api/v1/metrics: memcg_memory_usage_bytes is a gauge labelled cgroup" bash -c \
  "curl -fsS $url/api/v1/metrics | jq -e '.metrics[] | select(.name==\"memcg_memory_usage_bytes\" and .type==\"gauge\" and .labels==[\"cgroup\"])' >/dev/null"
check "/api/v1/cgroups on the fixture: the four cgroups, depths" bash -c \
  "[ \"\$(curl -fsS $url/api/v1/cgroups | jq -r '[.cgroups[] | \"\(.cgroup):\(.depth)\"] | sort | join(\" \")')\" = '/:0 /system.slice:1 /web/frontend:2 /web:1' ]"
web_ino=$(stat -c %i "$fixtures/cgroupfs/v1/memory/web")
check "/api/v1/cgroups: id is the directory inode (/web: $web_ino)" bash -c \
  "curl -fsS $url/api/v1/cgroups | jq -e '.cgroups[] | select(.cgroup==\"/web\" and .id==$web_ino)' >/dev/null"
check "unknown API path: 404 JSON error" bash -c "[ \$(curl -s -o $tmp/b -w '%{http_code}' $url/api/v1/nope) = 404 ] && jq -e .error $tmp/b >/dev/null"
check "/api/v1/delays without taskstats: 503" [ "$(code "$url/api/v1/delays?cgroup=/web")" = 503 ]
check "/api/v1/delays without ?cgroup: 400" [ "$(code "$url/api/v1/delays")" = 400 ]
# A mutating route's auth comes first: with no --controller.token-file it is
# refused (403, naming the flag) before the disabled controller is asked.
check "controller's mutating endpoint without a token file: 403 naming --controller.token-file" bash -c \
  "[ \$(curl -s -o $tmp/b -w '%{http_code}' -X POST --data '{}' $url/api/v1/controller/protect) = 403 ] && grep -q -- '--controller.token-file' $tmp/b"
check "controller state without the controller: 503" [ "$(code "$url/api/v1/controller/state")" = 503 ]
check "/api/v1/reclaim/report without the vmscan collector: 503" [ "$(code "$url/api/v1/reclaim/report")" = 503 ]
check "/api/v1/locks without the vmscan collector: 503" [ "$(code "$url/api/v1/locks")" = 503 ]
stop

cp -r "$fixtures/cgroupfs/v1" "$tmp/tree"
sed -i 's/^total_rss .*/total_rss 12x34/' "$tmp/tree/memory/web/memory.stat"
check "corrupt tree: exporter up" start bad --path.cgroupfs="$tmp/tree" --path.procfs="$fixtures/procfs" --no-collector.vmscan
curl -fsS "$url/metrics" > "$tmp/bad.prom"
check "corrupt memory.stat: memory_stat collector fails" grep -qx 'memcg_exporter_collector_success{collector="memory_stat"} 0' "$tmp/bad.prom"
check "corrupt memory.stat: scrape error counted" bash -c "awk '\$1==\"memcg_exporter_scrape_errors_total{collector=\\\"memory_stat\\\"}\" && \$2>=1' $tmp/bad.prom | grep -q ."
check "corrupt memory.stat: other collectors still served" grep -q '^memcg_memory_usage_bytes{cgroup="/web"}' "$tmp/bad.prom"
check "corrupt memory.stat: nothing of that file is exported for /web" bash -c "! grep -q '^memcg_memory_stat_.*cgroup=\"/web\"' $tmp/bad.prom"
logline=$(grep -m1 'web/memory.stat' "$tmp/bad.log")
echo "parse failure log: $logline"
check "corrupt memory.stat: the log names the path" bash -c "echo '$logline' | grep -q '$tmp/tree/memory/web/memory.stat'"
check "corrupt memory.stat: the log quotes the line" bash -c "echo '$logline' | grep -q 'total_rss 12x34'"
stop

# --- fixture tree: collector, field and cgroup flags ---------------------------
check "flags: exporter up" start flags "${fixargs[@]}" --no-collector.memory_events \
  --collector.memory_stat.fields='total_cache|total_rss' --cgroup.exclude='/system\.slice' \
  --cgroup.max-depth=1 --web.gzip-level=9 --log.level=warn
curl -fsS "$url/metrics" > "$tmp/flags.prom"
check "--no-collector.memory_events: its series and success row gone" bash -c \
  "! grep -q 'collector=\"memory_events\"' $tmp/flags.prom && ! grep -q '^memcg_memory_failcnt_total' $tmp/flags.prom"
check "--collector.memory_stat.fields: only total_cache and total_rss" bash -c \
  "[ \"\$(grep -o '^memcg_memory_stat_[a-z_]*' $tmp/flags.prom | sort -u | tr '\n' ' ')\" = 'memcg_memory_stat_hierarchical_cache_bytes memcg_memory_stat_hierarchical_rss_bytes ' ]"
check "--cgroup.exclude: /system.slice not exported" bash -c "! grep -q 'cgroup=\"/system.slice\"' $tmp/flags.prom"
check "--cgroup.max-depth=1: /web/frontend not exported, /web is" bash -c \
  "! grep -q 'cgroup=\"/web/frontend\"' $tmp/flags.prom && grep -q 'cgroup=\"/web\"' $tmp/flags.prom"
check "memcg_exporter_cgroups 2 (/ and /web)" grep -qx 'memcg_exporter_cgroups 2' "$tmp/flags.prom"
check "--web.gzip-level=9: gzip when asked, same content" bash -c \
  "curl -fsS -H 'Accept-Encoding: gzip' $url/metrics | gzip -dc | grep -q '^memcg_memory_usage_bytes{cgroup=\"/web\"}'"
check "--log.level=warn: no info lines" bash -c "! grep -q 'level=info' $tmp/flags.log"
stop
check "--cgroup.limit=2: exporter up" start limit "${fixargs[@]}" --cgroup.limit=2 \
  --collector.disable-defaults --collector.memory_usage
curl -fsS "$url/metrics" > "$tmp/limit.prom"
check "--cgroup.limit=2: 2 exported, the rest dropped (>= 1; the walk stops at the limit)" bash -c \
  "grep -qx 'memcg_exporter_cgroups 2' $tmp/limit.prom && awk '\$1==\"memcg_exporter_cgroups_dropped\" && \$2>=1' $tmp/limit.prom | grep -q ."
check "--collector.disable-defaults --collector.memory_usage: only memory_usage runs" bash -c \
  "[ \"\$(grep -o '^memcg_exporter_collector_success{collector=\"[a-z_]*\"' $tmp/limit.prom | tr '\n' ' ')\" = 'memcg_exporter_collector_success{collector=\"memory_usage\" ' ]"
check "default: no kmem/kmem.tcp or memsw usage, peak or limit" bash -c \
  "! grep -qE '^memcg_(kmem|kmem_tcp|memsw)_(usage|peak|limit)_bytes' $tmp/limit.prom && grep -q '^memcg_memory_usage_bytes{' $tmp/limit.prom"
stop
check "--collector.memory_usage.kmem: exporter up" start kmem --path.cgroupfs="$tmp/tree" \
  --path.procfs="$fixtures/procfs" --no-collector.vmscan \
  --collector.disable-defaults --collector.memory_usage --collector.memory_usage.kmem \
  --collector.memory_usage.memsw --cgroup.refresh-interval-ms=0
curl -fsS "$url/metrics" > "$tmp/kmem.prom"
check "--collector.memory_usage.kmem: kmem and kmem.tcp usage, peak and limit" bash -c \
  "[ \$(grep -cE '^memcg_kmem(_tcp)?_(usage|peak|limit)_bytes\{cgroup=\"/web\"\}' $tmp/kmem.prom) = 6 ]"
check "--collector.memory_usage.memsw: memsw usage, peak and limit (swap accounting)" bash -c \
  "[ \$(grep -cE '^memcg_memsw_(usage|peak|limit)_bytes\{cgroup=\"/\"\}' $tmp/kmem.prom) = 3 ]"
mkdir "$tmp/tree/memory/web/added"
for f in "$tmp"/tree/memory/web/memory.*; do cp "$f" "$tmp/tree/memory/web/added/"; done
cp "$tmp/tree/memory/web/cgroup.procs" "$tmp/tree/memory/web/added/" 2>/dev/null || true
check "--cgroup.refresh-interval-ms=0: a cgroup made since is in the next scrape" bash -c \
  "curl -fsS $url/metrics | grep -q '^memcg_memory_usage_bytes{cgroup=\"/web/added\"}'"
rm -rf "$tmp/tree/memory/web/added"
stop

# --- live (root, v1) ----------------------------------------------------------
if [ "$(id -u)" != 0 ] || [ ! -f $mem/memory.limit_in_bytes ]; then
  echo "http e2e: live part SKIPPED: needs root and cgroup v1 memory at $mem"
  summary "http e2e" || exit 1
  exit 77
fi
cg="$mem$base"
mkdir "$cg" && cgs+=("$cg") && echo $((64 << 20)) > "$cg/memory.limit_in_bytes"
mkdir "$cg/child" && cgs+=("$cg/child")
sleep 600 & sleeper=$!; pids+=($sleeper)
echo $sleeper > "$cg/cgroup.procs"
head -c $((160 << 20)) /dev/zero > "$tmp/file" && sync
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$tmp/file"
echo "s3cret-token" > "$tmp/token"
delayacct0=$(cat /proc/sys/kernel/task_delayacct)
# --path.tracefs: a tracefs mount of our own (unmounted at exit).
mkdir "$tmp/tracefs" && mount -t tracefs nodev "$tmp/tracefs" && tfs_mounted=1
check "live: exporter up (taskstats, locks, lock-callers, lock-addresses, lru-detail, shrink-slab, controller)" \
  start live --cgroup.include="/|$base.*" --collector.taskstats --collector.taskstats.enable-delayacct \
  --path.tracefs="$tmp/tracefs" --collector.vmscan.instance="$inst" --collector.vmscan.lru-detail --collector.vmscan.shrink-slab \
  --collector.vmscan.lock-callers --collector.vmscan.lock-addresses \
  --controller.enable --controller.allow="$base.*" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/journal" --controller.sched-policy=idle --controller.poll-interval-ms=200 \
  --cgroup.refresh-interval-ms=200
check "live: /-/ready 200" [ "$(code "$url/-/ready")" = 200 ]
check "live: tracer up" poll_until 20 bash -c "curl -fsS $url/metrics | grep -qx 'memcg_trace_up 1'"
check "--path.tracefs + --collector.vmscan.instance: the instance is in our tracefs" [ -d "$tmp/tracefs/instances/$inst" ]
idir="$tmp/tracefs/instances/$inst/events"
check "--collector.vmscan.lru-detail: lru_isolate and lru_shrink_active enabled" bash -c \
  "[ \$(cat $idir/vmscan/mm_vmscan_lru_isolate/enable) = 1 ] && [ \$(cat $idir/vmscan/mm_vmscan_lru_shrink_active/enable) = 1 ]"
check "--collector.vmscan.shrink-slab: mm_shrink_slab_start/end enabled" bash -c \
  "[ \$(cat $idir/vmscan/mm_shrink_slab_start/enable) = 1 ] && [ \$(cat $idir/vmscan/mm_shrink_slab_end/enable) = 1 ]"
check "--collector.vmscan.lock-callers: a stacktrace trigger on contention_begin" \
  grep -q stacktrace "$idir/lock/contention_begin/trigger"
check "--collector.taskstats.enable-delayacct: kernel.task_delayacct on" [ "$(cat /proc/sys/kernel/task_delayacct)" = 1 ]
check "memcg_delay_accounting_enabled 1" has "$url/metrics" '^memcg_delay_accounting_enabled 1'
ino=$(stat -c %i "$cg")
check "/api/v1/cgroups: the test cgroup with id = its inode ($ino), depth 1, and its child" bash -c \
  "curl -fsS $url/api/v1/cgroups | jq -e '(.cgroups[] | select(.cgroup==\"$base\" and .id==$ino and .depth==1)) and (.cgroups[] | select(.cgroup==\"$base/child\" and .depth==2)) and (.mode==\"hybrid\" or .mode==\"v1\")' >/dev/null"
# Reclaim in the cgroup, so the report and the lock probes have something.
sh -c "echo \$\$ > $cg/cgroup.procs; exec cat $tmp/file > /dev/null"
check "/api/v1/delays?cgroup=: 200, the sleeper's pid in the table" poll_until 60 bash -c \
  "curl -fsS '$url/api/v1/delays?cgroup=$base' | grep -q '$sleeper'"
curl -fsS "$url/api/v1/delays?cgroup=$base" | head -c 300; echo
check "/api/v1/delays of an unknown cgroup: 404" [ "$(code "$url/api/v1/delays?cgroup=/memcg_exporter_test_nonexistent")" = 404 ]
report_has() { curl -fsS "$url/api/v1/reclaim/report" | grep -q "$base"; }
check "/api/v1/reclaim/report: 200, the cgroup's reclaim in it" poll_until 60 report_has
check "/api/v1/reclaim/report?window=5m: 200" [ "$(code "$url/api/v1/reclaim/report?window=5m")" = 200 ]
check "/api/v1/reclaim/report?window=30s: 200 JSON" bash -c "[ \$(curl -s -o $tmp/b -w '%{http_code}' '$url/api/v1/reclaim/report?window=30s') = 200 ] && jq -e . $tmp/b >/dev/null"
for w in bogus 5 0s -1m 5x; do
  check "/api/v1/reclaim/report?window=$w: 400" [ "$(code "$url/api/v1/reclaim/report?window=$w")" = 400 ]
done
check "/api/v1/locks: 200 with top_locks" bash -c "curl -fsS $url/api/v1/locks | jq -e 'has(\"top_locks\")' >/dev/null"
nlocks=$(curl -fsS "$url/api/v1/locks" | jq '.top_locks | length')
if [ "${nlocks:-0}" -gt 0 ]; then
  check "--collector.vmscan.lock-addresses: each lock row has its addr" bash -c \
    "curl -fsS $url/api/v1/locks | jq -e '[.top_locks[] | select(.id != null or .symbol != null) | has(\"addr\")] | all' >/dev/null"
else
  echo "live: no lock contention seen, lock-addresses rows not checked"
fi
# Controller endpoints' error paths.
post() {  # post PATH JSON [TOKEN]
  local auth=()
  [ -n "${3:-}" ] && auth=(-H "Authorization: Bearer $3")
  code -X POST "${auth[@]}" -H 'Content-Type: application/json' --data "$2" "$url/api/v1/controller/$1"
}
body='{"cgroup":"'$base'","start_margin_bytes":8388608,"target_margin_bytes":16777216}'
check "protect without a token: 401" [ "$(post protect "$body")" = 401 ]
check "protect with a wrong token: 403" [ "$(post protect "$body" wrong)" = 403 ]
check "state without a token: 401" [ "$(code "$url/api/v1/controller/state")" = 401 ]
check "protect bad JSON: 400" [ "$(post protect '{"cgroup":' s3cret-token)" = 400 ]
check "protect both forms of a margin: 400" [ "$(post protect '{"cgroup":"'$base'","start_margin_bytes":1,"start_margin_percent":5,"target_margin_bytes":16777216}' s3cret-token)" = 400 ]
check "protect an unknown cgroup: 404" [ "$(post protect '{"cgroup":"'$base'_nonexistent","start_margin_bytes":8388608,"target_margin_bytes":16777216}' s3cret-token)" = 404 ]
check "protect: 200" [ "$(post protect "$body" s3cret-token)" = 200 ]
check "protect again with other margins: 409" [ "$(post protect '{"cgroup":"'$base'","start_margin_bytes":4194304,"target_margin_bytes":16777216}' s3cret-token)" = 409 ]
check "GET protect: 405" [ "$(code "$url/api/v1/controller/protect")" = 405 ]
check "POST state: 405" [ "$(post state '{}' s3cret-token)" = 405 ]
check "POST to an unknown controller path: 404" [ "$(post nope '{}' s3cret-token)" = 404 ]
check "state: 200 lists the protection" bash -c "curl -fsS -H 'Authorization: Bearer s3cret-token' $url/api/v1/controller/state | jq -e '.protections[] | select(.cgroup==\"$base\")' >/dev/null"
# --controller.sched-policy=idle: the controller's waiter and worker threads run SCHED_IDLE (5).
pol=$(for t in /proc/$epid/task/*; do c=$(cat $t/comm); case $c in memcg-ctl-*) echo "$c:$(awk '{print $41}' $t/stat)";; esac; done | sort | tr '\n' ' ')
check "--controller.sched-policy=idle: controller threads SCHED_IDLE ($pol)" bash -c "[ '$pol' = 'memcg-ctl-act:5 memcg-ctl-wait:5 ' ]"
check "unprotect: 200" [ "$(post unprotect '{"cgroup":"'$base'"}' s3cret-token)" = 200 ]

# memcg_exporter_cgroups_vanished_total: many cgroups removed while scrapes run.
vanished() {
  local v
  v=$(metric "$url/metrics" memcg_exporter_cgroups_vanished_total)
  [ "${v:-0}" -gt 0 ]
}
v0=$(metric "$url/metrics" memcg_exporter_cgroups_vanished_total)
rounds=0
while ! vanished && [ $rounds -lt 20 ]; do
  rounds=$((rounds + 1))
  for i in $(seq 1 300); do mkdir "$cg/v$i"; done
  sleep 0.5                             # --cgroup.refresh-interval-ms=200: a walk sees them
  curl -fsS "$url/metrics" >/dev/null   # and a scrape opens their files
  ( for _ in $(seq 1 30); do curl -fsS "$url/metrics" >/dev/null; done ) &
  scr=$!
  for i in $(seq 1 300); do rmdir "$cg/v$i"; done
  wait $scr
done
v1=$(metric "$url/metrics" memcg_exporter_cgroups_vanished_total)
echo "live: memcg_exporter_cgroups_vanished_total ${v0:-none} -> ${v1:-none} after $rounds rounds of 300 cgroups"
check "memcg_exporter_cgroups_vanished_total above 0 (${v1:-none})" vanished
check "scrapes still succeed after the vanishing" bash -c "curl -fsS $url/metrics | grep -qx 'memcg_exporter_collector_success{collector=\"memory_stat\"} 1'"

stop
check "--collector.taskstats.enable-delayacct: kernel.task_delayacct back to $delayacct0 at exit" \
  [ "$(cat /proc/sys/kernel/task_delayacct)" = "$delayacct0" ]
if [ $fail -gt 0 ]; then
  for f in fix bad flags live; do echo "--- $f log"; tail -8 "$tmp/$f.log" 2>/dev/null; done
fi
summary "http e2e"
