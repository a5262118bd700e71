#!/usr/bin/env bash
# "Bad flags exit with status 2 and a one-line reason" (README), on the real
# binary: each bad flag must end the process with status 2 and one line of
# output, before it serves anything (each run is bounded by a timeout: a flag
# accepted by mistake would start the exporter). Also --version and --help.
# And the listen addresses README names: 127.0.0.1:PORT and [::1]:PORT.
# Needs no root.
#
# usage: flags_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
tmp=$(mktemp -d /tmp/memcg_exporter_test_tests_flags_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
port=$(free_port)

# --- bad flags, --version, --help ---------------------------------------------
for bad in --nope --web.gzip-level=10 --web.gzip-level=x --cgroup.max-depth=-1 \
           '--cgroup.include=(' '--cgroup.exclude=[' --cgroup.limit=abc --log.level=loud \
           --collector.nosuch --no-collector.nosuch '--controller.psi-trigger=some 1 1' \
           --controller.sched-policy=fifo --controller.poll-interval-ms=0 \
           --controller.v2-wake=bogus '--controller.allow=(' --controller.cpu-budget=0 \
           --controller.cpu-budget=1.5 --controller.max-bytes-per-second=1048575 \
           --controller.max-nudges-per-episode=0 --controller.max-step-bytes=4095 \
           --controller.cooldown-ms=-1 --web.listen-address; do
  # A flag accepted by mistake starts the exporter: on a free loopback port,
  # with a journal in $tmp, and ended by the timeout (status 124).
  timeout 10 "$exporter" --web.listen-address="127.0.0.1:$port" --no-collector.vmscan \
    --controller.journal="$tmp/journal" "$bad" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  lines=$(cat "$tmp/out" "$tmp/err" | grep -c .)
  check "bad flag $bad: exit 2 ($rc), one line ($lines): $(head -c 120 "$tmp/err")" \
    bash -c "[ $rc = 2 ] && [ $lines = 1 ]"
done
# The same policy with the controller on (then it reaches the controller).
timeout 10 "$exporter" --web.listen-address="127.0.0.1:$port" --no-collector.vmscan \
  --controller.journal="$tmp/journal" --controller.enable --controller.sched-policy=fifo \
  >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
lines=$(cat "$tmp/out" "$tmp/err" | grep -c .)
check "bad flag --controller.sched-policy=fifo with --controller.enable: exit 2 ($rc), one line ($lines)" \
  bash -c "[ $rc = 2 ] && [ $lines = 1 ]"
"$exporter" --version >"$tmp/out" 2>&1; rc=$?
check "--version: exit 0, prints the version ($(head -1 "$tmp/out"))" bash -c "[ $rc = 0 ] && grep -qE '[0-9]+\.[0-9]+\.[0-9]+' '$tmp/out'"
"$exporter" --help >"$tmp/out" 2>&1; rc=$?
check "--help: exit 0, lists the flags" bash -c "[ $rc = 0 ] && grep -q -- '--web.telemetry-path' '$tmp/out'"
for f in cpu-budget max-bytes-per-second max-nudges-per-episode max-step-bytes cooldown-ms; do
  check "--help documents --controller.$f" grep -q -- "--controller.$f" "$tmp/out"
done

# IPv6: on a host without it the exporter refuses [::1] as a bad flag (exit 2,
# one line naming the reason); where the host has it, [::1] must answer like
# 127.0.0.1.
"$exporter" --web.listen-address="[::1]:$port" --no-collector.vmscan \
  --path.cgroupfs="$here/../fixtures/cgroupfs/v1" --path.procfs="$here/../fixtures/procfs" \
  >"$tmp/out" 2>"$tmp/err" </dev/null &
epid=$!
for _ in $(seq 50); do kill -0 $epid 2>/dev/null || break; sleep 0.1; done
if kill -0 $epid 2>/dev/null; then
  kill $epid; wait $epid 2>/dev/null
  addrs=("127.0.0.1:$port" "[::1]:$port")
else
  wait $epid; rc=$?
  lines=$(cat "$tmp/out" "$tmp/err" | grep -c .)
  check "--web.listen-address=[::1]:$port without IPv6 on this host: exit 2 ($rc), one line ($lines) naming it" \
    bash -c "[ $rc = 2 ] && [ $lines = 1 ] && grep -q 'no IPv6 support' '$tmp/err'"
  addrs=("127.0.0.1:$port")
fi
for addr in "${addrs[@]}"; do
  "$exporter" --web.listen-address="$addr" --no-collector.vmscan \
    --path.cgroupfs="$here/../fixtures/cgroupfs/v1" --path.procfs="$here/../fixtures/procfs" \
    2>"$tmp/listen.log" &
  epid=$!
  host=${addr%:*}
  check "--web.listen-address=$addr answers /-/ready" wait_http "http://$host:$port/-/ready" 60
  kill $epid 2>/dev/null; wait $epid 2>/dev/null
  grep -q fatal "$tmp/listen.log" && cat "$tmp/listen.log" | grep fatal
done
summary "flags e2e"
