# Helpers for the guest-side tests (busybox sh and busybox awk), sourced by
# /init and by each /tests/test_*.sh.
# shellcheck disable=SC2034  # MT_METRIC_FAILED is read by the test files

# --- result markers (the protocol run.sh reads from the serial console) ------------
mt_pass() { echo "MEMCG_TEST PASS $1"; }
mt_fail() { _n="$1"; shift; echo "MEMCG_TEST FAIL ${_n} $*"; }
mt_skip() { _n="$1"; shift; echo "MEMCG_TEST SKIP ${_n} $*"; }
mt_info() { echo "MEMCG_TEST INFO $*"; }

# --- kernel files ----------------------------------------------------------------------
# Value of KEY in a flat-keyed file ("key value" lines: memory.stat, memory.events).
kv() {
  awk -v k="$2" '$1 == k { print $2; f = 1; exit } END { exit !f }' "$1" 2>/dev/null
}
# total= of the some/full line of a pressure file, in microseconds.
psi_total() {
  awk -v w="$2" '$1 == w { for (i = 2; i <= NF; i++) if ($i ~ /^total=/) {
    sub(/^total=/, "", $i); print $i; f = 1 } } END { exit !f }' "$1" 2>/dev/null
}
# Divides an integer string by 1e6 exactly enough for a %.16g comparison.
usec_to_sec() { awk -v u="$1" 'BEGIN { printf "%.9f\n", u / 1000000 }'; }

# --- the exposition ------------------------------------------------------------------
# Value of the sample whose name-and-labels is exactly KEY in the scrape FILE,
# e.g. metric_value /tmp/s 'memcg_memory_usage_bytes{cgroup="/x"}'.
metric_value() {
  awk -v k="$2" '$1 == k { print $2; f = 1; exit } END { exit !f }' "$1"
}

# cmp_values GOT WANT [ABS_TOL] [REL_TOL]: true when GOT (exposition text) is
# WANT (a kernel value; "max" means +Inf) within max(ABS_TOL, REL_TOL*|WANT|).
cmp_values() {
  awk -v g="$1" -v w="$2" -v a="${3:-0}" -v r="${4:-0}" 'BEGIN {
    gi = (g == "+Inf" || g == "Inf"); wi = (w == "max" || w == "+Inf")
    if (gi || wi) exit !(gi && wi)
    if (g !~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) exit 1
    if (w !~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) exit 1
    d = g - w; if (d < 0) d = -d
    t = a + 0; m = (w < 0 ? -w : w) * r; if (m > t) t = m
    exit !(d <= t)
  }'
}

# is_gt A B: numeric A > B (awk doubles, fine for counters below 2^53).
is_gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }

# expect_metric TEST SCRAPE KEY WANT [ABS_TOL] [REL_TOL]
# One test: the sample KEY in SCRAPE equals the kernel's WANT.
expect_metric() {
  _t="$1"; _s="$2"; _k="$3"; _w="$4"
  if [ -z "${_w}" ]; then
    mt_fail "${_t}" "the test could not read the kernel value for ${_k}"
    return 1
  fi
  if ! _g="$(metric_value "${_s}" "${_k}")"; then
    _name="${_k%%\{*}"
    _seen="$(grep "^${_name}[{ ]" "${_s}" | head -n 3 | tr '\n' ';')"
    mt_fail "${_t}" "${_k} missing from /metrics (kernel: ${_w}; samples of ${_name}: ${_seen:-none})"
    MT_METRIC_FAILED=1
    return 1
  fi
  if cmp_values "${_g}" "${_w}" "${5:-0}" "${6:-0}"; then
    mt_pass "${_t}"
    return 0
  fi
  mt_fail "${_t}" "${_k} = ${_g}, kernel says ${_w}"
  MT_METRIC_FAILED=1
  return 1
}

# dump_samples FILE PATTERN: the matching samples as MEMCG_LOG lines (shown by
# run.sh on failure, or always with --verbose).
dump_samples() {
  grep -- "$2" "$1" | sed 's/^/MEMCG_LOG scrape: /'
}
# True when run.sh was given --verbose (it adds memcg_test.verbose to the cmdline).
verbose() { grep -q 'memcg_test.verbose' /proc/cmdline; }

# Waits below are in guest seconds, which on a loaded host run ahead of the
# host's (TCG): each is a generous bound that returns as soon as its
# condition holds; run.sh's qemu timeout bounds the whole guest.
# scrape URL FILE: GET URL into FILE; true on a non-empty answer.
# Not `wget -T`: Debian's static busybox 1.35 wget segfaults with it; the
# timeout comes from busybox timeout instead.
scrape() {
  rm -f "$2"
  timeout 120 wget -q -O "$2" "$1" 2>/dev/null && [ -s "$2" ]
}

# --- exporter processes (test_20, test_30) -------------------------------------------
# start_exporter PORT LOG ARGS...: starts /usr/bin/memcg_exporter on
# 127.0.0.1:PORT (cgroupfs /sys/fs/cgroup, procfs /proc) with ARGS, logging to
# LOG, and waits up to 240 s for /metrics. Sets EXPORTER_PID; true once it answers.
start_exporter() {
  _port="$1"; _log="$2"; shift 2
  /usr/bin/memcg_exporter --web.listen-address="127.0.0.1:${_port}" \
    --path.cgroupfs=/sys/fs/cgroup --path.procfs=/proc "$@" >"${_log}" 2>&1 &
  EXPORTER_PID=$!
  _i=0
  while [ "${_i}" -lt 480 ]; do
    scrape "http://127.0.0.1:${_port}/metrics" "/tmp/.start_${_port}" && return 0
    kill -0 "${EXPORTER_PID}" 2>/dev/null || return 1
    sleep 0.5
    _i=$((_i + 1))
  done
  return 1
}

# stop_exporter PID: SIGTERM, then wait (up to 120 s) until it has exited, so
# the next exporter finds no tracefs instance or port of this one. True when
# it exited in time. Each poll reads /proc/PID/stat with the shell's own
# read, not awk (a fork and exec is slow under TCG). One that does not exit is a bug: its
# threads' kernel stacks and its log go to the console (MEMCG_LOG, shown by
# run.sh on failure), then it is killed so that the lane goes on.
stop_exporter() {
  kill "$1" 2>/dev/null || return 0
  _i=0
  while [ "${_i}" -lt 1200 ]; do
    # Exited (a zombie until reaped counts as exited).
    _st=''
    { read -r _ _ _st _ </proc/"$1"/stat; } 2>/dev/null || _st=''
    if [ -z "${_st}" ] || [ "${_st}" = Z ]; then
      wait "$1" 2>/dev/null
      return 0
    fi
    sleep 0.1
    _i=$((_i + 1))
  done
  mt_info "exporter $1 did not exit within 120 s of SIGTERM: its threads follow as MEMCG_LOG lines"
  for _t in /proc/"$1"/task/*; do
    echo "MEMCG_LOG stop: thread ${_t##*/} $(cat "${_t}/comm" 2>/dev/null) state $(cut -d' ' -f3 "${_t}/stat" 2>/dev/null) wchan $(cat "${_t}/wchan" 2>/dev/null)"
    sed 's/^/MEMCG_LOG stop:   /' "${_t}/stack" 2>/dev/null
  done
  tail -n 20 /tmp/exporter*.log 2>/dev/null | sed 's/^/MEMCG_LOG stop: log: /'
  kill -9 "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  return 1
}

# wait_no_trace_instance: waits (up to 120 s) until no exporter's tracefs
# instance is left (a previous test's exporter removes it on SIGTERM).
wait_no_trace_instance() {
  _i=0
  while [ -d /sys/kernel/tracing/instances/memcg_exporter ] && [ "${_i}" -lt 1200 ]; do
    sleep 0.1
    _i=$((_i + 1))
  done
  [ ! -d /sys/kernel/tracing/instances/memcg_exporter ]
}

# http_request PORT METHOD PATH TOKEN BODY OUT: one HTTP/1.0 request through
# busybox nc (which, unlike wget, also returns the body of an error answer);
# the whole answer goes to OUT, the body to OUT.body. Prints the status code.
http_request() {
  _port="$1"; _m="$2"; _p="$3"; _tok="$4"; _body="$5"; _out="$6"
  {
    printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n' "${_m}" "${_p}"
    [ -n "${_tok}" ] && printf 'Authorization: Bearer %s\r\n' "${_tok}"
    if [ -n "${_body}" ]; then
      printf 'Content-Type: application/json\r\nContent-Length: %s\r\n' "${#_body}"
    fi
    printf '\r\n%s' "${_body}"
  } | timeout 120 nc 127.0.0.1 "${_port}" >"${_out}" 2>/dev/null
  tr -d '\r' <"${_out}" | awk 'b { print; next } /^$/ { b = 1 }' >"${_out}.body"
  awk 'NR == 1 { print $2 }' "${_out}"
}

# drop_page_cache: write back and drop the clean page cache, so that the next
# stream of the workload file starts from the disk and is charged to its cgroup
# (not found in the cache charged to an earlier test's cgroup).
drop_page_cache() {
  sync
  echo 3 >/proc/sys/vm/drop_caches
}

# uptime_s: seconds since boot, with centiseconds.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# elapsed T0 T1: T1 - T0 in seconds, one decimal.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", b - a }'; }

# STREAM_TIMEOUT: the bound on one stream of the workload file, in guest
# seconds, a guard against a hung stream, not a speed target: a stream takes
# 12-28 s on a quiet host, and at host load 10-18 one took 445 guest seconds
# (the TCG guest's clock ran ahead of the host's: boot+tests were 382 s of
# host time), where the former 150 s cut streams short and failed the lane.
# run.sh's qemu timeout (host time) bounds the whole guest.
STREAM_TIMEOUT=3600
# stream_in_cgroup DIR FILE: cats FILE from inside cgroup DIR (bounded at
# STREAM_TIMEOUT); prints the number of bytes read. The shell moves itself into DIR and
# forks cat there (the trailing ":" keeps busybox sh from exec'ing it), so cat
# is a child born in DIR: the tracer learns its cgroup from the fork event.
stream_in_cgroup() {
  timeout "${STREAM_TIMEOUT}" sh -c "echo \$\$ >$1/cgroup.procs && cat $2 && :" | wc -c
}

# measured_stream CGROUP FILE: stream_in_cgroup, with the cgroup's kernel
# counters read around it. Sets bytes (read by cat), wall (seconds, guest
# uptime) and the deltas d_max (memory.events max), d_scan and d_steal
# (memory.stat pgscan_direct, pgsteal_direct).
measured_stream() {
  _max0="$(kv "$1/memory.events" max)"
  _scan0="$(kv "$1/memory.stat" pgscan_direct)"
  _steal0="$(kv "$1/memory.stat" pgsteal_direct)"
  _t0="$(uptime_s)"
  bytes="$(stream_in_cgroup "$1" "$2")"
  wall="$(elapsed "${_t0}" "$(uptime_s)")"
  d_max=$(($(kv "$1/memory.events" max) - _max0))
  d_scan=$(($(kv "$1/memory.stat" pgscan_direct) - _scan0))
  d_steal=$(($(kv "$1/memory.stat" pgsteal_direct) - _steal0))
}

# wait_controller_state PORT TOKEN FILE PATTERN: GETs /api/v1/controller/state
# into FILE.body every 0.5 s until the answer is 200 and its body matches
# PATTERN (grep), 30 s at most; returns 0 when it matched. The waiter arms
# its sources at its own pace on an emulated CPU of a loaded host, so a check
# after one fixed second could miss them.
wait_controller_state() {
  _i=0
  while :; do
    _code="$(http_request "$1" GET /api/v1/controller/state "$2" "" "$3")"
    [ "${_code}" = 200 ] && grep -q "$4" "$3.body" && return 0
    [ "${_i}" -ge 60 ] && return 1
    sleep 0.5
    _i=$((_i + 1))
  done
}
