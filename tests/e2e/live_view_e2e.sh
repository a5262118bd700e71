#!/usr/bin/env bash
# e2e.live_view: the built-in live view (/) in headless Chromium against the
# real exporter while a real memcg reclaim workload runs: a v1 test memcg with
# a 64 MiB limit streams a file 8x its limit, the controller protects it. The
# browser checks (tests/e2e/live_view_browser.js): no console errors or failed
# requests, the cgroup is ranked, its charts have points from the last
# seconds, a controller action is a marker; screenshots land in the build tree.
#   live_view_e2e.sh EXPORTER BUILD_DIR
set -u
exe=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "SKIP: needs root and cgroup v1 memory"; exit 77
fi
if [ ! -x /usr/bin/chromium ]; then echo "SKIP: /usr/bin/chromium missing (scripts/deps.sh test)"; exit 77; fi
nodedir="$build/live_view_node"
if [ ! -d "$nodedir/node_modules/playwright-core" ]; then
  command -v npm >/dev/null || { echo "SKIP: npm missing"; exit 77; }
  mkdir -p "$nodedir"
  (cd "$nodedir" && npm install --no-audit --no-fund --silent playwright-core@1) ||
    { echo "FAIL: npm install playwright-core"; exit 1; }
fi
export LIVE_VIEW_NODE_MODULES="$nodedir/node_modules"

label=/memcg_exporter_test_view_$$
cg=/sys/fs/cgroup/memory$label
tmp=$(mktemp -d)
epid=
wpid=
cleanup() {
  [ -n "$wpid" ] && kill "$wpid" 2>/dev/null
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  [ -n "$epid" ] && kill "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "$cg" ] && rmdir "$cg" 2>/dev/null; [ -d "$cg" ] || break; sleep 0.2; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$cg"
echo $((64 << 20)) > "$cg/memory.limit_in_bytes"
echo "view-token-$$" > "$tmp/token"
port=$(free_port)
"$exe" --web.listen-address=127.0.0.1:$port --controller.enable \
  --controller.allow="/memcg_exporter_test_view_.*" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/journal" --collector.vmscan.instance="memcg_exporter_test_view_$$" \
  >"$tmp/exporter.log" 2>&1 &
epid=$!
url=http://127.0.0.1:$port
wait_http "$url/-/ready" 30 || { echo "FAIL: exporter not ready"; tail "$tmp/exporter.log"; exit 1; }

# The workload: stream a file 8x the limit, over and over, from the disk.
dd if=/dev/zero of="$tmp/file" bs=1M count=512 status=none && sync
(
  while :; do
    python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$tmp/file"
    sh -c "echo \$\$ > $cg/cgroup.procs; exec cat $tmp/file > /dev/null"
    sleep 0.5
  done
) &
wpid=$!
sleep 4  # a few seconds unprotected: the limit reclaim the ranking shows
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST -H "Authorization: Bearer view-token-$$" \
  -d '{"cgroup":"'$label'","start_margin_bytes":16777216,"target_margin_bytes":25165824}' \
  "$url/api/v1/controller/protect")
check "protect the test cgroup: 200 ($code)" [ "$code" = 200 ]
mkdir -p "$build/live_view"
LIVE_VIEW_TOKEN="view-token-$$" node "$here/live_view_browser.js" "$url" "$label" "$build/live_view/live_view"
rc=$?
[ $rc -eq 0 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "--- exporter log"; tail -20 "$tmp/exporter.log"; }
summary "e2e.live_view"
