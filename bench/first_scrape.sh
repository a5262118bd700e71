#!/usr/bin/env bash
# Time from a fresh clone to the first scrape: clones this repository into a
# temporary directory, runs README's first command there (scripts/run.sh: missing
# Debian packages, the exporter's build, the exporter) with ccache disabled, and
# times until /metrics answers 200. Then stops the exporter and removes the clone.
#   bench/first_scrape.sh [--web.listen-address HOST:PORT] [--rev REV] [--ccache]
# Default address: 127.0.0.1 and a free port (:9712 may be taken by a running
# exporter); --rev clones that commit instead of HEAD (committed work only);
# --ccache leaves ccache on (a warm machine, or a quick check of this script).
# The packages scripts/deps.sh build installs are timed only where they are missing:
# on a machine that has them this measures the build and the start.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
rev=HEAD
addr=
ccache_disable=1
while [ $# -gt 0 ]; do
  case "$1" in
    --web.listen-address) addr=$2; shift ;;
    --web.listen-address=*) addr=${1#*=} ;;
    --rev) rev=$2; shift ;;
    --ccache) ccache_disable=0 ;;
    *) echo "usage: $0 [--web.listen-address HOST:PORT] [--rev REV] [--ccache]" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$addr" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  addr=127.0.0.1:$port
fi
commit=$(git rev-parse "$rev")
tmp=$(mktemp -d /tmp/memcg_exporter_test_first_scrape.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "first scrape of $(git rev-parse --short "$commit") on $addr, $(nproc) cpus," \
     "ccache $([ "$ccache_disable" = 1 ] && echo off || echo on)," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
t0=$(date +%s.%N)
git clone -q --no-local "$repo" "$tmp/clone"
git -C "$tmp/clone" checkout -q "$commit"
t_clone=$(date +%s.%N)
# Its own process group, so that the build and the exporter stop together.
[ "$ccache_disable" = 1 ] && export CCACHE_DISABLE=1
setsid "$tmp/clone/scripts/run.sh" --web.listen-address="$addr" \
  >"$tmp/run.log" 2>&1 &
pid=$!
code=000
while kill -0 "$pid" 2>/dev/null; do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$addr/metrics" || true)
  [ "$code" = 200 ] && break
  sleep 0.5
done
t1=$(date +%s.%N)
if [ "$code" != 200 ]; then
  echo "scripts/run.sh ended before /metrics answered; its output:" >&2
  tail -30 "$tmp/run.log" >&2
  exit 1
fi
printf 'clone %.1f s, run.sh to the first 200 on /metrics %.1f s, total %.1f s (load %s)\n' \
  "$(awk -v a="$t0" -v b="$t_clone" 'BEGIN { print b - a }')" \
  "$(awk -v a="$t_clone" -v b="$t1" 'BEGIN { print b - a }')" \
  "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
if grep -q 'warning:' "$tmp/run.log"; then
  echo "the build printed compiler warnings:" >&2
  grep 'warning:' "$tmp/run.log" | head -5 >&2
fi
