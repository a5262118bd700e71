#!/usr/bin/env bash
# End to end, real kernel (root, cgroup v1 memory): namespace, pod and container labels
# from a fake kubelet log layout.
#   - a kubepods-shaped cgroup tree (cgroupfs driver: kubepods/burstable/pod<uid>/<id>)
#     below memcg_exporter_test_kubelet_<pid>, a task in the container;
#   - a kubelet log directory as kubelet writes it
#     (pods/<namespace>_<pod>_<uid>/<container>/0.log,
#      containers/<pod>_<namespace>_<container>-<id>.log);
#   - the exporter with --path.kubelet-logs: memcg_cgroup_pod_info names the pod and
#     the container (namespace/pod/container); a second container whose log appears
#     while the exporter runs is named at a later scrape; the alerts' join
#     (group_left(namespace, pod, container) memcg_cgroup_pod_info) run by the
#     exporter's query API over its history gives the container's usage with its names.
# usage: kubelet_labels_e2e.sh path/to/memcg_exporter
# Creates the cgroups and a temp dir; removes all of it on exit, also on failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "kubelet labels e2e: SKIPPED: needs root and cgroup v1 memory"
  exit 77
fi
command -v python3 >/dev/null || { echo "kubelet labels e2e: SKIPPED: no python3"; exit 77; }
top="/memcg_exporter_test_kubelet_$$"
uid=3f0c2a1b-5d4e-4f60-8a7b-9c0d1e2f3a4b
id1=$(printf 'c1%.0s' $(seq 32))   # 64 hex digits
id2=$(printf 'c2%.0s' $(seq 32))
pod="$top/kubepods/burstable/pod$uid"
ctr1="$pod/$id1"
ctr2="$pod/$id2"
root=/sys/fs/cgroup/memory
tmp=$(mktemp -d /tmp/memcg_exporter_test_kubelet_XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for d in "$ctr1" "$ctr2" "$pod" "$top/kubepods/burstable" "$top/kubepods" "$top"; do
    [ -d "$root$d" ] || continue
    for p in $(cat "$root$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$root$d" 2>/dev/null && break; sleep 0.2; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$root$ctr1" "$root$ctr2" || exit 1
sh -c "echo \$\$ > $root$ctr1/cgroup.procs; exec sleep 600" &
pids+=($!)
logs="$tmp/log"
mkdir -p "$logs/pods/shop_web-0_$uid/app" "$logs/pods/shop_web-0_$uid/sidecar" "$logs/containers"
: > "$logs/pods/shop_web-0_$uid/app/0.log"
: > "$logs/containers/web-0_shop_app-$id1.log"

port=$(free_port)
"$exporter" --web.listen-address="127.0.0.1:$port" --cgroup.include="/|$top.*" \
  --collector.disable-defaults --collector.kubepods --collector.memory_usage \
  --path.kubelet-logs="$logs" \
  --history.enable --history.match='{__name__=~"memcg_cgroup_pod_info|memcg_memory_usage_bytes"}' \
  2>"$tmp/exporter.log" &
pids+=($!)
base="http://127.0.0.1:$port"
check "exporter ready" wait_http "$base/-/ready" 30

info() {  # info CGROUP -> the memcg_cgroup_pod_info line of the cgroup
  curl -fsS "$base/metrics" | grep "^memcg_cgroup_pod_info{cgroup=\"$1\","
}
line_has() {  # line_has CGROUP NS POD CONTAINER
  local l
  l=$(info "$1") || return 1
  echo "  $l"
  [[ $l == *"namespace=\"$2\",pod=\"$3\",container=\"$4\""* ]]
}
check "the pod is named: namespace=shop pod=web-0" line_has "$pod" shop web-0 ""
check "the container is named: namespace=shop pod=web-0 container=app" line_has "$ctr1" shop web-0 app
check "a container without a log yet: the pod's names, no container" line_has "$ctr2" shop web-0 ""
: > "$logs/containers/web-0_shop_sidecar-$id2.log"
check "its log appears: named at a later scrape (container=sidecar)" \
  poll_until 10 line_has "$ctr2" shop web-0 sidecar

q='memcg_memory_usage_bytes * on(cgroup) group_left(namespace, pod, container) memcg_cgroup_pod_info'
joined() {
  curl -fsS -G "$base/api/v1/query" --data-urlencode "query=$q" | python3 -c '
import json, sys
want = sys.argv[1]
for r in json.load(sys.stdin)["data"]["result"]:
    m = r["metric"]
    if m.get("cgroup") == want:
        print("  ", m)
        sys.exit(0 if (m.get("namespace"), m.get("pod"), m.get("container")) == ("shop", "web-0", "app") else 1)
sys.exit(1)' "$ctr1"
}
check "the alerts' join gives the container's usage with its names (history query API)" \
  poll_until 15 joined
if [ $fail -gt 0 ]; then echo "--- exporter log"; tail -20 "$tmp/exporter.log"; fi
summary "kubelet labels e2e"
