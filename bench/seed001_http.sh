#!/usr/bin/env bash
# Seed 001 (Kamezawa's httpd experiment) with the exporter's controller in the loop.
#
# A small C++ HTTP server (bench/seed001_http.cpp) in a 256 MiB v1 memcg serves
# random 64 KiB chunks of a 512 MiB file (working set 2x the limit) under an
# open-loop load at a fixed rate on 127.0.0.1 (latency from each request's
# intended send time: no coordinated omission). A fraction WF of the requests
# also store a fresh 64 KiB chunk (dirty page cache: WMODE=inplace rewrites the
# served chunk, like a cache refreshing an object; WMODE=append appends to a log
# file, like an ingest journal). Modes: protection off, and on for each
# start/target margin pair; runs are interleaved, RUNS per mode.
#
# Per run it takes, over the measured window only: p50 / p99 / p99.9 / max
# latency and req/s (from the load generator), the memcg's failcnt delta (limit
# hits), the workload's own limit reclaim as traced by the exporter's vmscan
# collector (memcg_vmscan_reclaim_stall_seconds{kind="memcg"}: count, total, and
# the upper bound of the longest stall), the controller's CPU
# (memcg_controller_cpu_seconds_total) and the whole exporter process's CPU.
# Prints the medians per mode, on/off ratios, and the seed's targets
# (p99 -35%, max -62%).
#
# usage: bench/seed001_http.sh [path/to/memcg_exporter] [runs=5]    (root, cgroup v1)
# env:   MARGINS="32:64"  start:target margins in MiB, one "on" mode each
#        RATE=1000 req/s  CONNS=8  SECS=20 (measured)  WARM=8 (s, unmeasured, first)
#        WF=0.5  WMODE=inplace|append  LIMIT_MIB=256  FILE_MIB=512
#        STORE=disk (a file under /var/tmp) | zram (ext4 on a zram device added
#          for the run: a miss is served inline in the requesting thread, so
#          reclaim is a larger share of a request)
#        PRIO=fifo (server and load at SCHED_FIFO 20/30, to keep other tenants'
#          CPU load out of the tail) | other
#        SEED001_HTTP=path to the seed001_http binary (default: next to the exporter's build)
set -uo pipefail
exporter=$(realpath "${1:-$(dirname "$0")/../build/exporter/memcg_exporter}"); runs=${2:-5}
tool=${SEED001_HTTP:-$(dirname "$exporter")/../bench/seed001_http}
MARGINS=${MARGINS:-"32:64"}; RATE=${RATE:-1000}; CONNS=${CONNS:-8}; SECS=${SECS:-20}
WARM=${WARM:-8}; WF=${WF:-0.5}; WMODE=${WMODE:-inplace}; LIMIT_MIB=${LIMIT_MIB:-256}
FILE_MIB=${FILE_MIB:-512}; STORE=${STORE:-disk}; PRIO=${PRIO:-fifo}
[ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || {
  echo "seed001_http: SKIPPED: needs root and cgroup v1 memory"; exit 0; }
[ -x "$tool" ] || { echo "seed001_http: build the seed001_http target first ($tool)"; exit 1; }
case $WMODE in inplace|append) ;; *) echo "WMODE must be inplace or append"; exit 2;; esac
case $STORE in disk|zram) ;; *) echo "STORE must be disk or zram"; exit 2;; esac
srvprio=(); loadprio=()
PY=/usr/bin/python3; [ -x $PY ] || PY=$(command -v python3)
[ "$PRIO" = fifo ] && { srvprio=(chrt -f 20); loadprio=(chrt -f 30); }

tmp=$(mktemp -d /var/tmp/memcg_exporter_test_s001_$$_XXXXXX)
cg=/sys/fs/cgroup/memory/memcg_exporter_test_s001_$$
label=${cg#/sys/fs/cgroup/memory}
epid=""; spid=""; zram=""; mounted=""
cleanup() {
  trap - EXIT INT TERM
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  [ -n "$epid" ] && kill "$epid" 2>/dev/null
  wait 2>/dev/null
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "$cg" ] || break; rmdir "$cg" 2>/dev/null || sleep 0.2; done
  [ -d "$cg" ] && echo "seed001_http: WARNING: could not remove $cg" >&2
  [ -n "$mounted" ] && umount "$mounted"
  if [ -n "$zram" ]; then  # ext4's unmount finishes asynchronously: the reset is EBUSY for a moment
    for _ in $(seq 50); do echo 1 2>/dev/null > /sys/block/zram$zram/reset && break; sleep 0.2; done
    echo "$zram" > /sys/class/zram-control/hot_remove || echo "seed001_http: WARNING: could not remove zram$zram" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT; trap 'exit 130' INT TERM

data=$tmp
if [ "$STORE" = zram ]; then
  [ -w /sys/class/zram-control/hot_add ] || { echo "seed001_http: SKIPPED: STORE=zram needs zram-control"; exit 0; }
  zram=$(cat /sys/class/zram-control/hot_add) || exit 1
  echo $(( (FILE_MIB * 2 + 256) << 20 )) > /sys/block/zram$zram/disksize || exit 1
  mkfs.ext4 -q /dev/zram$zram || exit 1
  mkdir "$tmp/mnt" && mount /dev/zram$zram "$tmp/mnt" && mounted=$tmp/mnt || exit 1
  data=$tmp/mnt
fi
file=$data/file; log=$data/log
echo "creating ${FILE_MIB} MiB file in $data ($STORE) ..." >&2
dd if=/dev/urandom of="$file" bs=1M count="$FILE_MIB" status=none && sync || exit 1

port=$((20000 + RANDOM % 20000)); sport=$((40001 + RANDOM % 20000))
echo token > "$tmp/token"
"$exporter" --web.listen-address=127.0.0.1:$port --cgroup.include="$label" \
  --controller.enable --controller.allow="$label" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/journal" --controller.audit-log="$tmp/audit" --log.level=warn 2>"$tmp/log" &
epid=$!
for _ in $(seq 50); do curl -fs -o /dev/null 127.0.0.1:$port/-/ready && break; sleep 0.1; done
curl -fs -o /dev/null 127.0.0.1:$port/-/ready || { echo "exporter did not start:"; cat "$tmp/log"; exit 1; }
api() {
  local code; code=$(curl -s -o "$tmp/api.out" -w '%{http_code}' -X POST -H 'Authorization: Bearer token' \
    --data "$2" 127.0.0.1:$port/api/v1/controller/$1)
  [ "$code" = 200 ] || { echo "api $1 -> HTTP $code: $(cat "$tmp/api.out")" >&2; return 1; }
}
for _ in $(seq 30); do curl -fs 127.0.0.1:$port/metrics | grep -q '^memcg_trace_up 1' && break; sleep 0.1; done
curl -fs 127.0.0.1:$port/metrics | grep -q '^memcg_trace_up 1' ||
  echo "WARNING: the exporter's vmscan tracer is not up: no traced stall totals" >&2

mkdir "$cg" || exit 1
echo $((LIMIT_MIB << 20)) > "$cg/memory.limit_in_bytes" || exit 1
dropcache() {  # the data file's cache (written back first: inplace writes dirty it)
  $PY -c "import os,sys
for p in sys.argv[1:]:
    if os.path.exists(p):
        fd=os.open(p,os.O_RDONLY); os.fdatasync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)" "$file"
}
start_server() {
  rm -f "$log"
  local logarg=(); [ "$WMODE" = append ] && logarg=("$log")
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$cg" "${srvprio[@]}" \
    "$tool" serve "$file" "$sport" "$WF" 64 "${logarg[@]}" &
  spid=$!
  for _ in $(seq 100); do curl -fs -o /dev/null 127.0.0.1:$sport/ && return 0; sleep 0.05; done
  echo "server did not start" >&2; exit 1
}
stop_server() { [ -n "$spid" ] && { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }; spid=""; rm -f "$log"; }

# snapshot -> "stall_count stall_sum ctl_cpu ctl_reclaimed_bytes exporter_cpu_s ctl_traced_s b1:c1,..."
# (ctl_traced_s: the controller's own nudges, traced as kind="proactive" under the exporter's cgroup)
snapshot() {
  local hz; hz=$(getconf CLK_TCK)
  sleep 0.5  # the tracer drains its buffers every 200 ms: let it catch up
  curl -fs 127.0.0.1:$port/metrics | awk -v l="$label" -v ecpu="$(awk -v hz="$hz" '{print ($14+$15)/hz}' /proc/$epid/stat)" '
    index($0, "{cgroup=\"" l "\",kind=\"memcg\"") {
      if ($1 ~ /^memcg_vmscan_reclaim_stall_seconds_count/) c = $2
      if ($1 ~ /^memcg_vmscan_reclaim_stall_seconds_sum/) s = $2
      if ($1 ~ /^memcg_vmscan_reclaim_stall_seconds_bucket/) { match($1, /le="[^"]*"/); b = b substr($1, RSTART + 4, RLENGTH - 5) ":" $2 "," }
    }
    $1 ~ /^memcg_vmscan_reclaim_stall_seconds_sum\{/ && index($1, "kind=\"proactive\"") {ps += $2}
    $1 == "memcg_controller_cpu_seconds_total" {cpu = $2}
    index($1, "memcg_controller_reclaimed_bytes_total{cgroup=\"" l "\"") == 1 {rb += $2}
    END {printf "%s %s %s %s %s %s %s\n", c + 0, s + 0, cpu + 0, rb + 0, ecpu, ps + 0, (b == "" ? "-" : b)}'
}
# longest stall bound: smallest le whose bucket delta equals the count delta
maxstall() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    na = split(a, A, ","); nb = split(b, B, ",")
    for (i = 1; i <= na; i++) if (split(A[i], kv, ":") == 2) base[kv[1]] = kv[2]
    total = -1; for (i = 1; i <= nb; i++) if (split(B[i], kv, ":") == 2 && kv[1] == "+Inf") total = kv[2] - base[kv[1]]
    if (total <= 0) {print 0; exit}
    for (i = 1; i <= nb; i++) if (split(B[i], kv, ":") == 2 && kv[2] - base[kv[1]] == total) {print (kv[1] == "+Inf" ? 99 : kv[1]); exit}
  }'
}

# run MODE -> "p50 p99 p999 max rps failcnt stalls stall_s stall_max_s ctl_cpu_s ctl_MiB exp_cpu_s ctl_traced_s errors"
run() {
  local mode=$1 sm tm
  stop_server; dropcache; sleep 0.3
  start_server
  if [ "$mode" != off ]; then
    sm=${mode%:*}; tm=${mode#*:}
    api protect '{"cgroup":"'$label'","start_margin_bytes":'$((sm << 20))',"target_margin_bytes":'$((tm << 20))'}' || exit 1
  fi
  "${loadprio[@]}" "$tool" load "$sport" "$RATE" "$WARM" "$CONNS" > /dev/null || { echo "warm-up load failed" >&2; exit 1; }
  local f0 s0; f0=$(cat "$cg/memory.failcnt"); s0=$(snapshot)
  local out; out=$("${loadprio[@]}" "$tool" load "$sport" "$RATE" "$SECS" "$CONNS") || { echo "load failed" >&2; exit 1; }
  local f1 s1; f1=$(cat "$cg/memory.failcnt"); s1=$(snapshot)
  [ "$mode" != off ] && { api unprotect '{"cgroup":"'$label'"}' || exit 1; }
  stop_server
  local mx; mx=$(maxstall "${s0##* }" "${s1##* }")
  awk -v o="$out" -v f=$((f1 - f0)) -v a="$s0" -v b="$s1" -v mx="$mx" 'BEGIN {
    split(o, L, " "); split(a, A, " "); split(b, B, " ")
    # L: p50 p99 p999 max rps n errors late
    printf "%s %s %s %s %s %d %d %.4f %s %.4f %.1f %.3f %.4f %s\n", L[1], L[2], L[3], L[4], L[5], f,
      B[1] - A[1], B[2] - A[2], mx, B[3] - A[3], (B[4] - A[4]) / 1048576, B[5] - A[5], B[6] - A[6], L[7]
  }'
}

modes=(off); for m in $MARGINS; do modes+=("$m"); done
declare -A res
for i in $(seq "$runs"); do
  for m in "${modes[@]}"; do
    r=$(run "$m") || exit 1
    res[$m]+="$r"$'\n'
    echo "run $i mode $m: p50 p99 p99.9 max_ms rps failcnt stalls stall_s stall_max_s ctl_cpu_s ctl_MiB exp_cpu_s ctl_traced_s errors = $r" >&2
  done
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
med() { printf '%s' "${res[$1]}" | awk -v k="$2" 'NF {print $k}' | median; }
wdesc="no writes"; [ "$WF" != 0 ] && wdesc="$WF of requests also write 64 KiB ($WMODE)"
printf '\n2011 async-reclaim v3 workload: C++ HTTP server in a %d MiB memcg, random 64 KiB of a %d MiB file on %s (%s), %s;\n' \
  "$LIMIT_MIB" "$FILE_MIB" "$STORE" "$(findmnt -no FSTYPE -T "$data")" "$wdesc"
printf 'open-loop load %s req/s over %s connections, %s s measured after %s s warm-up, priority %s; %d interleaved runs per mode, medians\n' \
  "$RATE" "$CONNS" "$SECS" "$WARM" "$PRIO" "$runs"
printf '%-12s %7s %7s %7s %7s %8s %8s %8s %9s %9s %8s %8s %8s %8s\n' mode "p50 ms" "p99 ms" "p99.9" "max ms" "req/s" \
  failcnt stalls "stall s" "stallmax" "ctl cpu" "ctl MiB" "exp cpu" "ctl recl"
declare -A M
for m in "${modes[@]}"; do
  for k in $(seq 13); do M[$m,$k]=$(med "$m" $k); done
  name=off; [ "$m" != off ] && name="on ${m/:/\/}"
  printf '%-12s %7.2f %7.2f %7.2f %7.2f %8.1f %8s %8s %8.3f %9s %8.3f %8.1f %8.2f %8.3f\n' "$name" "${M[$m,1]}" "${M[$m,2]}" \
    "${M[$m,3]}" "${M[$m,4]}" "${M[$m,5]}" "${M[$m,6]}" "${M[$m,7]}" "${M[$m,8]}" "${M[$m,9]}" "${M[$m,10]}" \
    "${M[$m,11]}" "${M[$m,12]}" "${M[$m,13]}"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a/b; else print "n/a"}'; }
for m in "${modes[@]:1}"; do
  r2=$(ratio "${M[$m,2]}" "${M[off,2]}"); r4=$(ratio "${M[$m,4]}" "${M[off,4]}")
  printf '%-12s %7s %7s %7s %7s %8s %8s %8s %8s\n' "ratio ${m/:/\/}" "$(ratio "${M[$m,1]}" "${M[off,1]}")" "$r2" \
    "$(ratio "${M[$m,3]}" "${M[off,3]}")" "$r4" "$(ratio "${M[$m,5]}" "${M[off,5]}")" \
    "$(ratio "${M[$m,6]}" "${M[off,6]}")" "$(ratio "${M[$m,7]}" "${M[off,7]}")" "$(ratio "${M[$m,8]}" "${M[off,8]}")"
  ok99=$(awk -v r="$r2" 'BEGIN {print (r != "n/a" && r <= 0.65) ? "MET" : "NOT met"}')
  okmx=$(awk -v r="$r4" 'BEGIN {print (r != "n/a" && r <= 0.38) ? "MET" : "NOT met"}')
  echo "  margins ${m/:/\/} MiB vs seed (p99 -35% => ratio <= 0.65; max -62% => ratio <= 0.38): p99 $ok99, max $okmx"
done
offreq=$(awk -v r="${M[off,5]}" -v s="$SECS" 'BEGIN {print r * s}')
echo "off: the workload spent $(awk -v t="${M[off,8]}" -v s="$SECS" 'BEGIN {printf "%.2f%%", 100 * t / s}') of the run in its own limit reclaim" \
  "($(awk -v t="${M[off,8]}" -v n="$offreq" 'BEGIN {printf "%.1f", (n > 0 ? 1e6 * t / n : 0)}') us per request on average," \
  "$(awk -v t="${M[off,8]}" -v c="${M[off,7]}" 'BEGIN {printf "%.1f", (c > 0 ? 1e6 * t / c : 0)}') us per stall)"
echo "units: latency in ms; stall s = traced memcg-limit reclaim time of the workload; stallmax = upper bucket bound of its longest stall (s);" \
  "ctl cpu = memcg_controller_cpu_seconds_total delta; exp cpu = the whole exporter process (tracer, scrapes, controller);" \
  "ctl recl = the controller's nudges as traced (kernel reclaim time, kind=proactive)"
[ -s "$tmp/log" ] && { echo "exporter log:"; tail -5 "$tmp/log"; }
