#!/usr/bin/env bash
# Live agreement: a real Prometheus (Debian's) scrapes the exporter at 1 s
# while a memcg workload runs (cgroup v1: memcg_exporter_test_hist_<pid>, a
# 64 MiB limit, a file four times that streamed through it again and again),
# and the same queries through both /api/v1/query must agree: the exporter
# answers from its own history (sampled every 1 s on the second), Prometheus
# from its scrapes (every 1 s at its own phase). Then Grafana's requests
# (grafana_replay.py) against the live exporter.
#
# Tolerances (the two sample the same counters at instants up to 1 s apart):
#   limit                    exact (a constant)
#   usage / limit            0.10 absolute (usage hovers under the limit while
#                            reclaim runs; one second of streaming moves it)
#   rates over [20s]         25 % relative: each window edge may hold up to
#                            1 s (5 %) more or less of the workload on either
#                            side, plus extrapolation at both ends
#   histogram_quantile(0.9)  a factor of 2.5: the quantile is interpolated in
#                            the same bucket layout, whose bounds are at most
#                            2.5x apart; a 1 s shift can move it one bucket
# usage: history_prometheus_e2e.sh path/to/memcg_exporter
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
for tool in prometheus curl python3; do
  command -v $tool >/dev/null || { echo "e2e: SKIPPED: $tool not installed (scripts/deps.sh test)"; exit 77; }
done
if [ "$(id -u)" != 0 ]; then echo "e2e: SKIPPED: needs root for a live test cgroup"; exit 77; fi
if [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "e2e: SKIPPED: needs the cgroup v1 memory controller at /sys/fs/cgroup/memory"; exit 77
fi

tmp=$(mktemp -d /tmp/memcg_exporter_test_hist_XXXXXX)
name="memcg_exporter_test_hist_$$"
label="/$name"
cg="/sys/fs/cgroup/memory$label"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  if [ -d "$cg" ]; then
    for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && break; sleep 0.2; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$cg" && echo $((64 << 20)) > "$cg/memory.limit_in_bytes"

eport=$(free_port)
# --cgroup.max-depth=1: the test cgroup is at depth 1; a host's deep trees
# (thousands of cgroups) are not walked on every 1 s scrape.
"$exporter" --web.listen-address="127.0.0.1:$eport" --cgroup.include="$label" --cgroup.max-depth=1 \
  --collector.vmscan.instance="$name" --history.match="{cgroup=\"$label\"}" \
  2>"$tmp/exporter.log" &
pids+=($!)
check "exporter ready" wait_http "http://127.0.0.1:$eport/-/ready" 60
cat > "$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: memcg
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
start_prometheus "$tmp/prometheus.yml" "$tmp"
pport=$prom_port
[ -n "$prom_pid" ] && pids+=($prom_pid)
check "prometheus ready" [ -n "$prom_pid" ]

# The workload, inside the cgroup (so the file's page cache is charged to it):
# write a 256 MiB file, then stream it through the 64 MiB limit over and over.
bash -c "echo \$\$ > $cg/cgroup.procs; dd if=/dev/urandom of=$tmp/data bs=1M count=256 status=none; while :; do cat $tmp/data > /dev/null; done" &
pids+=($!)
sleep 30

python3 - "http://127.0.0.1:$eport" "http://127.0.0.1:$pport" "$label" <<'PY'
import json, sys, time, urllib.parse, urllib.request
exp, prom, cg = sys.argv[1:4]
def q(base, expr):
    u = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": "%.3f" % t})
    d = json.load(urllib.request.urlopen(u, timeout=10))
    assert d["status"] == "success", d
    r = d["data"]["result"]
    return float(r[0]["value"][1]) if r else None
# An instant where Prometheus' last 25 s of scrapes all succeeded: one scrape
# past its 1 s timeout on a loaded machine marks the series stale (absent at
# t) and thins the 20 s rates, which says nothing about the history. Polled,
# 60 s at most; the instant is then the same for both.
for tries in range(60):
    t = time.time() - 2  # both have samples up to here
    if q(prom, 'min_over_time(up{job="memcg"}[25s])') == 1:
        break
    time.sleep(1)
print("compared at %.3f (%d s waited for 25 s of successful scrapes)" % (t, tries))
sel = '{cgroup="%s"}' % cg
cases = [
  ("limit", "sum(memcg_memory_limit_bytes%s)" % sel, "exact", 0),
  ("usage/limit", "sum(memcg_memory_usage_bytes%s / memcg_memory_limit_bytes%s)" % (sel, sel), "abs", 0.10),
  ("rate(failcnt[20s])", "sum(rate(memcg_memory_failcnt_total%s[20s]))" % sel, "rel", 0.25),
  ("sum by cgroup (usage) / 64 MiB", "sum by (cgroup) (memcg_memory_usage_bytes%s) / 67108864" % sel, "abs", 0.10),
  ("p90 stall", "histogram_quantile(0.9, sum by (le) (rate(memcg_vmscan_reclaim_stall_seconds_bucket%s[20s])))" % sel, "factor", 2.5),
]
fails = 0
for name, expr, kind, tol in cases:
    a, b = q(exp, expr), q(prom, expr)
    if a is None or b is None:
        ok = False
        delta = "missing (exporter %s, prometheus %s)" % (a, b)
    elif kind == "exact":
        ok, delta = a == b, "%g" % abs(a - b)
    elif kind == "abs":
        ok, delta = abs(a - b) <= tol, "%.4f" % abs(a - b)
    elif kind == "rel":
        d = abs(a - b) / max(abs(b), 1e-12)
        ok, delta = d <= tol and b > 0, "%.1f%%" % (100 * d)
    else:
        f = max(a, b) / max(min(a, b), 1e-12)
        ok, delta = f <= tol, "x%.2f" % f
    print("%s %s: exporter %s prometheus %s delta %s (tolerance %s %s)" % (
        "PASS" if ok else "FAIL", name, a, b, delta, kind, tol))
    fails += 0 if ok else 1
sys.exit(1 if fails else 0)
PY
check "exporter and prometheus agree" test $? -eq 0
check "grafana replay (live)" python3 "$here/grafana_replay.py" "http://127.0.0.1:$eport" memcg_memory_usage_bytes cgroup
curl -fsS "http://127.0.0.1:$eport/metrics" | grep -E '^memcg_exporter_history_(series|samples|bytes|sampler_duration_seconds) '
check "the history sampled only the selection" bash -c \
  "[ \$(curl -fsS http://127.0.0.1:$eport/metrics | awk '\$1==\"memcg_exporter_history_series\" {print \$2}') -lt 400 ]"
summary "e2e.history_prometheus"
