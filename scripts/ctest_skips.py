#!/usr/bin/env python3
"""Lists the tests a ctest run skipped, each with its reason, and fails when a
test carrying a label that must run was skipped.

    scripts/ctest_skips.py --build DIR --junit FILE [--must-run live,root,e2e,qemu] [--strict]

FILE is the run's `ctest --output-junit` report; the labels come from
`ctest --show-only=json-v1` of DIR (the junit report has none). Without
--strict (a local run, e.g. without root) skips are listed and the exit status
is 0; with --strict (scripts/test.sh passes it when CI=true) a skipped test
with a must-run label makes the exit status 1. A run where every test is
skipped cannot pass silently in CI this way.
"""
import argparse
import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def labels_by_test(build):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    labels = {}
    for t in json.loads(out).get("tests", []):
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels[t["name"]] = list(p.get("value") or [])
    return labels


def reason(output):
    """The lines of a skipped test's output that say why (gtest's message
    after 'Skipped', a script's 'SKIP...' line), else its last line."""
    lines = [l.strip() for l in (output or "").splitlines() if l.strip()]
    picked = []
    for i, l in enumerate(lines):
        low = l.lower()
        if l.startswith("[  SKIPPED ]"):
            continue
        if "skip" in low:
            picked.append(l)
            # gtest prints "file:line: Skipped" and the message on the next line.
            if low.endswith(": skipped") and i + 1 < len(lines):
                picked.append(lines[i + 1])
    picked = list(dict.fromkeys(picked))[:3]
    if not picked and lines:
        picked = [lines[-1]]
    return " | ".join(picked) or "(no output)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--junit", required=True)
    ap.add_argument("--must-run", default="live,root,e2e,qemu")
    ap.add_argument("--strict", action="store_true")
    a = ap.parse_args()
    must = {l for l in a.must_run.split(",") if l}
    labels = labels_by_test(a.build)
    skipped = []
    for tc in ET.parse(a.junit).getroot().iter("testcase"):
        sk = tc.find("skipped")
        if sk is None:
            continue
        # "Disabled" tests and those whose executable is missing are notrun
        # too; ctest already fails the run for a missing executable.
        name = tc.get("name")
        out = tc.findtext("system-out") or ""
        skipped.append((name, sorted(labels.get(name, [])), sk.get("message", ""), reason(out)))
    bad = [s for s in skipped if must & set(s[1])]
    if not skipped:
        print("ctest_skips: no test skipped")
        return 0
    print(f"ctest_skips: {len(skipped)} test(s) skipped:")
    for name, labs, msg, why in skipped:
        mark = "MUST RUN" if must & set(labs) else "ok to skip"
        print(f"  {name} [{','.join(labs) or '-'}] ({mark}): {why}")
    if bad and a.strict:
        print(f"ctest_skips: FAILED: {len(bad)} test(s) labelled {'/'.join(sorted(must))} "
              "were skipped; in CI they must run:", file=sys.stderr)
        for name, _, _, why in bad:
            print(f"  {name}: {why}", file=sys.stderr)
        return 1
    if bad:
        print(f"ctest_skips: {len(bad)} of them carry a must-run label "
              "(CI=true would fail this run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
