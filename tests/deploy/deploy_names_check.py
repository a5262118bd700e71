#!/usr/bin/env python3
"""Every flag, port and path the deployment files give the exporter is one it has.

  deploy_names_check.py <source dir> <memcg_exporter binary>

Flags come from `memcg_exporter --help` (and its collector list); ports from the
listen address the files pass (or the default --help prints); paths are asked
of a running exporter (on a free loopback port): each must answer something
other than 404. Read from:
  docker/Dockerfile (EXPOSE, CMD), docker/compose*.yml (the exporter's command,
  ports, mounts), docker/prometheus.yml and deploy/kubernetes/prometheus-scrape.yml
  (targets, metrics_path), deploy/kubernetes/*.yaml (args, ports, probes, mounts,
  Service, ServiceMonitor), packaging/systemd/memcg_exporter.service (ExecStart),
  packaging/default/memcg_exporter (ARGS, examples included), the code blocks of
  README.md and docker/README.md, and alerts/alertmanager.yml when present (the
  webhook's URL).
"""
import glob
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import yaml

errors = []
checked = {"flags": 0, "ports": 0, "paths": 0, "mounts": 0}


def err(where, msg):
    errors.append(f"{where}: {msg}")


def exporter_help(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    flags = {}
    for m in re.finditer(r"^  --([a-z0-9_.-]+)(=VALUE)?\n(?:      .*\n)*", out, re.M):
        default = re.search(r"\(default: ([^)]*)\)", m.group(0))
        flags[m.group(1)] = {"value": bool(m.group(2)),
                             "default": default.group(1) if default else None}
    collectors = set(re.findall(r"^  ([a-z_]+) \[default (?:on|off)\]$", out, re.M))
    if not flags or not collectors:
        sys.exit("could not read flags and collectors from --help")
    return flags, collectors


class Exporter:
    def __init__(self, help_flags, collectors):
        self.flags, self.collectors = help_flags, collectors

    def check_flag(self, where, arg):
        """One --flag[=value]; returns (name, value or None)."""
        checked["flags"] += 1
        name, eq, value = arg[2:].partition("=")
        if name.startswith("no-collector.") or (name.startswith("collector.") and
                                                 name.count(".") == 1):
            c = name.split(".", 1)[1]
            if c not in self.collectors:
                err(where, f"--{name}: no collector {c!r}")
            elif eq:
                err(where, f"--{name} takes no value")
            return name, None
        f = self.flags.get(name)
        if f is None:
            err(where, f"unknown flag --{name}")
        elif f["value"] and not eq:
            err(where, f"--{name} needs =VALUE (the files use the one-token form)")
        elif not f["value"] and eq:
            err(where, f"--{name} takes no value")
        return name, (value if eq else None)

    def check_args(self, where, args, mounts=None):
        """Flags of one exporter invocation; returns {flag: value}."""
        got = {}
        for a in args:
            if not a.startswith("--"):
                err(where, f"not a flag: {a!r}")
                continue
            name, value = self.check_flag(where, a)
            got[name] = value
        for name, value in got.items():
            if (name.startswith("path.") or name == "controller.token-file") and value and \
                    mounts is not None:
                checked["mounts"] += 1
                if not any(value == m or value.startswith(m.rstrip("/") + "/") for m in mounts):
                    err(where, f"--{name}={value} is not under any mount {sorted(mounts)}")
        return got

    def listen_port(self, got):
        addr = got.get("web.listen-address") or self.flags["web.listen-address"]["default"]
        return int(addr.rsplit(":", 1)[1])

    def telemetry_path(self, got):
        return got.get("web.telemetry-path") or self.flags["web.telemetry-path"]["default"]


def json_patch(doc, ops):
    """RFC 6902 add, replace and test (what the deploy patches use)."""
    for op in ops:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        parent = doc
        for k in keys[:-1]:
            parent = parent[int(k)] if isinstance(parent, list) else parent[k]
        last = keys[-1]
        if op["op"] == "test":
            cur = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if cur != op["value"]:
                err(op["path"], f"patch test failed: {cur!r} != {op['value']!r}")
        elif op["op"] == "replace" or not isinstance(parent, list):
            parent[last] = op["value"]
        elif last == "-":
            parent.append(op["value"])
        else:
            parent.insert(int(last), op["value"])
    return doc


def port_eq(where, what, got, want):
    checked["ports"] += 1
    if int(got) != int(want):
        err(where, f"{what} is {got}, the exporter listens on {want}")


def main():
    src, binary = sys.argv[1], sys.argv[2]
    ex = Exporter(*exporter_help(binary))
    paths = {}  # path -> (method, where)
    rel = lambda p: os.path.relpath(p, src)

    # Dockerfile: CMD flags, EXPOSE = the port they listen on.
    df = open(os.path.join(src, "docker/Dockerfile")).read()
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", df, re.M).group(1))
    got = ex.check_args("docker/Dockerfile CMD", cmd)
    for p in re.findall(r"^EXPOSE (\d+)$", df, re.M):
        port_eq("docker/Dockerfile", "EXPOSE", p, ex.listen_port(got))

    # compose: the exporter service (base file and overrides).
    # compose.yml first; an override (compose.*.yml) adds its mounts to the base's.
    compose_port = None
    base_mounts = []
    files = [os.path.join(src, "docker/compose.yml")] + sorted(
        glob.glob(os.path.join(src, "docker/compose.*.yml")))
    for f in files:
        svc = (yaml.safe_load(open(f)).get("services") or {}).get("memcg_exporter")
        if not svc:
            continue
        mounts = base_mounts + [v.split(":")[1] for v in svc.get("volumes", [])]
        if not base_mounts:
            base_mounts = mounts
        if "command" in svc:
            got = ex.check_args(rel(f), svc["command"], mounts)
            cg = [v for v in svc.get("volumes", []) if v.split(":")[1] == got.get("path.cgroupfs")]
            want = "ro" if "controller.enable" not in got else "rw"
            if len(cg) != 1 or cg[0].split(":")[-1] != want:
                err(rel(f), f"the cgroupfs volume must be :{want} (controller "
                            f"{'off' if want == 'ro' else 'on'})")
            compose_port = ex.listen_port(got)
            compose_got = got
        for p in svc.get("ports", []):
            port_eq(rel(f), f"published port {p}", str(p).split(":")[-1], compose_port)

    # Kubernetes objects.
    kdocs = []
    for f in sorted(glob.glob(os.path.join(src, "deploy/kubernetes/*.yaml"))):
        if not f.endswith("-patch.yaml"):
            kdocs += [(rel(f), d) for d in yaml.safe_load_all(open(f)) if d]
    # A *-patch.yaml (RFC 6902) makes a variant of the DaemonSet: checked too.
    for f in sorted(glob.glob(os.path.join(src, "deploy/kubernetes/*-patch.yaml"))):
        where, ds = next((w, d) for w, d in kdocs if d["kind"] == "DaemonSet")
        kdocs.append((f"{where} + {rel(f)}", json_patch(json.loads(json.dumps(ds)),
                                                         yaml.safe_load(open(f)))))
    named_ports = {}
    for where, d in kdocs:
        if d["kind"] != "DaemonSet":
            continue
        spec = d["spec"]["template"]["spec"]
        for c in spec["containers"]:
            mounts = [m["mountPath"] for m in c.get("volumeMounts", [])]
            got = ex.check_args(where, c.get("args", []), mounts)
            port = ex.listen_port(got)
            # cgroupfs is read-only unless the controller is on.
            cg = [m for m in c.get("volumeMounts", [])
                  if m["mountPath"] == got.get("path.cgroupfs")]
            want_ro = "controller.enable" not in got
            if len(cg) != 1 or bool(cg[0].get("readOnly")) != want_ro:
                err(where, f"the cgroupfs mount must be readOnly: {want_ro} "
                           f"(controller {'off' if want_ro else 'on'})")
            for p in c.get("ports", []):
                port_eq(where, f"containerPort {p.get('name')}", p["containerPort"], port)
                named_ports[p.get("name")] = p["containerPort"]
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                h = c.get(probe, {}).get("httpGet")
                if h:
                    paths[h["path"]] = ("GET", f"{where} {probe}")
                    checked["paths"] += 1
                    pp = h["port"]
                    port_eq(where, f"{probe} port", named_ports.get(pp, pp), port)
    service_ports = {}
    for where, d in kdocs:
        if d["kind"] == "Service":
            for p in d["spec"]["ports"]:
                tp = p.get("targetPort", p["port"])
                checked["ports"] += 1
                if isinstance(tp, str) and tp not in named_ports:
                    err(where, f"targetPort {tp} is no port name of the DaemonSet")
                elif not isinstance(tp, str):
                    port_eq(where, "targetPort", tp, list(named_ports.values())[0])
                service_ports[p.get("name")] = p["port"]
    for where, d in kdocs:
        if d["kind"] == "ServiceMonitor":
            for e in d["spec"]["endpoints"]:
                checked["ports"] += 1
                if e["port"] not in service_ports:
                    err(where, f"endpoint port {e['port']} is no port name of the Service")
                paths[e.get("path", "/metrics")] = ("GET", where)
                checked["paths"] += 1

    # Prometheus configs: the exporter's job targets and path (DNS SD of the headless
    # Service: the A records are the pods, so the port is the containerPort).
    for f, host in ((os.path.join(src, "docker/prometheus.yml"), "memcg_exporter"),
                    (os.path.join(src, "deploy/kubernetes/prometheus-scrape.yml"), None)):
        cfg = yaml.safe_load(open(f))
        jobs = [j for j in cfg["scrape_configs"] if j["job_name"] == "memcg_exporter"]
        if len(jobs) != 1:
            err(rel(f), "no (single) job memcg_exporter")
            continue
        j = jobs[0]
        paths[j.get("metrics_path", "/metrics")] = ("GET", rel(f))
        checked["paths"] += 1
        if j.get("metrics_path", "/metrics") != ex.telemetry_path(compose_got):
            err(rel(f), f"metrics_path {j.get('metrics_path')} is not the telemetry path")
        for sd in j.get("dns_sd_configs", []):
            port_eq(rel(f), "dns_sd_configs port", sd["port"], named_ports.get("metrics"))
        for sc in j.get("static_configs", []):
            for t in sc["targets"]:
                h, _, p = t.rpartition(":")
                if host and h != host:
                    err(rel(f), f"target {t}: the compose service is {host}")
                port_eq(rel(f), f"target {t}", p, compose_port)

    # systemd unit and its defaults file.
    unit = open(os.path.join(src, "packaging/systemd/memcg_exporter.service")).read()
    m = re.search(r"^ExecStart=(\S+)(.*)$", unit, re.M)
    if not m or not m.group(1).endswith("/memcg_exporter"):
        err("memcg_exporter.service", "ExecStart does not run memcg_exporter")
    else:
        ex.check_args("memcg_exporter.service ExecStart",
                      [a for a in shlex.split(m.group(2)) if not a.startswith("$")])
    sd = re.search(r"^StateDirectory=(\S+)$", unit, re.M)
    journal_dir = os.path.dirname(ex.flags["controller.journal"]["default"])
    if not sd or "/var/lib/" + sd.group(1) != journal_dir:
        err("memcg_exporter.service", f"StateDirectory is not {journal_dir} (the journal's default)")
    defaults = open(os.path.join(src, "packaging/default/memcg_exporter")).read()
    for m in re.finditer(r'^#?\s*ARGS="([^"]*)"$', defaults, re.M):
        ex.check_args("packaging/default/memcg_exporter", shlex.split(m.group(1)))

    # The run commands of the docs: exporter flags in their code blocks.
    prefixes = ("web.", "path.", "collector.", "no-collector.", "cgroup.", "controller.", "log.")
    for doc in ("README.md", "docker/README.md"):
        text = open(os.path.join(src, doc)).read()
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9_.-]*(?:=[^\s\\'\"]+|='[^']*')?)", block):
                if flag[2:].startswith(prefixes):
                    ex.check_flag(f"{doc} code block", flag.replace("'", ""))

    # Alertmanager's webhook to the exporter (the alerts/ folder, when present).
    am = os.path.join(src, "alerts/alertmanager.yml")
    if os.path.exists(am):
        found = 0
        for r in yaml.safe_load(open(am)).get("receivers", []):
            for w in r.get("webhook_configs", []):
                u = re.match(r"https?://([^/:]+)(?::(\d+))?(/.*)$", w["url"])
                if u and u.group(1) == "memcg_exporter":
                    found += 1
                    port_eq(rel(am), f"webhook {w['url']}", u.group(2) or 80, compose_port)
                    paths[u.group(3)] = ("POST", rel(am))
                    checked["paths"] += 1
        if not found:
            err(rel(am), "no webhook to http://memcg_exporter:<port>/... (the compose service)")
    else:
        print("alerts/alertmanager.yml absent: its webhook URL is not checked")

    # Ask a running exporter for every path.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}",
                             "--no-collector.vmscan", "--collector.vmscan.instance=memcg_exporter_test_names"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/-/healthy", timeout=2)
                break
            except Exception:
                time.sleep(0.1)
        for path, (method, where) in sorted(paths.items()):
            req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                         data=b"{}" if method == "POST" else None)
            try:
                code = urllib.request.urlopen(req, timeout=10).status
            except urllib.error.HTTPError as e:
                code = e.code
            except Exception as e:
                code = f"no answer ({e})"
            print(f"  {method} {path} -> {code}  ({where})")
            if code == 404 or not isinstance(code, int):
                err(where, f"{method} {path}: the exporter answers {code}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    print(f"checked: {checked['flags']} flags, {checked['ports']} ports, "
          f"{checked['paths']} path uses ({len(paths)} distinct), {checked['mounts']} --path.* mounts")
    if errors:
        print("FAIL:\n  " + "\n  ".join(errors))
        sys.exit(1)
    print("deploy names check: ok")


if __name__ == "__main__":
    main()
