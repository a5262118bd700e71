# One page per event on a real v2 kernel: a three-level kubepods-shaped tree
# (kubepods.slice / kubepods-burstable.slice / a pod's slice / a container's
# scope) below memcg_exporter_test_alerts, an OOM kill in the container. The
# kernel counts the kill in memory.events of the container and of every
# ancestor, in memory.events.local of the container only. The exporter runs the
# shipped alerts/memcg_exporter.rules.yml in-process (1 s evaluations on its
# history): MemcgOOMKill must fire exactly once, for the container.
# Sourced by /init in a subshell.

CG=/sys/fs/cgroup
TOP="${CG}/memcg_exporter_test_alerts"
L1="/memcg_exporter_test_alerts/kubepods.slice"
L2="${L1}/kubepods-burstable.slice"
L3="${L2}/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_00000000000a.slice"
LEAF="${L3}/cri-containerd-$(printf 'ab%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32).scope"
PORT=9716
URL="http://127.0.0.1:${PORT}"
RULES=/etc/memcg_exporter/memcg_exporter.rules.yml

if [ ! -x /usr/bin/memcg_exporter ]; then
  mt_skip alerts_hier_exporter_up "no exporter in the initramfs (run.sh --exporter PATH)"
  exit 0
fi
if [ ! -f "${RULES}" ]; then
  mt_skip alerts_hier_exporter_up "no ${RULES} in the initramfs"
  exit 0
fi
for d in "" "${L1}" "${L2}" "${L3}" "${LEAF}"; do
  mkdir -p "${CG}/memcg_exporter_test_alerts${d#/memcg_exporter_test_alerts}" 2>/dev/null
done
for d in "${TOP}" "${CG}${L1}" "${CG}${L2}" "${CG}${L3}"; do
  echo +memory >"${d}/cgroup.subtree_control" 2>/dev/null
done
if [ ! -f "${CG}${LEAF}/memory.events.local" ]; then
  mt_skip alerts_hier_exporter_up "no memory.events.local (kernel < 5.2)"
  exit 0
fi
echo 16M >"${CG}${LEAF}/memory.max"
echo 0 >"${CG}${LEAF}/memory.swap.max" 2>/dev/null

wait_no_trace_instance
if ! start_exporter "${PORT}" /tmp/exporter_alerts.log --no-collector.vmscan \
  --cgroup.include='/|/memcg_exporter_test_alerts.*' --history.enable \
  --rules.file="${RULES}" --rules.evaluation-interval=1s; then
  mt_fail alerts_hier_exporter_up "no answer on ${URL}/metrics within 240s"
  tail -n 20 /tmp/exporter_alerts.log | sed 's/^/MEMCG_LOG exporter: /'
  exit 0
fi
mt_pass alerts_hier_exporter_up
# a few evaluations before the kill: increase() needs the counter's value before it
sleep 5

# dd's 64 MiB buffer, charged to the container, cannot fit its 16 MiB: the OOM killer
# kills dd (the only task).
sh -c "echo \$\$ >${CG}${LEAF}/cgroup.procs && exec dd if=/dev/zero of=/dev/null bs=64M count=4" \
  >/dev/null 2>&1
kills="$(kv "${CG}${LEAF}/memory.events.local" oom_kill)"
if [ "${kills:-0}" -ge 1 ]; then
  mt_pass alerts_hier_oom_killed
else
  mt_fail alerts_hier_oom_killed "memory.events.local oom_kill of the container is ${kills:-unreadable}"
fi
# the kernel's counts: the kill in every level's memory.events, only the container's .local
ok=1
for d in "${L1}" "${L2}" "${L3}"; do
  h="$(kv "${CG}${d}/memory.events" oom_kill)"
  l="$(kv "${CG}${d}/memory.events.local" oom_kill)"
  mt_info "alerts_hier ${d}: memory.events oom_kill ${h}, .local ${l}"
  [ "${h:-0}" -ge 1 ] && [ "${l:-1}" = 0 ] || ok=0
done
if [ "${ok}" = 1 ]; then
  mt_pass alerts_hier_kernel_counts
else
  mt_fail alerts_hier_kernel_counts "each ancestor should count the kill in memory.events and not in .local"
fi

# oom_alerts FILE: the MemcgOOMKill alerts of an /api/v1/alerts answer, one a line
# (in FILE.oom): each alert object starts with its "activeAt" key.
oom_alerts() {
  awk '{ gsub(/\{"activeAt"/, "\n{\"activeAt\""); print }' "$1" |
    grep '"alertname":"MemcgOOMKill"' >"$1.oom"
}
# MemcgOOMKill: pending or firing (no `for`: firing at its first evaluation), once.
A=/tmp/alerts_hier_answer
n=0
i=0
while [ "${i}" -lt 120 ]; do
  if scrape "${URL}/api/v1/alerts" "${A}"; then
    oom_alerts "${A}"
    n="$(wc -l <"${A}.oom")"
    [ "${n}" -ge 1 ] && break
  fi
  sleep 1
  i=$((i + 1))
done
sleep 3  # a later evaluation: no second alert appears for an ancestor
scrape "${URL}/api/v1/alerts" "${A}" && oom_alerts "${A}"
n="$(wc -l <"${A}.oom")"
if [ "${n}" = 1 ] && grep -q "\"cgroup\":\"${LEAF}\"" "${A}.oom"; then
  mt_pass alerts_hier_one_alert
else
  mt_fail alerts_hier_one_alert "MemcgOOMKill alerts: ${n} (want 1, for ${LEAF})"
  sed 's/^/MEMCG_LOG alert: /' "${A}.oom"
  tail -n 20 /tmp/exporter_alerts.log | sed 's/^/MEMCG_LOG exporter: /'
fi

stop_exporter "${EXPORTER_PID}"
for d in "${LEAF}" "${L3}" "${L2}" "${L1}" ""; do
  rmdir "${CG}/memcg_exporter_test_alerts${d#/memcg_exporter_test_alerts}" 2>/dev/null
done
