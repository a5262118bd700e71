#!/usr/bin/env bash
# The HTTP surface under slow, idle and oversized clients, on the
# committed fixture tree, loopback only, no root:
#   - 1,000 slowloris connections (a partial head, one byte now and then) and
#     then 1,000 idle ones from 127.0.0.2: every scrape from 127.0.0.1 answers
#     200 within 1 s, and the exporter's RSS grows by less than 16 MiB;
#   - request line + headers above 16 KiB: 431; a body above 64 KiB: 413;
#     chunked: 411; a malformed request line: 400;
#   - a head not finished within --web.read-timeout: 408 and closed;
#   - beyond --web.max-connections: 503 and closed, and scrapes still answer;
#   - keep-alive: two requests on one connection.
set -uo pipefail
bin=${1:?usage: http_limits_e2e.sh path/to/memcg_exporter path/to/memcg_test_bcrypt}
# The bcrypt hashes for basic auth come from our own tool (tests/support/bcrypt_hash.cpp).
hashtool=${2:?usage: http_limits_e2e.sh path/to/memcg_exporter path/to/memcg_test_bcrypt}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
command -v curl >/dev/null && command -v python3 >/dev/null || { echo "SKIP: needs curl and python3"; exit 77; }
fixtures=$(cd "$here/../fixtures" && pwd)
ulimit -n 8192 2>/dev/null || { echo "SKIP: cannot raise the descriptor limit to 8192"; exit 77; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap cleanup EXIT
fixargs=(--path.cgroupfs="$fixtures/cgroupfs/v1" --path.procfs="$fixtures/procfs" --no-collector.vmscan --log.level=warn)

port=$(free_port)
"$bin" "${fixargs[@]}" --web.listen-address=127.0.0.1:$port --web.read-timeout=2 &
pid=$!; pids+=($pid)
wait_http "http://127.0.0.1:$port/-/healthy" 20 || { echo "FAIL exporter did not start"; exit 1; }
base_rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)

# slowloris.py exits 0 when every scrape answered 200 and their median is
# within --max-ms (the bound is on the median, so that one scrape
# descheduled on a loaded machine does not fail it; the figures are printed).
slow_ok() { [ "$1" = 0 ] && grep -q "connected=1000 scrapes_ok=5 of 5" <<<"$2"; }
out=$(timeout 120 python3 "$here/slowloris.py" --port "$port" --conns 1000 --scrapes 5 --max-ms 1000 --pid "$pid"); rc=$?
echo "slowloris: $out (RSS before: ${base_rss} KiB)"
check "1,000 slowloris connections: 5 of 5 scrapes answer 200, their median within 1 s" \
  slow_ok "$rc" "$out"
rss=$(sed -n 's/.*rss_kib=\([0-9]*\).*/\1/p' <<<"$out")
check "RSS with 1,000 slowloris grows by < 16 MiB (${base_rss} -> ${rss} KiB)" \
  test "$((rss - base_rss))" -lt 16384
out=$(timeout 120 python3 "$here/slowloris.py" --port "$port" --conns 1000 --scrapes 5 --max-ms 1000 --idle --pid "$pid"); rc=$?
echo "idle: $out"
check "1,000 idle connections: 5 of 5 scrapes answer 200, their median within 1 s" \
  slow_ok "$rc" "$out"

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
big=$(head -c 20000 /dev/zero | tr '\0' a)
check "headers above 16 KiB: 431" test "$(code -H "X-Big: $big" "http://127.0.0.1:$port/metrics")" = 431
check "a request line above 16 KiB: 431" test "$(code "http://127.0.0.1:$port/metrics?$big")" = 431
check "a body above 64 KiB: 413" test "$(head -c 70000 /dev/zero | code -X POST --data-binary @- \
  -H 'Content-Type: application/json' "http://127.0.0.1:$port/api/v1/controller/protect")" = 413
check "a chunked body: 411" test "$(code -X POST -H 'Transfer-Encoding: chunked' -d '{}' \
  "http://127.0.0.1:$port/api/v1/controller/protect")" = 411
raw() {  # raw BYTES SECONDS: what the server answers to BYTES within SECONDS
  python3 - "$port" "$1" "$2" <<'PY'
import socket, sys, time
# The clock starts before the connect: the server's read deadline starts at
# its accept, which is later, so "after Xs" is never below the timeout.
t = time.time(); data = b""
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin1"))
s.settimeout(float(sys.argv[3]))
try:
    while True:
        d = s.recv(4096)
        if not d: break
        data += d
except socket.timeout:
    data += b" (still open)"
print(data.split(b"\r\n")[0].decode(), "after %.1fs" % (time.time() - t))
PY
}
r=$(raw 'BAD\r\n\r\n' 5); echo "malformed: $r"
check "a malformed request line: 400 and closed" grep -q "^HTTP/1.1 400 " <<<"$r"
# Not before the 2 s timeout (a lower bound, exact on the server's clock);
# within 15 s (a loaded machine delays the close, it cannot hasten it).
r=$(raw 'GET /metrics HTTP/1.1\r\nHost: x\r\n' 15); echo "unfinished head: $r"
check "a head unfinished after --web.read-timeout=2: 408 and closed, not before 2 s" \
  grep -qE "^HTTP/1.1 408 .*after ([2-9]|1[0-4])\.[0-9]s" <<<"$r"
r=$(raw 'POST /api/v1/controller/protect HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{' 15)
echo "unfinished body: $r"
check "a body unfinished after --web.read-timeout=2: 408 and closed" grep -q "^HTTP/1.1 408 " <<<"$r"
check "two pipelined requests on one connection are both answered" \
  bash -c "python3 - $port <<'PY'
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
s.sendall(b'GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\nGET /-/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
s.settimeout(5); data = b''
while True:
    d = s.recv(4096)
    if not d: break
    data += d
sys.exit(0 if data.count(b'HTTP/1.1 200 OK') == 2 and b'Healthy' in data and b'Ready' in data else 1)
PY"
check "curl keeps one connection alive over two requests" bash -c \
  "curl -sv http://127.0.0.1:$port/-/healthy http://127.0.0.1:$port/-/ready 2>&1 | grep -q 'Re-using existing connection\|Reusing existing connection'"

# The connection cap: a second exporter with --web.max-connections=16.
port2=$(free_port)
"$bin" "${fixargs[@]}" --web.listen-address=127.0.0.1:$port2 --web.max-connections=16 &
pids+=($!)
wait_http "http://127.0.0.1:$port2/-/healthy" 20 || { echo "FAIL second exporter did not start"; exit 1; }
r=$(python3 - "$port2" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
time.sleep(0.5)
extra = socket.create_connection(("127.0.0.1", port))
extra.settimeout(15)  # the answer comes at the server's pace on a loaded machine
first = extra.recv(4096).split(b"\r\n")[0].decode()
for s in held: s.close()
# The server notices the closes on its own time: retry (a loaded machine may
# take longer than any fixed sleep), 30 s at most.
deadline = time.time() + 30
while True:
    time.sleep(0.5)
    c = socket.create_connection(("127.0.0.1", port), timeout=3)
    c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    after = c.recv(4096).split(b"\r\n")[0].decode()
    c.close()
    if after.startswith("HTTP/1.1 200") or time.time() > deadline:
        break
print(first + " | " + after)
PY
)
echo "cap: $r"
check "the 17th connection over --web.max-connections=16 gets 503" grep -q "^HTTP/1.1 503 " <<<"$r"
check "after the held ones close, a scrape answers 200" grep -q "| HTTP/1.1 200 OK" <<<"$r"

# --web.config.file: basic auth with a bcrypt hash made here, a bad file
# refused at start (exit 2, one line), a change picked up while running.
tmp=$(mktemp -d /tmp/memcg_exporter_test_http_limits.XXXXXX)
h1=$("$hashtool" right1) && h2=$("$hashtool" right2) && [[ $h1 == \$2* && $h2 == \$2* ]] ||
  { echo "FAIL $hashtool made no bcrypt hashes: $h1 $h2"; exit 1; }
printf 'basic_auth_users:\n  alice: %s\n' "$h1" >"$tmp/web.yml"
printf 'tls_server_config:\n  cert_file: x\n' >"$tmp/tls.yml"
printf 'basic_auth_users:\n  alice: plain\n' >"$tmp/plain.yml"
for f in tls plain; do
  "$bin" "${fixargs[@]}" --web.listen-address=127.0.0.1:0 --web.config.file="$tmp/$f.yml" \
    >"$tmp/out" 2>&1 </dev/null; rc=$?
  check "--web.config.file=$f.yml refused: exit 2 ($rc), one line: $(head -1 "$tmp/out")" \
    bash -c "[ $rc = 2 ] && [ \$(grep -c . '$tmp/out') = 1 ]"
done
port3=$(free_port)
"$bin" "${fixargs[@]}" --web.listen-address=127.0.0.1:$port3 --web.config.file="$tmp/web.yml" &
pids+=($!)
poll_until 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port3/-/healthy)\" = 401 ]"
check "basic auth: no credentials 401" test "$(code "http://127.0.0.1:$port3/metrics")" = 401
check "basic auth: wrong password 401" test "$(code -u alice:wrong "http://127.0.0.1:$port3/metrics")" = 401
check "basic auth: right password 200" test "$(code -u alice:right1 "http://127.0.0.1:$port3/metrics")" = 200
printf 'basic_auth_users:\n  alice: %s\n' "$h2" >"$tmp/web.yml.new" && mv "$tmp/web.yml.new" "$tmp/web.yml"
check "basic auth: the changed file is picked up (new password 200)" \
  poll_until 60 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -u alice:right2 http://127.0.0.1:$port3/metrics)\" = 200 ]"
check "basic auth: the old password is refused after the change" \
  test "$(code -u alice:right1 "http://127.0.0.1:$port3/metrics")" = 401
rm -rf "$tmp"

summary http_limits
