#!/usr/bin/env python3
"""Checks on alerts/ that promtool does not make.

  alerts_lint.py ALERTS_DIR

- every alerting rule has a severity label (critical, warning, info) and the summary,
  description and runbook_url annotations; runbook_url is <base>#<anchor> with one
  absolute base (http:// or https://, ending in RUNBOOK.md) for every rule file and
  rule test, and RUNBOOK.md has a heading with that anchor (alerts/protect.rules.yml
  may still use the older repository-relative alerts/RUNBOOK.md#<anchor>);
- a rule with an `action` label has action "protect" and valid start_margin /
  target_margin labels (bytes with an IEC unit, like 64MiB, or a percent of the limit,
  like 10%), the start below the target when both are in one form;
- every alert has a promtool test (alerts/tests/*.yml, loading the file that defines it)
  where it fires and one where it stays silent;
- every memcg_exporter:threshold:* recording rule is a vector(N), is used by an alert
  or a recording rule,
  and RUNBOOK.md's threshold table lists it with the same N.
Python 3 with python3-yaml.
"""
import os
import re
import sys

import yaml

SEVERITIES = {"critical", "warning", "info"}
IEC = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def slug(heading):
    """GitHub's heading anchor."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def margin(value):
    """('bytes', n) or ('percent', p), or raises ValueError."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
    if m:
        p = float(m.group(1))
        if not 0 < p < 100:
            raise ValueError("percent must be above 0 and below 100: %r" % value)
        return "percent", p
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB|TiB)?", value)
    if m:
        n = int(m.group(1)) * IEC[m.group(2) or ""]
        if n <= 0:
            raise ValueError("bytes must be above 0: %r" % value)
        return "bytes", n
    raise ValueError("not bytes with an IEC unit nor a percent: %r" % value)


def main():
    root = sys.argv[1]
    errors = []
    runbook = open(os.path.join(root, "RUNBOOK.md")).read()
    anchors = {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", runbook, re.M)}
    # | `memcg_exporter:threshold:name` | value | ... |
    documented = {m.group(1): m.group(2).strip() for m in re.finditer(
        r"^\|\s*`(memcg_exporter:threshold:\w+)`\s*\|\s*([^|]+)\|", runbook, re.M)}

    rule_files = sorted(f for f in os.listdir(root) if f.endswith(".rules.yml"))
    alerts = {}  # name -> rule file
    bases = {}  # runbook base -> where it was first seen
    thresholds = {}  # name -> value
    alert_exprs = []
    for rf in rule_files:
        doc = yaml.safe_load(open(os.path.join(root, rf)))
        for g in doc["groups"]:
            for r in g["rules"]:
                if "record" in r:
                    name = r["record"]
                    if name.startswith("memcg_exporter:threshold:"):
                        m = re.fullmatch(r"\s*vector\(\s*([-+0-9.eE]+)\s*\)\s*", r["expr"])
                        if not m:
                            errors.append("%s: %s is not vector(N)" % (rf, name))
                            continue
                        thresholds[name] = m.group(1)
                    else:
                        # a derived signal an alert reads (e.g. memory.high throttling)
                        alert_exprs.append(r["expr"])
                    continue
                name = r["alert"]
                if name in alerts:
                    errors.append("%s: alert %s defined twice" % (rf, name))
                alerts[name] = rf
                alert_exprs.append(r["expr"])
                labels = r.get("labels", {})
                ann = r.get("annotations", {})
                if labels.get("severity") not in SEVERITIES:
                    errors.append("%s: %s: severity label %r not one of %s" % (rf, name, labels.get("severity"), sorted(SEVERITIES)))
                for a in ("summary", "description", "runbook_url"):
                    if not ann.get(a):
                        errors.append("%s: %s: no %s annotation" % (rf, name, a))
                url = ann.get("runbook_url", "")
                m = re.fullmatch(r"(https?://\S+/RUNBOOK\.md)#([\w-]+)", url)
                if m:
                    bases.setdefault(m.group(1), "%s: %s" % (rf, name))
                elif rf == "protect.rules.yml":
                    m = re.fullmatch(r"()alerts/RUNBOOK\.md#([\w-]+)", url)
                if not m:
                    errors.append("%s: %s: runbook_url %r is not <base>/RUNBOOK.md#<anchor>" % (rf, name, url))
                elif m.group(2) not in anchors:
                    errors.append("%s: %s: RUNBOOK.md has no section #%s" % (rf, name, m.group(2)))
                if "action" in labels:
                    if labels["action"] != "protect":
                        errors.append("%s: %s: action %r (only protect exists)" % (rf, name, labels["action"]))
                    try:
                        s = margin(str(labels.get("start_margin", "")))
                        t = margin(str(labels.get("target_margin", "")))
                        if s[0] == t[0] and s[1] >= t[1]:
                            errors.append("%s: %s: start_margin must be below target_margin" % (rf, name))
                    except ValueError as e:
                        errors.append("%s: %s: %s" % (rf, name, e))
    for name, value in thresholds.items():
        if not any(name in e for e in alert_exprs):
            errors.append("threshold %s is used by no alert" % name)
        if name not in documented:
            errors.append("RUNBOOK.md's threshold table does not list %s" % name)
        elif documented[name] != value:
            errors.append("RUNBOOK.md lists %s as %s, the rules say %s" % (name, documented[name], value))
    for name in documented:
        if name not in thresholds:
            errors.append("RUNBOOK.md lists %s, which no rule file records" % name)

    fires, silent = set(), set()
    tdir = os.path.join(root, "tests")
    for tf in sorted(os.listdir(tdir)):
        if not tf.endswith(".yml"):
            continue
        text = open(os.path.join(tdir, tf)).read()
        for m in re.finditer(r"runbook_url:\s*'?(https?://\S+/RUNBOOK\.md)#", text):
            bases.setdefault(m.group(1), "tests/" + tf)
        doc = yaml.safe_load(text)
        loaded = {os.path.basename(p) for p in doc.get("rule_files", [])}
        for t in doc.get("tests", []):
            for at in t.get("alert_rule_test", []) or []:
                name = at["alertname"]
                if name not in alerts:
                    errors.append("tests/%s: alert %s is not in any rule file" % (tf, name))
                    continue
                if alerts[name] not in loaded:
                    errors.append("tests/%s: tests %s without loading %s" % (tf, name, alerts[name]))
                (fires if at.get("exp_alerts") else silent).add(name)
    for name in sorted(alerts):
        if name not in fires:
            errors.append("alert %s has no test where it fires" % name)
        if name not in silent:
            errors.append("alert %s has no test where it stays silent" % name)

    if len(bases) > 1:
        errors.append("runbook_url has %d bases, one is the rule: %s (alerts/runbook_base.sh sets one)"
                      % (len(bases), "; ".join("%s in %s" % kv for kv in sorted(bases.items()))))
    for e in errors:
        print("FAIL %s" % e)
    print("alerts lint: %d rule files, %d alerts, %d thresholds, %d with a firing test, %d with a silent test, %d problems"
          % (len(rule_files), len(alerts), len(thresholds), len(fires), len(silent), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
