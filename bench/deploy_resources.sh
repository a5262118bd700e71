#!/usr/bin/env bash
# The figures behind the DaemonSet's requests and limits: RSS (now and peak)
# and CPU of the exporter with the shipped flags at several cgroup counts,
# while it is scraped like Prometheus does (every `interval` s) and its
# history samples. Side by side in one run.
#   bench/deploy_resources.sh [exporter] [counts=2000,10000] [seconds=120] [interval=1] [-- flags...]
# Root and cgroup v1 memory; makes memcg_exporter_test_deploy_res_<pid>/N
# memcgs and removes them (also on failure). Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
exporter=${1:-build/exporter/memcg_exporter}
counts=${2:-2000,10000}
secs=${3:-120}
interval=${4:-1}
shift $(( $# < 4 ? $# : 4 ))
[[ ${1:-} == -- ]] && shift
flags=("$@")
root=/sys/fs/cgroup/memory
if [[ $(id -u) != 0 || ! -e $root/memory.stat ]]; then
  echo "deploy_resources: SKIPPED: needs root and cgroup v1 memory"; exit 77
fi
base=$root/memcg_exporter_test_deploy_res_$$
pid=
cleanup() {
  [[ -z $pid ]] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  [[ -d $base ]] && find "$base" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
  rmdir "$base" 2>/dev/null || true
}
trap cleanup EXIT
mkdir "$base"
ticks=$(getconf CLK_TCK)
cpu() { awk -v t="$ticks" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
echo "date: $(date -u +%FT%TZ) commit: $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
echo "command: $0 $exporter $counts $secs $interval -- ${flags[*]}"
printf '%-8s %-9s %-9s %-9s %-11s %-11s %-12s\n' cgroups exported rss_MiB hwm_MiB cpu_avg_m cpu_max1s_m scrape_ms_p50
made=0
for n in ${counts//,/ }; do
  while (( made < n )); do mkdir "$base/c$made"; made=$((made + 1)); done
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$exporter" --web.listen-address=127.0.0.1:$port "${flags[@]}" >/tmp/memcg_exporter_test_deploy_res.log 2>&1 &
  pid=$!
  for _ in $(seq 200); do curl -fsS -o /dev/null "http://127.0.0.1:$port/-/ready" 2>/dev/null && break; sleep 0.1; done
  t0=$(date +%s.%N); c0=$(cpu $pid); prev=$c0; maxd=0; times=()
  end=$(( $(date +%s) + secs ))
  while (( $(date +%s) < end )); do
    s=$(date +%s.%N)
    curl -fsS -H 'Accept-Encoding: gzip' -o /dev/null "http://127.0.0.1:$port/metrics"
    e=$(date +%s.%N)
    times+=("$(echo "($e - $s) * 1000" | bc)")
    sleep "$interval"
    now=$(cpu $pid)
    d=$(echo "($now - $prev) / ($(date +%s.%N) - $s)" | bc -l)
    maxd=$(echo "if ($d > $maxd) $d else $maxd" | bc -l)
    prev=$now
  done
  c1=$(cpu $pid); t1=$(date +%s.%N)
  exported=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '$1 == "memcg_exporter_cgroups" {print $2}')
  rss=$(kib $pid VmRSS); hwm=$(kib $pid VmHWM)
  p50=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-8s %-9s %-9.1f %-9.1f %-11.1f %-11.1f %-12.1f\n' "$n" "$exported" \
    "$(echo "$rss / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" \
    "$(echo "($c1 - $c0) / ($t1 - $t0) * 1000" | bc -l)" "$(echo "$maxd * 1000" | bc -l)" "$p50"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done
