#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test, in stages that each
# print their time:
#   main   build/ (RelWithDebInfo): unit tests on fixtures, golden expositions,
#          promtool lint, real-kernel tests (root), the end-to-end tests with a
#          real Prometheus, and the qemu cgroup v2 lane
#   asan   build-asan/ (-DMEMCG_SANITIZE=ON: ASan + UBSan, gcc): the unit and
#          live tests
#   tsan   build-tsan/ (-DMEMCG_TSAN=ON): the threaded parts' tests (the
#          list is at tsan_targets below)
#   fuzz   scripts/fuzz.sh: every libFuzzer target for $MEMCG_FUZZ_SECONDS
#          (default 10) each
#   bench  build/: the benchmarks compile (scripts/bench.sh runs them; they
#          are not tests). The main stage's build leaves them out: they add
#          nothing to its tests, and built last they reuse its libraries.
# MEMCG_TEST_STAGES="main asan" picks stages (default: all five, in this
# order; CI runs them all). The stage times of the last measured CI-like run
# are in docs/benchmarks.md ("The test suite"). For a quick local loop:
#   MEMCG_TEST_STAGES=main scripts/test.sh
# Extra
# arguments go to the main stage's ctest. Builds use ccache when it is
# installed (scripts/deps.sh installs it). The first stage that fails stops
# the run; the times of those that ran are printed at the end.
# The main stage runs its tests in three ctest phases: unit and lint tests
# $MEMCG_TEST_JOBS (default: nproc) at a time; the live tests (RUN_SERIAL:
# they count the kernel's events); then the e2e tests and the qemu lane
# $MEMCG_E2E_JOBS (default: 3 x nproc) at a time, as those mostly wait on
# Prometheus, Alertmanager, scrapes and workloads. There, the ones that keep
# CPUs busy say so (PROCESSORS, counted against -j) and the ones sharing
# kernel state or a timing budget hold a RESOURCE_LOCK (tests/CMakeLists.txt).
# Skips: after each ctest run, scripts/ctest_skips.py lists every skipped test
# with its reason. With CI=true (.ci/run sets it) a skipped test labelled
# live, root, e2e or qemu fails the stage: CI must run them all. A local run
# (e.g. without root) only lists them.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=${MEMCG_TEST_STAGES:-main asan tsan fuzz bench}
scripts/deps.sh test
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
jobs=$(nproc)
test_jobs=${MEMCG_TEST_JOBS:-$jobs}
e2e_jobs=${MEMCG_E2E_JOBS:-$((3 * jobs))}
strict=()
[ "${CI:-}" = true ] && strict=(--strict)
times=()
run_stage() {  # run_stage NAME COMMAND...
  local name=$1 start=$SECONDS rc=0
  shift
  echo "=== stage $name"
  "$@" || rc=$?
  times+=("$(printf '%-5s %5ds %s' "$name" $((SECONDS - start)) "$([ $rc = 0 ] && echo ok || echo FAILED)")")
  echo "=== stage $name: $((SECONDS - start)) s, $([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")"
  return $rc
}
# The e2e scripts reserve their ports under FREE_PORT_DIR (tests/e2e/lib.sh); this
# run's reservations live in a folder of its own, removed with it.
export FREE_PORT_DIR=${FREE_PORT_DIR:-$(mktemp -d /tmp/memcg_exporter_test_ports.XXXXXX)}
report() {
  printf 'stage times:\n'
  printf '  %s\n' "${times[@]}"
  case "$FREE_PORT_DIR" in /tmp/memcg_exporter_test_ports.*) rm -rf "$FREE_PORT_DIR" ;; esac
}
trap report EXIT

# run_ctest DIR [-j N] [--junit NAME] ARGS...: ctest in DIR ($test_jobs at a
# time unless -j), then the skip check on its junit report (also after
# failures, so the skips are listed either way).
run_ctest() {
  local dir=$1 rc=0 skip_rc=0 j=$test_jobs junit=ctest-junit.xml
  shift
  [ "${1:-}" = -j ] && { j=$2; shift 2; }
  [ "${1:-}" = --junit ] && { junit=$2; shift 2; }
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j "$j" \
    --output-junit "$PWD/$dir/$junit" "$@" || rc=$?
  scripts/ctest_skips.py --build "$dir" --junit "$PWD/$dir/$junit" "${strict[@]}" ||
    skip_rc=$?
  [ $rc = 0 ] && rc=$skip_rc
  return $rc
}

# main_phase NAME COMMAND...: one ctest phase of the main stage, timed.
main_phase() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "--- main: $name"
  "$@" || rc=$?
  echo "--- main: $name: $((SECONDS - start)) s, $([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")"
  return $rc
}
stage_main() {
  # The qemu lane's kernel package is fetched while the build runs (network
  # and disk, little CPU), so that the lane, the e2e phase's longest test,
  # starts from a warm cache. A failed fetch is only reported: the lane
  # fetches again itself and fails there if it must.
  mkdir -p build
  tests/qemu/run.sh --fetch-only >build/qemu-fetch.log 2>&1 &
  local fetch_pid=$!
  scripts/build.sh "${launcher[@]}" -DBUILD_BENCH=OFF
  # Every phase runs even when one failed, so one run shows every failure.
  local rc=0
  rm -f build/ctest-junit-{unit,live,e2e,other}.xml
  main_phase "unit, lint" run_ctest build --junit ctest-junit-unit.xml -L '^(unit|lint)$' "$@" || rc=1
  main_phase live run_ctest build --junit ctest-junit-live.xml -L '^live$' "$@" || rc=1
  local fetch_rc=0
  wait "$fetch_pid" || fetch_rc=$?
  [ "$fetch_rc" = 0 ] || echo "qemu lane: fetching its kernel beforehand exited $fetch_rc: $(tail -n 3 build/qemu-fetch.log)"
  main_phase "e2e, qemu" run_ctest build -j "$e2e_jobs" --junit ctest-junit-e2e.xml \
    -L '^(e2e|qemu)$' "$@" || rc=1
  # A test of none of these kinds still runs (one at a time), never dropped.
  local others
  others=$(ctest --test-dir build -N -LE '^(unit|lint|live|e2e|qemu)$' "$@" |
           awk '/^Total Tests:/ {print $3}')
  if [ "${others:-0}" != 0 ]; then
    main_phase "other labels" run_ctest build -j 1 --junit ctest-junit-other.xml \
      -LE '^(unit|lint|live|e2e|qemu)$' "$@" || rc=1
  fi
  local junits=(build/ctest-junit-{unit,live,e2e,other}.xml)
  scripts/ctest_times.py --build build --top 30 "${junits[@]}" || true
  return $rc
}
stage_asan() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMCG_SANITIZE=ON \
    -DBUILD_BENCH=OFF "${launcher[@]}" >/dev/null
  # Only what the stage runs: the unit and live test binaries and the tools
  # their script tests name (memcgtool), not the exporter's e2e helpers.
  mapfile -t asan_targets < <(scripts/ctest_targets.py build-asan 'unit|live')
  echo "asan: building ${asan_targets[*]}"
  cmake --build build-asan -j "$jobs" --target "${asan_targets[@]}"
  # detect_leaks: a leak fails the test too.
  # Left out here, run by the main stage: the lock-contention storm asserts that
  # the reader loses no event of ~10^6/s, which an instrumented reader cannot
  # keep up with (874,023 lost under ASan in one run; 0 in the main build).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-asan -L 'unit|live' \
    -E '^live\.LocksLive\.RstatContentionAgreesWithSecondInstance$'
}
# The threaded parts: the HTTP server (concurrent keep-alive scrapes, slow
# clients, the worker cap), the web auth cache, the tracing aggregator and the
# lock-id cache, the controller (its waiter, worker and control loop),
# concurrent scrapes sharing one discovery walk (the walk scheduler's thread:
# DiscoveryOffScrapePath), the notifier's sender, the fleet's Alertmanager
# puller (its pull thread, the HTTP client), the history, and the whole App at once (AppThreads: the sampler, the rule
# engine, the HTTP front and workers under concurrent clients).
# Their instrumented library is one build of memcg_exporter_lib.
tsan_targets=(http_server_test tracing_aggregator_test tracing_locks_test
              controller_waiter_test controller_worker_test
              controller_controller_test memcg_unit_tests app_threads_test
              rules_notifier_test rules_alert_puller_test history_test)
tsan_suites='HttpServer|HttpServerTls|WebAuth|WebConfig|AggregatorTest|LockIds|Waiter|Worker|TokenBucket|CpuBudget|ControllerTest|ControllerV2Test|Concurrency|DiscoveryOffScrapePath|App|AppThreads|RulesNotifier|RulesAlertPuller|RulesAlertmanagerConfig|RulesHttpClient|History'
stage_tsan() {
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMCG_TSAN=ON \
    -DBUILD_BENCH=OFF "${launcher[@]}" >/dev/null
  cmake --build build-tsan -j "$jobs" --target "${tsan_targets[@]}"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest build-tsan -R "^unit\.($tsan_suites)\\."
}
stage_fuzz() { scripts/fuzz.sh "${MEMCG_FUZZ_SECONDS:-10}"; }
stage_bench() { scripts/build.sh "${launcher[@]}" -DBUILD_BENCH=ON; }

for s in $stages; do
  case $s in
    main) run_stage main stage_main "$@" ;;
    asan) run_stage asan stage_asan ;;
    tsan) run_stage tsan stage_tsan ;;
    fuzz) run_stage fuzz stage_fuzz ;;
    bench) run_stage bench stage_bench ;;
    *) echo "test.sh: unknown stage $s (main asan tsan fuzz bench)" >&2; exit 2 ;;
  esac
done
