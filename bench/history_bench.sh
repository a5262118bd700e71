#!/usr/bin/env bash
# History benchmark (not in ctest): the exporter on a fixture tree of 1,000
# cgroups (a copy of tests/fixtures/cgroupfs/v1 with 1,000 children made from
# its /web cgroup, in a temp dir; a writer moves every cgroup's usage and
# failcnt each second so the samples are not constant), for each selection:
#   bytes/sample   memcg_exporter_history_bytes / _samples after the run
#   sampler CPU    the exporter's utime+stime over the run / wall time (only
#                  the sampler runs: nothing scrapes but two /metrics reads)
#   sampler wall   memcg_exporter_history_sampler_seconds_total / wall
#   reads/s        read syscalls of the exporter per second (/proc/PID/io
#                  syscr): the cgroup files the sampler reads
#   RSS            VmRSS at the end
# With a second binary (BASELINE, e.g. one built before a change), each
# selection runs on both, one after the other, and the rows are printed side
# by side, so a change is judged by the ratio in one run on one machine.
# usage: bench/history_bench.sh path/to/memcg_exporter [seconds=30] [cgroups=1000] [BASELINE]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exporter=$(realpath "$1")
secs=${2:-30}
n=${3:-1000}
baseline=${4:+$(realpath "$4")}
src="$here/../tests/fixtures/cgroupfs/v1"
tmp=$(mktemp -d /tmp/memcg_exporter_test_histbench_XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
cp -r "$src" "$tmp/fs"
for i in $(seq -w 1 "$n"); do
  d="$tmp/fs/memory/bench/c$i"
  mkdir -p "$d"
  find "$src/memory/web" -maxdepth 1 -type f -exec cp {} "$d/" \;
done
python3 - "$tmp/fs/memory/bench" <<'PY' &
import os, random, sys, time
root = sys.argv[1]
dirs = [os.path.join(root, d) for d in sorted(os.listdir(root))]
usage = {d: 32 << 20 for d in dirs}; fail = {d: 0 for d in dirs}
while True:
    for d in dirs:
        usage[d] = max(0, usage[d] + random.randint(-64, 64) * 4096)
        fail[d] += random.choice((0, 0, 1, 3))
        with open(d + "/memory.usage_in_bytes", "w") as f: f.write("%d\n" % usage[d])
        with open(d + "/memory.failcnt", "w") as f: f.write("%d\n" % fail[d])
    time.sleep(1 - time.time() % 1)
PY
pids+=($!)
tick=$(getconf CLK_TCK)
metric() { curl -fsS "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1==m {print $2}'; }
printf "%-12s %-10s %8s %8s %12s %12s %10s %10s %9s\n" selection binary cgroups series \
  bytes/sample "sampler CPU" "pass wall" "reads/s" "RSS MiB"
run() {  # selection label binary
  local sel=$1 label=$2 bin=$3 args=()
  [ "$sel" = everything ] && args=(--history.match='{__name__=~".+"}')
  port=$((30000 + RANDOM % 20000))
  "$bin" --web.listen-address="127.0.0.1:$port" --path.cgroupfs="$tmp/fs" \
    --no-collector.vmscan --cgroup.limit=5000 "${args[@]}" 2>"$tmp/exporter.log" &
  pid=$!
  for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$port/-/ready" 2>/dev/null && break; sleep 0.2; done
  sleep 2
  read -r u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
  r0=$(awk '$1=="syscr:" {print $2}' /proc/$pid/io)
  w0=$(metric memcg_exporter_history_sampler_seconds_total)
  t0=$(date +%s.%N)
  sleep "$secs"
  read -r u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
  r1=$(awk '$1=="syscr:" {print $2}' /proc/$pid/io)
  t1=$(date +%s.%N)
  w1=$(metric memcg_exporter_history_sampler_seconds_total)
  series=$(metric memcg_exporter_history_series)
  bytes=$(metric memcg_exporter_history_bytes)
  samples=$(metric memcg_exporter_history_samples)
  cg=$(metric memcg_exporter_cgroups)
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  kill $pid; wait $pid 2>/dev/null
  awk -v sel="$sel" -v label="$label" -v cg="$cg" -v series="$series" -v b="$bytes" -v s="$samples" \
      -v cpu=$(( (u1 + s1) - (u0 + s0) )) -v tick="$tick" -v w0="$w0" -v w1="$w1" \
      -v r0="$r0" -v r1="$r1" -v t0="$t0" -v t1="$t1" -v rss="$rss" 'BEGIN {
    wall = t1 - t0
    printf "%-12s %-10s %8d %8d %12.3f %11.2f%% %9.2f%% %10.0f %9.1f\n", sel, label, cg, series,
      b / s, 100 * cpu / tick / wall, 100 * (w1 - w0) / wall, (r1 - r0) / wall, rss / 1024 }'
}
for sel in default everything; do
  run "$sel" this "$exporter"
  [ -n "$baseline" ] && run "$sel" baseline "$baseline"
done
