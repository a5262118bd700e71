# Shared by the end-to-end scripts: ports, waiting, cleanup, a pass/fail tally.
pass=0
fail=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "PASS $name"; pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}
free_port() {  # a loopback port nobody listens on
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    ss -ltn 2>/dev/null | awk '{print $4}' | grep -q ":$p\$" || { echo "$p"; return; }
  done
  return 1
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
