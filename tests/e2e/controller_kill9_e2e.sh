#!/usr/bin/env bash
# kill -9 in a loop: the controller never leaves a limit changed
# after a crash. How that is guaranteed (controller/journal.h): before the
# actuator lowers memory.limit_in_bytes it appends a "lower" entry (cgroup
# directory, inode, original, lowered) to the journal and fdatasyncs it; at
# every start, controller on or off, pending entries are replayed: a limit
# that still reads exactly the lowered value in the same cgroup (inode) gets
# its original back before the exporter serves. So a kill between the
# lowering and the restore is undone by the next start.
#
# Here (root, cgroup v1): a 256 MiB memcg streams page cache (a sparse file
# read in a loop) while the exporter protects it, so the controller nudges
# its limit down and back continuously. Each round starts the exporter (the
# journal file is the same every round), checks the limit reads the original
# as soon as the exporter is ready, protects the cgroup and kills the exporter
# with SIGKILL: odd rounds at a random moment (0-1.5 s after protect), even
# rounds while the limit is lowered. The actuator's lower/restore pair is
# tight (microseconds: 0 of 50 polled kills landed inside it here), so on
# even rounds strace holds every pwrite to that limit file 300 ms after it
# returns (-e inject=pwrite64:delay_exit; the kernel has already applied the
# value), and a tight poll of the file kills the exporter as soon as it reads
# lowered: the kill lands inside the window every time. It counts the kills
# after which the limit still read lowered (each even round), checks the
# restart's replay restored exactly those (journal_restore audit lines with
# result ok), and that the original is back after every restart and at the
# end. MEMCG_KILL9_ROUNDS (default 100) rounds.
#
# usage: controller_kill9_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
rounds=${MEMCG_KILL9_ROUNDS:-100}
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "SKIP: needs root and cgroup v1 memory at /sys/fs/cgroup/memory"
  exit 77
fi
for tool in curl python3 strace; do
  command -v $tool >/dev/null || { echo "SKIP: $tool not installed (scripts/deps.sh)"; exit 77; }
done
MiB=$((1 << 20))
limit=$((256 * MiB))
mem=/sys/fs/cgroup/memory
name=memcg_exporter_test_harden_kill9_$$
cg=$mem/$name
tmp=$(mktemp -d /var/tmp/memcg_exporter_test_harden_kill9.XXXXXX)
epid=
wpid=
spid=
cleanup() {
  [ -n "$epid" ] && kill -9 "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  [ -n "$wpid" ] && kill "$wpid" 2>/dev/null
  if [ -d "$cg" ]; then
    for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in $(seq 1 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$cg" && echo $limit >"$cg/memory.limit_in_bytes" || { echo "FAIL cannot make $cg"; exit 1; }
echo "s3cret-token" >"$tmp/token"
truncate -s 16G "$tmp/sparse"  # reads of holes: page cache at memory speed
sh -c "echo \$\$ > $cg/cgroup.procs; while :; do cat $tmp/sparse > /dev/null; done" &
wpid=$!

start() {  # starts the exporter on a port of its own; sets $epid, $url (false if not ready)
  : >"$tmp/log"
  "$exporter" --web.listen-address=127.0.0.1:0 --cgroup.include="/|/$name" --no-collector.vmscan \
    --controller.enable --controller.allow="/$name" --controller.token-file="$tmp/token" \
    --controller.journal="$tmp/journal" --controller.audit-log="$tmp/audit.jsonl" 2>"$tmp/log" &
  epid=$!
  poll_until 20 grep -q 'msg="listening"' "$tmp/log" || return 1
  url=http://127.0.0.1:$(sed -n 's/.*msg="listening".* port=\([0-9]*\).*/\1/p' "$tmp/log")
  poll_until 20 curl -fsS -o /dev/null "$url/-/ready"
}
protect() {
  curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer s3cret-token" \
    -H 'Content-Type: application/json' "$url/api/v1/controller/protect" \
    --data '{"cgroup":"/'$name'","start_margin_bytes":67108864,"target_margin_bytes":134217728}'
}
# Kills `pid` the moment `file` reads other than `want` (up to 30 s: the
# controller's first nudge comes at its own pace on a loaded machine, and 3 s
# missed it), else at the end; prints "lowered" or "unchanged" for the value
# at the kill. Polled every millisecond (the delayed write holds it 300 ms).
kill_when_lowered() {
  python3 - "$1" "$2" "$3" <<'PY'
import os, signal, sys, time
pid, path, want = int(sys.argv[1]), sys.argv[2], sys.argv[3]
end = time.time() + 30
seen = "unchanged"
while time.time() < end:
    with open(path) as f:
        if f.read().strip() != want:
            seen = "lowered"
            break
    time.sleep(0.001)
os.kill(pid, signal.SIGKILL)
print(seen)
PY
}

t0=$SECONDS
bad=0 lowered_at_death=0 polled_hits=0 started=0
for i in $(seq 1 "$rounds"); do
  if ! start; then
    echo "round $i: the exporter did not become ready:"; cat "$tmp/log"; bad=$((bad + 1)); break
  fi
  started=$((started + 1))
  now=$(cat "$cg/memory.limit_in_bytes")
  if [ "$now" != $limit ]; then
    echo "round $i: limit $now after the restart, want $limit"; bad=$((bad + 1))
  fi
  [ "$(protect)" = 200 ] || { echo "round $i: protect failed"; bad=$((bad + 1)); }
  if [ $((i % 2)) = 0 ]; then
    strace -qq -f -p "$epid" -o /dev/null -P "$cg/memory.limit_in_bytes" -e trace=pwrite64 \
      -e inject=pwrite64:delay_exit=300000 2>/dev/null &
    spid=$!
    poll_until 60 bash -c "! grep -q '^TracerPid:[[:space:]]*0$' /proc/$epid/status"
    [ "$(kill_when_lowered "$epid" "$cg/memory.limit_in_bytes" $limit)" = lowered ] &&
      polled_hits=$((polled_hits + 1))
    wait "$spid" 2>/dev/null
    spid=
  else
    sleep "$(python3 -c 'import random; print(random.uniform(0, 1.5))')"
    kill -9 "$epid"
  fi
  wait "$epid" 2>/dev/null
  epid=
  [ "$(cat "$cg/memory.limit_in_bytes")" != $limit ] && lowered_at_death=$((lowered_at_death + 1))
done
# The last restart, then a clean stop.
start || bad=$((bad + 1))
final_after_start=$(cat "$cg/memory.limit_in_bytes")
kill "$epid"; wait "$epid" 2>/dev/null; epid=
final=$(cat "$cg/memory.limit_in_bytes")
nudges=$(grep -c '"event":"reclaim"' "$tmp/audit.jsonl" 2>/dev/null)
restores=$(grep '"event":"journal_restore"' "$tmp/audit.jsonl" 2>/dev/null | grep -c '"result":"ok"')
echo "kill9: $rounds rounds in $((SECONDS - t0)) s; $started starts; kills that left the limit lowered:" \
  "$lowered_at_death (the poll saw it lowered in $polled_hits of $((rounds / 2)));" \
  "nudges in the audit log: $nudges; journal restores (result ok): $restores"
check "every one of $rounds restarts found the original limit ($bad bad rounds)" [ $bad = 0 ]
check "all $rounds rounds started" [ $started = "$rounds" ]
check "every even round's kill landed while the limit was lowered ($lowered_at_death >= $((rounds / 2)))" \
  [ $lowered_at_death -ge $((rounds / 2)) ]
check "the replay restored exactly the kills that left it lowered ($restores = $lowered_at_death)" \
  [ "${restores:-0}" = $lowered_at_death ]
check "the limit is the original after the last restart ($final_after_start) and after exit ($final)" \
  bash -c "[ $final_after_start = $limit ] && [ $final = $limit ]"
summary controller_kill9
