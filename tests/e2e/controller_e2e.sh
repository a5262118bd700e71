#!/usr/bin/env bash
# End-to-end over HTTP: the controller API of a running exporter (root,
# cgroup v1 memory). Protect a test memcg, see it in the state and the
# metrics, stream a file through it and see the controller act, check the
# auth and allow-list refusals, unprotect; the limit ends where it started.
#
# usage: controller_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "controller e2e: SKIPPED: needs root and cgroup v1 memory"
  exit 77  # ctest: SKIP_RETURN_CODE
fi
tmp=$(mktemp -d /tmp/memcg_exporter_test_ctl_e2e_XXXXXX)
label="/memcg_exporter_test_ctl_e2e_$$"
cg="/sys/fs/cgroup/memory$label"
other="/sys/fs/cgroup/memory/memcg_exporter_test_other_$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for d in "$cg" "$other"; do
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    sleep 0.1; rmdir "$d" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir "$cg" "$other"
limit=$((256 << 20))
echo $limit > "$cg/memory.limit_in_bytes"
echo $limit > "$other/memory.limit_in_bytes"
echo "s3cret-token" > "$tmp/token"
port=$(free_port)
"$exporter" --web.listen-address="127.0.0.1:$port" --cgroup.include="/|/memcg_exporter_test_.*" \
  --controller.enable --controller.allow="/memcg_exporter_test_ctl_.*" \
  --controller.token-file="$tmp/token" --controller.journal="$tmp/journal" \
  --controller.audit-log="$tmp/audit.jsonl" --collector.vmscan.instance="memcg_exporter_test_ctl_e2e_$$" \
  2>"$tmp/exporter.log" &
pids+=($!)
check "exporter ready" wait_http "http://127.0.0.1:$port/-/ready" 60
url="http://127.0.0.1:$port/api/v1/controller"
post() {  # post PATH JSON [TOKEN] -> prints the HTTP status
  local auth=()
  [ -n "${3:-}" ] && auth=(-H "Authorization: Bearer $3")
  curl -s -o "$tmp/body" -w '%{http_code}' -X POST "${auth[@]}" -H 'Content-Type: application/json' \
    --data "$2" "$url/$1"
}
body='{"cgroup":"'$label'","start_margin_bytes":67108864,"target_margin_bytes":134217728}'
check "protect without a token: 401" [ "$(post protect "$body")" = 401 ]
check "protect with a wrong token: 403" [ "$(post protect "$body" wrong)" = 403 ]
check "protect the root: 403" [ "$(post protect '{"cgroup":"/","start_margin_bytes":1,"target_margin_bytes":2}' s3cret-token)" = 403 ]
check "protect outside the allow-list: 403" [ "$(post protect '{"cgroup":"/memcg_exporter_test_other_'$$'","start_margin_bytes":67108864,"target_margin_bytes":134217728}' s3cret-token)" = 403 ]
check "protect bad JSON: 400" [ "$(post protect '{"cgroup":' s3cret-token)" = 400 ]
# The workload: a file 4x the limit, read once without protection (the
# baseline, in this same run: how fast the reader charges depends on the
# machine's disk) and once protected. Protection must cut the workload's own
# limit hits (failcnt) and its own traced limit reclaim sharply, and the other
# cgroup is never written.
dd if=/dev/zero of="$tmp/file" bs=1M count=1024 status=none && sync
stream() {  # drop the file from the page cache, then cat it inside $cg
  python3 - "$tmp/file" <<'PY' 2>/dev/null || true
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
PY
  sh -c "echo \$\$ > $cg/cgroup.procs; exec cat $tmp/file > /dev/null"
  # The trace reader polls: read the counters once two scrapes agree.
  check "traced counters settle (two scrapes 0.5 s apart agree)" settle
}
settle() {
  settled_scrape "http://127.0.0.1:$port/metrics" "^memcg_vmscan_reclaim_total\{cgroup=\"$label\"" 30 >/dev/null
}
sample() { curl -fsS http://127.0.0.1:$port/metrics | awk -v m="$1" '$1==m {print $2+0}'; }
own_metric="memcg_vmscan_reclaim_total{cgroup=\"$label\",kind=\"memcg\"}"
other_before=$(cat "$other/memory.limit_in_bytes")
stream
fail_off=$(cat "$cg/memory.failcnt")
own_off=$(sample "$own_metric")

check "protect: 200" [ "$(post protect "$body" s3cret-token)" = 200 ]
check "state lists it" bash -c "curl -fsS -H 'Authorization: Bearer s3cret-token' $url/state | grep -q '$label'"
check "metrics: one protected cgroup" bash -c "curl -fsS http://127.0.0.1:$port/metrics | grep -q '^memcg_controller_protected_cgroups 1'"
stream
fail_on=$(( $(cat "$cg/memory.failcnt") - fail_off ))
own_on=$(( $(sample "$own_metric")+0 - ${own_off:-0} ))
echo "workload limit hits (failcnt): unprotected $fail_off, protected $fail_on"
# For the log: a controller held back by its CPU or rate budget leaves the
# workload to reclaim for itself.
curl -fsS http://127.0.0.1:$port/metrics | grep -E '^memcg_controller_(throttled_total|actions_total)' | grep -v ' 0$'
check "controller acted" bash -c "curl -fsS http://127.0.0.1:$port/metrics | grep -E '^memcg_controller_actions_total\{.*result=\"ok\"' | grep -qv ' 0$'"
# A sharp drop: at most a fifth of the baseline's hits. The baseline must be
# large enough for that to mean something.
check "baseline: the unprotected workload hits its limit (>= 40): $fail_off" [ "$fail_off" -ge 40 ]
check "protected: limit hits drop sharply ($fail_on * 5 <= $fail_off)" [ $((fail_on * 5)) -le "$fail_off" ]
# The tracer sees the workload's own limit reclaim (kind="memcg"); the
# controller's nudges are charged to the target as kind="proactive". With
# tracefs in the kernel the tracer must be up (a tracer that did not start is a
# failure, not a skip); without tracefs these checks are a skip (77) at the end.
tracer_skipped=
if ! grep -qw tracefs /proc/filesystems; then
  tracer_skipped="the tracer checks: this kernel has no tracefs"
else
  check "tracer up (memcg_trace_up 1): $(sample memcg_trace_up)" [ "$(sample memcg_trace_up)" = 1 ]
fi
if [ -z "$tracer_skipped" ]; then
  proactive=$(sample "memcg_vmscan_reclaim_total{cgroup=\"$label\",kind=\"proactive\"}")
  echo "traced reclaim in $label: workload (memcg) unprotected ${own_off:-0}, protected $own_on; controller (proactive) ${proactive:-0}"
  check "tracer: the unprotected workload reclaims itself (>= 40): ${own_off:-0}" [ "${own_off:-0}" -ge 40 ]
  check "tracer: protected, its own reclaim drops sharply ($own_on * 5 <= ${own_off:-0})" [ $((own_on * 5)) -le "${own_off:-0}" ]
  check "tracer: the controller's reclaim is charged to the target (> 0): ${proactive:-0}" [ "${proactive:-0}" -gt 0 ]
fi
check "limit restored to the original" [ "$(cat $cg/memory.limit_in_bytes)" = "$limit" ]
check "other cgroup's limit untouched" [ "$(cat $other/memory.limit_in_bytes)" = "$other_before" ]
check "audit log written" grep -q "$label" "$tmp/audit.jsonl"
check "unprotect: 200" [ "$(post unprotect '{"cgroup":"'$label'"}' s3cret-token)" = 200 ]
check "state GET on a POST endpoint: 405" [ "$(curl -s -o /dev/null -w '%{http_code}' $url/protect)" = 405 ]
if [ $fail -gt 0 ]; then echo "--- exporter log"; tail -20 "$tmp/exporter.log"; cat "$tmp/body"; fi
summary "controller e2e" || exit 1
[ -z "$tracer_skipped" ] || { echo "controller e2e: SKIPPED (exit 77): $tracer_skipped"; exit 77; }
