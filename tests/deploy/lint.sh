#!/usr/bin/env bash
# The deployment files' checks (ctest lint.deploy_*). No container engine needed.
#   lint.sh yamllint|compose|promtool|amtool|kubernetes|join|prometheusrule|systemd <source dir> <build dir>
# Exit 77 (skipped) when a tool is missing or, for amtool, when
# alerts/alertmanager.yml is not on this branch yet.
set -euo pipefail
what=$1 src=$2 build=$3
need() { command -v "$1" >/dev/null || { echo "SKIPPED: $1 is not installed (scripts/deps.sh test)"; exit 77; }; }
tmp=$(mktemp -d /tmp/memcg_exporter_test_deploy_lint.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$src"
case $what in
  yamllint)
    need yamllint
    files=(docker/*.yml deploy/kubernetes/*.yaml deploy/kubernetes/*.yml)
    yamllint -s -c tests/deploy/yamllint.yml "${files[@]}"
    echo "yamllint: ${#files[@]} files clean"
    ;;
  compose)
    need docker-compose
    # compose.yml alone, then with the controller override; -q: parse and
    # validate only (no engine). The mounts of alerts/ and dashboards/ need not
    # exist for this.
    docker-compose -f docker/compose.yml config -q
    docker-compose -f docker/compose.yml -f docker/compose.controller.yml config > "$tmp/merged.yml"
    grep -q -- '--controller.enable' "$tmp/merged.yml"
    n=$(docker-compose -f docker/compose.yml config --services | wc -l)
    [ "$n" -eq 4 ] || { echo "expected 4 services, got $n"; exit 1; }
    echo "docker-compose config: compose.yml ($n services) and + compose.controller.yml valid"
    # Grafana's provisioning as Grafana reads it (mounts, paths, data source URLs).
    docker-compose -f docker/compose.yml config > "$tmp/compose.yml"
    python3 tests/deploy/compose_grafana_check.py "$src" "$tmp/compose.yml"
    ;;
  promtool)
    need promtool
    # The configs name the rules where the containers mount them
    # (/etc/prometheus/alerts); check them against the repository's alerts/.
    for f in docker/prometheus.yml deploy/kubernetes/prometheus-scrape.yml; do
      sed "s|/etc/prometheus/alerts/|$src/alerts/|" "$f" > "$tmp/$(basename "$f")"
      promtool check config "$tmp/$(basename "$f")"
    done
    ls alerts/*.rules.yml >/dev/null 2>&1 && echo "rules checked: $(ls alerts/*.rules.yml)" \
      || echo "note: alerts/*.rules.yml absent on this branch: configs checked without rules"
    ;;
  amtool)
    need amtool
    if [ ! -f alerts/alertmanager.yml ]; then
      echo "SKIPPED: alerts/alertmanager.yml is not on this branch (the alerts work adds it;"
      echo "docker/compose.yml mounts it into Alertmanager)"
      exit 77
    fi
    amtool check-config alerts/alertmanager.yml
    ;;
  kubernetes)
    need node
    need npm
    tools=$build/deploy-tools
    if [ ! -f "$tools/node_modules/kubernetes-models/package.json" ] ||
       [ ! -f "$tools/node_modules/@kubernetes-models/prometheus-operator/package.json" ] ||
       [ ! -f "$tools/node_modules/js-yaml/package.json" ]; then
      mkdir -p "$tools"
      cp tests/deploy/package.json "$tools/package.json"
      (cd "$tools" && npm install --no-audit --no-fund --silent) ||
        { echo "npm install failed (no registry?)"; exit 1; }
    fi
    node tests/deploy/k8s_validate.mjs "$tools/node_modules" deploy/kubernetes/*.yaml
    ;;
  join)
    need promtool
    # The README's kubepods join, evaluated by Prometheus' rule engine on
    # series shaped like the exporter's and kube-state-metrics'.
    promtool test rules tests/deploy/kubepods_join_test.yml
    python3 - "$src" <<'PY'
import re, sys, yaml
src = sys.argv[1]
expr = yaml.safe_load(open(src + "/tests/deploy/kubepods_join.rules.yml"))["groups"][0]["rules"][0]["expr"]
norm = lambda s: " ".join(s.split())
if norm(expr) not in norm(open(src + "/README.md").read()):
    sys.exit("README.md does not show the tested join (tests/deploy/kubepods_join.rules.yml) verbatim")
print("README's join is the tested one")
PY
    ;;
  prometheusrule)
    # The PrometheusRule is alerts/*.rules.yml (regenerate with the script),
    # and the Kubernetes objects agree with each other where a real start
    # needs it.
    python3 deploy/kubernetes/gen_prometheusrule.py --check
    python3 - <<'PY'
import sys, yaml
k = "deploy/kubernetes/"
ds = yaml.safe_load(open(k + "daemonset.yaml"))
sm = yaml.safe_load(open(k + "servicemonitor.yaml"))
np = yaml.safe_load(open(k + "networkpolicy.yaml"))
c = ds["spec"]["template"]["spec"]["containers"][0]
bad = []
for ep in sm["spec"]["endpoints"]:
    for r in ep.get("relabelings", []):
        if r.get("targetLabel") == "instance":
            bad.append("ServiceMonitor rewrites instance (dashboards and the runbook use it as host:port)")
    if ep.get("scheme") != "https" or "basicAuth" not in ep:
        bad.append("ServiceMonitor does not scrape with TLS and basic auth")
cfg = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--web.config.file=")]
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
secrets = {v["name"]: v["secret"]["secretName"] for v in ds["spec"]["template"]["spec"]["volumes"] if "secret" in v}
if not cfg:
    bad.append("the DaemonSet runs without --web.config.file")
else:
    d = cfg[0].rsplit("/", 1)[0]
    if mounts.get(d) not in secrets:
        bad.append("--web.config.file %s is not in a mounted Secret" % cfg[0])
    wc = yaml.safe_load(open(k + "web-config.yml"))
    for f in (wc["tls_server_config"]["cert_file"], wc["tls_server_config"]["key_file"]):
        if mounts.get(f.rsplit("/", 1)[0]) not in secrets:
            bad.append("web-config.yml's %s is not in a mounted Secret" % f)
port = c["ports"][0]["containerPort"]
if [p["port"] for r in np["spec"]["ingress"] for p in r["ports"]] != [port]:
    bad.append("NetworkPolicy does not admit exactly the exporter's port %d" % port)
if "cpu" in c["resources"].get("limits", {}):
    bad.append("a CPU limit throttles the exporter in the reclaim storms it reports")
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY
    echo "kubernetes: instance kept, TLS + basic auth wired (Secrets mounted), NetworkPolicy port, no CPU limit"
    ;;
  systemd)
    need systemd-analyze
    # The unit as shipped: hardening as systemd scores it (offline: no running
    # systemd needed), and what an operator relies on.
    unit=packaging/systemd/memcg_exporter.service
    systemd-analyze security --offline=true "$unit" > "$tmp/security.txt" 2>&1 || true
    score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/security.txt")
    echo "systemd-analyze security $unit: exposure ${score:-?} (gate: <= 2.5)"
    if [ -z "$score" ] || ! awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }'; then
      grep '✗' "$tmp/security.txt" || cat "$tmp/security.txt"; exit 1
    fi
    for want in '^ExecReload=/bin/kill -HUP \$MAINPID$' '^SystemCallFilter=@system-service$' \
                '^User=memcg_exporter$' '^AmbientCapabilities=CAP_DAC_OVERRIDE$'; do
      grep -q "$want" "$unit" || { echo "FAIL: $unit has no line matching $want"; exit 1; }
    done
    # The drop-in for the controller parses as a unit fragment.
    grep -q '^\[Service\]' packaging/systemd/examples/controller.conf
    echo "unit: ExecReload, SystemCallFilter, User= with ambient capabilities present"
    ;;
  *) echo "usage: $0 yamllint|compose|promtool|amtool|kubernetes|join|prometheusrule|systemd <src> <build>" >&2; exit 2 ;;
esac
