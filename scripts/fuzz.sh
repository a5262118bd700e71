#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz; clang, ASan + UBSan) into
# build-fuzz/ and runs each for N seconds (default 60), one after the other.
#   scripts/fuzz.sh [seconds] [target...]     targets: the fuzz_* names without "fuzz_"
#   scripts/fuzz.sh --list                    the targets this script knows (no build)
# Without targets, every fuzz_* executable the build made runs; one this
# script has no seed entry for fails the run (add it to `seeds` below), so a
# target CMake builds is never left out (lint.fuzz_targets_listed compares the
# two lists without a build).
# Inputs that found new coverage are kept in build-fuzz/corpus/<target>/ (the
# next run starts from them and the committed seeds); a crash, hang or
# sanitizer report is written to build-fuzz/crashes/<target>/ and makes the
# exit status 1. Reproduce one: build-fuzz/tests/fuzz/fuzz_<target> <file>.
set -euo pipefail
cd "$(dirname "$0")/.."

# target -> seed directories (committed fixtures where they fit)
declare -A seeds=(
  [cgroupfs_readers]="tests/fixtures/cgroupfs tests/fixtures/procfs"
  [collectors_scrape]="tests/fuzz/seeds/collectors_scrape"
  [trace_records]="tests/fuzz/seeds/trace_records"
  [kallsyms]="tests/fixtures/kallsyms"
  [proc_cgroup]="tests/fuzz/seeds/proc_cgroup"
  [controller_api]="tests/fuzz/seeds/controller_api"
  [controller_journal]="tests/fuzz/seeds/controller_journal"
  [flags]="tests/fuzz/seeds/flags"
  [http_api]="tests/fuzz/seeds/http_api"
  [taskstats]="tests/fixtures/taskstats"
  [promql_parser]="tests/fuzz/seeds/promql_parser"
  [history_chunk]="tests/fuzz/seeds/history_chunk"
  [http_parser]="tests/fuzz/seeds/http_parser"
  [tls_handshake]="tests/fuzz/seeds/tls_handshake"
)
if [ "${1:-}" = --list ]; then
  printf '%s\n' "${!seeds[@]}" | sort
  exit 0
fi
secs=${1:-60}
shift || true
scripts/deps.sh fuzz
launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMEMCG_FUZZ=ON -DBUILD_TESTING=OFF -DBUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target memcg_fuzz_targets >/dev/null

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in build-fuzz/tests/fuzz/fuzz_*; do
    [ -f "$f" ] && [ -x "$f" ] && targets+=("${f##*/fuzz_}")
  done
  [ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: the build made no fuzz_* target" >&2; exit 1; }
fi
failed=()
for t in "${targets[@]}"; do
  [ -n "${seeds[$t]+x}" ] || { echo "fuzz.sh: target $t has no entry in fuzz.sh's seeds list" >&2; exit 2; }
  corpus=build-fuzz/corpus/$t crashes=build-fuzz/crashes/$t/ scratch=build-fuzz/tmp/$t
  mkdir -p "$corpus" "$crashes" "$scratch"
  log=build-fuzz/fuzz_$t.log
  # shellcheck disable=SC2086  # seed directories are words
  if TMPDIR=$PWD/$scratch build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$secs" -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$crashes" "$corpus" ${seeds[$t]} >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log and $crashes)"
    failed+=("$t")
  fi
  rm -rf "$scratch"  # the targets' scratch trees (also after a crash)
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  printf '%-20s %ss %10s execs  %-10s %s\n' "$t" "$secs" "${execs:-?}" "${cov:-}" "$result"
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz.sh: failed: ${failed[*]}" >&2; exit 1; }
