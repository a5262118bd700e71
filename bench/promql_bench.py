#!/usr/bin/python3
"""PromQL side by side: our engine and Prometheus 2.42 on the same data, in one run.

Starts a Prometheus on loopback (temp storage, removed at the end), runs promql_bench,
which generates the exporter-shaped data, writes it into Prometheus by remote write and
times our engine on it; then asks Prometheus the same queries (instant at the end, range
over the last 14 min at 15 s) with stats=all, checks both answered the same, and prints:

  query, kind, ours median ms, Prometheus median ms (API stats: evalTotalTime),
  Prometheus median wall ms (HTTP on loopback, JSON included), ratio (ours / API stats).

usage: promql_bench.py --bench build/bench/promql_bench [--cgroups 1000] [--runs 7]
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "promql" / "agreement"))
from promtest import Prometheus, labels_key  # noqa: E402



def parse_labels(text):
    """{a="b", c="d"} as labelsString prints it (Go-quoted values) -> dict."""
    out, i, s = {}, 1, text
    while i < len(s) - 1:
        eq = s.index("=", i)
        name = s[i:eq].strip(" ,")
        j = eq + 2
        val = []
        while s[j] != '"':
            if s[j] == "\\":
                j += 1
                val.append({"n": "\n", "t": "\t"}.get(s[j], s[j]))
            else:
                val.append(s[j])
            j += 1
        out[name] = "".join(val)
        i = j + 1
    return out


def read_ours(path):
    ours = {}
    for line in Path(path).read_text().splitlines():
        parts = line.split("\t")
        q, kind, labels = parts[0], parts[1], parse_labels(parts[2])
        pts = {}
        for p in parts[3:]:
            t, v = p.split("=")
            pts[int(t)] = float(v)
        ours.setdefault((q, kind), {})[labels_key(labels)] = pts
    return ours


def prom_answer(resp):
    d = resp["data"]
    out = {}
    for s in d["result"]:
        if d["resultType"] == "vector":
            t, v = s["value"]
            out[labels_key(s["metric"])] = {round(float(t) * 1000): float(v)}
        else:
            out[labels_key(s["metric"])] = {round(float(t) * 1000): float(v) for t, v in s["values"]}
    return out


def same(a, b, rel=1e-9):
    if set(a) != set(b):
        return "series differ: %d ours, %d Prometheus's, e.g. %s" % (
            len(a), len(b), sorted(set(a) ^ set(b))[:1])
    for k in a:
        pa, pb = a[k], b[k]
        if set(pa) != set(pb):
            return "timestamps differ for %s" % (k,)
        for t in pa:
            x, y = pa[t], pb[t]
            if not (x == y or (math.isnan(x) and math.isnan(y)) or
                    abs(x - y) <= rel * max(abs(x), abs(y))):
                return "value differs for %s at %d: ours %r, Prometheus %r" % (k, t, x, y)
    return None


def drive(args, prom, bench, results):
    """Alternates timed runs: ours (in promql_bench), then Prometheus', per query and kind."""
    def line():
        text = bench.stdout.readline()
        if not text:
            raise RuntimeError("promql_bench ended early (exit %s)" % bench.wait())
        return json.loads(text)

    meta = line()["data"]
    rw = line()["remote_write_s"]
    print("data: %d series, %d samples (%d cgroups, %d min at 1 s); generated in %.1f s, "
          "remote write into Prometheus %.1f s" % (meta["series"], meta["samples"], args.cgroups,
                                                   args.minutes, meta["generate_s"], rw), flush=True)
    # Prometheus holds every series before we time it.
    resp, _ = prom.instant("count({__name__=~\"memcg_.+\"})", meta["end_ms"])
    n = int(float(resp["data"]["result"][0]["value"][1]))
    if n != meta["series"]:
        print("promql_bench: Prometheus holds %d series, we sent %d" % (n, meta["series"]), file=sys.stderr)
        return None
    end = meta["end_ms"]
    rstart, rstep = meta["t0_ms"] + 60_000, 15_000
    rows, summaries = [], []
    while True:
        text = bench.stdout.readline()
        if not text:
            break
        nxt = json.loads(text)["next"]  # promql_bench names each query before its runs
        expr, kind = nxt["expr"], nxt["kind"]
        api, wall, answer = [], [], None
        for _ in range(args.runs):
            bench.stdin.write("go\n")
            bench.stdin.flush()
            line()  # our run is done
            resp, w = (prom.instant(expr, end, stats=True) if kind == "instant"
                       else prom.range(expr, rstart, end, rstep, stats=True))
            if resp.get("status") != "success":
                print("promql_bench: Prometheus failed %s: %s" % (expr, resp), file=sys.stderr)
                return None
            api.append(resp["data"]["stats"]["timings"]["evalTotalTime"] * 1000)
            wall.append(w * 1000)
            answer = resp
        ours = line()
        if ours["expr"] != expr or ours["kind"] != kind:
            raise RuntimeError("promql_bench runs %s %s, expected %s %s" % (ours["expr"], ours["kind"], expr, kind))
        summaries.append((ours, answer))
        pm = statistics.median(api)
        rows.append((expr, kind, ours["median_ms"], pm, statistics.median(wall), ours["median_ms"] / pm))
    if bench.wait() != 0:
        print("promql_bench failed", file=sys.stderr)
        return None
    mine = read_ours(results)
    for ours, answer in summaries:
        diff = same(mine.get((ours["query"], ours["kind"]), {}), prom_answer(answer))
        if diff:
            print("promql_bench: %s %s: the engines disagree: %s" % (ours["query"], ours["kind"], diff),
                  file=sys.stderr)
            return None
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the promql_bench binary")
    ap.add_argument("--prometheus", default="prometheus")
    ap.add_argument("--cgroups", type=int, default=1000)
    ap.add_argument("--minutes", type=int, default=15)
    ap.add_argument("--kinds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    prom_bin = shutil.which(args.prometheus)
    if prom_bin is None:
        print("promql_bench: prometheus not installed (scripts/deps.sh bench)", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory(prefix="memcg_exporter_bench_promql_") as tmp, \
            Prometheus(prom_bin, tmp_prefix="memcg_exporter_bench_promql_") as prom:
        results = os.path.join(tmp, "ours.tsv")
        cmd = [args.bench, "--cgroups", str(args.cgroups), "--minutes", str(args.minutes),
               "--kinds", str(args.kinds), "--runs", str(args.runs), "--interleave",
               "--remote-write", prom.url("/api/v1/write"), "--results", results]
        print("running:", " ".join(cmd), flush=True)
        bench = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            rows = drive(args, prom, bench, results)
        finally:
            if bench.poll() is None:
                bench.kill()
            bench.wait()
        if rows is None:
            return 1

    print()
    print("%-100s %-8s %10s %12s %12s %7s" % ("query", "kind", "ours ms", "prom API ms", "prom wall ms", "ratio"))
    for expr, kind, o, pm, pw, r in rows:
        print("%-100s %-8s %10.2f %12.2f %12.2f %7.2f" % (expr, kind, o, pm, pw, r))
    print("(medians of %d runs, ours and Prometheus' alternating; range = last 14 min at 15 s; "
          "ratio = ours / Prometheus API evalTotalTime; answers checked equal within 1e-9)" % args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
