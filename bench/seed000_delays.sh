#!/usr/bin/env bash
# Seed 000 with the exporter in the loop: `cat` of a 1 GiB file through a
# 256 MiB memcg, protection off vs on (interleaved runs), and the workload's
# own reclaim as taskstats RECLAIM delay (count, total, average) read from the
# exporter's memcg_delay_reclaim_* metrics, beside failcnt.
#
# usage: bench/seed000_delays.sh path/to/memcg_exporter [runs=5]   (root, cgroup v1)
set -uo pipefail
exporter=$(realpath "$1"); runs=${2:-5}
[ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || {
  echo "seed000_delays: SKIPPED: needs root and cgroup v1 memory"; exit 0; }
tmp=$(mktemp -d /var/tmp/memcg_exporter_bench_XXXXXX)
cg=/sys/fs/cgroup/memory/memcg_exporter_bench_seed000_$$
label=${cg#/sys/fs/cgroup/memory}
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p"; done
  sleep 0.1; rmdir "$cg" 2>/dev/null; rm -rf "$tmp"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
echo token > "$tmp/token"
dd if=/dev/zero of="$tmp/file" bs=1M count=1024 status=none; sync
"$exporter" --web.listen-address=127.0.0.1:$port --cgroup.include="$label" --no-collector.vmscan \
  --collector.taskstats --collector.taskstats.enable-delayacct --controller.enable \
  --controller.allow="$label" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/journal" --log.level=warn 2>"$tmp/log" &
pid=$!
for _ in $(seq 50); do curl -fs -o /dev/null 127.0.0.1:$port/-/ready && break; sleep 0.1; done
metric() { curl -fs 127.0.0.1:$port/metrics | awk -v m="$1{cgroup=\"$label\"}" '$1==m {print $2}'; }
api() { curl -fs -o /dev/null -X POST -H 'Authorization: Bearer token' --data "$2" 127.0.0.1:$port/api/v1/controller/$1; }
run() {  # run MODE -> "failcnt count total_s wall_s"
  [ -d "$cg" ] || mkdir "$cg"
  echo $((256 << 20)) > "$cg/memory.limit_in_bytes"
  [ "$1" = on ] && api protect '{"cgroup":"'$label'","start_margin_bytes":67108864,"target_margin_bytes":134217728}'
  python3 -c "import os;fd=os.open('$tmp/file',os.O_RDONLY);os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)"
  echo 0 > "$cg/memory.failcnt"
  # The reader waits until the exporter has scraped it once, so its delays are tracked.
  mkfifo "$tmp/go"
  sh -c "echo \$\$ > $cg/cgroup.procs; read _ < $tmp/go; exec cat $tmp/file >/dev/null" &
  local r=$!; sleep 0.3
  local c0 t0; c0=$(metric memcg_delay_reclaim_total); t0=$(metric memcg_delay_reclaim_seconds_total)
  local s=$(date +%s.%N); echo go > "$tmp/go"
  # Scrape while it runs (the delay of a task is read while it lives).
  local c=$c0 t=$t0
  while kill -0 $r 2>/dev/null; do
    local cc tt; cc=$(metric memcg_delay_reclaim_total); tt=$(metric memcg_delay_reclaim_seconds_total)
    [ -n "$cc" ] && c=$cc && t=$tt; sleep 0.02
  done
  wait $r; local e=$(date +%s.%N)
  cc=$(metric memcg_delay_reclaim_total); [ -n "$cc" ] && c=$cc && t=$(metric memcg_delay_reclaim_seconds_total)
  local f; f=$(cat "$cg/memory.failcnt")
  [ "$1" = on ] && api unprotect '{"cgroup":"'$label'"}'
  rm -f "$tmp/go"
  echo "$f $(echo "${c:-0} - ${c0:-0}" | bc) $(echo "${t:-0} - ${t0:-0}" | bc -l) $(echo "$e - $s" | bc -l)"
}
declare -a off on
for i in $(seq "$runs"); do off+=("$(run off)"); on+=("$(run on)"); done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
col() { printf '%s\n' "$@" | awk -v k="$COL" '{print $k}'; }
printf '\n2011 async-reclaim workload: cat 1 GiB through 256 MiB, %d interleaved runs per mode, medians\n' "$runs"
printf '%-6s %10s %14s %16s %14s %8s\n' mode failcnt "RECLAIM count" "RECLAIM total s" "avg delay us" "wall s"
for m in off on; do
  eval "rows=(\"\${$m[@]}\")"
  f=$(COL=1 col "${rows[@]}" | median); c=$(COL=2 col "${rows[@]}" | median)
  t=$(COL=3 col "${rows[@]}" | median); w=$(COL=4 col "${rows[@]}" | median)
  avg=$(echo "if ($c > 0) $t * 1000000 / $c else 0" | bc -l)
  printf '%-6s %10s %14s %16.4f %14.1f %8.3f\n' $m "$f" "$c" "$t" "$avg" "$w"
done
echo "controller CPU: $(curl -fs 127.0.0.1:$port/metrics | awk '$1=="memcg_controller_cpu_seconds_total"{print $2}') s in total"
