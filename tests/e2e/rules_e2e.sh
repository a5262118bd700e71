#!/usr/bin/env bash
# e2e.rules (root, cgroup v1 memory): the in-process rule engine and the
# Alertmanager webhook drive the controller on the real kernel.
#  1. A rule on rate(memcg_memory_failcnt_total[3s]) with action: protect (group
#     interval 200ms, hold 8s) protects a 64 MiB memcg while a workload streams a
#     file 4x its limit; after the workload stops the protection goes away after
#     the hold; the rule metrics and /api/v1/rules|alerts show it.
#  2. A real Alertmanager (Debian prometheus-alertmanager, loopback, group_wait 0s)
#     routes an alert posted to its v2 API to POST /api/v1/alertmanager and the
#     second memcg is protected.
#  3. Webhook payloads naming ../, /, an outsider and a nonexistent cgroup are
#     refused, logged and counted; a wrong token gets 403; a bad rule file on
#     POST /-/reload keeps the old rules and sets the reload gauge to 0.
# usage: rules_e2e.sh path/to/memcg_exporter
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
exporter=$(realpath "$1")
if [ "$(id -u)" != 0 ] || [ ! -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  echo "rules e2e: SKIPPED: needs root and cgroup v1 memory"
  exit 77
fi
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager || true)
[ -n "$am_bin" ] || { echo "rules e2e: SKIPPED: no prometheus-alertmanager (scripts/deps.sh test)"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_rules_e2e_XXXXXX)
a="/memcg_exporter_test_rules_a_$$"
b="/memcg_exporter_test_rules_b_$$"
outsider="/memcg_exporter_test_rules_outsider_$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for l in "$a" "$b" "$outsider"; do
    d=/sys/fs/cgroup/memory$l
    [ -d "$d" ] || continue
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    sleep 0.1; rmdir "$d" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
for l in "$a" "$b" "$outsider"; do
  mkdir /sys/fs/cgroup/memory$l
  echo $((64 << 20)) > /sys/fs/cgroup/memory$l/memory.limit_in_bytes
done
echo "rules-e2e-token" > "$tmp/token"
cat > "$tmp/protect.rules.yml" <<YML
groups:
  - name: e2e.protect
    interval: 200ms
    rules:
      - alert: E2eLimitHits
        expr: rate(memcg_memory_failcnt_total{cgroup="$a"}[3s]) > 0
        labels: {action: protect, start_margin: 8MiB, target_margin: 16MiB}
        annotations: {summary: '{{ \$labels.cgroup }}: {{ \$value | printf "%.3g" }} hits/s'}
YML
port=$(free_port)
base="http://127.0.0.1:$port"
auth="Authorization: Bearer rules-e2e-token"
"$exporter" --web.listen-address="127.0.0.1:$port" --cgroup.include="/|/memcg_exporter_test_rules_.*" \
  --no-collector.vmscan --controller.enable \
  --controller.allow="/memcg_exporter_test_rules_(a|b)_.*" \
  --controller.token-file="$tmp/token" --controller.journal="$tmp/journal" \
  --rules.file="$tmp/protect.rules.yml" --rules.protect-hold=8s 2>"$tmp/exporter.log" &
pids+=($!)
check "exporter ready" wait_http "$base/-/ready" 10
protected() { curl -s -H "$auth" "$base/api/v1/controller/state" | jq -e --arg c "$1" 'any(.protections[]; .cgroup == $c)' >/dev/null; }

# 1. The in-process path.
check "not protected before the workload" sh -c "! $(declare -f protected); protected $a" 
# The workload writes a fresh 256 MiB file in its memcg, again and again: new page
# cache charged to it, 4x its limit (hits counted in memory.failcnt).
( echo $BASHPID > /sys/fs/cgroup/memory$a/cgroup.procs
  while :; do rm -f "$tmp/big"; dd if=/dev/zero of="$tmp/big" bs=1M count=256 status=none; done ) &
wl=$!
pids+=($wl)
t0=$(date +%s.%N)
check "the firing rule protects $a" poll_until 20 protected "$a"
t1=$(date +%s.%N)
echo "  protected $(echo "$t1 - $t0" | bc) s after the workload started"
check "GET /api/v1/alerts shows it firing" sh -c "curl -s $base/api/v1/alerts | jq -e '.data.alerts[] | select(.labels.alertname==\"E2eLimitHits\" and .state==\"firing\")' >/dev/null"
check "GET /api/v1/rules?type=alert" sh -c "curl -s '$base/api/v1/rules?type=alert' | jq -e '.data.groups[0].rules[0].health==\"ok\"' >/dev/null"
check "actions counted" sh -c "curl -s $base/metrics | grep -q 'memcg_exporter_rule_actions_total{rule=\"E2eLimitHits\",action=\"protect\",result=\"ok\"} 1'"
sleep 4  # the protection stays while the workload runs (it may end the hits: the hold bridges that)
check "still protected while the workload runs" protected "$a"
kill -9 $wl; wait $wl 2>/dev/null
t2=$(date +%s)
sleep 2
check "still protected 2 s after the workload stopped (hold 8s)" protected "$a"
check "unprotected after the hold" poll_until 30 sh -c "! $(declare -f protected); protected $a"
echo "  unprotected $(( $(date +%s) - t2 )) s after the workload stopped (last hit + rate window 3s + hold 8s)"

# 2. A real Alertmanager routes an alert to the webhook.
amport=$(free_port)
cat > "$tmp/am.yml" <<YML
route:
  receiver: memcg
  group_by: [alertname, cgroup]
  group_wait: 0s
  group_interval: 1s
receivers:
  - name: memcg
    webhook_configs:
      - url: '$base/api/v1/alertmanager'
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials_file: $tmp/token
YML
"$am_bin" --config.file="$tmp/am.yml" --storage.path="$tmp/am" --web.listen-address="127.0.0.1:$amport" \
  --cluster.listen-address= 2>"$tmp/am.log" &
pids+=($!)
check "alertmanager ready" wait_http "http://127.0.0.1:$amport/-/ready" 20
curl -s -XPOST -H 'Content-Type: application/json' "http://127.0.0.1:$amport/api/v2/alerts" \
  -d "[{\"labels\":{\"alertname\":\"E2eViaAlertmanager\",\"action\":\"protect\",\"cgroup\":\"$b\",\"start_margin\":\"10%\",\"target_margin\":\"20%\"}}]" >/dev/null
check "Alertmanager -> webhook protects $b" poll_until 20 protected "$b"

# 3. Refusals, the token, a bad reload.
hook() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" -d "$2" "$base/api/v1/alertmanager"; }
payload() { echo "{\"version\":\"4\",\"status\":\"firing\",\"alerts\":[{\"status\":\"firing\",\"fingerprint\":\"$2\",\"labels\":{\"alertname\":\"E2eBad\",\"action\":\"protect\",\"cgroup\":\"$1\"}}]}"; }
for c in "../etc" "/" "$outsider" "/memcg_exporter_test_rules_none_$$"; do
  r=$(curl -s -H "$auth" -d "$(payload "$c" "fp$c")" "$base/api/v1/alertmanager" | jq -r '.results[0].result')
  check "webhook refuses $c" test "$r" = refused
  check "refusal of $c logged" grep -q "result=refused" "$tmp/exporter.log"
  check "$c not protected" sh -c "! $(declare -f protected); protected '$c'"
done
check "4 refusals counted" sh -c "curl -s $base/metrics | grep -q 'memcg_exporter_rule_actions_total{rule=\"E2eBad\",action=\"protect\",result=\"refused\"} 4'"
check "wrong token: 403" test "$(hook wrong "$(payload "$b" x)")" = 403
check "no token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -d '{}' "$base/api/v1/alertmanager")" = 401
echo "groups: [{name: x, rules: [{alert: A, expr: 'rate(x[5m]'}]}]" > "$tmp/protect.rules.yml"
check "bad reload: 500" test "$(curl -s -o /dev/null -w '%{http_code}' -XPOST -H "$auth" "$base/-/reload")" = 500
check "reload gauge 0" sh -c "curl -s $base/metrics | grep -q '^memcg_exporter_rules_config_last_reload_successful 0'"
check "old rules kept" sh -c "curl -s $base/api/v1/rules | jq -e '.data.groups[0].name==\"e2e.protect\"' >/dev/null"
check "reason logged" grep -q "rules reload failed" "$tmp/exporter.log"
summary "rules e2e"
