#!/usr/bin/env bash
# The CPU cost of an open live view on a 1,000-cgroup node: 1,000 empty v1
# test memcgs, the exporter idle for SECONDS (baseline), then the same time with
# the view open in headless Chromium (a cgroup selected: the full request set).
# Prints the exporter's CPU seconds per second for both and the difference.
#   live_view_cpu.sh EXPORTER BUILD_DIR [SECONDS]
set -u
exe=$1
build=$2
secs=${3:-60}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "SKIP: needs root and cgroup v1 memory"; exit 77
fi
[ -x /usr/bin/chromium ] || { echo "SKIP: no chromium"; exit 77; }
export LIVE_VIEW_NODE_MODULES="$build/live_view_node/node_modules"
[ -d "$LIVE_VIEW_NODE_MODULES/playwright-core" ] || { echo "SKIP: run e2e.live_view first (installs playwright-core)"; exit 77; }
base=/sys/fs/cgroup/memory/memcg_exporter_test_view_cpu_$$
epid=
cleanup() {
  [ -n "$epid" ] && kill "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
  for d in "$base"/c[0-9]*; do [ -d "$d" ] && rmdir "$d"; done
  [ -d "$base" ] && rmdir "$base"
}
trap cleanup EXIT
mkdir "$base"
for i in $(seq 1 1000); do mkdir "$base/c$i"; done
port=$(free_port)
"$exe" --web.listen-address=127.0.0.1:$port --collector.vmscan.instance="memcg_exporter_test_view_cpu_$$" \
  >/dev/null 2>&1 &
epid=$!
wait_http "http://127.0.0.1:$port/-/ready" 30 || { echo "exporter not ready"; exit 1; }
n=$(curl -fsS "http://127.0.0.1:$port/api/v1/cgroups" | jq '.cgroups | length')
echo "cgroups discovered: $n"
ticks() { awk '{print $14 + $15}' "/proc/$epid/stat"; }
hz=$(getconf CLK_TCK)
sleep 5
a=$(ticks); sleep "$secs"; b=$(ticks)
node "$here/live_view_browser.js" "http://127.0.0.1:$port" "" "" --hold 5 >/dev/null || { echo "FAIL: the browser"; exit 1; }  # warm-up
c=$(ticks)
node "$here/live_view_browser.js" "http://127.0.0.1:$port" "" "" --hold "$secs" || { echo "FAIL: the browser"; exit 1; }
d=$(ticks)
awk -v i=$((b - a)) -v v=$((d - c)) -v s="$secs" -v hz="$hz" 'BEGIN {
  printf "exporter CPU idle: %.4f s/s; with the view open: %.4f s/s; the view costs %.4f s/s (%.2f%% of a core)\n",
         i / hz / s, v / hz / s, (v - i) / hz / s, 100 * (v - i) / hz / s }'
