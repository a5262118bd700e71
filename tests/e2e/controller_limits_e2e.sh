#!/usr/bin/env bash
# End-to-end over HTTP (root, cgroup v1 memory): the controller's safety
# limits on the real binary, judged from outside (its audit log, its state
# API, its metrics and the cgroup files).
#
# 1. Journal replay with the controller off, through the real start-up path:
#    a journal with two "lower" entries as the actuator writes them
#    (controller/journal.h); one cgroup's limit still reads the lowered value
#    (restored), the other was changed by someone else (a conflict: left as
#    is). The exporter starts WITHOUT --controller.enable.
# 2. Cooldown: in dry-run an episode is followed by max(cooldown, 1 s) of
#    quiet (controller.cpp); a cgroup kept short of its margin gets one
#    dry_run audit line per episode, never two within 1 s, and no write.
# 3. One live protection under a fast page-cache workload (a sparse file
#    read inside the cgroup: page cache at memory speed): every nudge is at
#    most the step size (256 MiB) and at least one was clamped to it, the
#    limit never goes below the floor (16 MiB), actions <= 8 per episode,
#    reclaimed bytes per second within the cap (8 GiB/s), and the CPU/rate
#    throttle series exported (they stay 0 here: see below). Then a target
#    margin that would take usage to 4 MiB: the nudge stops at the floor
#    (16 MiB) exactly.
# 4. A protected cgroup removed: the protection is dropped (state, metrics,
#    audit "cgroup removed") and the journal keeps nothing for it.
#
# 5. The bytes-per-second cap set low (--controller.max-bytes-per-second=16 MiB,
#    --controller.max-step-bytes=4 MiB) under a workload that charges far
#    faster: the cap bites (memcg_controller_throttled_total{reason="rate"}
#    > 0) and the bytes reclaimed from the protect to the end of the
#    measurement stay within rate x elapsed + the 1 s burst. Every nudge the
#    audit log holds was taken (from the bucket) after the protect and before
#    the log was read, so the bound holds by construction whatever the load;
#    the default cap (8 GiB/s) reclaims gigabytes in the same time.
#
# Sections 1-4 run with the defaults of the step, floor, nudges per episode,
# CPU budget and cap (controller/options.h; the budgets are not reached
# there: measured 0.14 s of controller CPU and at most ~2 GB reclaimed in any
# second for 24 GiB streamed). Each budget throttling is shown exactly on a
# fake clock in tests/unit/controller_budgets_test.cpp.
#
# usage: controller_limits_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "controller limits e2e: SKIPPED: needs root and cgroup v1 memory at /sys/fs/cgroup/memory"
  exit 77
fi
for tool in curl jq python3; do
  command -v $tool >/dev/null || { echo "controller limits e2e: SKIPPED: $tool not installed (scripts/deps.sh)"; exit 77; }
done
tmp=$(mktemp -d /var/tmp/memcg_exporter_test_tests_lim_XXXXXX)
base="/memcg_exporter_test_tests_lim_$$"
mem=/sys/fs/cgroup/memory
pids=()
cgs=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for d in "${cgs[@]}"; do
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in $(seq 1 50); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkcg() {  # mkcg VAR NAME LIMIT: creates the cgroup, its directory in $VAR (not in a subshell:
  local d="$mem$base$2"  # cgs must keep it for the cleanup)
  mkdir "$d" && cgs+=("$d") && echo "$3" > "$d/memory.limit_in_bytes" && printf -v "$1" '%s' "$d"
}
MiB=$((1 << 20))
echo "s3cret-token" > "$tmp/token"
start_exporter() {  # start_exporter LOG ARGS...: sets $port and $url
  local log=$1 try; shift
  for try in 1 2 3; do  # another process may take the free port first
    port=$(free_port)
    "$exporter" --web.listen-address="127.0.0.1:$port" --cgroup.include="/|$base.*" \
      --no-collector.vmscan "$@" 2>"$log" &
    pids+=($!)
    url="http://127.0.0.1:$port"
    wait_http "$url/-/ready" 20 && return 0
    grep -q 'cannot listen' "$log" || return 1
    # It exited (reaped here, so its pid is never signalled again): try another port.
    wait "${pids[-1]}" 2>/dev/null
    unset 'pids[-1]'
  done
  return 1
}
stop_exporter() {
  local p=${pids[-1]}
  kill "$p" 2>/dev/null; wait "$p" 2>/dev/null
  unset 'pids[-1]'
}
post() {  # post PATH JSON -> the status; body in $tmp/body
  curl -s -o "$tmp/body" -w '%{http_code}' -X POST -H "Authorization: Bearer s3cret-token" \
    -H 'Content-Type: application/json' --data "$2" "$url/api/v1/controller/$1"
}
state() { curl -fsS -H "Authorization: Bearer s3cret-token" "$url/api/v1/controller/state"; }
fill() {  # fill CGDIR FILE: read FILE once inside the cgroup (its page cache stays charged)
  sync "$2"
  python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$2"
  sh -c "echo \$\$ > $1/cgroup.procs; exec cat $2 > /dev/null"
}

# --- 1. journal replay, controller off ---------------------------------------
mkcg a _replay_a $((256 * MiB)); mkcg b _replay_b $((256 * MiB))
now_ms=$(($(date +%s%N) / 1000000))
jline() {  # jline SEQ DIR
  printf '{"op":"lower","seq":%d,"cgroup":"%s","dir":"%s","inode":%d,"original":%d,"original_unlimited":false,"lowered":%d,"ts_ms":%d}\n' \
    "$1" "${2#$mem}" "$2" "$(stat -c %i "$2")" $((256 * MiB)) $((128 * MiB)) "$now_ms"
}
{ jline 1 "$a"; jline 2 "$b"; } > "$tmp/replay.journal"
# As a crash between the lower and the restore leaves it: a at the lowered
# value; b changed by an admin since (to 200 MiB).
echo $((128 * MiB)) > "$a/memory.limit_in_bytes"
echo $((200 * MiB)) > "$b/memory.limit_in_bytes"
check "replay: exporter (controller off) ready" \
  start_exporter "$tmp/replay.log" --controller.journal="$tmp/replay.journal" \
  --controller.audit-log="$tmp/replay_audit.jsonl"
replayed() { grep -q 'controller journal replayed' "$tmp/replay.log"; }
check "replay: log says it replayed" poll_until 20 replayed
line=$(grep 'controller journal replayed' "$tmp/replay.log")
echo "replay log: $line"
check "replay: restored=1 conflicts=1 failed=0" bash -c "echo '$line' | grep -q 'restored=1 conflicts=1 failed=0'"
check "replay: the lowered limit is restored ($(cat $a/memory.limit_in_bytes))" \
  [ "$(cat "$a/memory.limit_in_bytes")" = $((256 * MiB)) ]
check "replay: a limit someone else changed is left as is ($(cat $b/memory.limit_in_bytes))" \
  [ "$(cat "$b/memory.limit_in_bytes")" = $((200 * MiB)) ]
check "replay: audit journal_restore ok for a, conflict for b" bash -c \
  "jq -r 'select(.event==\"journal_restore\") | .cgroup+\"=\"+.result' '$tmp/replay_audit.jsonl' | sort | tr '\n' ' ' | grep -qx '${a#$mem}=ok ${b#$mem}=conflict '"
check "replay: journal compacted to nothing pending" bash -c "! grep -q '\"op\":\"lower\"' '$tmp/replay.journal'"
check "replay: no controller metrics without --controller.enable (and the exporter answers)" \
  absent "$url/metrics" '^memcg_controller_protected_cgroups'

stop_exporter

# --- 2. cooldown (dry-run: max(cooldown, 1 s) after each episode) ------------
mkcg dry _dry $((64 * MiB))
head -c $((56 * MiB)) /dev/zero > "$tmp/fill56"
fill "$dry" "$tmp/fill56"
check "dry-run: exporter ready" start_exporter "$tmp/dry.log" --controller.enable --controller.dry-run \
  --controller.allow="$base.*" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/dry.journal" --controller.audit-log="$tmp/dry_audit.jsonl"
check "dry-run: protect 200" [ "$(post protect '{"cgroup":"'${dry#$mem}'","start_margin_bytes":16777216,"target_margin_bytes":33554432}')" = 200 ]
dry_lines() { [ "$(grep -c '"event":"dry_run"' "$tmp/dry_audit.jsonl" 2>/dev/null)" -ge 5 ]; }
check "dry-run: 5 episodes logged" poll_until 30 dry_lines
# Gaps between episodes, from the audit timestamps (RFC 3339, ms): each gap
# must be the cooldown at least (1000 ms, less 1 ms of rounding).
gaps=$(jq -r 'select(.event=="dry_run") | .ts' "$tmp/dry_audit.jsonl" | python3 -c '
import sys, datetime
ts = [datetime.datetime.fromisoformat(l.strip().replace("Z", "+00:00")) for l in sys.stdin if l.strip()]
print(" ".join(str(round((b - a).total_seconds() * 1000)) for a, b in zip(ts, ts[1:])))')
echo "dry-run: gaps between episodes (ms): $gaps"
check "dry-run: at least 4 gaps measured" [ "$(echo $gaps | wc -w)" -ge 4 ]
check "dry-run: no two episodes within the cooldown (every gap >= 999 ms)" \
  bash -c "for g in $gaps; do [ \$g -ge 999 ] || exit 1; done"
check "dry-run: the limit is never written" [ "$(cat "$dry/memory.limit_in_bytes")" = $((64 * MiB)) ]
check "dry-run: no reclaim in the audit log" bash -c "! grep -q '\"event\":\"reclaim\"' '$tmp/dry_audit.jsonl'"
n_dry=$(metric "$url/metrics" memcg_controller_dry_run_actions_total)
check "dry-run: memcg_controller_dry_run_actions_total counts them (${n_dry:-none} >= 5)" [ "${n_dry:-0}" -ge 5 ]
stop_exporter

# --- 3. step, floor, nudges per episode, bytes/s, throttle --------------------
mkcg live _live $((1024 * MiB))
mkcg gone _gone $((256 * MiB))
truncate -s 24G "$tmp/sparse"   # reads of holes: page cache at memory speed
check "live: exporter ready" start_exporter "$tmp/live.log" --controller.enable \
  --controller.allow="$base.*" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/live.journal" --controller.audit-log="$tmp/live_audit.jsonl"
# Need at the start of an episode: target - margin > 600 MiB > the step.
check "live: protect 200" [ "$(post protect '{"cgroup":"'${live#$mem}'","start_margin_bytes":134217728,"target_margin_bytes":805306368}')" = 200 ]
fill "$live" "$tmp/sparse"
pairs() { jq -c "select(.event==\"reclaim\" and .cgroup==\"${live#$mem}\")" "$tmp/live_audit.jsonl"; }
n=$(pairs | wc -l)
echo "live: $n nudges in the audit log"
check "live: the controller acted (nudges >= 20): $n" [ "$n" -ge 20 ]
max_req=$(pairs | jq -s 'map(.requested_bytes) | max')
min_low=$(pairs | jq -s 'map(select(.result=="ok" or .result=="partial") | .lowered_limit) | min')
echo "live: largest nudge requested $max_req bytes; lowest limit written $min_low bytes"
check "live: no nudge above the step (256 MiB): $max_req" [ "$max_req" -le $((256 * MiB)) ]
check "live: the step clamped a larger need (a nudge of exactly 256 MiB)" [ "$max_req" -eq $((256 * MiB)) ]
check "live: never below the floor (16 MiB): $min_low" [ "$min_low" -ge $((16 * MiB)) ]
st=$(state)
episodes=$(echo "$st" | jq ".protections[] | select(.cgroup==\"${live#$mem}\") | .episodes")
actions=$(echo "$st" | jq ".protections[] | select(.cgroup==\"${live#$mem}\") | .actions")
echo "live: $actions actions in $episodes episodes"
check "live: episodes and actions in the state" bash -c "[ ${episodes:-0} -gt 0 ] && [ ${actions:-0} -gt 0 ]"
# Per episode, from the audit records' episode number (the cgroup's 1, 2, ...):
# a total against 8 x episodes would pass one episode of 20 among short ones.
unnumbered=$(pairs | jq -s 'map(select(.episode == null)) | length')
check "live: every reclaim record names its episode ($unnumbered without)" [ "$unnumbered" = 0 ]
per_episode=$(pairs | jq -s 'group_by(.episode) | map(length) | max')
echo "live: most nudges in one episode: $per_episode"
check "live: at most 8 nudges in any episode: $per_episode" [ "${per_episode:-99}" -le 8 ]
# Reclaimed bytes in any 1 s of audit time: the cap's 1 s burst plus 1 s of rate.
peak=$(pairs | jq -r '[.ts, .reclaimed_bytes] | @tsv' | python3 -c '
import sys, datetime
rows = [(datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp(), int(b))
        for t, b in (l.split("\t") for l in sys.stdin.read().splitlines() if l)]
best = 0
for i, (t0, _) in enumerate(rows):
    best = max(best, sum(b for t, b in rows[i:] if t - t0 < 1.0))
print(best)')
echo "live: most bytes reclaimed within 1 s: $peak (cap 8 GiB/s, 1 s burst)"
check "live: bytes per second within the cap: $peak <= 16 GiB" [ "$peak" -le $((16 << 30)) ]
throttle=$(settled_scrape "$url/metrics" '^memcg_controller_throttled_total' 10)
echo "live: $throttle" | tr '\n' ' '; echo
thr_cpu=$(echo "$throttle" | awk '/reason="cpu"/ {print $2+0}')
thr_rate=$(echo "$throttle" | awk '/reason="rate"/ {print $2+0}')
cpu=$(metric "$url/metrics" memcg_controller_cpu_seconds_total)
echo "live: controller CPU ${cpu}s; throttled cpu=${thr_cpu:-none} rate=${thr_rate:-none}"
check "live: both throttle series exported" bash -c "[ -n '$thr_cpu' ] && [ -n '$thr_rate' ]"
check "live: limit restored after the stream" [ "$(cat "$live/memory.limit_in_bytes")" = $((1024 * MiB)) ]
check "live: unprotect 200" [ "$(post unprotect '{"cgroup":"'${live#$mem}'"}')" = 200 ]

# The floor: a target margin that would take usage to 4 MiB; the nudge stops
# at the floor (16 MiB) exactly.
mkcg floor _floor $((64 * MiB))
check "floor: protect 200" [ "$(post protect '{"cgroup":"'${floor#$mem}'","start_margin_bytes":8388608,"target_margin_bytes":62914560}')" = 200 ]
head -c $((60 * MiB)) /dev/zero > "$tmp/fill60"
fill "$floor" "$tmp/fill60"
floor_nudged() {
  jq -s -e "map(select(.event==\"reclaim\" and .cgroup==\"${floor#$mem}\" and .result==\"ok\")) | length > 0" \
    "$tmp/live_audit.jsonl" >/dev/null
}
check "floor: the controller nudged it" poll_until 20 floor_nudged
floor_low=$(jq -s "map(select(.event==\"reclaim\" and .cgroup==\"${floor#$mem}\" and .result==\"ok\") | .lowered_limit) | min" "$tmp/live_audit.jsonl")
echo "floor: lowest limit written $floor_low bytes (usage $(cat "$floor/memory.usage_in_bytes"))"
check "floor: the nudge stops at the floor, 16 MiB exactly: $floor_low" [ "$floor_low" = $((16 * MiB)) ]
check "floor: unprotect 200" [ "$(post unprotect '{"cgroup":"'${floor#$mem}'"}')" = 200 ]
check "floor: limit restored" [ "$(cat "$floor/memory.limit_in_bytes")" = $((64 * MiB)) ]

# --- 4. a protected cgroup removed --------------------------------------------
check "gone: protect 200" [ "$(post protect '{"cgroup":"'${gone#$mem}'","start_margin_bytes":67108864,"target_margin_bytes":134217728}')" = 200 ]
head -c $((512 * MiB)) /dev/zero > "$tmp/fill512"
fill "$gone" "$tmp/fill512"
acted() { grep -q "\"event\":\"reclaim\".*\"cgroup\":\"${gone#$mem}\"\|\"cgroup\":\"${gone#$mem}\".*\"event\":\"reclaim\"" "$tmp/live_audit.jsonl"; }
check "gone: the controller nudged it" poll_until 20 acted
pending_before=$(state | jq '.journal.pending')
# A nudge's journal entry stays armed while the protection lasts (journal.h),
# so there is something for the removal to clear.
check "gone: a journal entry is pending while protected (>= 1): $pending_before" [ "${pending_before:-0}" -ge 1 ]
for _ in $(seq 1 300); do rmdir "$gone" 2>/dev/null && break; sleep 0.1; done  # 30 s: exited tasks leave late under load
check "gone: rmdir" [ ! -d "$gone" ]
absent() { ! state | jq -e ".protections[] | select(.cgroup==\"${gone#$mem}\")" >/dev/null; }
check "gone: the state API drops the protection" poll_until 20 absent
check "gone: memcg_controller_protected_cgroups 0" poll_until 60 bash -c \
  "curl -fsS $url/metrics | grep -qx 'memcg_controller_protected_cgroups 0'"
check "gone: audit says unprotect reason cgroup removed" bash -c \
  "jq -s -e 'map(select(.event==\"unprotect\" and .cgroup==\"${gone#$mem}\" and .reason==\"cgroup removed\")) | length == 1' '$tmp/live_audit.jsonl' >/dev/null"
check "gone: state journal pending 0: $(state | jq '.journal.pending')" [ "$(state | jq '.journal.pending')" = 0 ]
# Every "lower" of the journal file has its "clear".
open_seqs=$(python3 - "$tmp/live.journal" <<'PY'
import json, sys
open_ = set()
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("op") == "lower":
        open_.add(j["seq"])
    elif j.get("op") == "clear":
        open_.discard(j["seq"])
print(len(open_))
PY
)
check "gone: the journal file has nothing pending: $open_seqs" [ "$open_seqs" = 0 ]
stop_exporter

# --- 5. the bytes-per-second cap, set low -------------------------------------
rate=$((16 * MiB))
mkcg cap _cap $((256 * MiB))
check "cap: exporter ready" start_exporter "$tmp/cap.log" --controller.enable \
  --controller.allow="$base.*" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/cap.journal" --controller.audit-log="$tmp/cap_audit.jsonl" \
  --controller.max-bytes-per-second=$rate --controller.max-step-bytes=$((4 * MiB))
t_begin=$(date +%s.%N)  # the bucket holds at most one burst (16 MiB) from here on
check "cap: protect 200" [ "$(post protect '{"cgroup":"'${cap#$mem}'","start_margin_bytes":67108864,"target_margin_bytes":134217728}')" = 200 ]
fill "$cap" "$tmp/sparse" &  # GB/s of page cache: far above the cap
pids+=($!)
throttled_rate() {
  local n
  n=$(metric "$url/metrics" 'memcg_controller_throttled_total{reason="rate"}')
  [ "${n:-0}" -ge 20 ]
}
check "cap: the cap bites (throttled{reason=rate} >= 20)" poll_until 60 throttled_rate
sleep 2  # a longer window for the bound (the bound itself holds at any time)
# The audit lines first, then the end time: every nudge counted was taken
# from the bucket before t_end (a line being written as it is copied is
# skipped: fromjson?).
cp "$tmp/cap_audit.jsonl" "$tmp/cap_audit.snap"
t_end=$(date +%s.%N)
cap_nudges() { jq -nR "[inputs | fromjson? | select(.event==\"reclaim\" and .cgroup==\"${cap#$mem}\") | .$1]" "$tmp/cap_audit.snap"; }
reclaimed=$(cap_nudges reclaimed_bytes | jq 'add // 0')
max_req=$(cap_nudges requested_bytes | jq 'max // 0')
bound=$(python3 -c "print(int($rate * ($t_end - $t_begin) + $rate))")
thr=$(metric "$url/metrics" 'memcg_controller_throttled_total{reason="rate"}')
echo "cap: reclaimed $reclaimed bytes in $(python3 -c "print(round($t_end - $t_begin, 2))") s (bound $bound: 16 MiB/s x elapsed + 16 MiB); throttled rate=$thr; largest nudge $max_req"
check "cap: the controller reclaimed (> 0): $reclaimed" [ "${reclaimed:-0}" -gt 0 ]
check "cap: reclaimed within rate x elapsed + burst: $reclaimed <= $bound" [ "${reclaimed:-0}" -le "$bound" ]
check "cap: no nudge above the step flag (4 MiB): $max_req" [ "${max_req:-0}" -le $((4 * MiB)) ]
for p in $(cat "$cap/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done  # the reader
kill "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null; unset 'pids[-1]'
check "cap: unprotect 200" [ "$(post unprotect '{"cgroup":"'${cap#$mem}'"}')" = 200 ]
check "cap: limit restored" [ "$(cat "$cap/memory.limit_in_bytes")" = $((256 * MiB)) ]

if [ $fail -gt 0 ]; then
  for f in replay dry live cap; do echo "--- $f log"; tail -15 "$tmp/$f.log" 2>/dev/null; done
fi
summary "controller limits e2e"
