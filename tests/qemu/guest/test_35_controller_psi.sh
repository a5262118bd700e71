# v2 controller, PSI wake: a PSI trigger on memory.pressure wakes
# the controller and leads to reclaim. An exporter runs with the PSI trigger as
# its only fast wake source (--controller.v2-wake=psi, memory.events off) and
# the fallback poll pushed out of the way (--controller.poll-interval-ms=600000),
# so any reclaim during the run can only have been triggered by PSI. The
# workload streams a file through memory.max=128M; each time it stalls in its
# own limit reclaim for 1 ms within 500 ms ("some 1000 500000"), the trigger
# fires (at most once per window) and the controller reclaims to the target
# margin. Sourced by /init in a subshell.

CG=/sys/fs/cgroup
PSI="${CG}/memcg_exporter_test_ctl_psi"
PSI_LABEL=/memcg_exporter_test_ctl_psi
PL="cgroup=\"${PSI_LABEL}\""
STREAM=/mnt/stream.bin
PORT=9715
URL="http://127.0.0.1:${PORT}"
TOKEN_FILE=/tmp/ctl_psi_token
TOKEN=memcg-qemu-lane-psi-4b1d
AUDIT=/tmp/ctl_psi_audit.jsonl

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip ctl_psi_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
mkdir -p "${PSI}"
if [ ! -f "${PSI}/memory.pressure" ]; then
  mt_skip ctl_psi_exporter_up "no memory.pressure (kernel without PSI, or booted psi=0)"
  exit 0
fi
if [ ! -f "${PSI}/memory.reclaim" ]; then
  mt_skip ctl_psi_exporter_up "no memory.reclaim on this kernel (< 5.19)"
  exit 0
fi
echo 128M >"${PSI}/memory.max"
printf '%s\n' "${TOKEN}" >"${TOKEN_FILE}"
chmod 600 "${TOKEN_FILE}"
rm -f /tmp/ctl_psi_journal "${AUDIT}"

wait_no_trace_instance
if ! start_exporter "${PORT}" /tmp/exporter_ctl_psi.log --controller.enable \
  --controller.allow='/memcg_exporter_test.*' --controller.token-file="${TOKEN_FILE}" \
  --controller.journal=/tmp/ctl_psi_journal --controller.audit-log="${AUDIT}" \
  --controller.v2-wake=psi --controller.poll-interval-ms=600000 \
  --controller.psi-trigger='some 1000 500000' --no-collector.vmscan; then
  mt_fail ctl_psi_exporter_up "no answer on ${URL}/metrics within 240s"
  tail -n 20 /tmp/exporter_ctl_psi.log | sed 's/^/MEMCG_LOG exporter: /'
  exit 0
fi
mt_pass ctl_psi_exporter_up

A=/tmp/ctl_psi_answer
code="$(http_request "${PORT}" POST /api/v1/controller/protect "${TOKEN}" \
  "{\"cgroup\":\"${PSI_LABEL}\",\"start_margin_bytes\":16777216,\"target_margin_bytes\":33554432}" \
  "${A}")"
if [ "${code}" != 200 ]; then
  mt_fail ctl_psi_protect "POST /api/v1/controller/protect: HTTP ${code:-none}" \
    "$(head -c 300 "${A}.body" 2>/dev/null)"
  stop_exporter "${EXPORTER_PID}"
  exit 0
fi
# The waiter arms the trigger on its first look at the new protection.
# Polled, 30 s at most (wait_controller_state, lib.sh).
if wait_controller_state "${PORT}" "${TOKEN}" "${A}" '"wake":"psi+poll"'; then
  mt_pass ctl_psi_trigger_armed
else
  mt_fail ctl_psi_trigger_armed "state: HTTP ${_code:-none}" \
    "$(grep -o '"wake":"[^"]*"' "${A}.body" 2>/dev/null) (want psi+poll)"
  tail -n 20 /tmp/exporter_ctl_psi.log | sed 's/^/MEMCG_LOG exporter: /'
fi

drop_page_cache
m0="$(kv "${PSI}/memory.events" max)"
p0="$(psi_total "${PSI}/memory.pressure" some)"
t0="$(uptime_s)"
bytes="$(stream_in_cgroup "${PSI}" "${STREAM}")"
t1="$(uptime_s)"
sleep 1
maxd=$(($(kv "${PSI}/memory.events" max) - m0))
stall=$(($(psi_total "${PSI}/memory.pressure" some) - p0))
mt_info "PSI-only wake: ${bytes} bytes streamed through memory.max=128M in" \
  "$(elapsed "${t0}" "${t1}") s; memory.events max +${maxd}; memory.pressure some +${stall} us"

# The kernel side: the workload stalled on memory, or PSI had nothing to report.
if is_gt "${stall}" 0; then
  mt_pass ctl_psi_workload_stalled
else
  mt_fail ctl_psi_workload_stalled "memory.pressure some total +${stall} us"
fi

# What woke the controller for each reclaim (audit log): PSI only.
psi_reclaims="$(grep '"event":"reclaim"' "${AUDIT}" 2>/dev/null | grep '"trigger":"psi"' |
  grep -c '"result":"\(ok\|partial\)"')"
mt_info "PSI-only wake: reclaims by trigger: $(grep '"event":"reclaim"' "${AUDIT}" 2>/dev/null |
  grep -o '"trigger":"[a-z.]*"' | sort | uniq -c | tr -s ' \n' '  ')"
if is_gt "${psi_reclaims:-0}" 0; then
  mt_pass ctl_psi_trigger_leads_to_reclaim
else
  mt_fail ctl_psi_trigger_leads_to_reclaim "no ok/partial reclaim with trigger psi in the audit log" \
    "$(tail -c 400 "${AUDIT}" 2>/dev/null)"
  tail -n 20 /tmp/exporter_ctl_psi.log | sed 's/^/MEMCG_LOG exporter: /'
fi

# The trigger-to-reclaim latency is exported for the PSI path.
S=/tmp/ctl_psi_scrape
if scrape "${URL}/metrics" "${S}"; then
  n="$(metric_value "${S}" 'memcg_controller_trigger_to_reclaim_seconds_count{trigger="psi"}')"
  sum="$(metric_value "${S}" 'memcg_controller_trigger_to_reclaim_seconds_sum{trigger="psi"}')"
  mt_info "PSI-only wake: trigger_to_reclaim{trigger=\"psi\"} count=${n:-none} sum=${sum:-none}s;" \
    "actions: $(grep "^memcg_controller_actions_total{${PL}" "${S}" |
      sed 's/^memcg_controller_actions_total//' | tr '\n' ' ')"
  # One observation per episode (its first reclaim); the audit log has every reclaim.
  if is_gt "${n:-0}" 0 && ! is_gt "${n}" "${psi_reclaims:-0}"; then
    mt_pass ctl_psi_latency_exported
  else
    mt_fail ctl_psi_latency_exported "count{trigger=\"psi\"}=${n:-missing}, want 1 to the" \
      "${psi_reclaims:-0} psi reclaims of the audit log"
  fi
else
  mt_fail ctl_psi_latency_exported "GET ${URL}/metrics failed"
fi

http_request "${PORT}" POST /api/v1/controller/unprotect "${TOKEN}" \
  "{\"cgroup\":\"${PSI_LABEL}\"}" "${A}" >/dev/null
if verbose; then
  tail -n 20 /tmp/exporter_ctl_psi.log | sed 's/^/MEMCG_LOG exporter: /'
fi
if stop_exporter "${EXPORTER_PID}"; then
  mt_pass ctl_psi_exporter_stops
else
  mt_fail ctl_psi_exporter_stops "still running 20s after SIGTERM"
fi
