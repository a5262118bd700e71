#!/usr/bin/env bash
# Seed 001 (Kamezawa's httpd experiment) with the exporter's controller in the loop:
# a small HTTP server in a 256 MiB v1 memcg serves random 64 KiB ranges of a
# 512 MiB file on a real filesystem (/var/tmp; working set 2x the limit), under
# `ab -c 4 -n N` on 127.0.0.1. Modes: protection off, and on with one or more
# start/target margin pairs, interleaved, RUNS runs each. Prints medians of ab's
# p50 / p99 / max latency, requests/s and the memcg's own failcnt delta, plus
# the on/off ratios, and checks the seed's -35% p99 / -62% max.
#
# usage: bench/seed001_http.sh path/to/memcg_exporter [runs=3]     (root, cgroup v1)
# env:   MARGINS="32:64 64:128"  start:target margins in MiB, one "on" mode each
#        N=requests per run (default: calibrated to ~SECS s from a 5 s trial)
#        SECS=30  LIMIT_MIB=256  FILE_MIB=512  DIST=uniform|normal (offsets)
#        WARM=fraction of N run (unmeasured) before each measured run (default 0.25)
set -uo pipefail
exporter=$(realpath "${1:-$(dirname "$0")/../build/exporter/memcg_exporter}"); runs=${2:-3}
MARGINS=${MARGINS:-"32:64 64:128"}; SECS=${SECS:-30}; LIMIT_MIB=${LIMIT_MIB:-256}
FILE_MIB=${FILE_MIB:-512}; DIST=${DIST:-uniform}; WARM=${WARM:-0.25}; N=${N:-}
[ "$(id -u)" = 0 ] && [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || {
  echo "seed001_http: SKIPPED: needs root and cgroup v1 memory"; exit 0; }
command -v ab >/dev/null || { echo "seed001_http: SKIPPED: needs ab (apt-get install -y apache2-utils)"; exit 0; }
PY=/usr/bin/python3; [ -x $PY ] || PY=$(command -v python3)

tmp=$(mktemp -d /var/tmp/memcg_exporter_bench_s001_XXXXXX)
cg=/sys/fs/cgroup/memory/memcg_exporter_bench_s001_$$
label=${cg#/sys/fs/cgroup/memory}
epid=""; spid=""; apid=""
cleanup() {
  trap - EXIT INT TERM
  [ -n "$apid" ] && kill "$apid" 2>/dev/null
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  [ -n "$epid" ] && kill "$epid" 2>/dev/null
  wait 2>/dev/null
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "$cg" ] || break; rmdir "$cg" 2>/dev/null || sleep 0.2; done
  [ -d "$cg" ] && echo "seed001_http: WARNING: could not remove $cg" >&2
  rm -rf "$tmp"
}
trap cleanup EXIT; trap 'exit 130' INT TERM

port=$((20000 + RANDOM % 20000)); sport=$((40001 + RANDOM % 20000))
echo token > "$tmp/token"
echo "creating ${FILE_MIB} MiB file in $tmp ..." >&2
dd if=/dev/urandom of="$tmp/file" bs=1M count="$FILE_MIB" status=none && sync || exit 1

cat > "$tmp/server.py" <<'EOF'
import os, random, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
path, port, dist = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
CH = 64 << 10
nch = size // CH
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        if dist == "normal":   # seed 001: "normalized distribution", mean mid-file, sd = size/4
            c = int(random.gauss(nch / 2, nch / 4)) % nch
        else:
            c = random.randrange(nch)
        data = os.pread(fd, CH, c * CH)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
class S(ThreadingHTTPServer):
    daemon_threads = True
    def handle_error(self, request, client_address):
        pass  # ab -t closes its last connections mid-response; failures show in ab's own count
    request_queue_size = 64
S(("127.0.0.1", port), H).serve_forever()
EOF

"$exporter" --web.listen-address=127.0.0.1:$port --cgroup.include="$label" --no-collector.vmscan \
  --controller.enable --controller.allow="$label" --controller.token-file="$tmp/token" \
  --controller.journal="$tmp/journal" --controller.audit-log="$tmp/audit" --log.level=warn 2>"$tmp/log" &
epid=$!
for _ in $(seq 50); do curl -fs -o /dev/null 127.0.0.1:$port/-/ready && break; sleep 0.1; done
curl -fs -o /dev/null 127.0.0.1:$port/-/ready || { echo "exporter did not start:"; cat "$tmp/log"; exit 1; }
api() {
  local code; code=$(curl -s -o "$tmp/api.out" -w '%{http_code}' -X POST -H 'Authorization: Bearer token' \
    --data "$2" 127.0.0.1:$port/api/v1/controller/$1)
  [ "$code" = 200 ] || { echo "api $1 -> HTTP $code: $(cat "$tmp/api.out")" >&2; return 1; }
}

mkdir "$cg" || exit 1
echo $((LIMIT_MIB << 20)) > "$cg/memory.limit_in_bytes" || exit 1
dropcache() { $PY -c "import os;fd=os.open('$tmp/file',os.O_RDONLY);os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)"; }
start_server() {
  sh -c "echo \$\$ > $cg/cgroup.procs && exec $PY $tmp/server.py $tmp/file $sport $DIST" &
  spid=$!
  for _ in $(seq 100); do curl -fs -o /dev/null 127.0.0.1:$sport/ && return 0; sleep 0.05; done
  echo "server did not start" >&2; exit 1
}
stop_server() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; spid=""; }
run_ab() { ab "$@" > "$tmp/ab.out" 2>"$tmp/ab.err" & apid=$!; wait $apid; local rc=$?; apid=""; return $rc; }

# Calibrate N from a 5 s unmeasured trial (unprotected, after a cold start).
if [ -z "$N" ]; then
  dropcache; start_server
  run_ab -q -c 4 -t 5 -n 10000000 http://127.0.0.1:$sport/
  rps=$(awk '/^Requests per second/ {print $4}' "$tmp/ab.out")
  stop_server
  N=$(awk -v r="$rps" -v s="$SECS" 'BEGIN {n=int(r*s/100)*100; if (n<1000) n=1000; print n}')
  echo "calibration: ${rps} req/s cold -> N=$N" >&2
fi
W=$(awk -v n="$N" -v w="$WARM" 'BEGIN {print int(n*w)}')

ctl_metric() {  # sum of a controller metric's series for our cgroup (or all if unlabeled)
  curl -fs 127.0.0.1:$port/metrics | awk -v m="$1" -v l="$label" '
    index($1, m) == 1 && (index($0, "cgroup=\"" l "\"") || $1 == m) {s += $NF} END {printf "%.6f", s}'
}

# run MODE -> "p50 p99 max rps failcnt bytes_reclaimed"
run() {
  local mode=$1 sm tm
  stop_server; dropcache; sleep 0.5
  start_server
  if [ "$mode" != off ]; then
    sm=${mode%:*}; tm=${mode#*:}
    api protect '{"cgroup":"'$label'","start_margin_bytes":'$((sm << 20))',"target_margin_bytes":'$((tm << 20))'}' || exit 1
  fi
  [ "$W" -gt 0 ] && run_ab -q -c 4 -n "$W" http://127.0.0.1:$sport/
  local f0 r0; f0=$(cat "$cg/memory.failcnt"); r0=$(ctl_metric memcg_controller_reclaimed_bytes_total)
  run_ab -q -c 4 -n "$N" http://127.0.0.1:$sport/ || { echo "ab failed: $(cat "$tmp/ab.err")" >&2; exit 1; }
  local f1 r1; f1=$(cat "$cg/memory.failcnt"); r1=$(ctl_metric memcg_controller_reclaimed_bytes_total)
  [ "$mode" != off ] && { api unprotect '{"cgroup":"'$label'"}' || exit 1; }
  stop_server
  local failed; failed=$(awk '/^Failed requests/ {print $3}' "$tmp/ab.out")
  [ "${failed:-0}" = 0 ] || echo "WARNING: $failed failed requests in $mode run" >&2
  awk -v f=$((f1 - f0)) -v rb="$(awk -v a="$r1" -v b="$r0" 'BEGIN {print a-b}')" '
    /^  50%/ {p50=$2} /^  99%/ {p99=$2} /^ 100%/ {mx=$2} /^Requests per second/ {rps=$4}
    END {print p50, p99, mx, rps, f, rb}' "$tmp/ab.out"
}

modes=(off); for m in $MARGINS; do modes+=("$m"); done
declare -A res
for i in $(seq "$runs"); do
  for m in "${modes[@]}"; do
    r=$(run "$m") || exit 1
    res[$m]+="$r"$'\n'
    echo "run $i mode $m: p50 p99 max rps failcnt ctl_reclaimed_B = $r" >&2
  done
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
med() { printf '%s' "${res[$1]}" | awk -v k="$2" 'NF {print $k}' | median; }
printf '\nseed 001: HTTP server in %d MiB memcg, random 64 KiB of a %d MiB file (%s) on %s, ab -c 4 -n %d, %d interleaved runs per mode, medians\n' \
  "$LIMIT_MIB" "$FILE_MIB" "$DIST" "$(findmnt -no FSTYPE -T "$tmp")" "$N" "$runs"
printf '%-14s %8s %8s %8s %10s %10s %14s\n' mode "p50 ms" "p99 ms" "max ms" "req/s" failcnt "ctl recl MiB"
declare -A M
for m in "${modes[@]}"; do
  for k in 1 2 3 4 5 6; do M[$m,$k]=$(med "$m" $k); done
  name=off; [ "$m" != off ] && name="on ${m/:/\/}MiB"
  printf '%-14s %8s %8s %8s %10.1f %10s %14.1f\n' "$name" "${M[$m,1]}" "${M[$m,2]}" "${M[$m,3]}" "${M[$m,4]}" "${M[$m,5]}" \
    "$(awk -v b="${M[$m,6]}" 'BEGIN {print b/1048576}')"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a/b; else print "n/a"}'; }
for m in "${modes[@]:1}"; do
  r2=$(ratio "${M[$m,2]}" "${M[off,2]}"); r3=$(ratio "${M[$m,3]}" "${M[off,3]}")
  printf '%-14s %8s %8s %8s %10s %10s\n' "ratio ${m/:/\/}" "$(ratio "${M[$m,1]}" "${M[off,1]}")" "$r2" "$r3" \
    "$(ratio "${M[$m,4]}" "${M[off,4]}")" "$(ratio "${M[$m,5]}" "${M[off,5]}")"
  ok99=$(awk -v r="$r2" 'BEGIN {print (r != "n/a" && r <= 0.65) ? "MET" : "NOT met"}')
  okmx=$(awk -v r="$r3" 'BEGIN {print (r != "n/a" && r <= 0.38) ? "MET" : "NOT met"}')
  echo "  margins ${m/:/\/} MiB vs seed (p99 -35% => ratio <= 0.65; max -62% => ratio <= 0.38): p99 $ok99, max $okmx"
done
echo "controller CPU: $(ctl_metric memcg_controller_cpu_seconds_total) s in total; exporter log lines: $(wc -l < "$tmp/log")"
