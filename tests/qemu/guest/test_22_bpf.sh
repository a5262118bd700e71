# The vmscan collector's bpf backend on Debian's 6.1 kernel (its own BTF,
# CO-RE relocated at load; the host is 6.18), next to the tracefs backend
# (the reference) on the same workload: two exporters run at once, one per
# backend, while a cat streams the file through a memory.max=64M cgroup.
# The bpf backend's per-cgroup reclaim counts must equal the tracefs
# backend's and the kernel's (memory.events max, pgscan/pgsteal_direct). A
# third exporter loads every optional bpf program.
# Sourced by /init in a subshell.
CG=/sys/fs/cgroup
T="${CG}/memcg_exporter_test_bpf"
TL='cgroup="/memcg_exporter_test_bpf"'
STREAM=/mnt/stream.bin
PORT_T=9716
PORT_B=9717

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip bpf_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
mt_info "bpf: kernel BTF $([ -r /sys/kernel/btf/vmlinux ] && echo present || echo absent)," \
  "bpf_jit_enable=$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo n/a)," \
  "unprivileged_bpf_disabled=$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null)"

wait_no_trace_instance || mt_info "bpf: an earlier tracefs instance is still there"
if ! start_exporter "${PORT_T}" /tmp/exporter_bpf_ref.log \
    --collector.disable-defaults --collector.vmscan --collector.vmscan.backend=tracefs; then
  mt_fail bpf_tracefs_exporter_up "no answer on port ${PORT_T} within 240s"
  tail -n 20 /tmp/exporter_bpf_ref.log | sed 's/^/MEMCG_LOG exporter: /'
  exit 0
fi
PID_T="${EXPORTER_PID}"
if ! start_exporter "${PORT_B}" /tmp/exporter_bpf.log \
    --collector.disable-defaults --collector.vmscan --collector.vmscan.backend=bpf; then
  mt_fail bpf_exporter_up "no answer on port ${PORT_B} within 240s"
  tail -n 20 /tmp/exporter_bpf.log | sed 's/^/MEMCG_LOG exporter: /'
  stop_exporter "${PID_T}"
  exit 0
fi
PID_B="${EXPORTER_PID}"
mt_pass bpf_exporter_up

# Every optional program too, loaded by this kernel's verifier: the lock
# probes with their rescue twins, sampled lock callers, and the exit map the
# taskstats collector asks for. It runs through the workload beside the
# others; only its programs and maps are checked.
PORT_A=9718
PID_A=""
if start_exporter "${PORT_A}" /tmp/exporter_bpf_all.log \
    --collector.disable-defaults --collector.vmscan --collector.vmscan.backend=bpf \
    --collector.vmscan.locks --collector.vmscan.lock-callers --collector.taskstats; then
  PID_A="${EXPORTER_PID}"
  SA=/tmp/bpf_scrape_all
  scrape "http://127.0.0.1:${PORT_A}/metrics" "${SA}"
  expect_metric bpf_all_programs_backend_info "${SA}" \
    'memcg_trace_backend_info{backend="bpf",reason=""}' 1
  missing=""
  for m in callers exit_cgroups lock_waits; do
    grep -q "^memcg_trace_bpf_map_max_entries{map=\"${m}\"}" "${SA}" || missing="${missing} ${m}"
  done
  if [ -z "${missing}" ]; then
    mt_pass bpf_all_programs_maps
  else
    mt_fail bpf_all_programs_maps "no map${missing}"
  fi
else
  mt_fail bpf_all_programs_backend_info "no answer on port ${PORT_A} within 240s"
  mt_fail bpf_all_programs_maps "exporter down"
  tail -n 30 /tmp/exporter_bpf_all.log | sed 's/^/MEMCG_LOG exporter: /'
fi

S0=/tmp/bpf_scrape0
scrape "http://127.0.0.1:${PORT_B}/metrics" "${S0}"
expect_metric bpf_backend_info "${S0}" 'memcg_trace_backend_info{backend="bpf",reason=""}' 1
expect_metric bpf_trace_up "${S0}" memcg_trace_up 1
expect_metric bpf_vmscan_success "${S0}" 'memcg_exporter_collector_success{collector="vmscan"}' 1
grep '^memcg_trace_bpf_map' "${S0}" | sed 's/^/MEMCG_LOG scrape: /'

mkdir -p "${T}"
echo 64M >"${T}/memory.max"
drop_page_cache
measured_stream "${T}" "${STREAM}"
mt_info "bpf workload: ${bytes} bytes in ${wall}s; kernel: memory.events max +${d_max}," \
  "pgscan_direct +${d_scan}, pgsteal_direct +${d_steal}"

K_TOTAL="memcg_vmscan_reclaim_total{${TL},kind=\"memcg\"}"
K_PAGES="memcg_vmscan_reclaimed_pages_total{${TL},kind=\"memcg\"}"
K_COUNT="memcg_vmscan_reclaim_stall_seconds_count{${TL},kind=\"memcg\"}"
K_SUM="memcg_vmscan_reclaim_stall_seconds_sum{${TL},kind=\"memcg\"}"
# The tracefs reader drains its buffer in the background: scrape both until
# the reference's counts stop moving (the cgroup is idle now).
ST=/tmp/bpf_scrape_ref
SB=/tmp/bpf_scrape_bpf
prev=""
i=0
while [ "${i}" -lt 20 ]; do
  if scrape "http://127.0.0.1:${PORT_T}/metrics" "${ST}"; then
    cur="$(metric_value "${ST}" "${K_TOTAL}")/$(metric_value "${ST}" "${K_PAGES}")"
    [ "${cur}" = "${prev}" ] && [ "${cur}" != / ] && break
    prev="${cur}"
  fi
  sleep 1
  i=$((i + 1))
done
scrape "http://127.0.0.1:${PORT_B}/metrics" "${SB}" ||
  mt_fail bpf_scrape "GET /metrics of the bpf exporter failed after the workload"

# sum_lru FILE NAME: the test cgroup's samples of NAME in context memcg, summed.
sum_lru() {
  awk -v n="$2{${TL}" 'index($1, n) == 1 && index($1, "context=\"memcg\"") { s += $2; f = 1 }
    END { if (f) printf "%.0f\n", s; exit !f }' "$1"
}
b_total="$(metric_value "${SB}" "${K_TOTAL}")"
t_total="$(metric_value "${ST}" "${K_TOTAL}")"
b_pages="$(metric_value "${SB}" "${K_PAGES}")"
t_pages="$(metric_value "${ST}" "${K_PAGES}")"
b_count="$(metric_value "${SB}" "${K_COUNT}")"
b_sum="$(metric_value "${SB}" "${K_SUM}")"
t_sum="$(metric_value "${ST}" "${K_SUM}")"
b_scan="$(sum_lru "${SB}" memcg_vmscan_lru_scanned_pages_total)"
b_steal="$(sum_lru "${SB}" memcg_vmscan_lru_reclaimed_pages_total)"
mt_info "bpf vs tracefs backend: reclaims ${b_total:-none} vs ${t_total:-none}" \
  "(kernel max +${d_max}); pages ${b_pages:-none} vs ${t_pages:-none};" \
  "stall sums ${b_sum:-none}s vs ${t_sum:-none}s; lru scanned/reclaimed" \
  "${b_scan:-none}/${b_steal:-none} (kernel ${d_scan}/${d_steal});" \
  "events $(metric_value "${SB}" memcg_trace_events_total) vs $(metric_value "${ST}" memcg_trace_events_total)"

if is_gt "${b_total:-0}" 0 && [ "${b_total}" = "${t_total}" ] && [ "${b_total}" = "${d_max}" ]; then
  mt_pass bpf_reclaim_total_eq_tracefs_and_kernel
else
  mt_fail bpf_reclaim_total_eq_tracefs_and_kernel "bpf ${b_total:-missing}," \
    "tracefs ${t_total:-missing}, memory.events max +${d_max}"
fi
if is_gt "${b_pages:-0}" 0 && [ "${b_pages}" = "${t_pages}" ]; then
  mt_pass bpf_reclaimed_pages_eq_tracefs
else
  mt_fail bpf_reclaimed_pages_eq_tracefs "bpf ${b_pages:-missing}, tracefs ${t_pages:-missing}"
fi
if [ "${b_scan}" = "${d_scan}" ] && [ "${b_steal}" = "${d_steal}" ]; then
  mt_pass bpf_lru_eq_pgscan_pgsteal_direct
else
  mt_fail bpf_lru_eq_pgscan_pgsteal_direct "bpf lru ${b_scan:-missing}/${b_steal:-missing}," \
    "kernel ${d_scan}/${d_steal}"
fi
if [ -n "${b_count}" ] && [ "${b_count}" = "${b_total}" ] &&
  is_gt "${b_sum:-0}" 0 && ! is_gt "${b_sum}" "${wall}"; then
  mt_pass bpf_stall_count_eq_total_sum_within_wall
else
  mt_fail bpf_stall_count_eq_total_sum_within_wall "count ${b_count:-missing} of" \
    "${b_total:-missing}, sum ${b_sum:-missing}s, wall ${wall}s"
fi
expect_metric bpf_no_events_lost "${SB}" memcg_trace_events_lost_total 0
expect_metric bpf_up_after "${SB}" memcg_trace_up 1

# rmdir drops the cgroup's series in the program (cgroup_rmdir).
rmdir "${T}"
sleep 1
S2=/tmp/bpf_scrape2
if scrape "http://127.0.0.1:${PORT_B}/metrics" "${S2}" && ! grep -q "${TL}" "${S2}"; then
  mt_pass bpf_rmdir_drops_series
else
  mt_fail bpf_rmdir_drops_series "$(grep -c "${TL}" "${S2}" 2>/dev/null) series left"
fi
stop_exporter "${PID_B}" && mt_pass bpf_exporter_stops ||
  mt_fail bpf_exporter_stops "did not exit in 120 s"
stop_exporter "${PID_T}" || mt_info "bpf: the tracefs exporter did not exit in 120 s"
[ -z "${PID_A}" ] || stop_exporter "${PID_A}" ||
  mt_info "bpf: the exporter with every program did not exit in 120 s"
