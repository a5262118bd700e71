#!/usr/bin/env python3
"""Prints where a ctest run's time went: the slowest tests and the total per
label, from the run's `ctest --output-junit` report(s).

    scripts/ctest_times.py --build DIR [--top N] JUNIT...

(a JUNIT file that does not exist is a phase that did not run: ignored).

The labels come from `ctest --show-only=json-v1` of DIR (the junit report
has none). A test counts once under each of its labels, so the per-label
sums overlap (an e2e test that needs root is in e2e and in root). The sums
are test time, not wall time: under ctest -j several tests run at once
(scripts/test.sh prints each phase's wall time beside them).
"""
import argparse
import collections
import os
import xml.etree.ElementTree as ET

# The script's folder is on sys.path when it is run as a script.
from ctest_skips import labels_by_test


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("junit", nargs="+")
    a = ap.parse_args()
    labels = labels_by_test(a.build)
    times = {}
    status = {}
    for f in a.junit:
        if not os.path.exists(f):  # a phase that did not run
            continue
        for tc in ET.parse(f).getroot().iter("testcase"):
            name = tc.get("name")
            times[name] = float(tc.get("time") or 0)
            st = tc.get("status") or "run"
            if tc.find("skipped") is not None:
                st = "skipped"
            elif tc.find("failure") is not None or tc.find("error") is not None:
                st = "failed"
            status[name] = st
    if not times:
        print("ctest_times: no test in " + " ".join(a.junit))
        return
    print(f"slowest {min(a.top, len(times))} of {len(times)} tests (s):")
    for name, t in sorted(times.items(), key=lambda kv: -kv[1])[:a.top]:
        extra = "" if status[name] == "run" else f"  ({status[name]})"
        print(f"  {t:8.1f}  {name}  [{','.join(labels.get(name, []))}]{extra}")
    per_label = collections.defaultdict(lambda: [0, 0.0])
    for name, t in times.items():
        for label in labels.get(name) or ["(none)"]:
            per_label[label][0] += 1
            per_label[label][1] += t
    print("per label: tests, summed test time (s):")
    for label, (n, t) in sorted(per_label.items(), key=lambda kv: -kv[1][1]):
        print(f"  {label:10s} {n:5d} {t:9.1f}")
    print(f"  {'all':10s} {len(times):5d} {sum(times.values()):9.1f}")


if __name__ == "__main__":
    main()
