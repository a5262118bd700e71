#!/usr/bin/env python3
"""Prints the CMake targets a configured build must make for the tests of
`ctest -L LABELS` to run: memcg_tests_<kind> for each kind of gtest binary
(cmake/MemcgTesting.cmake) and every executable of the build tree that a
script test's command names (memcgtool, helpers), by its file name.

    scripts/ctest_targets.py BUILD_DIR LABEL_REGEX

scripts/test.sh's instrumented stages build only these: a unit test that
runs a tool is never left without it ("Not Run"), and nothing else is
compiled.
"""
import json
import os
import re
import subprocess
import sys

build, labels = os.path.abspath(sys.argv[1]), re.compile(sys.argv[2])
out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                     check=True, capture_output=True, text=True).stdout
targets = set()
for t in json.loads(out).get("tests", []):
    props = {p["name"]: p.get("value") for p in t.get("properties", [])}
    if not any(labels.fullmatch(l) for l in props.get("LABELS") or []):
        continue
    for word in t.get("command") or []:
        for path in re.findall(re.escape(build) + r"/[^\s'\";&|)]+", word):
            name = os.path.basename(path)
            if "." not in name and not path.endswith("/"):
                targets.add(name)
# Only names the build knows as targets (an output directory is not one).
helptext = subprocess.run(["cmake", "--build", build, "--target", "help"],
                          capture_output=True, text=True).stdout
known = set(re.findall(r"^\.\.\. (\S+)", helptext, re.M))  # Makefiles
known |= set(re.findall(r"^([\w.+-]+): \w+", helptext, re.M))  # Ninja
targets &= known
for kind in ("unit", "live"):
    if labels.fullmatch(kind):
        targets.add("memcg_tests_" + kind)
print("\n".join(sorted(targets)))
