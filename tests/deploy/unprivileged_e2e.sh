#!/usr/bin/env bash
# The systemd unit's premise (packaging/systemd/memcg_exporter.service), run
# without systemd: the exporter as an unprivileged user whose only capability
# is an ambient CAP_DAC_OVERRIDE (setpriv does what User= + AmbientCapabilities=
# do) serves the read-only collectors and the vmscan tracepoints from a tracefs
# mounted beforehand, and removes its tracefs instance at exit. Also the
# self-metrics end to end: process_* of the running exporter agree with
# /proc/<pid>, promtool check metrics is clean, --web.disable-exporter-metrics
# drops them, and every --log.format=json line parses with jq.
#   unprivileged_e2e.sh <memcg_exporter>
# Root (to mount tracefs and switch user). Leaves nothing: the tracefs mount
# (memcg_exporter_test_*) is unmounted and removed by the trap.
set -euo pipefail
bin=$1
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root"; exit 77; }
for t in setpriv curl jq promtool; do
  command -v $t >/dev/null || { echo "SKIPPED: $t is not installed"; exit 77; }
done
grep -qw tracefs /proc/filesystems || { echo "SKIPPED: no tracefs in this kernel"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_deploy_unpriv.XXXXXX)
chmod 755 "$tmp"
trace=$tmp/tracefs
pid=
cleanup() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  if mountpoint -q "$trace" 2>/dev/null; then
    rmdir "$trace/instances/memcg_exporter_test_unpriv_$$" 2>/dev/null || true
    umount "$trace" || umount -l "$trace"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$trace"
mount -t tracefs -o mode=700 memcg_exporter_test_tracefs "$trace"
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -20 "$tmp/log"; exit 1; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() {
  for _ in $(seq 150); do curl -fsS -o /dev/null "http://127.0.0.1:$1/-/ready" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# 1. Unprivileged with ambient CAP_DAC_OVERRIDE, tracing on, JSON logs.
port=$(freeport)
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,+dac_override \
  --ambient-caps=-all,+dac_override --bounding-set=-all,+dac_override --no-new-privs \
  "$bin" --web.listen-address=127.0.0.1:$port --path.tracefs="$trace" \
  --collector.vmscan.instance=memcg_exporter_test_unpriv_$$ --log.format=json \
  >"$tmp/log" 2>&1 &
pid=$!
wait_up "$port" || fail "the unprivileged exporter did not come up"
[ "$(awk '/^Uid:/ {print $2}' /proc/$pid/status)" = 65534 ] || fail "not running as uid 65534"
curl -fsS "http://127.0.0.1:$port/metrics" > "$tmp/m"
grep -q '^memcg_exporter_collector_success{collector="memory_stat"} 1$' "$tmp/m" || fail "memory_stat failed unprivileged"
grep -q '^memcg_trace_up 1$' "$tmp/m" || fail "tracing is not up unprivileged: $(grep '^memcg_trace_up' "$tmp/m")"
[ -d "$trace/instances/memcg_exporter_test_unpriv_$$" ] || fail "no tracefs instance"
echo "unprivileged (uid 65534, ambient CAP_DAC_OVERRIDE): memory_stat ok, memcg_trace_up 1"
promtool check metrics < "$tmp/m" || fail "promtool check metrics"
echo "promtool check metrics: clean ($(grep -vc '^#' "$tmp/m") samples)"

# process_* against /proc/<pid> of the running exporter.
cpu=$(awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' /proc/$pid/stat)
rss=$(awk '/^VmRSS:/ {print $2 * 1024}' /proc/$pid/status)
fds=$(ls /proc/$pid/fd | wc -l)
maxfds=$(awk '/^Max open files/ {print $4}' /proc/$pid/limits)
curl -fsS "http://127.0.0.1:$port/metrics" > "$tmp/m2"
val() { awk -v n="$1" '$1 == n {print $2}' "$tmp/m2"; }
python3 - "$(val process_cpu_seconds_total)" "$cpu" "$(val process_resident_memory_bytes)" "$rss" \
  "$(val process_open_fds)" "$fds" "$(val process_max_fds)" "$maxfds" \
  "$(val process_start_time_seconds)" <<'PY' || fail "process_* disagree with /proc/<pid>"
import sys, time
a = [float(x) for x in sys.argv[1:]]
cpu, pcpu, rss, prss, fds, pfds, maxfds, pmax, start = a
ok = True
def check(name, cond, got, want):
    global ok
    print("%-32s %-14g /proc: %-14g %s" % (name, got, want, "ok" if cond else "DIFFERENT"))
    ok &= cond
check("process_cpu_seconds_total", abs(cpu - pcpu) <= 0.5, cpu, pcpu)
check("process_resident_memory_bytes", abs(rss - prss) <= 8 << 20, rss, prss)
check("process_open_fds", abs(fds - pfds) <= 4, fds, pfds)
check("process_max_fds", maxfds == pmax, maxfds, pmax)
check("process_start_time_seconds", time.time() - 120 < start <= time.time() + 1, start, time.time())
sys.exit(0 if ok else 1)
PY
grep -q '^memcg_exporter_http_connections_accepted_total [1-9]' "$tmp/m2" || fail "no HTTP connection counter"
grep -q '^memcg_exporter_http_queue_wait_seconds_count [1-9]' "$tmp/m2" || fail "no queue wait histogram"

kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
[ ! -e "$trace/instances/memcg_exporter_test_unpriv_$$" ] || fail "the tracefs instance is left after exit"
echo "exit: tracefs instance removed"
n=0
while IFS= read -r line; do
  echo "$line" | jq -e 'has("ts") and has("level") and has("msg")' >/dev/null || fail "not a JSON log line: $line"
  n=$((n + 1))
done < "$tmp/log"
[ $n -gt 3 ] || fail "only $n log lines"
jq -r 'select(.msg == "listening") | .address' "$tmp/log" | grep -q "127.0.0.1:$port" || fail "no listening line with the address"
echo "--log.format=json: $n lines, each parsed by jq"

# 2. --web.disable-exporter-metrics drops process_* and the server's own.
port=$(freeport)
"$bin" --web.listen-address=127.0.0.1:$port --no-collector.vmscan --web.disable-exporter-metrics \
  >"$tmp/log" 2>&1 &
pid=$!
wait_up "$port" || fail "the exporter did not come up"
curl -fsS "http://127.0.0.1:$port/metrics" > "$tmp/m3"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
if grep -E '^(process_|memcg_exporter_http_|memcg_exporter_capability)' "$tmp/m3" | head -3 | grep .; then
  fail "--web.disable-exporter-metrics left the families above"
fi
grep -q '^memcg_exporter_collector_success{collector="memory_stat"} 1$' "$tmp/m3" || fail "collectors gone too"
echo "--web.disable-exporter-metrics: no process_*, memcg_exporter_http_*, capability families; collectors stay"
