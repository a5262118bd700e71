# Shared by the end-to-end scripts: ports, waiting, cleanup, a pass/fail tally.
pass=0
fail=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "PASS $name"; pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}
# free_port: a loopback TCP port for a server this script starts. Race-free
# in practice, not by luck:
#   - picked outside net.ipv4.ip_local_port_range, so no client socket (curl,
#     Prometheus' scrapes, any session's connections) is ever given it by the
#     kernel between the pick and the server's bind;
#   - reserved for this script (an atomic mkdir under $FREE_PORT_DIR, freed
#     by free_ports_release or when the reserving shell is gone), so two
#     scripts running at once never pick the same one;
#   - bound once here (python3, SO_REUSEADDR like the servers) to prove that
#     nothing else holds it.
# A server that still fails to bind should be restarted on another port
# (the scripts that start one retry; the exporter can also take port 0 and
# log the port it bound).
FREE_PORT_DIR=${FREE_PORT_DIR:-/tmp/memcg_exporter_test_ports}
free_port() {
  local lo hi first last span p owner
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { lo=32768; hi=60999; }
  if [ "$lo" -gt 11024 ]; then first=10000; last=$((lo - 1)); else first=$((hi + 1)); last=65535; fi
  span=$((last - first + 1))
  [ "$span" -gt 100 ] || { echo "free_port: no room outside the ephemeral range $lo-$hi" >&2; return 1; }
  mkdir -p "$FREE_PORT_DIR" 2>/dev/null
  for _ in $(seq 1 200); do
    p=$((first + (RANDOM * 32768 + RANDOM) % span))
    if ! mkdir "$FREE_PORT_DIR/$p" 2>/dev/null; then
      # Reserved: take it over only when the reserving shell is gone.
      owner=$(cat "$FREE_PORT_DIR/$p/pid" 2>/dev/null)
      [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null && continue
      rm -rf "$FREE_PORT_DIR/$p" 2>/dev/null
      mkdir "$FREE_PORT_DIR/$p" 2>/dev/null || continue
    fi
    echo $$ >"$FREE_PORT_DIR/$p/pid"
    if python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null; then
      echo "$p"
      return 0
    fi
    rm -rf "$FREE_PORT_DIR/$p"
  done
  return 1
}
free_ports_release() {  # drops the reservations this shell made (also done when it is gone)
  local d
  for d in "$FREE_PORT_DIR"/*/; do
    [ "$(cat "$d/pid" 2>/dev/null)" = "$$" ] && rm -rf "$d"
  done
  return 0
}
wait_http() {  # wait_http URL SECONDS
  local deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}
summary() {  # prints the closing line and sets the exit code
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
poll_until() {  # poll_until SECONDS COMMAND...: true as soon as COMMAND is, false at the deadline
  local deadline=$((SECONDS + $1)); shift
  while :; do
    "$@" && return 0
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.2
  done
}
settled_scrape() {  # settled_scrape URL REGEX SECONDS: prints the matching lines once two scrapes agree
  local deadline=$((SECONDS + $3)) a b
  a=$(curl -fsS "$1" | grep -E "$2")
  while :; do
    sleep 0.5  # over two polls of the trace reader (200 ms)
    b=$(curl -fsS "$1" | grep -E "$2")
    [ "$a" = "$b" ] && { echo "$b"; return 0; }
    [ $SECONDS -ge $deadline ] && { echo "$b"; return 1; }
    a=$b
  done
}
metric() {  # metric URL NAME{LABELS}: the sample's value (empty when absent)
  curl -fsS "$1" | awk -v m="$2" '$1==m {print $2+0}'
}
# scraped URL: prints the exposition at URL; fails (printing nothing) unless
# the exporter answered 200 with an exposition. A check that a sample is
# ABSENT must use it (or absent): `! curl ... | grep` and `[ -z "$(curl ...)" ]`
# also pass when nobody answers.
scraped() {
  local out
  out=$(curl -fsS "$1") || return 1
  grep -q '^# TYPE ' <<<"$out" || { echo "scraped: $1 answered without an exposition" >&2; return 1; }
  printf '%s\n' "$out"
}
absent() {  # absent URL ERE: the exporter answered with an exposition and no line matches
  local out
  out=$(scraped "$1") || { echo "absent: $1 did not answer with an exposition" >&2; return 1; }
  ! grep -qE "$2" <<<"$out"
}
serving() {  # serving PID URL SECONDS: the process answers URL; false as soon as it exits or at the deadline
  local deadline=$((SECONDS + $3))
  while [ $SECONDS -lt $deadline ] && kill -0 "$1" 2>/dev/null; do
    curl -fsS -o /dev/null "$2" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}
# start_listening READY_PATH SECONDS LOG COMMAND...: starts COMMAND in the
# background with every "@PORT@" in its words replaced by a port from
# free_port, and waits until it answers http://127.0.0.1:PORT/READY_PATH.
# A port free at the pick can still be taken before the server binds (see
# free_port), and a server that exits then is restarted on another port, up
# to 5 times. Sets listen_pid and listen_port; false (both empty) when no try
# answered. LOG gets the output of every try (appended).
start_listening() {
  local path=$1 secs=$2 log=$3 try w
  shift 3
  listen_pid="" listen_port=""
  for try in 1 2 3 4 5; do
    listen_port=$(free_port) || break
    local args=()
    for w in "$@"; do args+=("${w//@PORT@/$listen_port}"); done
    "${args[@]}" >>"$log" 2>&1 &
    listen_pid=$!
    serving "$listen_pid" "http://127.0.0.1:$listen_port/$path" "$secs" && return 0
    kill "$listen_pid" 2>/dev/null; wait "$listen_pid" 2>/dev/null
    echo "start_listening: $1 did not answer on port $listen_port (try $try)" >&2
    listen_pid=""
  done
  listen_port=""
  return 1
}
# start_prometheus CONFIG DIR [ARGS...]: a Prometheus on loopback with CONFIG,
# its storage in DIR/tsdb and its log in DIR/prometheus.log; ready when it
# answers /-/ready (30 s a try). Sets prom_pid, prom_port and prom_url
# (empty when it never came up, and then false).
start_prometheus() {
  local config=$1 dir=$2 rc=0
  shift 2
  start_listening -/ready 30 "$dir/prometheus.log" \
    prometheus --config.file="$config" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address=127.0.0.1:@PORT@ "$@" || rc=1
  prom_pid=$listen_pid prom_port=$listen_port
  prom_url=${prom_port:+http://127.0.0.1:$prom_port}
  return $rc
}
# start_alertmanager BINARY CONFIG DIR [ARGS...]: an Alertmanager on loopback
# (no cluster listener), storage in DIR/am, log in DIR/am.log; sets am_pid,
# am_port and am_url like start_prometheus.
start_alertmanager() {
  local bin=$1 config=$2 dir=$3 rc=0
  shift 3
  start_listening -/ready 30 "$dir/am.log" \
    "$bin" --config.file="$config" --storage.path="$dir/am" \
    --web.listen-address=127.0.0.1:@PORT@ --cluster.listen-address= "$@" || rc=1
  am_pid=$listen_pid am_port=$listen_port
  am_url=${am_port:+http://127.0.0.1:$am_port}
  return $rc
}
