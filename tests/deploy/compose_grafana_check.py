#!/usr/bin/env python3
"""What Grafana in docker/compose.yml needs to come up with the dashboards,
checked on `docker-compose config` (the merged, resolved file):

  - the image is Grafana 10.3 or later (the dashboards' schemaVersion 39);
  - a data source file and a dashboard provider file are mounted inside
    /etc/grafana/provisioning/datasources/ and .../dashboards/ (Grafana reads
    only those subfolders), from files that exist;
  - the provider's options.path is a mount whose source holds the three
    dashboards;
  - the Prometheus data source's URL names the prometheus service by name and
    the port Prometheus listens on; the exporter API source names the exporter
    service and its --web.listen-address port, which is also the target
    Prometheus scrapes (so the reclaim report's http://${instance}/... URL is
    reachable from Grafana).

  compose_grafana_check.py <source dir> <docker-compose config output (YAML)>
"""
import json
import os
import re
import sys
from urllib.parse import urlparse

import yaml

src, config_path = sys.argv[1], sys.argv[2]
cfg = yaml.safe_load(open(config_path))
services = cfg["services"]
errors = []


def fail(msg):
    errors.append(msg)


g = services.get("grafana")
if not g:
    sys.exit("FAIL: no grafana service")
m = re.search(r":(\d+)\.(\d+)\.(\d+)$", g["image"])
if not m or (int(m.group(1)), int(m.group(2))) < (10, 3):
    fail("grafana image %s: the schema-39 dashboards need 10.3 or later" % g["image"])

mounts = []  # (source, target)
for v in g.get("volumes", []):
    if isinstance(v, dict):
        mounts.append((v.get("source"), v["target"]))
    else:
        parts = v.split(":")
        mounts.append((parts[0], parts[1]))


def mounted_files(folder):
    out = []
    for s, t in mounts:
        if t.startswith(folder + "/") or t == folder:
            if s and os.path.isdir(s):
                out += [os.path.join(s, f) for f in sorted(os.listdir(s)) if f.endswith((".yml", ".yaml"))]
            elif s and os.path.isfile(s):
                out.append(s)
            else:
                fail("%s is mounted from %s, which does not exist" % (t, s))
    return out


ds_files = mounted_files("/etc/grafana/provisioning/datasources")
prov_files = mounted_files("/etc/grafana/provisioning/dashboards")
if not ds_files:
    fail("nothing mounted in /etc/grafana/provisioning/datasources/")
if not prov_files:
    fail("nothing mounted in /etc/grafana/provisioning/dashboards/")
for s, t in mounts:
    if t == "/etc/grafana/provisioning":
        fail("provisioning mounted flat on /etc/grafana/provisioning (Grafana reads its subfolders)")

# The provider's path is a mount holding the dashboards.
dashboards = sorted(f for f in os.listdir(os.path.join(src, "dashboards")) if f.endswith(".json"))
for pf in prov_files:
    for p in yaml.safe_load(open(pf)).get("providers", []):
        path = p["options"]["path"].rstrip("/")
        hit = [s for s, t in mounts if t.rstrip("/") == path]
        if not hit:
            fail("provider %s reads %s, which nothing is mounted at" % (p["name"], path))
            continue
        have = sorted(f for f in os.listdir(hit[0]) if f.endswith(".json"))
        if have != dashboards or len(have) != 3:
            fail("provider path %s holds %s, want the three dashboards %s" % (path, have, dashboards))
        for f in have:
            sv = json.load(open(os.path.join(hit[0], f))).get("schemaVersion")
            if sv is None or sv > 39:
                fail("%s: schemaVersion %s" % (f, sv))


def service_port(name, default):
    """The port a service listens on inside the compose network."""
    svc = services[name]
    cmd = svc.get("command") or []
    for a in cmd if isinstance(cmd, list) else cmd.split():
        m = re.match(r"--web\.listen-address=.*:(\d+)$", a)
        if m:
            return int(m.group(1))
    return default


# The exporter's service: the one built from docker/Dockerfile.
exporter = [n for n, s in services.items() if "memcg_exporter" in (s.get("image") or "")]
if len(exporter) != 1:
    sys.exit("FAIL: cannot tell the exporter's service: %s" % exporter)
exporter = exporter[0]
want = {
    "prometheus": ("prometheus", service_port("prometheus", 9090)),
    "yesoreyeram-infinity-datasource": (exporter, service_port(exporter, 9712)),
}
seen = set()
for f in ds_files:
    for ds in yaml.safe_load(open(f)).get("datasources", []):
        if ds["type"] not in want:
            continue
        seen.add(ds["type"])
        u = urlparse(ds.get("url", ""))
        host, port = want[ds["type"]]
        if u.hostname != host or (u.port or 80) != port:
            fail("data source %s: url %r, want http://%s:%d (the service by name)" % (ds["name"], ds.get("url"), host, port))
        if u.hostname not in services:
            fail("data source %s: %s is not a compose service" % (ds["name"], u.hostname))
        if ds["type"] == "yesoreyeram-infinity-datasource":
            allowed = (ds.get("jsonData") or {}).get("allowedHosts") or []
            if "http://%s:%d" % (host, port) not in allowed:
                fail("exporter API source: allowedHosts %s lacks http://%s:%d" % (allowed, host, port))
for t in want:
    if t not in seen:
        fail("no %s data source provisioned" % t)
if "yesoreyeram-infinity-datasource" not in (g.get("environment") or {}).get("GF_INSTALL_PLUGINS", ""):
    fail("the Infinity plugin is not installed (GF_INSTALL_PLUGINS)")

# Prometheus' target for the exporter is the same host:port (the instance label).
prom = yaml.safe_load(open(os.path.join(src, "docker/prometheus.yml")))
targets = [t for sc in prom["scrape_configs"] if sc["job_name"] == "memcg_exporter"
           for st in sc.get("static_configs", []) for t in st["targets"]]
if targets != ["%s:%d" % want["yesoreyeram-infinity-datasource"]]:
    fail("docker/prometheus.yml scrapes %s, want %s:%d" % ((targets,) + want["yesoreyeram-infinity-datasource"]))

for e in errors:
    print("FAIL", e)
if errors:
    sys.exit(1)
print("compose grafana: %s, %d data source file(s), %d provider file(s), %d dashboards at the provider's path; "
      "data sources by service name %s" % (g["image"], len(ds_files), len(prov_files), len(dashboards),
                                           ", ".join("%s:%d" % v for v in want.values())))
