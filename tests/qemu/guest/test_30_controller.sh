# v2 controller: the memory.reclaim actuator on a real v2 kernel.
# The same streaming workload runs twice, from a cold page cache, in two
# sibling cgroups with memory.max=128M: unprotected, then protected through
# POST /api/v1/controller/protect (start margin 16M, target margin 32M). The
# controller keeps the margin by writing memory.reclaim, so the workload's own
# limit reclaim (memory.events "max": one per failed charge, each followed by
# one reclaim pass in the workload) must drop. Sourced by /init in a subshell.
#
# On 6.1 memory.reclaim is counted in pgscan_direct like limit reclaim (the
# _proactive keys came later), so the protected run's pgscan_direct is the
# workload's and the controller's together: it is printed, not asserted on.

CG=/sys/fs/cgroup
OFF="${CG}/memcg_exporter_test_ctl_off"   # memory.max=128M, unprotected
ON="${CG}/memcg_exporter_test_ctl"        # memory.max=128M, protected
ON_LABEL=/memcg_exporter_test_ctl
OL="cgroup=\"${ON_LABEL}\""
LIMIT=134217728
START_MARGIN=16777216
TARGET_MARGIN=33554432
STREAM=/mnt/stream.bin
PORT=9714
URL="http://127.0.0.1:${PORT}"
TOKEN_FILE=/tmp/ctl_token
TOKEN=memcg-qemu-lane-9f3c1e
MIB=1048576

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip ctl_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
mkdir -p "${OFF}" "${ON}"
if [ ! -f "${ON}/memory.reclaim" ]; then
  mt_skip ctl_exporter_up "no memory.reclaim on this kernel (< 5.19)"
  exit 0
fi

echo 128M >"${OFF}/memory.max"
echo 128M >"${ON}/memory.max"
printf '%s\n' "${TOKEN}" >"${TOKEN_FILE}"
chmod 600 "${TOKEN_FILE}"
rm -f /tmp/ctl_journal

wait_no_trace_instance
if ! start_exporter "${PORT}" /tmp/exporter_ctl.log --controller.enable \
  --controller.allow='/memcg_exporter_test.*' --controller.token-file="${TOKEN_FILE}" \
  --controller.journal=/tmp/ctl_journal --controller.audit-log=/tmp/ctl_audit.jsonl \
  --no-collector.vmscan; then
  mt_fail ctl_exporter_up "no answer on ${URL}/metrics within 240s"
  tail -n 20 /tmp/exporter_ctl.log | sed 's/^/MEMCG_LOG exporter: /'
  exit 0
fi
mt_pass ctl_exporter_up

# run_workload DIR: streams the file from a cold cache inside DIR; sets
# R_BYTES, R_MAX (memory.events max delta), R_SCAN, R_STEAL (pgscan/pgsteal
# _direct deltas, pages), R_WALL (seconds).
run_workload() {
  drop_page_cache
  _m0="$(kv "$1/memory.events" max)"
  _s0="$(kv "$1/memory.stat" pgscan_direct)"
  _r0="$(kv "$1/memory.stat" pgsteal_direct)"
  _t0="$(uptime_s)"
  R_BYTES="$(stream_in_cgroup "$1" "${STREAM}")"
  _t1="$(uptime_s)"
  R_MAX=$(($(kv "$1/memory.events" max) - _m0))
  R_SCAN=$(($(kv "$1/memory.stat" pgscan_direct) - _s0))
  R_STEAL=$(($(kv "$1/memory.stat" pgsteal_direct) - _r0))
  R_WALL="$(elapsed "${_t0}" "${_t1}")"
}
size="$(stat -c %s "${STREAM}")"

# --- the API wants the token ----------------------------------------------------------------
BODY="{\"cgroup\":\"${ON_LABEL}\",\"start_margin_bytes\":${START_MARGIN},\"target_margin_bytes\":${TARGET_MARGIN}}"
A=/tmp/ctl_answer
c_none="$(http_request "${PORT}" POST /api/v1/controller/protect "" "${BODY}" "${A}")"
c_bad="$(http_request "${PORT}" POST /api/v1/controller/protect wrong-token "${BODY}" "${A}")"
if [ "${c_none}" = 401 ] && [ "${c_bad}" = 403 ]; then
  mt_pass ctl_api_requires_token
else
  mt_fail ctl_api_requires_token "protect without a token: HTTP ${c_none:-none} (want 401)," \
    "with a wrong one: HTTP ${c_bad:-none} (want 403)"
fi

# --- off: the unprotected sibling ------------------------------------------------------------
run_workload "${OFF}"
off_bytes="${R_BYTES}" off_max="${R_MAX}" off_scan="${R_SCAN}" off_steal="${R_STEAL}"
off_wall="${R_WALL}"

# --- on: protect, then the same workload -----------------------------------------------------
code="$(http_request "${PORT}" POST /api/v1/controller/protect "${TOKEN}" "${BODY}" "${A}")"
if [ "${code}" = 200 ] && grep -q '"protected"' "${A}.body"; then
  mt_pass ctl_protect
else
  mt_fail ctl_protect "POST /api/v1/controller/protect: HTTP ${code:-none}" \
    "$(head -c 300 "${A}.body" 2>/dev/null)"
  tail -n 20 /tmp/exporter_ctl.log | sed 's/^/MEMCG_LOG exporter: /'
  stop_exporter "${EXPORTER_PID}"
  exit 0
fi
run_workload "${ON}"
on_bytes="${R_BYTES}" on_max="${R_MAX}" on_scan="${R_SCAN}" on_steal="${R_STEAL}"
on_wall="${R_WALL}"
# The controller acts on its own clock: give it a moment to settle the margin.
sleep 1
on_cur="$(cat "${ON}/memory.current")"
on_limit="$(cat "${ON}/memory.max")"

mt_info "controller off/on, 256 MiB streamed through memory.max=128M from a cold cache:"
row() { printf 'off_on_table: %-10s %17s %13s %14s %6s' "$@"; }
mt_info "$(row controller memory.events.max pgscan_direct pgsteal_direct wall_s)"
mt_info "$(row off "${off_max}" "${off_scan}" "${off_steal}" "${off_wall}")"
mt_info "$(row on "${on_max}" "${on_scan}" "${on_steal}" "${on_wall}")"
mt_info "  (pages; on 6.1 pgscan/pgsteal_direct of the 'on' run include the controller's" \
  "memory.reclaim)"

if [ "${off_bytes}" = "${size}" ] && [ "${on_bytes}" = "${size}" ]; then
  mt_pass ctl_workloads_stream
else
  mt_fail ctl_workloads_stream "cat read ${off_bytes} (off) and ${on_bytes} (on) of ${size} bytes"
fi
# The baseline must have hit the limit, or there is nothing to compare.
if is_gt "${off_max}" 0; then
  mt_pass ctl_unprotected_hits_limit
else
  mt_fail ctl_unprotected_hits_limit "memory.events max +${off_max} without the controller"
fi
# As sharp a drop as the host test asks (e2e.controller): at most a fifth of
# the baseline's limit hits (observed: 622 unprotected, 0 protected).
if [ $((on_max * 5)) -le "${off_max}" ]; then
  mt_pass ctl_limit_reclaim_drops
else
  mt_fail ctl_limit_reclaim_drops "memory.events max: unprotected +${off_max}," \
    "protected +${on_max} (want at most a fifth)"
fi

# The exporter says what it did.
S=/tmp/ctl_scrape
if scrape "${URL}/metrics" "${S}"; then
  acts="$(awk -v n="memcg_controller_actions_total{${OL}" 'index($1, n) == 1 &&
    index($1, "actuator=\"v2_memory_reclaim\"") { s += $2; if ($1 ~ /result="(ok|partial)"/) g += $2 }
    END { printf "%d %d\n", s, g }' "${S}")"
  acts_all="${acts% *}"
  acts_good="${acts#* }"
  rec_bytes="$(metric_value "${S}" \
    "memcg_controller_reclaimed_bytes_total{${OL},actuator=\"v2_memory_reclaim\"}")"
  mt_info "controller metrics: $(grep "^memcg_controller_actions_total{${OL}" "${S}" |
    sed 's/^memcg_controller_actions_total//' | tr '\n' ' ')reclaimed_bytes=${rec_bytes:-none}" \
    "cpu=$(metric_value "${S}" memcg_controller_cpu_seconds_total)s" \
    "throttled: $(grep '^memcg_controller_throttled_total' "${S}" |
      sed 's/^memcg_controller_throttled_total//' | tr '\n' ' ')"
  if is_gt "${acts_good}" 0; then
    mt_pass ctl_actions_total_v2_memory_reclaim
  else
    mt_fail ctl_actions_total_v2_memory_reclaim "memcg_controller_actions_total{${OL}," \
      "actuator=\"v2_memory_reclaim\"}: ${acts_all} in all, ${acts_good} ok/partial"
  fi
  if is_gt "${rec_bytes:-0}" 0; then
    mt_pass ctl_reclaimed_bytes_total
  else
    mt_fail ctl_reclaimed_bytes_total "memcg_controller_reclaimed_bytes_total = ${rec_bytes:-missing}"
  fi
  # The controller cannot have reclaimed more than the kernel freed in the
  # cgroup (pgsteal_direct holds the memory.reclaim work on 6.1, and the
  # workload's own limit reclaim on top).
  steal_bytes=$((on_steal * 4096))
  mt_info "controller reclaimed_bytes ${rec_bytes:-none} vs kernel pgsteal_direct" \
    "${steal_bytes} bytes in the protected run (workload's own limit reclaims: ${on_max})"
  if [ -n "${rec_bytes}" ] && ! is_gt "${rec_bytes}" "${steal_bytes}"; then
    mt_pass ctl_reclaimed_bytes_le_kernel_pgsteal
  else
    mt_fail ctl_reclaimed_bytes_le_kernel_pgsteal "reclaimed_bytes ${rec_bytes:-missing} >" \
      "pgsteal_direct ${steal_bytes} bytes"
  fi
  expect_metric ctl_protected_cgroups "${S}" memcg_controller_protected_cgroups 1
else
  mt_fail ctl_scrape "GET ${URL}/metrics failed"
fi

# The actuator writes memory.reclaim only: the limit stays as it was.
if [ "${on_limit}" = "${LIMIT}" ] && [ "$(cat "${OFF}/memory.max")" = "${LIMIT}" ]; then
  mt_pass ctl_memory_max_unchanged
else
  mt_fail ctl_memory_max_unchanged "memory.max ${on_limit} (was ${LIMIT})"
fi
# And the margin is kept: once the workload is done, usage is at most the
# limit minus the start margin (the controller acts below that).
if ! is_gt "${on_cur}" "$((LIMIT - START_MARGIN))"; then
  mt_pass ctl_margin_kept
else
  mt_fail ctl_margin_kept "memory.current ${on_cur} > limit - start margin $((LIMIT - START_MARGIN))"
fi
mt_info "after the protected run: memory.current $((on_cur / MIB)) MiB of $((LIMIT / MIB)) MiB"
# The trigger-to-reclaim latency by wake path (count and sum per trigger).
if [ -s "${S}" ]; then
  mt_info "trigger_to_reclaim by trigger: $(grep '^memcg_controller_trigger_to_reclaim_seconds_\(count\|sum\)' \
    "${S}" | sed 's/^memcg_controller_trigger_to_reclaim_seconds_//' | tr '\n' ' ')"
fi
# What woke the controller for each action (audit log, JSON lines).
mt_info "actions by trigger: $(grep '"reclaim"' /tmp/ctl_audit.jsonl 2>/dev/null |
  grep -o '"trigger":"[a-z.]*"' | sort | uniq -c | tr -s ' \n' '  ')"

# State, then unprotect.
# (GET state wants the token too.)
code="$(http_request "${PORT}" GET /api/v1/controller/state "${TOKEN}" "" "${A}")"
if [ "${code}" = 200 ] && grep -q "\"${ON_LABEL}\"" "${A}.body"; then
  mt_pass ctl_state_lists_protection
  mt_info "state: $(grep -o '"episodes":[0-9]*\|"actions":[0-9]*\|"wake":"[a-z.+]*"\|"last_result":"[a-z_]*"' \
    "${A}.body" | tr '\n' ' ')"
  # On v2 the waiter sleeps on memory.events (POLLPRI) and a PSI trigger on
  # memory.pressure (POLLPRI) next to its poll.
  if grep -q '"wake":"memory.events+psi+poll"' "${A}.body"; then
    mt_pass ctl_wake_armed_on_memory_events_and_psi
  else
    mt_fail ctl_wake_armed_on_memory_events_and_psi "state: $(grep -o '"wake":"[^"]*"' "${A}.body")" \
      "(want memory.events+psi+poll)"
  fi
else
  mt_fail ctl_state_lists_protection "GET /api/v1/controller/state: HTTP ${code:-none}" \
    "$(head -c 300 "${A}.body" 2>/dev/null)"
fi
code="$(http_request "${PORT}" POST /api/v1/controller/unprotect "${TOKEN}" \
  "{\"cgroup\":\"${ON_LABEL}\"}" "${A}")"
if [ "${code}" = 200 ]; then
  mt_pass ctl_unprotect
else
  mt_fail ctl_unprotect "HTTP ${code:-none} $(head -c 300 "${A}.body" 2>/dev/null)"
fi

if verbose || ! kill -0 "${EXPORTER_PID}" 2>/dev/null; then
  tail -n 20 /tmp/exporter_ctl.log | sed 's/^/MEMCG_LOG exporter: /'
  grep '^memcg_controller_' "${S}" | sed 's/^/MEMCG_LOG scrape: /'
fi
if stop_exporter "${EXPORTER_PID}"; then
  mt_pass ctl_exporter_stops
else
  mt_fail ctl_exporter_stops "still running 20s after SIGTERM"
fi
