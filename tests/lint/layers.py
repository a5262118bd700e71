#!/usr/bin/env python3
"""The product's folders as layers: counts include lines that run up the
layers and include cycles between files, and fails on any.

Usage: tests/lint/layers.py [SOURCE_DIR]   (lint.layers runs it)

A folder may include its own files and those of folders listed before it in
LAYERS. Only web/ and the composition root (exporter/) may include web/, and
only web/ the HTTP server and the route table; only the walk scheduler starts
discovery walks. Prints every offending line and the counts, so the figure in
a review is the output of one command.
"""
import os
import re
import sys

# Lowest first: the order of add_subdirectory() in the top CMakeLists.txt.
LAYERS = ["common", "metrics", "cgroupfs", "tracing", "collectors", "controller",
          "promql", "history", "rules", "web", "exporter", "tools"]
WEB_USERS = {"web", "exporter"}
# The HTTP server and the route table: included by web/ alone (the
# composition root hands web/front.h its parts and never sees either).
WEB_ONLY = {"web/http_server.h", "web/routes.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Discovery::refresh() starts a walk: only the walk scheduler calls it.
WALK = re.compile(r'(\.|->)refresh\(\)')
WALK_OWNER = "cgroupfs/walk_scheduler.cpp"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    rank = {name: i for i, name in enumerate(LAYERS)}
    edges = {}      # file -> included project files
    upward = []     # (file, line, included)
    web_uses = []
    walks = []
    files = 0
    for layer in LAYERS:
        for dirpath, _, names in os.walk(os.path.join(root, layer)):
            for n in sorted(names):
                if not n.endswith((".h", ".cpp", ".c")):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, root)
                files += 1
                edges[rel] = []
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        if WALK.search(line) and rel != WALK_OWNER and \
                                not line.lstrip().startswith("//"):
                            walks.append((rel, lineno))
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        top = inc.split("/", 1)[0]
                        if top not in rank:
                            continue  # a system or generated header
                        edges[rel].append(inc)
                        if rank[top] > rank[layer]:
                            upward.append((rel, lineno, inc))
                        if (top == "web" and layer not in WEB_USERS) or \
                                (inc in WEB_ONLY and layer != "web"):
                            web_uses.append((rel, lineno, inc))

    # Cycles between files: depth-first search, a back edge is a cycle.
    cycles = []
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in edges.get(node, []):
            if nxt not in edges:
                continue  # generated (common/version.h) or missing: the compiler says
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    sys.setrecursionlimit(10000)
    for node in sorted(edges):
        if node not in state:
            visit(node, [])

    for rel, lineno, inc in upward:
        print(f"{rel}:{lineno}: includes {inc}, a layer above it")
    for rel, lineno, inc in web_uses:
        print(f"{rel}:{lineno}: includes {inc}; not allowed outside web/")
    for rel, lineno in walks:
        print(f"{rel}:{lineno}: starts a discovery walk; ask the walk scheduler")
    for c in cycles:
        print("include cycle: " + " -> ".join(c))
    total = sum(len(v) for v in edges.values())
    print(f"{files} files, {total} project includes: {len(upward)} upward, "
          f"{len(web_uses)} of web/ from outside it, {len(cycles)} cycles, "
          f"{len(walks)} walks started outside {WALK_OWNER}")
    return 1 if upward or web_uses or cycles or walks else 0


if __name__ == "__main__":
    sys.exit(main())
