# v2 foundation: the memory controller's files under a streaming
# workload, the kernel facts the controller relies on, and, when the exporter is
# in the initramfs, every v2 file the collectors read compared with what this
# script reads from the kernel itself. Sourced by /init in a subshell.

CG=/sys/fs/cgroup
L="${CG}/memcg_exporter_test"              # memory.max=64M
U="${CG}/memcg_exporter_test_unlimited"    # memory.max left at max
LL='cgroup="/memcg_exporter_test"'
UL='cgroup="/memcg_exporter_test_unlimited"'
LIMIT=67108864
STREAM=/mnt/stream.bin
EXPORTER=/usr/bin/memcg_exporter
URL=http://127.0.0.1:9712/metrics
MIB=1048576

# --- cgroups -----------------------------------------------------------------------------
mkdir -p "${L}" "${U}"
if echo 64M >"${L}/memory.max" && [ "$(cat "${L}/memory.max")" = "${LIMIT}" ] &&
  [ "$(cat "${U}/memory.max")" = max ]; then
  mt_pass v2_cgroups_created
else
  mt_fail v2_cgroups_created "memory.max: limited=$(cat "${L}/memory.max" 2>&1)" \
    "unlimited=$(cat "${U}/memory.max" 2>&1)"
  exit 0
fi
# A little page cache in the sibling, so it is not an empty cgroup.
sh -c "echo \$\$ >${U}/cgroup.procs && exec head -c 8388608 ${STREAM}" >/dev/null 2>&1

# --- exporter up (before the workload, so it scrapes a live hierarchy) ---------------------
exporter_up=0
if [ -x "${EXPORTER}" ]; then
  "${EXPORTER}" --web.listen-address=127.0.0.1:9712 --path.cgroupfs=/sys/fs/cgroup \
    --path.procfs=/proc >/tmp/exporter.log 2>&1 &
  exporter_pid=$!
  i=0
  while [ "${i}" -lt 480 ]; do
    if scrape "${URL}" /tmp/scrape0; then
      exporter_up=1
      break
    fi
    kill -0 "${exporter_pid}" 2>/dev/null || break
    sleep 0.5
    i=$((i + 1))
  done
  if [ "${exporter_up}" = 1 ]; then
    mt_pass exporter_serves_metrics
    mt_info "exporter answered /metrics after ~$((i / 2))s"
  else
    mt_fail exporter_serves_metrics "no answer on ${URL} within 240s" \
      "($(kill -0 "${exporter_pid}" 2>/dev/null && echo running || echo exited))"
    tail -n 20 /tmp/exporter.log | sed 's/^/MEMCG_LOG exporter: /'
  fi
else
  mt_skip exporter_serves_metrics "no exporter in the initramfs (run.sh --exporter PATH)"
fi

# --- workload: stream the file through cat inside the limited cgroup ----------------------
max_before="$(kv "${L}/memory.events" max)"
t0="$(cut -d' ' -f1 /proc/uptime)"
bytes="$(timeout "${STREAM_TIMEOUT}" sh -c "echo \$\$ >${L}/cgroup.procs && exec cat ${STREAM}" | wc -c)"
t1="$(cut -d' ' -f1 /proc/uptime)"
mt_info "streamed ${bytes} bytes in $(awk -v a="${t0}" -v b="${t1}" 'BEGIN { print b - a }')s"
if [ "${bytes}" = "$(stat -c %s "${STREAM}")" ]; then
  mt_pass v2_workload_streams
else
  mt_fail v2_workload_streams "cat read ${bytes} of $(stat -c %s "${STREAM}") bytes"
fi
# The cgroup is empty again: counters below are stable from here on.

# --- kernel facts ------------------------------------------------------------------------
cur="$(cat "${L}/memory.current")"
max_after="$(kv "${L}/memory.events" max)"
pgscan_d="$(kv "${L}/memory.stat" pgscan_direct)"
pgsteal_d="$(kv "${L}/memory.stat" pgsteal_direct)"
some="$(psi_total "${L}/memory.pressure" some)"
mt_info "limited: current=${cur} file=$(kv "${L}/memory.stat" file)" \
  "events.max=${max_before}->${max_after} pgscan_direct=${pgscan_d}" \
  "pgsteal_direct=${pgsteal_d} pressure.some.total=${some}us"
if is_gt "${max_after}" "${max_before}"; then
  mt_pass v2_kernel_events_max_grows
else
  mt_fail v2_kernel_events_max_grows "memory.events max ${max_before} -> ${max_after}"
fi
if is_gt "${pgscan_d}" 0 && is_gt "${pgsteal_d}" 0; then
  mt_pass v2_kernel_direct_reclaim_counted
else
  mt_fail v2_kernel_direct_reclaim_counted "pgscan_direct=${pgscan_d} pgsteal_direct=${pgsteal_d}"
fi
if is_gt "${some}" 0; then
  mt_pass v2_kernel_pressure_counted
else
  mt_fail v2_kernel_pressure_counted "memory.pressure some total=${some}"
fi
if ! is_gt "${cur}" "${LIMIT}"; then
  mt_pass v2_kernel_usage_within_max
else
  mt_fail v2_kernel_usage_within_max "memory.current ${cur} > memory.max ${LIMIT}"
fi

# --- exporter vs kernel --------------------------------------------------------------------
# Read the kernel, scrape, read the kernel again: counters are stable (the
# cgroup is empty), memory.current is compared to both reads with a tolerance.
check_exporter() {
  S=/tmp/scrape1
  c1="$(cat "${L}/memory.current")"
  if ! scrape "${URL}" "${S}"; then
    mt_fail exporter_scrape "GET ${URL} failed after the workload"
    return
  fi
  c2="$(cat "${L}/memory.current")"
  mt_info "scrape: $(wc -l <"${S}") lines, $(grep -c "${LL}" "${S}") for /memcg_exporter_test"

  # usage: within 10% or 4 MiB of the two kernel reads.
  c="$(awk -v a="${c1}" -v b="${c2}" 'BEGIN { printf "%.0f\n", (a + b) / 2 }')"
  expect_metric exporter_memory_usage_bytes "${S}" "memcg_memory_usage_bytes{${LL}}" \
    "${c}" $((4 * MIB)) 0.10

  # limits, the literal max as +Inf
  expect_metric exporter_memory_limit_bytes_limited "${S}" \
    "memcg_memory_limit_bytes{${LL}}" "$(cat "${L}/memory.max")"
  expect_metric exporter_memory_limit_bytes_max_is_inf "${S}" \
    "memcg_memory_limit_bytes{${UL}}" "$(cat "${U}/memory.max")"
  expect_metric exporter_memory_high_bytes "${S}" "memcg_memory_high_bytes{${LL}}" \
    "$(cat "${L}/memory.high")"
  expect_metric exporter_memory_low_bytes "${S}" "memcg_memory_low_bytes{${LL}}" \
    "$(cat "${L}/memory.low")"
  expect_metric exporter_memory_min_bytes "${S}" "memcg_memory_min_bytes{${LL}}" \
    "$(cat "${L}/memory.min")"
  if [ -f "${L}/memory.peak" ]; then
    peak="$(cat "${L}/memory.peak")"
    if expect_metric exporter_memory_peak_bytes "${S}" "memcg_memory_peak_bytes{${LL}}" "${peak}"; then
      got="$(metric_value "${S}" "memcg_memory_peak_bytes{${LL}}")"
      u="$(metric_value "${S}" "memcg_memory_usage_bytes{${LL}}")"
      if [ -n "${u}" ] && ! is_gt "${u}" "${got}"; then
        mt_pass exporter_memory_peak_ge_usage
      else
        mt_fail exporter_memory_peak_ge_usage "peak ${got} < usage ${u}"
      fi
    fi
  else
    mt_skip exporter_memory_peak_bytes "no memory.peak on this kernel"
  fi

  # memory.events and memory.events.local: every key, its own _total.
  for f in events events.local; do
    suffix=""
    [ "${f}" = events.local ] && suffix=_local
    for key in $(awk '{ print $1 }' "${L}/memory.${f}"); do
      expect_metric "exporter_memory_events${suffix}_${key}_total" "${S}" \
        "memcg_memory_events${suffix}_${key}_total{${LL}}" "$(kv "${L}/memory.${f}" "${key}")"
    done
    m="$(kv "${L}/memory.${f}" max)"
    if is_gt "${m}" 0; then
      mt_pass "v2_kernel_memory_${f%.local}${suffix}_max_positive"
    else
      mt_fail "v2_kernel_memory_${f%.local}${suffix}_max_positive" "memory.${f} max=${m}"
    fi
  done

  # memory.stat
  expect_metric exporter_memory_stat_file_bytes "${S}" \
    "memcg_memory_stat_file_bytes{${LL}}" "$(kv "${L}/memory.stat" file)"
  expect_metric exporter_memory_stat_anon_bytes "${S}" \
    "memcg_memory_stat_anon_bytes{${LL}}" "$(kv "${L}/memory.stat" anon)"
  for r in direct kswapd; do
    for c in pgscan pgsteal; do
      expect_metric "exporter_memory_stat_${c}_${r}_total" "${S}" \
        "memcg_memory_stat_${c}_total{${LL},reclaimer=\"${r}\"}" \
        "$(kv "${L}/memory.stat" "${c}_${r}")"
    done
  done

  # memory.pressure: total= microseconds -> seconds
  expect_metric exporter_pressure_memory_waiting_seconds_total "${S}" \
    "memcg_pressure_memory_waiting_seconds_total{${LL}}" \
    "$(usec_to_sec "$(psi_total "${L}/memory.pressure" some)")" 0.0000005 0.000000000001
  expect_metric exporter_pressure_memory_stalled_seconds_total "${S}" \
    "memcg_pressure_memory_stalled_seconds_total{${LL}}" \
    "$(usec_to_sec "$(psi_total "${L}/memory.pressure" full)")" 0.0000005 0.000000000001

  # swap, where the kernel has it
  if [ -f "${L}/memory.swap.current" ]; then
    expect_metric exporter_swap_usage_bytes "${S}" "memcg_swap_usage_bytes{${LL}}" \
      "$(cat "${L}/memory.swap.current")"
    expect_metric exporter_swap_limit_bytes "${S}" "memcg_swap_limit_bytes{${LL}}" \
      "$(cat "${L}/memory.swap.max")"
  else
    mt_skip exporter_swap_usage_bytes "no memory.swap.current on this kernel"
  fi

  # every collector succeeded
  bad="$(awk '/^memcg_exporter_collector_success\{/ { n++; if ($2 != 1) printf "%s=%s ", $1, $2 }
              END { if (!n) print "no memcg_exporter_collector_success samples" }' "${S}")"
  if [ -z "${bad}" ]; then
    mt_pass exporter_collector_success
    mt_info "collectors: $(awk -F'"' '/^memcg_exporter_collector_success\{/ { printf "%s ", $2 }' "${S}")"
  else
    mt_fail exporter_collector_success "${bad}"
  fi
}
if [ "${exporter_up}" = 1 ]; then
  MT_METRIC_FAILED=0
  check_exporter
  if [ "${MT_METRIC_FAILED}" = 1 ] || verbose; then
    dump_samples /tmp/scrape1 "${LL}"
    dump_samples /tmp/scrape1 "${UL}"
    for f in memory.current memory.peak memory.events memory.events.local memory.pressure; do
      tr '\n' ' ' <"${L}/${f}" | sed "s|^|MEMCG_LOG kernel ${f}: |"
      echo
    done
  fi
fi

# --- memory.reclaim: proactive reclaim works and drops memory.current ----------------------
before="$(cat "${L}/memory.current")"
pgscan_before="$(kv "${L}/memory.stat" pgscan_direct)"
if out="$(echo 20M 2>&1 >"${L}/memory.reclaim")"; then rc=0; else rc=1; fi
after="$(cat "${L}/memory.current")"
pgscan_after="$(kv "${L}/memory.stat" pgscan_direct)"
mt_info "memory.reclaim 20M: rc=${rc} current ${before} -> ${after}," \
  "pgscan_direct ${pgscan_before} -> ${pgscan_after}"
if [ "${rc}" = 0 ] && is_gt "$((before - after))" $((10 * MIB)); then
  mt_pass v2_kernel_memory_reclaim
else
  mt_fail v2_kernel_memory_reclaim "rc=${rc} ${out} current ${before} -> ${after}"
fi
# On 6.1 proactive reclaim is counted in pgscan_direct (pgscan_proactive came later).
if [ "$(kv "${L}/memory.stat" pgscan_proactive)" = "" ]; then
  if is_gt "${pgscan_after}" "${pgscan_before}"; then
    mt_pass v2_kernel_proactive_reclaim_in_pgscan_direct
  else
    mt_fail v2_kernel_proactive_reclaim_in_pgscan_direct \
      "pgscan_direct ${pgscan_before} -> ${pgscan_after}"
  fi
fi

# The exporter follows: usage and the direct scan counter after the reclaim.
if [ "${exporter_up}" = 1 ]; then
  S=/tmp/scrape2
  c1="$(cat "${L}/memory.current")"
  if scrape "${URL}" "${S}"; then
    expect_metric exporter_usage_after_reclaim "${S}" "memcg_memory_usage_bytes{${LL}}" \
      "${c1}" $((4 * MIB)) 0.10
    expect_metric exporter_pgscan_direct_after_reclaim "${S}" \
      "memcg_memory_stat_pgscan_total{${LL},reclaimer=\"direct\"}" \
      "$(kv "${L}/memory.stat" pgscan_direct)"
  else
    mt_fail exporter_scrape_after_reclaim "GET ${URL} failed"
  fi
  if kill -0 "${exporter_pid}" 2>/dev/null; then
    mt_pass exporter_still_running
    # Waits for the exit: the next test's exporter must not meet this one's
    # tracefs instance.
    if stop_exporter "${exporter_pid}"; then
      mt_pass exporter_exits_on_sigterm
    else
      mt_fail exporter_exits_on_sigterm "still running 120 s after SIGTERM (its threads: MEMCG_LOG stop lines)"
    fi
  else
    mt_fail exporter_still_running "the exporter exited during the tests"
    tail -n 20 /tmp/exporter.log | sed 's/^/MEMCG_LOG exporter: /'
  fi
fi
