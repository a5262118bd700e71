#!/usr/bin/env bash
# Cold build time, side by side in one run: the same source with MEMCG_FAST_BUILD=OFF
# (one object per source file, full -g, the default linker: the build before the
# option existed) and ON (unity batches, -g1, mold/gold), for
#   exporter  --target memcg_exporter (what scripts/run.sh builds)
#   full      everything scripts/build.sh builds (tests and benchmarks too)
# Each build starts in a fresh build directory with ccache disabled, configured as
# scripts/build.sh does (RelWithDebInfo, MEMCG_WERROR). The machine may be shared:
# the load average is printed beside each figure, and the CPU seconds of the
# compilers and linkers (user + system) beside the wall-clock seconds: on a loaded
# machine the CPU figure is the steadier one. Compare the ratios.
#   bench/build_time.sh [exporter|full|both] [-j N]      (default: both, -j 2)
#   bench/build_time.sh --target T [-j N]                 one target and what it needs
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
what=both
jobs=2
target=
while [ $# -gt 0 ]; do
  case "$1" in
    exporter|full|both) what=$1 ;;
    --target) what=target; target=$2; shift ;;
    -j) jobs=$2; shift ;;
    *) echo "usage: $0 [exporter|full|both|--target T] [-j N]" >&2; exit 2 ;;
  esac
  shift
done
tmp=$(mktemp -d /tmp/memcg_exporter_test_build_time.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export CCACHE_DISABLE=1

load() { cut -d' ' -f1 /proc/loadavg; }
# build <name> <fast ON|OFF> [target]: prints the wall-clock seconds of configure +
# build, the CPU seconds of the processes it ran, and the load before and after.
# Runs in a subshell ($(build ...)), so `times` counts only this build's children;
# `times` itself must run in that subshell (a nested $(...) would count nothing).
cpu() {  # cpu <file with the output of times>
  tail -1 "$1" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, a, /m|s/); n += a[1] * 60 + a[2] } printf "%.0f", n }'
}
build() {
  local dir=$tmp/$1 fast=$2 target=${3:-}
  local t0 t1 l0
  l0=$(load)
  t0=$(date +%s.%N)
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMCG_WERROR=ON \
        -DMEMCG_FAST_BUILD="$fast" >"$dir.log" 2>&1
  if [ -n "$target" ]; then
    cmake --build "$dir" -j "$jobs" --target "$target" >>"$dir.log" 2>&1
  else
    cmake --build "$dir" -j "$jobs" >>"$dir.log" 2>&1
  fi || { echo "build $1 failed, see its log:" >&2; tail -20 "$dir.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  times >"$dir.times"
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $(cpu "$dir.times") $l0 $(load)"
  rm -rf "$dir"
}
row() {  # row <what> <old: wall cpu l0 l1> <new: wall cpu l0 l1>
  printf '%-9s %7.0f %7.0f %6.2fx %7.0f %7.0f %6.2fx   %s..%s / %s..%s\n' "$1" \
    "$2" "$6" "$(awk -v a="$2" -v b="$6" 'BEGIN { print a / b }')" \
    "$3" "$7" "$(awk -v a="$3" -v b="$7" 'BEGIN { print a / b }')" \
    "$4" "$5" "$8" "$9"
}

echo "cold build, $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD || echo +dirty)," \
     "$(nproc) cpus, -j $jobs, $(date -u '+%Y-%m-%d %H:%M UTC')"
results=()
if [ "$what" = target ]; then
  old=$(build target_old OFF "$target")
  new=$(build target_new ON "$target")
  results+=("$(row "$target" $old $new)")
fi
if [ "$what" = exporter ] || [ "$what" = both ]; then
  old=$(build exporter_old OFF memcg_exporter)
  new=$(build exporter_new ON memcg_exporter)
  results+=("$(row exporter $old $new)")
fi
if [ "$what" = full ] || [ "$what" = both ]; then
  new=$(build full_new ON)
  old=$(build full_old OFF)
  results+=("$(row full $old $new)")
fi
printf '%-9s %7s %7s %7s %7s %7s %7s   %s\n' build "wall" "" "" "cpu" "" "" "loadavg"
printf '%-9s %7s %7s %7s %7s %7s %7s   %s\n' "" "old s" "new s" ratio "old s" "new s" ratio \
  "old / new (start..end)"
printf '%s\n' "${results[@]}"
