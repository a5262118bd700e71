# v2 tracing: the exporter's vmscan collector (a private tracefs
# instance, on by default) on this kernel's own event formats, compared with
# the kernel's counters for the same cgroup under a streaming workload.
# Sourced by /init in a subshell.
#
# What the kernel counts, and what the tracer must therefore see, for a cgroup
# with no children and memory.high=max whose only task streams a file through
# a memory.max=64M limit (6.1, mm/memcontrol.c try_charge_memcg and
# mm/vmscan.c):
#  - every failed charge counts one memory.events "max" and then makes exactly
#    one try_to_free_mem_cgroup_pages() call, i.e. one
#    mm_vmscan_memcg_reclaim_begin/_end pair in the charging task:
#    memcg_vmscan_reclaim_total{kind="memcg"} == the memory.events max delta;
#  - memory.stat pgscan_direct/pgsteal_direct (on v2 limit reclaim is "direct")
#    count what shrink_inactive_list() isolated/freed, the same numbers
#    mm_vmscan_lru_shrink_inactive reports: memcg_vmscan_lru_{scanned,
#    reclaimed}_pages_total{context="memcg"} (summed over lru) == the deltas;
#  - nr_reclaimed of mm_vmscan_memcg_reclaim_end is sc->nr_reclaimed: the same
#    LRU pages plus slab pages freed by the shrinkers during the pass, so
#    memcg_vmscan_reclaimed_pages_total{kind="memcg"} >= pgsteal_direct delta,
#    and above it only by slab (a streaming cat allocates next to no slab).

CG=/sys/fs/cgroup
T="${CG}/memcg_exporter_test_trace"      # memory.max=64M, the traced workload
TL='cgroup="/memcg_exporter_test_trace"'
LIMIT=67108864
STREAM=/mnt/stream.bin
TRACEFS=/sys/kernel/tracing
PORT=9713
URL="http://127.0.0.1:${PORT}"

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip trace_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
if [ ! -d "${TRACEFS}/events/vmscan" ] || [ ! -d "${TRACEFS}/instances" ]; then
  mt_fail trace_tracefs "no tracefs with vmscan events at ${TRACEFS}" \
    "($(grep tracefs /proc/mounts | tr '\n' ' '))"
  exit 0
fi

# This kernel's formats of the events the tracer decodes, next to the host's
# (6.18, the unit tests' fixtures, which run.sh puts in /tests/host_formats).
# fields FORMAT: "name@offset" of each non-common field; layout FORMAT: the
# same with type and size, for the comparison.
fields() {
  awk -F'\t' '/field:/ && !/common_/ {
    f = $2; sub(/^field:/, "", f); sub(/;$/, "", f); n = split(f, w, /[ \t]+/); name = w[n]
    o = $3; sub(/^offset:/, "", o); sub(/;$/, "", o)
    printf "%s%s@%s", (c++ ? " " : ""), name, o }' "$1"
}
layout() { awk -F'\t' '/field:/ { printf "%s %s %s|", $2, $3, $4 }' "$1"; }
for e in vmscan/mm_vmscan_memcg_reclaim_begin vmscan/mm_vmscan_memcg_reclaim_end \
  vmscan/mm_vmscan_lru_shrink_inactive cgroup/cgroup_attach_task sched/sched_process_fork \
  sched/sched_process_exit vmscan/mm_vmscan_lru_isolate vmscan/mm_vmscan_lru_shrink_active \
  vmscan/mm_vmscan_write_folio vmscan/mm_vmscan_writepage vmscan/mm_vmscan_throttled \
  vmscan/mm_shrink_slab_start vmscan/mm_shrink_slab_end vmscan/mm_vmscan_reclaim_pages \
  cgroup/cgroup_rmdir; do
  if [ -f "${TRACEFS}/events/${e}/format" ]; then
    mt_info "format ${e##*/}: $(fields "${TRACEFS}/events/${e}/format")"
  else
    mt_info "format ${e##*/}: absent on this kernel (not enabled)"
  fi
done
if [ -d /tests/host_formats ]; then
  n=0; ids=0; differ=""
  for h in /tests/host_formats/*/*/format; do
    e="${h#/tests/host_formats/}"; e="${e%/format}"
    g="${TRACEFS}/events/${e}/format"
    [ -f "${g}" ] || { differ="${differ} ${e##*/}(absent)"; continue; }
    n=$((n + 1))
    [ "$(awk '/^ID:/ { print $2 }' "${h}")" = "$(awk '/^ID:/ { print $2 }' "${g}")" ] ||
      ids=$((ids + 1))
    [ "$(layout "${h}")" = "$(layout "${g}")" ] || differ="${differ} ${e##*/}"
  done
  mt_info "vs the host's 6.18 formats: ${ids} of ${n} event ids differ; field layout" \
    "differs in:${differ:- none}"
fi
[ -f /sys/kernel/mm/lru_gen/enabled ] &&
  mt_info "lru_gen enabled=$(cat /sys/kernel/mm/lru_gen/enabled)" \
    "(0x0000: classic LRU, mm_vmscan_lru_shrink_inactive fires)"

# --- the exporter, default collectors (vmscan included) ----------------------------------
wait_no_trace_instance ||
  mt_info "an earlier exporter's tracefs instance is still there; the exporter removes it"
mkdir -p "${T}"
echo 64M >"${T}/memory.max"
if [ "$(cat "${T}/memory.max")" != "${LIMIT}" ]; then
  mt_fail trace_cgroup_created "memory.max of ${T}: $(cat "${T}/memory.max" 2>&1)"
  exit 0
fi
if ! start_exporter "${PORT}" /tmp/exporter_trace.log; then
  mt_fail trace_exporter_up "no answer on ${URL}/metrics within 240s"
  tail -n 20 /tmp/exporter_trace.log | sed 's/^/MEMCG_LOG exporter: /'
  exit 0
fi
S0=/tmp/trace_scrape0
scrape "${URL}/metrics" "${S0}"
expect_metric trace_collector_success_vmscan "${S0}" \
  'memcg_exporter_collector_success{collector="vmscan"}' 1
expect_metric trace_up "${S0}" memcg_trace_up 1

# --- workload: stream the file inside the 64M cgroup, from the disk -------------------------
drop_page_cache
scrape "${URL}/metrics" "${S0}"
lookups0="$(metric_value "${S0}" memcg_trace_pid_lookups_total)"
measured_stream "${T}" "${STREAM}"
if [ "${bytes}" = "$(stat -c %s "${STREAM}")" ]; then
  mt_pass trace_workload_streams
else
  mt_fail trace_workload_streams "cat read ${bytes} of $(stat -c %s "${STREAM}") bytes"
fi
mt_info "trace workload: ${bytes} bytes in ${wall}s; kernel: memory.events max +${d_max}," \
  "pgscan_direct +${d_scan}, pgsteal_direct +${d_steal} pages"

# The reader drains the ring buffer in the background: scrape until the
# counts of the test cgroup stop moving (the cgroup is idle now).
S=/tmp/trace_scrape1
K_TOTAL="memcg_vmscan_reclaim_total{${TL},kind=\"memcg\"}"
K_PAGES="memcg_vmscan_reclaimed_pages_total{${TL},kind=\"memcg\"}"
prev=""
i=0
while [ "${i}" -lt 20 ]; do
  if scrape "${URL}/metrics" "${S}"; then
    cur="$(metric_value "${S}" "${K_TOTAL}")/$(metric_value "${S}" "${K_PAGES}")"
    [ "${cur}" = "${prev}" ] && [ "${cur}" != / ] && break
    prev="${cur}"
  fi
  sleep 1
  i=$((i + 1))
done
if [ ! -s "${S}" ]; then
  mt_fail trace_scrape "GET ${URL}/metrics failed after the workload"
  exit 0
fi

# Sum of the samples of NAME for the test cgroup whose labels contain MATCH.
sum_samples() {
  awk -v n="$1{${TL}" -v m="$2" 'index($1, n) == 1 && index($1, m) { s += $2; f = 1 }
    END { if (f) printf "%.0f\n", s; exit !f }' "${S}"
}
r_total="$(metric_value "${S}" "${K_TOTAL}")"
r_pages="$(metric_value "${S}" "${K_PAGES}")"
r_unpaired="$(metric_value "${S}" "memcg_vmscan_reclaim_unpaired_total{${TL},kind=\"memcg\"}" ||
  echo 0)"
st_count="$(metric_value "${S}" "memcg_vmscan_reclaim_stall_seconds_count{${TL},kind=\"memcg\"}")"
st_sum="$(metric_value "${S}" "memcg_vmscan_reclaim_stall_seconds_sum{${TL},kind=\"memcg\"}")"
lru_scan="$(sum_samples memcg_vmscan_lru_scanned_pages_total 'context="memcg"')"
lru_steal="$(sum_samples memcg_vmscan_lru_reclaimed_pages_total 'context="memcg"')"
lost="$(metric_value "${S}" memcg_trace_events_lost_total)"
derr="$(metric_value "${S}" memcg_trace_decode_errors_total)"
mt_info "tracer: reclaim_total=${r_total:-none} reclaimed_pages=${r_pages:-none}" \
  "unpaired=${r_unpaired} stall_count=${st_count:-none} stall_sum=${st_sum:-none}s" \
  "lru_scanned=${lru_scan:-none} lru_reclaimed=${lru_steal:-none}" \
  "events=$(metric_value "${S}" memcg_trace_events_total) lost=${lost} decode_errors=${derr}"

expect_metric trace_collector_success_vmscan_after "${S}" \
  'memcg_exporter_collector_success{collector="vmscan"}' 1
expect_metric trace_up_after "${S}" memcg_trace_up 1
if is_gt "${r_total:-0}" 0; then
  mt_pass trace_reclaim_total_memcg_positive
else
  mt_fail trace_reclaim_total_memcg_positive "${K_TOTAL} = ${r_total:-missing}"
fi
if is_gt "${r_pages:-0}" 0; then
  mt_pass trace_reclaimed_pages_memcg_positive
else
  mt_fail trace_reclaimed_pages_memcg_positive "${K_PAGES} = ${r_pages:-missing}"
fi

# Lost events would make every comparison below short; report them first.
lost_ok=1
if [ "${lost}" = 0 ]; then
  mt_pass trace_no_events_lost
else
  mt_fail trace_no_events_lost "memcg_trace_events_lost_total = ${lost:-missing}"
  lost_ok=0
fi
expect_metric trace_no_decode_errors "${S}" memcg_trace_decode_errors_total 0

# The workload's cat is forked inside the cgroup (stream_in_cgroup): the
# tracer knows its cgroup from the decoded sched_process_fork (whose layout
# differs between 6.1 and 6.18) and cgroup_attach_task events, without
# falling back to /proc/<pid>/cgroup.
lookups1="$(metric_value "${S}" memcg_trace_pid_lookups_total)"
if [ -n "${lookups0}" ] && [ "${lookups1}" = "${lookups0}" ]; then
  mt_pass trace_fork_attach_decoded_no_proc_lookup
else
  mt_fail trace_fork_attach_decoded_no_proc_lookup "memcg_trace_pid_lookups_total" \
    "${lookups0:-missing} -> ${lookups1:-missing} over the workload (want no change)"
fi

# One reclaim pass per memory.events max: exact.
expect_metric trace_reclaim_total_eq_events_max "${S}" "${K_TOTAL}" "${d_max}"
# The LRU shrink counts are the very numbers memory.stat adds up: exact.
if [ "${lru_scan}" = "${d_scan}" ] && [ "${lru_steal}" = "${d_steal}" ]; then
  mt_pass trace_lru_eq_pgscan_pgsteal_direct
else
  mt_fail trace_lru_eq_pgscan_pgsteal_direct "lru scanned/reclaimed (all lrus)" \
    "${lru_scan:-missing}/${lru_steal:-missing}, kernel pgscan/pgsteal_direct ${d_scan}/${d_steal}"
fi
# nr_reclaimed of the reclaim passes: the LRU pages plus slab freed during the
# pass; never less, and above by at most 2% + 64 pages (observed: see README).
if [ -n "${r_pages}" ] && ! is_gt "${d_steal}" "${r_pages}" &&
  ! is_gt "${r_pages}" "$(awk -v s="${d_steal}" 'BEGIN { printf "%.0f\n", s * 1.02 + 64 }')"; then
  mt_pass trace_reclaimed_pages_vs_pgsteal_direct
else
  mt_fail trace_reclaimed_pages_vs_pgsteal_direct "${K_PAGES} = ${r_pages:-missing}," \
    "kernel pgsteal_direct delta ${d_steal} (want pgsteal <= traced <= pgsteal*1.02+64)"
fi
mt_info "tracer vs kernel: reclaims ${r_total:-none} vs memory.events max +${d_max};" \
  "reclaimed pages ${r_pages:-none} vs pgsteal_direct +${d_steal}" \
  "(diff $(( ${r_pages:-0} - d_steal ))); lru scanned ${lru_scan:-none} vs pgscan_direct +${d_scan}"

# Every pass has a begin in this trace (the cgroup is younger than the
# tracer): the histogram counts every pass, and a task stalls no longer than
# it ran.
if [ -n "${st_count}" ] && [ "${st_count}" = "$((r_total - r_unpaired))" ] &&
  [ "${r_unpaired}" = 0 ]; then
  mt_pass trace_stall_count_eq_reclaim_total
else
  mt_fail trace_stall_count_eq_reclaim_total "stall_seconds_count=${st_count:-missing}" \
    "reclaim_total=${r_total:-missing} unpaired=${r_unpaired}"
fi
if is_gt "${st_sum:-0}" 0 && ! is_gt "${st_sum}" "${wall}"; then
  mt_pass trace_stall_sum_within_wall
else
  mt_fail trace_stall_sum_within_wall "stall_seconds_sum=${st_sum:-missing}," \
    "the workload ran ${wall}s"
fi

# /api/v1/reclaim/report: JSON naming the test cgroup.
R=/tmp/trace_report.json
if scrape "${URL}/api/v1/reclaim/report" "${R}" && grep -q '"/memcg_exporter_test_trace"' "${R}" &&
  grep -q '^{' "${R}"; then
  mt_pass trace_reclaim_report_names_cgroup
  mt_info "reclaim report: $(grep -o '"memcg_reclaims":[0-9]*' "${R}" | head -n 1)" \
    "$(grep -o '"memcg_reclaim_pages_reclaimed":[0-9]*' "${R}" | head -n 1)"
else
  mt_fail trace_reclaim_report_names_cgroup "GET ${URL}/api/v1/reclaim/report:" \
    "$(head -c 300 "${R}" 2>/dev/null)"
fi

# The report's per-process row of the workload's cat (the only task of the
# cgroup that reclaims): its memcg reclaims are the cgroup's.
cat_row="$(grep -o '{[^{}]*"comm":"cat"[^{}]*}' "${R}" 2>/dev/null | head -n 1)"
cat_n="$(printf '%s' "${cat_row}" | grep -o '"memcg_reclaims":[0-9]*' | cut -d: -f2)"
if [ -n "${cat_n}" ] && [ "${cat_n}" = "${r_total}" ]; then
  mt_pass trace_report_process_row_cat
else
  mt_fail trace_report_process_row_cat "cat's row: ${cat_row:-none} (cgroup total ${r_total})"
fi

# --- a task moved between CPUs while it reclaims ----------------------------------------
# A cat in a 32M cgroup streams the file while this shell moves it between
# CPU0 and CPU1 (taskset, as fast as busybox forks), twice:
#  - "live": the exporter reads as in production, while the kernel writes. Its
#    pairing (counts, 0 unpaired) must equal a kernel-ordered text trace of the
#    same events in a second instance of ours: exact. Its stall sum is printed
#    beside that reference's, but not compared: see "paused".
#  - "paused": the exporter is stopped (SIGSTOP) while the cat runs, so the
#    events stay in its own instance's ring buffer; the test reads that very
#    buffer as text (the kernel's own decoding of the same stamps), then lets
#    the exporter go on and read it raw. Same stamps on both sides, so the
#    stall sums must agree to the text's resolution (1 us per pair). Beside
#    it memcg_trace_raw_dump (the reader alone, with the exporter's events)
#    must hand out every record of the cat with the stamp the kernel's text
#    of its buffer shows: how the reader decodes 6.1's sub-buffers (time
#    extends, absolute stamps, page stamps) across CPUs.
# Why not the other instance's text for the sums: each instance stamps a
# tracepoint hit with its own clock read, one after the other, and under TCG
# on a loaded host the vCPU thread can be descheduled between two of them
# (milliseconds); two reference instances of the same pairs show how far
# apart, per pair, in every run (printed as "instance vs instance"; ~1%).

# text_pairs FILE PID: PID's reclaim begin/end pairs in the text trace FILE,
# in the kernel's (timestamp) order, one line each: "P KIND US BCPU ECPU" (US:
# the pair's duration in microseconds), "U KIND" for an end without a begin,
# "O KIND" for a begin never ended.
text_pairs() {
  awk -v pid="$2" '
    /^#/ { next }
    {
      if (!match($0, / [0-9]+\.[0-9]+: mm_vmscan_(memcg|direct)_reclaim_(begin|end):/)) next
      m = substr($0, RSTART + 1, RLENGTH - 2)
      br = index($0, " ["); if (!br) next
      task = substr($0, 1, br - 1); n = split(task, t, "-"); if (t[n] != pid) next
      rest = substr($0, br + 2); cpu = substr(rest, 1, index(rest, "]") - 1) + 0
      # Not "+ ts[2]": busybox awk reads a number with a leading 0 and only
      # octal digits as octal ("002757" is 1519), so strip the zeros first.
      split(m, f, ": "); split(f[1], ts, "."); u = ts[2]; sub(/^0+/, "", u)
      us = ts[1] * 1000000 + u
      kind = (m ~ /memcg_reclaim/) ? "memcg" : "direct"
      if (m ~ /_begin$/) {
        if (open[kind]) print "O", kind
        open[kind] = 1; bts[kind] = us; bcpu[kind] = cpu
      } else if (!open[kind]) {
        print "U", kind
      } else {
        open[kind] = 0; printf "P %s %d %d %d\n", kind, us - bts[kind], bcpu[kind], cpu
      }
    }
    END { for (k in open) if (open[k]) print "O", k }' "$1"
}
# pair_summary PAIRS: "memcg_pairs unpaired_ends open_begins cross_cpu memcg_us direct_us".
pair_summary() {
  awk '$1 == "P" { if ($2 == "memcg") { n++; if ($4 != $5) c++ } us[$2] += $3 }
    $1 == "U" { ue++ } $1 == "O" { ob++ }
    END { printf "%d %d %d %d %d %d\n", n, ue, ob, c, us["memcg"], us["direct"] }' "$1"
}
# pair_diff PAIRS_A PAIRS_B: the memcg pairs of two instances side by side
# (the same task's pairs, in order): how their durations differ.
pair_diff() {
  awk 'FNR == NR { if ($1 == "P" && $2 == "memcg") a[++na] = $3; next }
    $1 == "P" && $2 == "memcg" { b[++nb] = $3 }
    END {
      n = (na < nb) ? na : nb
      for (i = 1; i <= n; i++) {
        d = b[i] - a[i]; s += d; ad = (d < 0) ? -d : d; sa += ad; if (ad > mx) mx = ad
        if (ad > 10) c10++
        if (ad > 100) c100++
        if (ad > 1000) { c1k++; s1k += d }
      }
      printf "pairs %d/%d, sum of differences %+dus (of |differences| %dus), max |d| %dus;", \
        na, nb, s, sa, mx
      printf " |d| > 10us: %d pairs, > 100us: %d, > 1ms: %d (together %+dus)\n", \
        c10 + 0, c100 + 0, c1k + 0, s1k
    }' "$1" "$2"
}
# threads_stopped PID: every thread of PID is stopped (state T).
threads_stopped() {
  for _t in /proc/"$1"/task/*/stat; do
    [ "$(cut -d' ' -f3 "${_t}")" = T ] || return 1
  done
  return 0
}

# raw_vs_text RAW TEXT PID: the records of PID that memcg_trace_raw_dump's
# reader handed out (RAW: "cpu ts_ns type pid") against the kernel's text of
# the same buffer (TEXT), per CPU in buffer order. The text prints a stamp
# rounded to microseconds ((ns + 500) / 1000), so each must be the reader's,
# rounded. Prints mismatches (at most 6) and "SUMMARY records N mismatches M
# count_mismatch_cpus K".
raw_vs_text() {
  awk -v pid="$3" '
    FNR == NR {
      if ($0 ~ /^#/ || $4 != pid) next
      c = $1 + 0; n = ++rn[c]; rts[c, n] = $2; rtype[c, n] = $3
      next
    }
    /^#/ { next }
    {
      br = index($0, " ["); if (!br) next
      task = substr($0, 1, br - 1); k = split(task, t, "-"); if (t[k] != pid) next
      rest = substr($0, br + 2); c = substr(rest, 1, index(rest, "]") - 1) + 0
      if (!match($0, / [0-9]+\.[0-9]+: /)) next
      ts = substr($0, RSTART + 1, RLENGTH - 3); split(ts, f, ".")
      u = f[2]; sub(/^0+/, "", u)  # not octal (see text_pairs)
      n = ++tn[c]; tus[c, n] = f[1] * 1000000 + u; tline[c, n] = $0
    }
    END {
      for (c in tn) cpus[c] = 1
      for (c in rn) cpus[c] = 1
      for (c in cpus) {
        m = (rn[c] < tn[c]) ? rn[c] : tn[c]
        for (i = 1; i <= m; i++) {
          r = int((rts[c, i] + 500) / 1000)
          if (r == tus[c, i]) continue
          bad++
          if (shown++ < 6)
            printf "MEMCG_TEST INFO order paused: reader vs text: cpu %d record %d: reader %.0f ns" \
              " (type %d), text %.0f us, diff %+.0f us; previous: reader %.0f ns (type %d), text" \
              " %.0f us; text line: %s\n", c, i, rts[c, i], rtype[c, i], tus[c, i], r - tus[c, i], \
              rts[c, i - 1], rtype[c, i - 1], tus[c, i - 1], tline[c, i]
        }
        if (rn[c] != tn[c]) {
          cnt++
          printf "MEMCG_TEST INFO order paused: reader vs text: cpu %d: %d records vs %d\n", \
            c, rn[c], tn[c]
        }
        tot += m
      }
      printf "SUMMARY %d %d %d\n", tot, bad + 0, cnt + 0
    }' "$1" "$2"
}

# order_run MODE (live | paused): the migrating workload in its own cgroup,
# the exporter's figures against the reference(s). Prints its checks.
order_run() {
  mode="$1"
  TO="${CG}/memcg_exporter_test_order_${mode}"
  TOL="cgroup=\"/memcg_exporter_test_order_${mode}\""
  EI="${TRACEFS}/instances/memcg_exporter"
  # Two references of the same events, so that every run measures how far
  # two instances' stamps of the same pairs are apart.
  REF="${TRACEFS}/instances/memcg_exporter_test_order_ref"
  REF2="${TRACEFS}/instances/memcg_exporter_test_order_ref2"
  rmdir "${REF}" "${REF2}" 2>/dev/null
  if ! mkdir "${REF}" || ! mkdir "${REF2}"; then
    mt_fail "trace_order_${mode}_ref_instance" "mkdir ${REF} ${REF2}"
    rmdir "${REF}" "${REF2}" 2>/dev/null
    return 0
  fi
  for r in "${REF}" "${REF2}"; do
    echo 8192 >"${r}/buffer_size_kb"
    echo mono >"${r}/trace_clock"
    for e in memcg_reclaim_begin memcg_reclaim_end direct_reclaim_begin direct_reclaim_end; do
      echo 1 >"${r}/events/vmscan/mm_vmscan_${e}/enable"
    done
  done
  mkdir -p "${TO}"
  echo 32M >"${TO}/memory.max"
  drop_page_cache
  dump_pid=""
  DUMP=/usr/bin/memcg_trace_raw_dump
  if [ "${mode}" = paused ] && [ -x "${DUMP}" ]; then
    # The tracer's reader on its own, in a fourth instance read the same way
    # (one round, then nothing until the workload is over), so that its
    # records can be compared one by one with the kernel's text of its buffer.
    rm -f /tmp/trace_dump_go /tmp/trace_dump.log
    "${DUMP}" --instance memcg_exporter_test_trace_dump --until /tmp/trace_dump_go \
      --text /tmp/trace_dump.txt --raw /tmp/trace_dump.raw >/tmp/trace_dump.log 2>&1 &
    dump_pid=$!
    i=0
    while ! grep -q '^ready' /tmp/trace_dump.log 2>/dev/null && [ "${i}" -lt 300 ]; do
      usleep 100000
      i=$((i + 1))
    done
  fi
  if [ "${mode}" = paused ]; then
    # The reader may be inside a round: once stopped, whatever the cat does
    # stays in the instance's buffer (8 MiB per CPU: ~10x what it writes).
    kill -STOP "${EXPORTER_PID}"
    i=0
    while ! threads_stopped "${EXPORTER_PID}" && [ "${i}" -lt 100 ]; do
      usleep 20000
      i=$((i + 1))
    done
    if ! threads_stopped "${EXPORTER_PID}"; then
      kill -CONT "${EXPORTER_PID}"
      mt_fail trace_order_paused_exporter_stopped "SIGSTOP did not stop the exporter in 2 s"
      rmdir "${TO}" "${REF}" "${REF2}" 2>/dev/null
      return 0
    fi
  fi
  echo 1 >"${REF}/tracing_on"
  echo 1 >"${REF2}/tracing_on"
  # exec: $! is the cat itself, in the cgroup before it reads a byte.
  timeout 300 sh -c "echo \$\$ >${TO}/cgroup.procs && exec cat ${STREAM}" >/dev/null &
  pid=$!
  moves=0
  while [ -e "/proc/${pid}/stat" ] && [ "$(cut -d' ' -f3 "/proc/${pid}/stat")" != Z ]; do
    taskset -p $((1 + moves % 2)) "${pid}" >/dev/null 2>&1 && moves=$((moves + 1))
    usleep 2000
  done
  wait "${pid}"
  rc=$?
  echo 0 >"${REF}/tracing_on"
  echo 0 >"${REF2}/tracing_on"
  OWN=/tmp/trace_order_own.txt
  if [ "${mode}" = paused ]; then
    # The exporter's own instance, not yet read by it (reading "trace" does
    # not consume; the kernel pauses the instance while the file is open).
    cat "${EI}/trace" >"${OWN}"
    own_lost="$(awk '/^(overrun|dropped events):/ { s += $NF } END { print s + 0 }' \
      "${EI}"/per_cpu/cpu*/stats)"
    kill -CONT "${EXPORTER_PID}"
    if [ -n "${dump_pid}" ]; then
      touch /tmp/trace_dump_go
      wait "${dump_pid}"
      dump_rc=$?
    fi
  fi
  SO="/tmp/trace_scrape_order_${mode}"
  prev=""
  i=0
  while [ "${i}" -lt 20 ]; do
    sleep 1
    scrape "${URL}/metrics" "${SO}" || continue
    cur="$(metric_value "${SO}" memcg_trace_events_total)"
    [ -n "${cur}" ] && [ "${cur}" = "${prev}" ] && break
    prev="${cur}"
    i=$((i + 1))
  done
  RO="/tmp/trace_report_order_${mode}.json"
  scrape "${URL}/api/v1/reclaim/report" "${RO}"
  P1=/tmp/trace_order_ref.pairs
  P2=/tmp/trace_order_ref2.pairs
  PO=/tmp/trace_order_own.pairs
  text_pairs "${REF}/trace" "${pid}" >"${P1}"
  text_pairs "${REF2}/trace" "${pid}" >"${P2}"
  lostref="$(awk '/^(overrun|dropped events):/ { s += $NF } END { print s + 0 }' \
    "${REF}"/per_cpu/cpu*/stats "${REF2}"/per_cpu/cpu*/stats)"
  echo 0 >"${REF}/events/enable" 2>/dev/null
  echo 0 >"${REF2}/events/enable" 2>/dev/null
  rmdir "${REF}" "${REF2}" 2>/dev/null
  set -- $(pair_summary "${P1}")
  r_pairs=$1 r_ue=$2 r_open=$3 r_cross=$4 r_us=$5 r_dus=$6
  set -- $(pair_summary "${P2}")
  r2_us=$5
  K="memcg_vmscan_reclaim_stall_seconds"
  o_count="$(metric_value "${SO}" "${K}_count{${TOL},kind=\"memcg\"}")"
  o_sum="$(metric_value "${SO}" "${K}_sum{${TOL},kind=\"memcg\"}")"
  o_total="$(metric_value "${SO}" "memcg_vmscan_reclaim_total{${TOL},kind=\"memcg\"}")"
  o_unp="$(metric_value "${SO}" "memcg_vmscan_reclaim_unpaired_total{${TOL},kind=\"memcg\"}" ||
    echo 0)"
  o_unpev="$(awk '/^memcg_vmscan_unpaired_events_total[{ ]/ { s += $2; f = 1 }
    END { if (f) print s; else print "absent" }' "${SO}")"
  o_ooo="$(metric_value "${SO}" memcg_trace_events_out_of_order_total)"
  row="$(grep -o "{[^{}]*\"pid\":${pid}[,}][^{}]*}" "${RO}" 2>/dev/null | head -n 1)"
  o_task="$(printf '%s' "${row}" | grep -o '"time_stalled_seconds":[0-9.e+-]*' | cut -d: -f2)"
  r_s="$(usec_to_sec "${r_us}")"
  r2_s="$(usec_to_sec "${r2_us}")"
  mt_info "order ${mode}: cat exit ${rc}, ${moves} moves; reference (kernel-ordered text):" \
    "memcg pairs ${r_pairs} (${r_cross} across CPUs), unpaired ends ${r_ue}, open begins" \
    "${r_open}, stall ${r_s}s (+ direct ${r_dus}us), lost ${lostref}; exporter: reclaims" \
    "${o_total:-none} stalls _count ${o_count:-none} unpaired ${o_unp} unpaired_events" \
    "${o_unpev} out_of_order ${o_ooo:-none}, _sum ${o_sum:-none}s, task ${o_task:-none}s"
  mt_info "order ${mode}: instance vs instance (ref -> ref2, the same pairs stamped twice):" \
    "stall ${r_s}s vs ${r2_s}s; $(pair_diff "${P1}" "${P2}")"
  if [ "${rc}" = 0 ] && is_gt "${r_pairs}" 20 && [ "${lostref}" = 0 ] && [ "${r_ue}" = 0 ] &&
    [ "${r_open}" = 0 ]; then
    mt_pass "trace_order_${mode}_reference"
  else
    mt_fail "trace_order_${mode}_reference" "cat exit ${rc}, pairs ${r_pairs}, lost" \
      "${lostref}, unpaired ends ${r_ue}, open begins ${r_open}"
  fi
  if is_gt "${r_cross}" 0; then
    mt_pass "trace_order_${mode}_reclaims_span_cpus"
  else
    mt_fail "trace_order_${mode}_reclaims_span_cpus" "no reclaim began on one CPU and" \
      "ended on the other (${moves} moves): the check proves nothing"
  fi
  if [ "${o_count}" = "${r_pairs}" ] && [ "${o_total}" = "${r_pairs}" ] && [ "${o_unp}" = 0 ] &&
    { [ "${o_unpev}" = absent ] || [ "${o_unpev}" = 0 ]; } && [ "${o_ooo}" = 0 ]; then
    mt_pass "trace_order_${mode}_pairs_eq_reference"
  else
    mt_fail "trace_order_${mode}_pairs_eq_reference" "exporter reclaims ${o_total:-none}" \
      "stalls ${o_count:-none} unpaired ${o_unp} unpaired_events ${o_unpev} out_of_order" \
      "${o_ooo:-none}; reference pairs ${r_pairs}"
  fi
  if [ "${mode}" = live ]; then
    mt_info "order live: exporter stall ${o_sum:-none}s vs reference ${r_s}s" \
      "($(awk -v o="${o_sum:-0}" -v m="${r_s}" 'BEGIN { printf "%+.1f%%", (o - m) / m * 100 }'));" \
      "another instance's stamps, not compared (see the paused run)"
  else
    text_pairs "${OWN}" "${pid}" >"${PO}"
    set -- $(pair_summary "${PO}")
    e_pairs=$1 e_ue=$2 e_open=$3 e_cross=$4 e_us=$5 e_dus=$6
    e_s="$(usec_to_sec "${e_us}")"
    # Each text duration is a difference of two stamps cut to microseconds:
    # within 1 us of the exact one, so the sums within 1 us per pair.
    tol="$(awk -v n="${e_pairs}" -v d="$(grep -c '^P direct' "${PO}")" \
      'BEGIN { printf "%.9f\n", (n + d + 1) * 1e-6 }')"
    e_task_s="$(usec_to_sec "$((e_us + e_dus))")"
    mt_info "order paused: the exporter's own instance as text: memcg pairs ${e_pairs}" \
      "(${e_cross} across CPUs), unpaired ends ${e_ue}, open begins ${e_open}, lost ${own_lost}," \
      "stall ${e_s}s (+ direct ${e_dus}us); exporter _sum ${o_sum:-none}s, task" \
      "${o_task:-none}s (allowed +-${tol}s: 1 us per pair)"
    mt_info "order paused: instance vs instance (exporter's -> ref):" \
      "$(pair_diff "${PO}" "${P1}"); stall ${e_s}s vs ${r_s}s"
    if [ "${e_pairs}" = "${o_count}" ] && [ "${e_ue}" = 0 ] && [ "${e_open}" = 0 ] &&
      [ "${own_lost}" = 0 ] && cmp_values "${o_sum:-x}" "${e_s}" "${tol}" 0 &&
      cmp_values "${o_task:-x}" "${e_task_s}" "${tol}" 0; then
      mt_pass trace_order_paused_stall_sums_eq_own_instance_text
    else
      mt_fail trace_order_paused_stall_sums_eq_own_instance_text "exporter _sum" \
        "${o_sum:-none}s task ${o_task:-none}s _count ${o_count:-none}; its instance's text:" \
        "${e_pairs} pairs, ${e_s}s memcg, ${e_task_s}s task, unpaired ends ${e_ue}," \
        "open begins ${e_open}, lost ${own_lost} (allowed +-${tol}s)"
    fi
  fi
  if [ "${mode}" = paused ]; then
    if [ -z "${dump_pid}" ]; then
      mt_skip trace_order_paused_reader_records_eq_text "no memcg_trace_raw_dump in the" \
        "initramfs (run.sh --trace-dump PATH)"
    else
      mt_info "order paused: memcg_trace_raw_dump exit ${dump_rc}: $(tr '\n' ' ' </tmp/trace_dump.log)" \
        "$(grep '^# rounds' /tmp/trace_dump.raw)"
      raw_vs_text /tmp/trace_dump.raw /tmp/trace_dump.txt "${pid}" >/tmp/trace_dump.cmp
      grep '^MEMCG_TEST' /tmp/trace_dump.cmp
      set -- $(awk '$1 == "SUMMARY" { print $2, $3, $4 }' /tmp/trace_dump.cmp)
      d_n=${1:-0} d_bad=${2:-x} d_cnt=${3:-x}
      mt_info "order paused: reader vs the kernel's text of the same buffer: ${d_n} records" \
        "of the cat, ${d_bad} stamps differ, ${d_cnt} CPUs with other record counts"
      if [ "${dump_rc}" = 0 ] && is_gt "${d_n}" 100 && [ "${d_bad}" = 0 ] && [ "${d_cnt}" = 0 ]; then
        mt_pass trace_order_paused_reader_records_eq_text
      else
        mt_fail trace_order_paused_reader_records_eq_text "exit ${dump_rc}, ${d_n} records," \
          "${d_bad} stamps differ, ${d_cnt} CPUs with other counts"
      fi
    fi
  fi
  rmdir "${TO}" 2>/dev/null
  return 0
}
if [ "$(grep -c '^processor' /proc/cpuinfo)" -lt 2 ]; then
  mt_fail trace_order_two_cpus "the guest has one CPU (run.sh boots -smp 2)"
else
  mt_info "order: trace clock of the exporter's instance" \
    "$(grep -o '\[[a-z_]*\]' "${TRACEFS}/instances/memcg_exporter/trace_clock" 2>&1)" \
    "(references: mono), clocksource" \
    "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  order_run live
  order_run paused
fi

# rmdir drops the cgroup's series (cgroup:cgroup_rmdir, root 0 on v2).
if rmdir "${T}" 2>/dev/null; then
  i=0
  while [ "${i}" -lt 10 ]; do
    scrape "${URL}/metrics" "${S}.rm" && ! grep -q "^memcg_vmscan_[a-z_]*{${TL}" "${S}.rm" && break
    sleep 1
    i=$((i + 1))
  done
  if [ -s "${S}.rm" ] && ! grep -q "^memcg_vmscan_[a-z_]*{${TL}" "${S}.rm" &&
    is_gt "$(metric_value "${S}.rm" memcg_trace_cgroups_removed_total)" 0; then
    mt_pass trace_rmdir_drops_series
  else
    mt_fail trace_rmdir_drops_series "series of ${TL} still there after rmdir, or" \
      "memcg_trace_cgroups_removed_total=$(metric_value "${S}.rm" memcg_trace_cgroups_removed_total)"
  fi
else
  mt_fail trace_rmdir_drops_series "rmdir ${T}: cgroup busy"
fi

if [ "${MT_METRIC_FAILED:-0}" = 1 ] || [ "${lost_ok}" = 0 ] || verbose; then
  dump_samples "${S}" "${TL}"
  grep '^memcg_trace_' "${S}" | sed 's/^/MEMCG_LOG scrape: /'
  tail -n 20 /tmp/exporter_trace.log | sed 's/^/MEMCG_LOG exporter: /'
fi

# --- the exporter removes its tracefs instance on SIGTERM ---------------------------------
if stop_exporter "${EXPORTER_PID}" && wait_no_trace_instance; then
  mt_pass trace_instance_removed_on_exit
else
  mt_fail trace_instance_removed_on_exit "exporter still running or" \
    "${TRACEFS}/instances/memcg_exporter left behind"
  tail -n 5 /tmp/exporter_trace.log | sed 's/^/MEMCG_LOG exporter: /'
fi
