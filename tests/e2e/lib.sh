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
