# Lock contention probes on the guest kernel (Debian's 6.1; the host is 6.18).
# 6.1 has lock:contention_begin/end (5.19+) but not the cgroup_rstat_* or
# memcg:memcg_flush_stats tracepoints: an event the kernel lacks must simply
# not be enabled, the collector must stay up, and the probes must stay off
# (no lock event enabled in the exporter's instance) without the flag.
TRACEFS=/sys/kernel/tracing
INST="${TRACEFS}/instances/memcg_exporter"
PORT=9715
URL="http://127.0.0.1:${PORT}"
LOCK_EVENTS="lock/contention_begin lock/contention_end cgroup/cgroup_rstat_lock_contended
  cgroup/cgroup_rstat_locked cgroup/cgroup_rstat_unlock memcg/memcg_flush_stats"

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip locks_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
for e in ${LOCK_EVENTS}; do
  if [ -d "${TRACEFS}/events/${e}" ]; then mt_info "locks: kernel has ${e}"
  else mt_info "locks: kernel lacks ${e}"; fi
done

# run_case NAME ARGS...: starts the exporter (vmscan only) with ARGS, checks
# it is up, then calls check_NAME, then stops it.
run_case() {
  _name="$1"; shift
  wait_no_trace_instance || mt_info "locks: an earlier tracefs instance is still there"
  if ! start_exporter "${PORT}" "/tmp/exporter_locks_${_name}.log" \
      --collector.disable-defaults --collector.vmscan "$@"; then
    mt_fail "locks_${_name}_exporter_up" "no answer on ${URL}/metrics within 240s"
    tail -n 20 "/tmp/exporter_locks_${_name}.log" | sed 's/^/MEMCG_LOG exporter: /'
    return
  fi
  S="/tmp/locks_scrape_${_name}"
  sleep 1
  scrape "${URL}/metrics" "${S}"
  expect_metric "locks_${_name}_vmscan_success" "${S}" \
    'memcg_exporter_collector_success{collector="vmscan"}' 1
  expect_metric "locks_${_name}_trace_up" "${S}" memcg_trace_up 1
  "check_${_name}"
  stop_exporter "${EXPORTER_PID}" || mt_info "locks: exporter did not exit in 20 s"
}

check_off() {
  _bad=""
  for e in ${LOCK_EVENTS}; do
    f="${INST}/events/${e}/enable"
    [ -f "${f}" ] && [ "$(cat "${f}")" != 0 ] && _bad="${_bad} ${e}"
  done
  if [ -z "${_bad}" ]; then mt_pass locks_off_nothing_enabled
  else mt_fail locks_off_nothing_enabled "enabled without the flag:${_bad}"; fi
  if grep -q '^memcg_node_lock_' "${S}"; then
    mt_fail locks_off_no_series "lock series without the flag"
  else
    mt_pass locks_off_no_series
  fi
}

check_on() {
  _bad=""; _on=0
  for e in ${LOCK_EVENTS}; do
    f="${INST}/events/${e}/enable"
    if [ -d "${TRACEFS}/events/${e}" ]; then
      # "1*": enabled, and in soft mode because a trigger is attached (callers).
      _v="$(cat "${f}" 2>/dev/null)"
      case "${_v}" in
        1 | '1*') _on=$((_on + 1)) ;;
        *) _bad="${_bad} ${e}=${_v:-missing}" ;;
      esac
    fi
  done
  if [ -z "${_bad}" ] && [ "${_on}" -gt 0 ]; then
    mt_pass locks_on_available_events_enabled
  else
    mt_fail locks_on_available_events_enabled "not enabled:${_bad:- none} (enabled ${_on})"
  fi
  if grep -q 'stacktrace' "${INST}/events/lock/contention_begin/trigger" 2>/dev/null; then
    mt_pass locks_on_caller_trigger
  else
    mt_fail locks_on_caller_trigger "$(cat "${INST}/events/lock/contention_begin/trigger" 2>&1 | tail -n 1)"
  fi
  expect_metric locks_on_no_decode_errors "${S}" memcg_trace_decode_errors_total 0
  if timeout 30 wget -q -O /tmp/locks_api.json "${URL}/api/v1/locks" 2>/dev/null &&
    grep -q '"enabled":true' /tmp/locks_api.json &&
    ! grep -q '"addr"' /tmp/locks_api.json; then
    mt_pass locks_on_api
  else
    mt_fail locks_on_api "GET /api/v1/locks: $(head -c 200 /tmp/locks_api.json 2>/dev/null)"
  fi
}

run_case off
run_case on --collector.vmscan.locks --collector.vmscan.lock-callers
