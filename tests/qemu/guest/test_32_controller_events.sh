# v2 controller, memory.events wake: a change of memory.events
# (POLLPRI; its "max" key grows each time a charge hits memory.max) wakes the
# controller and leads to reclaim. An exporter runs with memory.events as its
# only fast wake source (--controller.v2-wake=events, no PSI trigger) and the
# fallback poll pushed out of the way (--controller.poll-interval-ms=600000,
# 10 minutes: longer than the whole lane), so any reclaim during the run can
# only have been started by memory.events. The workload streams a file through
# memory.max=128M (margins 16/32 MiB); the first time it hits the limit the
# kernel notifies memory.events and the controller reclaims to the target
# margin. Sourced by /init in a subshell.

CG=/sys/fs/cgroup
EV="${CG}/memcg_exporter_test_ctl_ev"
EV_LABEL=/memcg_exporter_test_ctl_ev
EL="cgroup=\"${EV_LABEL}\""
STREAM=/mnt/stream.bin
PORT=9716
URL="http://127.0.0.1:${PORT}"
TOKEN_FILE=/tmp/ctl_ev_token
TOKEN=memcg-qemu-lane-ev-7e2a
AUDIT=/tmp/ctl_ev_audit.jsonl

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip ctl_ev_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
mkdir -p "${EV}"
if [ ! -f "${EV}/memory.reclaim" ]; then
  mt_skip ctl_ev_exporter_up "no memory.reclaim on this kernel (< 5.19)"
  exit 0
fi
echo 128M >"${EV}/memory.max"
printf '%s\n' "${TOKEN}" >"${TOKEN_FILE}"
chmod 600 "${TOKEN_FILE}"
rm -f /tmp/ctl_ev_journal "${AUDIT}"

wait_no_trace_instance
if ! start_exporter "${PORT}" /tmp/exporter_ctl_ev.log --controller.enable \
  --controller.allow='/memcg_exporter_test.*' --controller.token-file="${TOKEN_FILE}" \
  --controller.journal=/tmp/ctl_ev_journal --controller.audit-log="${AUDIT}" \
  --controller.v2-wake=events --controller.poll-interval-ms=600000 --no-collector.vmscan; then
  mt_fail ctl_ev_exporter_up "no answer on ${URL}/metrics within 240s"
  tail -n 20 /tmp/exporter_ctl_ev.log | sed 's/^/MEMCG_LOG exporter: /'
  exit 0
fi
mt_pass ctl_ev_exporter_up

A=/tmp/ctl_ev_answer
code="$(http_request "${PORT}" POST /api/v1/controller/protect "${TOKEN}" \
  "{\"cgroup\":\"${EV_LABEL}\",\"start_margin_bytes\":16777216,\"target_margin_bytes\":33554432}" \
  "${A}")"
if [ "${code}" != 200 ]; then
  mt_fail ctl_ev_protect "POST /api/v1/controller/protect: HTTP ${code:-none}" \
    "$(head -c 300 "${A}.body" 2>/dev/null)"
  stop_exporter "${EXPORTER_PID}"
  exit 0
fi
# The waiter opens memory.events on its first look at the new protection.
# Polled, 30 s at most (wait_controller_state, lib.sh).
if wait_controller_state "${PORT}" "${TOKEN}" "${A}" '"wake":"memory.events+poll"'; then
  mt_pass ctl_ev_armed
else
  mt_fail ctl_ev_armed "state: HTTP ${_code:-none}" \
    "$(grep -o '"wake":"[^"]*"' "${A}.body" 2>/dev/null) (want memory.events+poll)"
  tail -n 20 /tmp/exporter_ctl_ev.log | sed 's/^/MEMCG_LOG exporter: /'
fi

drop_page_cache
m0="$(kv "${EV}/memory.events" max)"
t0="$(uptime_s)"
bytes="$(stream_in_cgroup "${EV}" "${STREAM}")"
t1="$(uptime_s)"
sleep 1
maxd=$(($(kv "${EV}/memory.events" max) - m0))
mt_info "memory.events-only wake: ${bytes} bytes streamed through memory.max=128M in" \
  "$(elapsed "${t0}" "${t1}") s; memory.events max +${maxd}"

# The kernel side: the workload hit its limit, or memory.events had nothing to say.
if is_gt "${maxd}" 0; then
  mt_pass ctl_ev_workload_hit_limit
else
  mt_fail ctl_ev_workload_hit_limit "memory.events max +${maxd}"
fi

# What woke the controller for each reclaim (audit log): memory.events only.
ev_reclaims="$(grep '"event":"reclaim"' "${AUDIT}" 2>/dev/null | grep '"trigger":"memory.events"' |
  grep -c '"result":"\(ok\|partial\)"')"
other_reclaims="$(grep '"event":"reclaim"' "${AUDIT}" 2>/dev/null | grep -vc '"trigger":"memory.events"')"
mt_info "memory.events-only wake: reclaims by trigger: $(grep '"event":"reclaim"' "${AUDIT}" 2>/dev/null |
  grep -o '"trigger":"[a-z.]*"' | sort | uniq -c | tr -s ' \n' '  ')"
if is_gt "${ev_reclaims:-0}" 0 && [ "${other_reclaims:-0}" = 0 ]; then
  mt_pass ctl_ev_wake_leads_to_reclaim
else
  mt_fail ctl_ev_wake_leads_to_reclaim "${ev_reclaims:-0} ok/partial reclaims with trigger" \
    "memory.events, ${other_reclaims:-0} with another (want > 0 and 0)" \
    "$(tail -c 400 "${AUDIT}" 2>/dev/null)"
  tail -n 20 /tmp/exporter_ctl_ev.log | sed 's/^/MEMCG_LOG exporter: /'
fi

# The trigger-to-reclaim latency is exported for the memory.events path, and
# the poll (10 minutes) woke nothing.
S=/tmp/ctl_ev_scrape
if scrape "${URL}/metrics" "${S}"; then
  n="$(metric_value "${S}" 'memcg_controller_trigger_to_reclaim_seconds_count{trigger="memory.events"}')"
  sum="$(metric_value "${S}" 'memcg_controller_trigger_to_reclaim_seconds_sum{trigger="memory.events"}')"
  npoll="$(metric_value "${S}" 'memcg_controller_trigger_to_reclaim_seconds_count{trigger="poll"}')"
  mt_info "memory.events-only wake: trigger_to_reclaim{trigger=\"memory.events\"} count=${n:-none}" \
    "sum=${sum:-none}s; {trigger=\"poll\"} count=${npoll:-none}; actions: $(grep \
      "^memcg_controller_actions_total{${EL}" "${S}" | sed 's/^memcg_controller_actions_total//' |
      tr '\n' ' ')"
  # One observation per episode (its first reclaim); the audit log has every reclaim.
  if is_gt "${n:-0}" 0 && ! is_gt "${n}" "${ev_reclaims:-0}"; then
    mt_pass ctl_ev_latency_exported
  else
    mt_fail ctl_ev_latency_exported "count{trigger=\"memory.events\"}=${n:-missing}, want 1 to the" \
      "${ev_reclaims:-0} memory.events reclaims of the audit log"
  fi
  if [ "${npoll:-0}" = 0 ]; then
    mt_pass ctl_ev_poll_woke_nothing
  else
    mt_fail ctl_ev_poll_woke_nothing "count{trigger=\"poll\"}=${npoll} with a 10 min poll"
  fi
else
  mt_fail ctl_ev_latency_exported "GET ${URL}/metrics failed"
fi

http_request "${PORT}" POST /api/v1/controller/unprotect "${TOKEN}" \
  "{\"cgroup\":\"${EV_LABEL}\"}" "${A}" >/dev/null
if verbose; then
  tail -n 20 /tmp/exporter_ctl_ev.log | sed 's/^/MEMCG_LOG exporter: /'
fi
if stop_exporter "${EXPORTER_PID}"; then
  mt_pass ctl_ev_exporter_stops
else
  mt_fail ctl_ev_exporter_stops "still running 20s after SIGTERM"
fi
