#!/usr/bin/env bash
# Builds and runs the benchmarks (root; not part of the tests). Each prints its
# figures and the side-by-side comparison.
#   scripts/bench.sh [scrape|taskstats|tracing|tracing_idle|tracing_overhead|locks|seed000|seed001|promql|rules|soak|all]
#   scripts/bench.sh http_trial   (not in all: its own libraries, bench/http_trial/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
if [[ $what == http_trial ]]; then
  echo "== HTTP server trial: ours vs libmicrohttpd vs Boost.Beast, 1,000 slow connections and the limit tests"
  scripts/deps.sh trial
  scripts/build.sh --target http_trial_ours --target http_trial_mhd --target http_trial_beast \
    -DBUILD_BENCH=ON -DMEMCG_HTTP_TRIAL=ON >/dev/null
  exec python3 bench/http_trial/run_trial.py build
fi
scripts/deps.sh bench
scripts/build.sh -DBUILD_BENCH=ON >/dev/null
if [[ $what == scrape || $what == all ]]; then
  echo "== scrape: 1,000 and 10,000 cgroups vs the pread floor and node_exporter"
  bench/scale_bench.sh build/exporter/memcg_exporter 1000,10000 21
fi
if [[ $what == taskstats || $what == all ]]; then
  echo "== taskstats: a cgroup with 1,000 tasks"
  build/bench/taskstats_bench
fi
if [[ $what == tracing || $what == all ]] && [[ -x build/bench/tracing_decode_bench ]]; then
  echo "== tracing: decode + aggregate throughput"
  build/bench/tracing_decode_bench
fi
if [[ $what == tracing_idle || $what == all ]]; then
  echo "== tracing reader idle cost: read every CPU each interval vs one epoll_wait (2 measured, 64/256 simulated CPUs)"
  build/bench/tracing_idle_cost 3 3
fi
if [[ $what == locks || $what == all ]]; then
  echo "== lock probes: off / locks / callers, interleaved (workload sys time, reader CPU)"
  build/bench/lock_probes_bench 5
fi
if [[ $what == tracing_overhead || $what == all ]]; then
  echo "== tracing cost in situ: exporter vs bpftrace vs trace-cmd on a memcg streaming workload"
  bench/tracing_overhead.sh build/exporter/memcg_exporter 5
fi
if [[ $what == seed000 || $what == all ]]; then
  echo "== 2011 async-reclaim workload: cat 1 GiB through 256 MiB, controller off/on (failcnt, taskstats RECLAIM);"
  echo "   disk-backed and fast (ext4 on a loop device over /dev/shm) readers, idle and CPU-hogged"
  bench/seed000_delays.sh build/exporter/memcg_exporter 5
  build/bench/controller_seed000
fi
if [[ $what == seed001 || $what == all ]]; then
  echo "== 2011 async-reclaim v3 workload: HTTP service with a working set 2x its limit (half the requests write), controller off/on"
  bench/seed001_http.sh build/exporter/memcg_exporter 5
fi
if [[ $what == promql || $what == all ]]; then
  echo "== promql: our engine vs Prometheus 2.42 on the same data, 1,000 cgroups, 15 min at 1 s"
  BUILD_DIR=build bench/promql_bench.sh
fi
if [[ $what == rules || $what == all ]]; then
  echo "== rules: condition-to-actuation latency in-process vs Prometheus + Alertmanager; rule CPU at 1,000 cgroups"
  bench/rules_latency.sh build/exporter/memcg_exporter 10 30 1000 300
fi
if [[ $what == soak || $what == all ]]; then
  echo "== soak: everything on under scrapes, API calls and cgroup churn (MEMCG_SOAK_SECONDS, default 120; MEMCG_SOAK_WARMUP, default 45; the issue's figure: 1560 and 960)"
  bench/soak.sh build/exporter/memcg_exporter "${MEMCG_SOAK_SECONDS:-120}" "${MEMCG_SOAK_WARMUP:-45}"
fi
