#!/usr/bin/env bash
# alerts/alertmanager.yml: amtool check-config, and the routes send each kind of alert
# where alerts/alertmanager.yml says: action="protect" to the exporter's webhook only,
# critical to the page, a pod's alerts to the team of its namespace, the rest to the
# team's mail.
# usage: alerts_alertmanager_check.sh path/to/alertmanager.yml   (exit 77 without amtool)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cfg=$1
command -v amtool >/dev/null || { echo "alertmanager check: SKIPPED: amtool not installed (scripts/deps.sh test)"; exit 77; }
routes() {  # routes WANT LABEL=VALUE...
  local want=$1; shift
  [ "$(amtool config routes test --config.file="$cfg" "$@" 2>/dev/null)" = "$want" ]
}
check "amtool check-config" amtool check-config "$cfg"
check "action=protect goes to the exporter's webhook only" \
  routes memcg-exporter-protect alertname=MemcgProtectOnLimitHits action=protect severity=info cgroup=/a
check "critical pages" routes oncall-page alertname=MemcgExporterDown severity=critical instance=n1:9712
check "a pod's warning goes to the team of its namespace" \
  routes team-shop alertname=MemcgOOMKill severity=warning cgroup=/kubepods/pod1/c1 namespace=shop pod=web-0 container=app
check "warning goes to the team's mail" routes team-mail alertname=MemcgReclaimStallLatencyHigh severity=warning cgroup=/a
check "the webhook is POST /api/v1/alertmanager with a bearer token file" \
  grep -qE "url: 'http://[^']+/api/v1/alertmanager'" "$cfg"
check "... credentials_file" grep -qE "credentials_file: " "$cfg"
summary "alertmanager check"
