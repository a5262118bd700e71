#!/usr/bin/env bash
# e2e.alertmanager_tls (fixture tree, loopback, no root): the notifier and the
# fleet puller talk to a real Alertmanager (Debian's prometheus-alertmanager)
# over TLS with a client certificate and basic auth, as set in
# --rules.alertmanager-config; certificates are made here by openssl.
#  - the Alertmanager's own --web.config.file requires and verifies a client
#    certificate and a bcrypt basic-auth user;
#  - an always-firing action: protect rule of the exporter reaches it (read
#    back with curl over the same TLS and auth), sent counted, no errors;
#  - the puller reads it back over the same client (pulls counted, the alert
#    in memcg_exporter_alert_pull_alerts);
#  - the same Alertmanager named with a CA that did not sign its certificate:
#    sending and pulling fail visibly, errors counted, and the TLS reason is
#    logged once (not once per batch);
#  - a wrong basic-auth password: 401, counted.
# usage: alertmanager_tls_e2e.sh path/to/memcg_exporter
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=$(realpath "$1")
fixtures=$(cd "$here/../fixtures" && pwd)
am_bin=$(command -v prometheus-alertmanager || command -v alertmanager || true)
[ -n "$am_bin" ] || { echo "alertmanager_tls e2e: SKIPPED: no prometheus-alertmanager (scripts/deps.sh test)"; exit 77; }
command -v openssl >/dev/null || { echo "alertmanager_tls e2e: SKIPPED: no openssl"; exit 77; }
hash() { python3 -W ignore -c "import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))" "$1"; }
h=$(hash 'pa ss') && [[ $h == \$2* ]] ||
  { echo "alertmanager_tls e2e: SKIPPED: python3 has no crypt module to make a bcrypt hash"; exit 77; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_am_tls.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
  free_ports_release
}
trap cleanup EXIT

# A CA, the Alertmanager's certificate (127.0.0.1 and localhost) and a client
# certificate signed by it; a second CA that signed nothing of these.
cd "$tmp" || exit 1
ossl() { openssl "$@" 2>>"$tmp/openssl.log"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=memcg_exporter_test_ca -keyout ca.key -out ca.pem
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=memcg_exporter_test_other_ca -keyout other.key -out other.pem
ossl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout am.key -out am.csr
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >am.ext
ossl x509 -req -in am.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile am.ext -out am.pem
ossl req -newkey rsa:2048 -nodes -subj /CN=memcg_exporter -keyout client.key -out client.csr
printf 'extendedKeyUsage=clientAuth\n' >client.ext
ossl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.pem
check "certificates made" test -s am.pem -a -s client.pem
printf 'pa ss\n' >password
printf 'wrong\n' >wrong_password

cat >am_web.yml <<YML
tls_server_config:
  cert_file: $tmp/am.pem
  key_file: $tmp/am.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $tmp/ca.pem
basic_auth_users:
  alice: '$h'
YML
cat >am.yml <<'YML'
route:
  receiver: nowhere
  group_wait: 0s
receivers:
  - name: nowhere
YML
amport=$(free_port)
"$am_bin" --config.file="$tmp/am.yml" --storage.path="$tmp/am" --web.config.file="$tmp/am_web.yml" \
  --web.listen-address="127.0.0.1:$amport" --cluster.listen-address= 2>"$tmp/am.log" &
pids+=($!)
amcurl() { curl -fsS --cacert ca.pem --cert client.pem --key client.key -u 'alice:pa ss' "$@"; }
am_ready() { amcurl -o /dev/null "https://127.0.0.1:$amport/-/ready" 2>/dev/null; }
check "alertmanager ready over TLS + client cert + basic auth" poll_until 30 am_ready
check "alertmanager refuses a client without a certificate" \
  bash -c "! curl -fsS --cacert ca.pem -u 'alice:pa ss' -o /dev/null https://127.0.0.1:$amport/-/ready 2>/dev/null"

good="https://127.0.0.1:$amport"
badca="https://localhost:$amport"   # the same server; the exporter trusts the other CA
badpw="https://127.0.0.1:$amport/x" # the same server, a wrong password (path_prefix /x)
cat >exporter_am.yml <<YML
alertmanagers:
  - static_configs: [{targets: ['127.0.0.1:$amport']}]
    scheme: https
    timeout: 5s
    tls_config: {ca_file: $tmp/ca.pem, cert_file: $tmp/client.pem, key_file: $tmp/client.key}
    basic_auth: {username: alice, password_file: $tmp/password}
  - url: $badca
    http_config:
      tls_config: {ca_file: $tmp/other.pem, cert_file: $tmp/client.pem, key_file: $tmp/client.key}
      basic_auth: {username: alice, password_file: $tmp/password}
  - url: $badpw
    tls_config: {ca_file: $tmp/ca.pem, cert_file: $tmp/client.pem, key_file: $tmp/client.key}
    basic_auth: {username: alice, password_file: $tmp/wrong_password}
YML
cat >rules.yml <<'YML'
groups:
  - name: tls
    interval: 500ms
    rules:
      - alert: MemcgExporterTestTls
        expr: vector(1)
        labels: {action: protect, cgroup: /memcg_exporter_test_tls, instance: tls-node}
YML
port=$(free_port)
"$bin" --path.cgroupfs="$fixtures/cgroupfs/v1" --path.procfs="$fixtures/procfs" --no-collector.vmscan \
  --web.listen-address="127.0.0.1:$port" --rules.file="$tmp/rules.yml" \
  --rules.alertmanager-config="$tmp/exporter_am.yml" --rules.alert.resend-delay=1s \
  --rules.alertmanager.pull --rules.alertmanager.pull-interval=1s \
  --rules.alertmanager.pull-matcher='instance="tls-node"' 2>"$tmp/exporter.log" &
pids+=($!)
base="http://127.0.0.1:$port"
check "exporter ready" wait_http "$base/-/ready" 60
am_has() {
  amcurl "$good/api/v2/alerts?filter=alertname%3D%22MemcgExporterTestTls%22" |
    jq -e 'length == 1 and .[0].labels.action == "protect"' >/dev/null
}
check "the alert reached Alertmanager over TLS with a client certificate and basic auth" \
  poll_until 30 am_has
m() { metric "$base/metrics" "$1"; }
pulled() { [ "$(m memcg_exporter_alert_pull_alerts)" = 1 ]; }
check "the puller read it back over the same client" poll_until 30 pulled
sleep 3  # a few more sends and pulls, so "logged once" means something
sent=$(m "memcg_exporter_notifications_sent_total{alertmanager=\"$good\"}")
check "sent counted for the good Alertmanager ($sent >= 1)" [ "${sent:-0}" -ge 1 ]
check "no send errors for it" [ "$(m "memcg_exporter_notifications_errors_total{alertmanager=\"$good\"}")" = 0 ]
check "no pull errors for it" [ "$(m "memcg_exporter_alert_pull_errors_total{alertmanager=\"$good\"}")" = 0 ]
e1=$(m "memcg_exporter_notifications_errors_total{alertmanager=\"$badca\"}")
e2=$(m "memcg_exporter_alert_pull_errors_total{alertmanager=\"$badca\"}")
check "wrong CA: send errors counted ($e1 >= 2)" [ "${e1:-0}" -ge 2 ]
check "wrong CA: pull errors counted ($e2 >= 2)" [ "${e2:-0}" -ge 2 ]
n=$(grep -c "error sending alerts.*$badca.*TLS" "$tmp/exporter.log")
check "wrong CA: the TLS reason logged once for sending ($n)" [ "$n" = 1 ]
n=$(grep -c "error reading alerts from Alertmanager.*$badca.*TLS" "$tmp/exporter.log")
check "wrong CA: the TLS reason logged once for pulling ($n)" [ "$n" = 1 ]
grep -m1 "error sending alerts.*$badca" "$tmp/exporter.log" | sed 's/^/  /'
e3=$(m "memcg_exporter_notifications_errors_total{alertmanager=\"$badpw\"}")
check "wrong password: send errors counted ($e3 >= 1)" [ "${e3:-0}" -ge 1 ]
check "wrong password: logged as status 401" grep -q "error sending alerts.*$badpw.*status 401" "$tmp/exporter.log"
r=$(m memcg_exporter_alert_pull_alertmanagers_reachable)
check "one Alertmanager answers the puller: $r" [ "$r" = 1 ]
summary alertmanager_tls
