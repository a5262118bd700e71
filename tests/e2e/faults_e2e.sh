#!/usr/bin/env bash
# Faults: each shows the exporter keeps serving, reports the fault
# as a metric and a log line, and writes nothing it could not journal.
#   1. a read error (EIO): a copy of the fixture tree whose /web/memory.stat is
#      a symlink to /proc/self/mem (reading its offset 0 fails with EIO): every
#      scrape is 200, memory_stat reports success 0 and counts the error, the
#      log names the file and "Input/output error", the other cgroups and
#      collectors are unaffected;
#   2. the history at its series limit (no root): every memory.stat series of
#      the fixture tree selected into a history of 5: it holds 5, the refused
#      ones are counted once each (memcg_exporter_history_series_refused_total
#      stays put over 5 more passes), one log line with the limit, /metrics is
#      whole, and each kept series' query value equals the exposition's;
#   3. cgroups vanishing mid-read (root, cgroup v1): 20 cgroups created and
#      removed in a tight loop while 40 scrapes run: every scrape is 200 and
#      complete, no collector reports failure (a vanished cgroup is skipped,
#      memcg_exporter_cgroups_vanished_total counts it);
#   4. a full disk under the controller's journal and audit log (root: a
#      16 KiB tmpfs, filled): the controller refuses to nudge (a v1 nudge is
#      never done unjournaled): the limit is never seen changed, the actions
#      counter says result="error", the state API and the audit log line carry
#      "No space left on device", scrapes go on;
#   5. the journal's filesystem turned read-only while the exporter runs (root:
#      an ext4 loop image of its own, errors=remount-ro, its trigger_fs_error
#      switch): the same refusal, with "Read-only file system";
#   6. tracefs unmounted under us (root): the exporter traces through a
#      tracefs mount of this test's own, which is lazily unmounted while it
#      runs: its open instance files keep working (a detached mount lives on
#      while descriptors hold it), so scrapes go on (200), vmscan still
#      reports success, and it exits cleanly, its instance gone;
#   7. our tracefs instance removed under us (root): rmdir of the exporter's
#      own instance from outside is refused by the kernel (EBUSY: the
#      exporter holds its per-CPU files open), tracing goes on (events still
#      read, no read errors), and the exporter removes it itself at exit.
# Elsewhere (unit and live tests, README "Tests"): EBUSY/EINTR/ENOSPC on the
# controller's writes (unit.ControllerTest.WriteFaultsAreCountedAuditedAndLogged),
# the kernel refusing an event enable (unit.EnableEventsTest.*,
# live.TracingLive.RefusedEnableLeavesTheRestTraced), taskstats
# netlink ENOBUFS (live.TaskstatsEnobufs.*).
# usage: faults_e2e.sh path/to/memcg_exporter
set -uo pipefail
bin=$(realpath "${1:?usage: faults_e2e.sh path/to/memcg_exporter}")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
for t in curl python3; do command -v $t >/dev/null || { echo "SKIP: needs $t"; exit 77; }; done
fixtures=$(cd "$here/../fixtures" && pwd)
tmp=$(mktemp -d /var/tmp/memcg_exporter_test_harden_faults.XXXXXX)
mem=/sys/fs/cgroup/memory
base=memcg_exporter_test_harden_faults_$$
epid=
bg=()
mounts=()
cleanup() {
  [ -n "$epid" ] && kill "$epid" 2>/dev/null && wait "$epid" 2>/dev/null
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [ -d "$mem/$base" ]; then
    for d in $(find "$mem/$base" -type d | sort -r); do
      for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
      for _ in $(seq 1 50); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
    done
  fi
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
start() {  # start LOG ARGS...: the exporter on a port of its own; sets $epid and $url
  local log=$1; shift
  : >"$log"
  "$bin" --web.listen-address=127.0.0.1:0 "$@" 2>"$log" &
  epid=$!
  poll_until 20 grep -q 'msg="listening"' "$log" || { echo "FAIL exporter did not start:"; cat "$log"; return 1; }
  url=http://127.0.0.1:$(sed -n 's/.*msg="listening".* port=\([0-9]*\).*/\1/p' "$log")
  poll_until 20 curl -fsS -o /dev/null "$url/-/ready"
}
stop() { kill "$epid" 2>/dev/null; wait "$epid" 2>/dev/null; local rc=$?; epid=; return $rc; }
stream_in() {  # stream_in CGROUP_DIR: a reader of $tmp/sparse in the cgroup, in the background
  sh -c "echo \$\$ > $1/cgroup.procs; while :; do cat $tmp/sparse > /dev/null; done" &
  bg+=($!)
}
watch_limit() {  # watch_limit LIMIT_FILE OUT: every value the file is seen to take, into OUT
  python3 - "$1" "$2" <<'PY' &
import sys, time
seen = set()
end = time.time() + 120
while time.time() < end:
    with open(sys.argv[1]) as f:
        v = f.read().strip()
    if v not in seen:
        seen.add(v)
        with open(sys.argv[2], "w") as o:
            o.write(" ".join(sorted(seen)) + "\n")
PY
  bg+=($!)
  poll_until 20 test -s "$2" || { echo "FAIL the limit poller did not start"; return 1; }
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
metric() { curl -fsS "$url/metrics" | awk -v m="$1" '$1==m {print $2+0}'; }

# --- 1. EIO --------------------------------------------------------------------
cp -r "$fixtures/cgroupfs/v1" "$tmp/fs"
rm "$tmp/fs/memory/web/memory.stat" && ln -s /proc/self/mem "$tmp/fs/memory/web/memory.stat"
start "$tmp/eio.log" --path.cgroupfs="$tmp/fs" --path.procfs="$fixtures/procfs" --no-collector.vmscan || exit 1
ok=0
for _ in 1 2 3; do [ "$(code "$url/metrics")" = 200 ] && ok=$((ok + 1)); done
check "EIO: 3 of 3 scrapes answer 200 ($ok)" [ $ok = 3 ]
check "EIO: memcg_exporter_collector_success{collector=\"memory_stat\"} 0" \
  [ "$(metric 'memcg_exporter_collector_success{collector="memory_stat"}')" = 0 ]
errs=$(metric 'memcg_exporter_scrape_errors_total{collector="memory_stat"}')
check "EIO: the errors are counted (${errs:-none} >= 3)" [ "${errs:-0}" -ge 3 ]
check "EIO: the other collectors succeed (memory_usage 1)" \
  [ "$(metric 'memcg_exporter_collector_success{collector="memory_usage"}')" = 1 ]
curl -fsS "$url/metrics" >"$tmp/eio.prom"
check "EIO: the other cgroups' memory.stat is still exported" \
  grep -q '^memcg_memory_stat_.*{cgroup="/system.slice"}' "$tmp/eio.prom"
check "EIO: the broken cgroup's memory.stat is not (no made-up zeros)" \
  bash -c "! grep -q '^memcg_memory_stat_.*{cgroup=\"/web\"}' '$tmp/eio.prom'"
check "EIO: logged with the file and the errno" \
  grep -q 'msg="collector failed" collector=memory_stat err=.*web/memory.stat.*Input/output error' "$tmp/eio.log"
check "EIO: logged once, not per scrape ($(grep -c 'msg="collector failed"' "$tmp/eio.log") lines)" \
  [ "$(grep -c 'msg="collector failed"' "$tmp/eio.log")" = 1 ]
stop

# --- 2. the history at its series limit --------------------------------------------
# Every memory.stat series selected (dozens on the fixture tree) and the live
# view's, into a history that holds 5.
limit=5
start "$tmp/hist.log" --path.cgroupfs="$fixtures/cgroupfs/v1" --path.procfs="$fixtures/procfs" \
  --no-collector.vmscan --history.interval=200ms --history.series-limit=$limit \
  --history.match='{__name__=~"memcg_memory_stat_.+"}' || exit 1
passes() { metric memcg_exporter_history_sampler_passes_total; }
check "history: the sampler runs (3 passes)" poll_until 30 bash -c "$(declare -f metric passes); url=$url; [ \"\$(passes)\" -ge 3 ] 2>/dev/null"
refused1=$(metric memcg_exporter_history_series_refused_total)
p1=$(passes)
check "history: 5 more passes" poll_until 30 bash -c "$(declare -f metric passes); url=$url; [ \"\$(passes)\" -ge $((p1 + 5)) ] 2>/dev/null"
refused2=$(metric memcg_exporter_history_series_refused_total)
held=$(metric memcg_exporter_history_series)
lines=$(grep -c 'history series limit reached' "$tmp/hist.log")
echo "history: limit $limit, series held ${held:-none}, refused ${refused1:-none} after $p1 passes, ${refused2:-none} after $(passes); $lines log line(s)"
check "history: it holds exactly the limit ($held)" [ "${held:-0}" = $limit ]
check "history: refused series counted (${refused2:-none} > 0)" [ "${refused2:-0}" -gt 0 ]
check "history: counted once per series, not per sample (${refused1:-none} = ${refused2:-none} over 5 passes)" \
  [ "${refused1:-x}" = "${refused2:-y}" ]
check "history: logged once ($lines lines), with the limit" \
  bash -c "[ $lines = 1 ] && grep 'history series limit reached' '$tmp/hist.log' | grep -q 'limit=$limit'"
curl -fsS "$url/metrics" >"$tmp/hist.prom"
check "history: /metrics answers in full (build_info, every memory.stat series)" \
  bash -c "grep -q '^memcg_exporter_build_info' '$tmp/hist.prom' && [ \$(grep -c '^memcg_memory_stat_' '$tmp/hist.prom') -gt $limit ]"
# Each kept series' value from the query API equals the exposition's.
python3 - "$url" "$tmp/hist.prom" $limit <<'PY' >"$tmp/hist.cmp"
import json, re, sys, urllib.parse, urllib.request
url, prom, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
def get(path, **q):
    with urllib.request.urlopen(url + path + "?" + urllib.parse.urlencode(q)) as r:
        return json.load(r)
expo = {}
for line in open(prom):
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line.strip())
    if m:
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        expo[(m.group(1), labels)] = float(m.group(3))
series = get("/api/v1/series", **{"match[]": '{__name__=~".+"}'})["data"]
ok = 0
for ls in series:
    name = ls.pop("__name__")
    sel = name + "{" + ",".join('%s="%s"' % kv for kv in sorted(ls.items())) + "}"
    res = get("/api/v1/query", query=sel)["data"]["result"]
    want = expo.get((name, frozenset(ls.items())))
    got = float(res[0]["value"][1]) if len(res) == 1 else None
    print("%s query=%s metrics=%s" % (sel, got, want))
    ok += got is not None and got == want
print("series %d, agreeing %d" % (len(series), ok))
sys.exit(0 if len(series) == limit and ok == limit else 1)
PY
hrc=$?
tail -1 "$tmp/hist.cmp"
check "history: the kept series answer queries with the exposition's values" [ $hrc = 0 ]
stop

if [ "$(id -u)" != 0 ] || [ ! -f $mem/memory.limit_in_bytes ]; then
  echo "faults: parts 3-7 SKIPPED: need root and cgroup v1 memory"
  summary faults
  exit $([ "$fail" = 0 ] && echo 77 || echo 1)
fi
mkdir "$mem/$base" || { echo "FAIL cannot make $mem/$base"; exit 1; }
skipped_parts=()

# --- 3. cgroups vanishing mid-read -----------------------------------------------
# Every scrape walks (interval 0), so cgroups removed between its walk and its
# reads are met mid-scrape.
start "$tmp/churn.log" --cgroup.include="/|/$base.*" --cgroup.refresh-interval-ms=0 \
  --no-collector.vmscan --log.level=debug || exit 1
python3 - "$mem/$base" <<'PY' &
import os, sys, time
root = sys.argv[1]
end = time.time() + 120
i = 0
while time.time() < end:
    d = os.path.join(root, "c%d" % (i % 20))
    try:
        os.mkdir(d)
    except FileExistsError:
        try:
            os.rmdir(d)
        except OSError:
            pass
    i += 1
PY
bg+=($!)
ok=0 complete=0 failed_collectors=0
for _ in $(seq 1 40); do
  out=$(curl -s -w '\n%{http_code}' "$url/metrics")
  [ "$(tail -1 <<<"$out")" = 200 ] && ok=$((ok + 1))
  grep -q '^memcg_exporter_build_info' <<<"$out" && complete=$((complete + 1))
  failed_collectors=$((failed_collectors + $(grep -c '^memcg_exporter_collector_success{.*} 0$' <<<"$out")))
done
kill "${bg[-1]}"; wait "${bg[-1]}" 2>/dev/null; unset 'bg[-1]'
vanished=$(metric memcg_exporter_cgroups_vanished_total)
echo "churn: $ok of 40 scrapes 200, $complete complete, $failed_collectors collector failures, vanished_total=${vanished:-none}"
check "churn: 40 of 40 scrapes 200 and complete" bash -c "[ $ok = 40 ] && [ $complete = 40 ]"
check "churn: no collector reported failure" [ $failed_collectors = 0 ]
check "churn: no 'collector failed' log line" bash -c "! grep -q 'msg=\"collector failed\"' '$tmp/churn.log'"
check "churn: cgroups were met gone mid-scrape and counted (vanished_total ${vanished:-none} > 0)" \
  [ "${vanished:-0}" -gt 0 ]
stop
for d in "$mem/$base"/c*; do [ -d "$d" ] && rmdir "$d"; done

# --- 4. a full disk under the journal and the audit log ---------------------------
MiB=$((1 << 20))
mkdir -p "$tmp/full" && mount -t tmpfs -o size=16k,mode=0700 memcg_exporter_test_harden "$tmp/full" &&
  mounts+=("$tmp/full") || { echo "FAIL cannot mount a tmpfs"; exit 1; }
mkdir "$mem/$base/stream" && echo $((256 * MiB)) >"$mem/$base/stream/memory.limit_in_bytes"
echo tok >"$tmp/token"
: >"$tmp/full/controller.journal"; : >"$tmp/full/audit.jsonl"
dd if=/dev/zero of="$tmp/full/filler" bs=4k 2>/dev/null  # until ENOSPC
check "full: the tmpfs is full (a 1-byte append fails)" bash -c "! echo x >> '$tmp/full/filler' 2>/dev/null"
truncate -s 16G "$tmp/sparse"
stream_in "$mem/$base/stream"
watch_limit "$mem/$base/stream/memory.limit_in_bytes" "$tmp/limits_seen" || exit 1
start "$tmp/full.log" --cgroup.include="/|/$base.*" --no-collector.vmscan --controller.enable \
  --controller.allow="/$base.*" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/full/controller.journal" --controller.audit-log="$tmp/full/audit.jsonl" || exit 1
check "full: protect 200" [ "$(code -X POST -H 'Authorization: Bearer tok' -H 'Content-Type: application/json' \
  --data '{"cgroup":"/'$base'/stream","start_margin_bytes":67108864,"target_margin_bytes":134217728}' \
  "$url/api/v1/controller/protect")" = 200 ]
errors() { metric "memcg_controller_actions_total{cgroup=\"/$base/stream\",actuator=\"v1_limit_nudge\",result=\"error\"}"; }
check "full: memcg_controller_actions_total{result=\"error\"} counts refused nudges (>= 3)" \
  poll_until 30 bash -c "$(declare -f metric errors); url=$url; base=$base; [ \"\$(errors)\" -ge 3 ] 2>/dev/null"
echo "full: $(errors) refused nudges; limits seen: $(cat "$tmp/limits_seen")"
check "full: the limit was never seen other than the original" \
  [ "$(cat "$tmp/limits_seen")" = $((256 * MiB)) ]
check "full: no ok or partial nudge counted (and the exporter answers)" \
  absent "$url/metrics" 'memcg_controller_actions_total\{.*result="(ok|partial)"\} [1-9]'

check "full: the state API says why (No space left on device)" \
  bash -c "curl -fsS -H 'Authorization: Bearer tok' '$url/api/v1/controller/state' | grep -q 'No space left on device'"
check "full: the log line says why (an audit line: result error, No space left on device)" \
  bash -c "grep 'msg=\"controller audit\"' '$tmp/full.log' | grep 'No space left on device' | grep -q 'result.....error'"
check "full: scrapes go on" [ "$(code "$url/metrics")" = 200 ]
stop
check "full: the limit is the original after exit" [ "$(cat "$mem/$base/stream/memory.limit_in_bytes")" = $((256 * MiB)) ]
for p in "${bg[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; bg=()

# --- 5. the journal's filesystem turned read-only under the controller -------------
# An ext4 image of this test's own (loop mount, errors=remount-ro): its
# trigger_fs_error switch makes ext4 declare an error and remount itself
# read-only while the exporter holds the journal open for writing, as a
# failing disk would (a plain remount,ro is refused while a file is open for
# writing). The kernel logs "EXT4-fs error ... trigger_test_error" for it.
ro_dev=
if command -v mkfs.ext4 >/dev/null && truncate -s 8M "$tmp/ro.img" && mkfs.ext4 -q -F "$tmp/ro.img" &&
  mkdir -p "$tmp/ro" && mount -o loop,errors=remount-ro "$tmp/ro.img" "$tmp/ro"; then
  mounts+=("$tmp/ro")
  ro_dev=$(basename "$(findmnt -n -o SOURCE "$tmp/ro")")
fi
if [ -n "$ro_dev" ] && [ -w "/sys/fs/ext4/$ro_dev/trigger_fs_error" ]; then
  mkdir "$mem/$base/rostream" && echo $((256 * MiB)) >"$mem/$base/rostream/memory.limit_in_bytes"
  stream_in "$mem/$base/rostream"
  watch_limit "$mem/$base/rostream/memory.limit_in_bytes" "$tmp/ro_limits_seen" || exit 1
  start "$tmp/ro.log" --cgroup.include="/|/$base.*" --no-collector.vmscan --controller.enable \
    --controller.allow="/$base.*" --controller.token-file="$tmp/token" \
    --controller.journal="$tmp/ro/controller.journal" --controller.audit-log="$tmp/ro/audit.jsonl" || exit 1
  echo 1 >"/sys/fs/ext4/$ro_dev/trigger_fs_error"
  # (findmnt still says rw: ext4 marks itself emergency_ro and refuses writes.)
  check "ro: the journal's filesystem is read-only now (a new file: EROFS)" \
    poll_until 10 bash -c "! touch '$tmp/ro/probe' 2>/dev/null && touch '$tmp/ro/probe' 2>&1 | grep -q 'Read-only file system'"
  check "ro: protect 200" [ "$(code -X POST -H 'Authorization: Bearer tok' -H 'Content-Type: application/json' \
    --data '{"cgroup":"/'$base'/rostream","start_margin_bytes":67108864,"target_margin_bytes":134217728}' \
    "$url/api/v1/controller/protect")" = 200 ]
  roerrors() { metric "memcg_controller_actions_total{cgroup=\"/$base/rostream\",actuator=\"v1_limit_nudge\",result=\"error\"}"; }
  check "ro: memcg_controller_actions_total{result=\"error\"} counts refused nudges (>= 3)" \
    poll_until 30 bash -c "$(declare -f metric roerrors); url=$url; base=$base; [ \"\$(roerrors)\" -ge 3 ] 2>/dev/null"
  echo "ro: $(roerrors) refused nudges; limits seen: $(cat "$tmp/ro_limits_seen")"
  check "ro: the limit was never seen other than the original" \
    [ "$(cat "$tmp/ro_limits_seen")" = $((256 * MiB)) ]
  check "ro: no ok or partial nudge counted (and the exporter answers)" \
    absent "$url/metrics" 'memcg_controller_actions_total\{.*result="(ok|partial)"\} [1-9]'

  check "ro: the state API says why (Read-only file system)" \
    bash -c "curl -fsS -H 'Authorization: Bearer tok' '$url/api/v1/controller/state' | grep -q 'journal: .*Read-only file system'"
  check "ro: the log line says why (an audit line: result error, Read-only file system)" \
    bash -c "grep 'msg=\"controller audit\"' '$tmp/ro.log' | grep 'Read-only file system' | grep -q 'result.....error'"
  check "ro: scrapes go on" [ "$(code "$url/metrics")" = 200 ]
  stop
  check "ro: the limit is the original after exit" [ "$(cat "$mem/$base/rostream/memory.limit_in_bytes")" = $((256 * MiB)) ]
  for p in "${bg[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; bg=()
else
  skipped_parts+=("part 5: no ext4 loop mount with trigger_fs_error (mkfs.ext4, loop devices)")
  echo "faults: SKIPPED ${skipped_parts[-1]}"
fi

# --- 6. tracefs unmounted under us ------------------------------------------------
if grep -qw tracefs /proc/filesystems; then
  mkdir -p "$tmp/tfs" && mount -t tracefs nodev "$tmp/tfs" && mounts+=("$tmp/tfs")
  inst=memcg_exporter_test_harden_faults_$$
  start "$tmp/tfs.log" --cgroup.include="/|/$base.*" --path.tracefs="$tmp/tfs" \
    --collector.vmscan.instance="$inst" || exit 1
  check "tracefs: the vmscan collector traces (success 1)" \
    [ "$(metric 'memcg_exporter_collector_success{collector="vmscan"}')" = 1 ]
  umount -l "$tmp/tfs" && unset 'mounts[-1]'
  ok=0
  for _ in $(seq 1 10); do [ "$(code "$url/metrics")" = 200 ] && ok=$((ok + 1)); sleep 0.1; done
  check "tracefs: unmounted under it, 10 of 10 scrapes still 200 ($ok)" [ $ok = 10 ]
  check "tracefs: vmscan still succeeds after the unmount" \
    [ "$(metric 'memcg_exporter_collector_success{collector="vmscan"}')" = 1 ]
  stop; rc=$?
  check "tracefs: it exits cleanly afterwards (status $rc)" [ $rc = 0 ]
  check "tracefs: its instance is gone" bash -c "! ls -d /sys/kernel/tracing/instances/$inst 2>/dev/null"

  # --- 7. our tracefs instance removed under us -----------------------------------
  # From outside, rmdir of the instance this exporter made (its own name, on
  # this test's own tracefs mount; never another instance or the top-level
  # buffer). The kernel refuses (EBUSY) while any file of the instance is
  # open, and the exporter holds every CPU's trace_pipe_raw and stats for its
  # whole life: so the instance cannot be taken from under it. The test shows
  # the refusal, that nothing degrades (tracing goes on: events keep being
  # read) and the exporter still removes it at exit. Were it ever removed (a
  # kernel that allowed it), its reads would fail: memcg_trace_read_errors_total
  # counts them, the first is logged and the vmscan collector reports success
  # 0 while the last round had one (a path this kernel gives no way to reach).
  mkdir -p "$tmp/tfs2" && mount -t tracefs nodev "$tmp/tfs2" && mounts+=("$tmp/tfs2")
  inst=memcg_exporter_test_faults_inst_$$
  start "$tmp/inst.log" --cgroup.include="/|/$base.*" --path.tracefs="$tmp/tfs2" \
    --collector.vmscan.instance="$inst" || exit 1
  check "instance: the vmscan collector traces (success 1)" \
    [ "$(metric 'memcg_exporter_collector_success{collector="vmscan"}')" = 1 ]
  ev0=$(metric memcg_trace_events_total)
  out=$(rmdir "$tmp/tfs2/instances/$inst" 2>&1); rc=$?
  echo "instance: rmdir of instances/$inst from outside: status $rc: $out"
  check "instance: the kernel refuses to remove it while the exporter holds its files (EBUSY)" \
    bash -c "[ $rc != 0 ] && grep -q 'Device or resource busy' <<<'$out' && [ -d '$tmp/tfs2/instances/$inst' ]"
  ok=0
  for _ in $(seq 1 10); do [ "$(code "$url/metrics")" = 200 ] && ok=$((ok + 1)); done
  check "instance: 10 of 10 scrapes 200 after the attempt ($ok)" [ $ok = 10 ]
  # Every curl is a fork and an exit, which the instance traces.
  check "instance: tracing goes on (memcg_trace_events_total grows past ${ev0:-none})" \
    poll_until 30 bash -c "$(declare -f metric); url=$url; [ \"\$(metric memcg_trace_events_total)\" -gt ${ev0:-0} ]"
  check "instance: vmscan success 1, trace_up 1, no read errors" \
    bash -c "$(declare -f metric); url=$url; [ \"\$(metric 'memcg_exporter_collector_success{collector=\"vmscan\"}')\" = 1 ] &&
      [ \"\$(metric memcg_trace_up)\" = 1 ] && [ \"\$(metric memcg_trace_read_errors_total)\" = 0 ]"
  echo "instance: events_total ${ev0:-none} -> $(metric memcg_trace_events_total)"
  stop; rc=$?
  check "instance: it exits cleanly afterwards (status $rc)" [ $rc = 0 ]
  check "instance: and removed its instance itself" bash -c "! ls -d '$tmp/tfs2/instances/$inst' 2>/dev/null"
  check "instance: no 'could not remove' or 'reader is not running' log line" \
    bash -c "! grep -q 'could not remove tracefs instance\|trace reader is not running' '$tmp/inst.log'"
else
  skipped_parts+=("parts 6 and 7: no tracefs in this kernel")
  echo "faults: SKIPPED ${skipped_parts[-1]}"
fi

summary faults || exit 1
# A part that could not run is a skip (77), never a pass.
[ ${#skipped_parts[@]} = 0 ] || { echo "faults: SKIPPED (exit 77): ${skipped_parts[*]}"; exit 77; }
