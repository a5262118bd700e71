#!/usr/bin/env python3
"""Every test that shares the kernel's state runs alone under `ctest -j`.

scripts/test.sh runs ctest with -j; a test labelled live, root or qemu (real
cgroups, tracefs instances, the taskstats sysctl, zram and swap, the
controller's cgroups, a guest filling the machine) must be RUN_SERIAL, or
hold a RESOURCE_LOCK shared with the others it could disturb. A test added
with a plain add_test() would otherwise run beside the others and make them
flaky. The one exception is an e2e test labelled own_state: every cgroup,
tracefs instance, port and file it makes is its own (named per process), so
it may run beside the others with no lock (tests/CMakeLists.txt says why for
each). Reads `ctest --show-only=json-v1` of the build directory.
"""
import json
import subprocess
import sys

build = sys.argv[1]
out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                     check=True, capture_output=True, text=True).stdout
bad, n = [], 0
for t in json.loads(out).get("tests", []):
    props = {p["name"]: p.get("value") for p in t.get("properties", [])}
    labels = set(props.get("LABELS") or [])
    if not labels & {"live", "root", "qemu"}:
        continue
    n += 1
    if props.get("RUN_SERIAL") is True or props.get("RESOURCE_LOCK"):
        continue
    if "own_state" in labels and "e2e" in labels and not labels & {"live", "qemu"}:
        continue
    bad.append(f"{t['name']} [{','.join(sorted(labels))}]")
if n == 0:
    print("FAIL no test labelled live, root or qemu found: wrong build directory?")
    sys.exit(1)
if bad:
    print("FAIL these tests share the kernel's state but may run beside others under ctest -j"
          " (give them RUN_SERIAL or a RESOURCE_LOCK):")
    print("\n".join("  " + b for b in bad))
    sys.exit(1)
print(f"PASS all {n} tests labelled live, root or qemu are RUN_SERIAL, hold a RESOURCE_LOCK"
      " or are e2e tests with only their own state")
