#!/usr/bin/env bash
# e2e.promql_prometheus_testdata: Prometheus' own PromQL test scripts
# (promql/testdata/*.test of Debian's prometheus source package, 2.42 in
# bookworm) run by `memcgtool test promql`. The source package is downloaded
# at test time into the build tree (never committed) and cached there.
#   prometheus_testdata.sh MEMCGTOOL CACHE_DIR
# The mirror is the one this machine's apt uses for bookworm (or
# $MEMCG_DEBIAN_MIRROR). Exit 77 (skip) only when the download fails.
set -uo pipefail
tool=$1
cache=$2
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
testdata=$cache/testdata

if ! ls "$testdata"/*.test >/dev/null 2>&1; then
  mirror=${MEMCG_DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    # deb822 (.sources) first, then one-line lists.
    mirror=$(awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ && u ~ /\/debian\/?$/ {print u; exit}' \
               /etc/apt/sources.list.d/*.sources 2>/dev/null)
  fi
  if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" && $0 ~ / bookworm / {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' \
               /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep '/debian/\?$' | head -1)
  fi
  if [ -z "$mirror" ]; then
    echo "SKIPPED: no bookworm mirror in this machine's apt sources (set MEMCG_DEBIAN_MIRROR)"
    exit 77
  fi
  apt=$cache/apt
  rm -rf "$apt" "$cache/src"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main" \
    > "$apt/sources.list"
  opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=-"
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Debug::NoLocking=1")
  if ! apt-get -qq "${opts[@]}" update >"$cache/apt.log" 2>&1; then
    echo "SKIPPED: apt-get update of the deb-src list failed (see $cache/apt.log)"
    exit 77
  fi
  if ! (cd "$cache/src" && apt-get -qq "${opts[@]}" source --download-only prometheus) \
       >>"$cache/apt.log" 2>&1; then
    echo "SKIPPED: downloading Debian's prometheus source package failed (see $cache/apt.log)"
    exit 77
  fi
  orig=$(ls "$cache"/src/prometheus_*.orig.tar.* 2>/dev/null | head -1)
  if [ -z "$orig" ]; then
    echo "SKIPPED: no orig tarball in the downloaded source package"
    exit 77
  fi
  tmp=$cache/extract
  rm -rf "$tmp"
  mkdir -p "$tmp"
  tar -xf "$orig" -C "$tmp" --wildcards '*/promql/testdata/*' || { echo "FAILED: cannot unpack $orig"; exit 1; }
  # Debian's patches that touch the test scripts, if any.
  deb=$(ls "$cache"/src/prometheus_*.debian.tar.* 2>/dev/null | head -1)
  top=$(ls -d "$tmp"/*/ | head -1)
  if [ -n "$deb" ]; then
    tar -xf "$deb" -C "$top" debian/patches 2>/dev/null || true
    if [ -f "$top/debian/patches/series" ]; then
      while read -r p; do
        case "$p" in ''|'#'*) continue ;; esac
        if grep -q '^+++ .*promql/testdata/' "$top/debian/patches/$p" 2>/dev/null; then
          (cd "$top" && filterdiff -i '*promql/testdata/*' "debian/patches/$p" 2>/dev/null | patch -p1 -s) ||
            echo "note: could not apply $p to promql/testdata"
        fi
      done < "$top/debian/patches/series"
    fi
  fi
  mkdir -p "$testdata"
  cp "$top"/promql/testdata/*.test "$testdata"/
  rm -rf "$tmp"
  echo "downloaded $(basename "$orig"): $(ls "$testdata"/*.test | wc -l) test scripts"
fi

"$tool" test promql "$testdata"/*.test
