#!/usr/bin/python3
"""Exact agreement of our PromQL engine with Prometheus 2.42 on the same input.

1. Builds exporter-shaped series (data.py) and writes them into a real Prometheus 2.42
   through its remote-write receiver (which, unlike OpenMetrics backfill, carries
   staleness markers). Checks that Prometheus holds exactly those samples.
2. Asks Prometheus every query of queries.promql as instant queries at many timestamps and
   as range queries, through its HTTP API.
3. Writes a PromQL test script: the same samples as `load` blocks, Prometheus' answers as
   `eval instant at` / `eval range from .. to .. step` expectations, `eval_fail` where
   Prometheus errors, `eval_ordered` where the order is defined (sort, topk, bottomk).
4. Checks the script against Prometheus itself: answers re-asked, and promtool's own engine
   (`promtool test rules`) run on the same notation for every instant expectation.
5. With --memcgtool, runs `memcgtool test promql --epsilon 1e-9 SCRIPT...`; its verdict is ours.

One script per data seed (--seeds 12,2: each seed shuffles the values, the gaps and the
jittered timestamps, and the instants each query is asked at).

Exit 0 on agreement, 1 on any disagreement or failed check, 77 if prometheus is missing.
"""

import argparse
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
from promtest import (STALE, Prometheus, fmt_duration_ms, fmt_labels, fmt_sequence,  # noqa: E402
                      fmt_value, labels_key, same_bits)

HERE = Path(__file__).resolve().parent
SKIP = 77

# Instant evaluation times (ms): on and between the 15 s slots, at the lookback's edges,
# around the staleness markers (1200 s, 700 s), after the end of the data (1800 s).
INSTANT_POOL = [0, 1000, 14999, 15000, 29000, 60000, 90500, 299999, 300000, 300001, 310000,
                450000, 466000, 600000, 612345, 700000, 700500, 705000, 750000, 899999, 900000,
                1000500, 1019999, 1020000, 1199999, 1200000, 1200001, 1215000, 1234567, 1500000,
                1500001, 1620000, 1799999, 1800000, 1801000, 1860000, 2099999, 2100000, 2100001,
                2400000]
# Range queries (start, end, step) in ms.
RANGE_POOL = [(0, 2400000, 60000), (100000, 1900000, 37000), (290000, 320000, 1000),
              (1190000, 1230000, 2500), (1234567, 1234567, 15000), (600000, 1100000, 15000),
              (1700000, 2200000, 20000), (0, 1800000, 45000)]
INSTANTS_PER_QUERY = 14
RANGES_PER_QUERY = 3


def log(*a):
    print(*a, flush=True)


def read_queries(path):
    out = []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    if len(set(out)) != len(out):
        dup = sorted({q for q in out if out.count(q) > 1})
        raise SystemExit("duplicate queries in %s: %s" % (path, dup))
    return out


# ------------------------------------------------------------------ ordering, ties


def _split_call(expr, name):
    """For a top-level call `name [by|without (..)] (args)` -> (grouping, args) or None."""
    s = expr.strip()
    if not s.startswith(name):
        return None
    rest = s[len(name):].lstrip()
    grouping = None
    for mod in ("by", "without"):
        if rest.startswith(mod):
            r = rest[len(mod):].lstrip()
            if not r.startswith("("):
                return None
            close = r.index(")")
            grouping = (mod, [x.strip() for x in r[1:close].split(",") if x.strip()])
            rest = r[close + 1:].lstrip()
    if not rest.startswith("(") or not rest.endswith(")"):
        return None
    body = rest[1:-1]
    args, depth, cur, quote = [], 0, "", None
    for ch in body:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return None  # the outer parens do not belong together
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    args.append(cur.strip())
    return grouping, args


def order_spec(expr):
    """(kind, k, inner, grouping) for sort/sort_desc/topk/bottomk at the top, else None."""
    for fn in ("sort_desc", "sort"):
        c = _split_call(expr, fn)
        if c and c[0] is None and len(c[1]) == 1 and expr.strip()[len(fn):].lstrip().startswith("("):
            return fn, None, c[1][0], None
    for fn in ("topk", "bottomk"):
        c = _split_call(expr, fn)
        if c and len(c[1]) == 2:
            try:
                k = int(float(c[1][0]))
            except ValueError:
                return None
            return fn, k, c[1][1], c[0]
    return None


def _rank_key(kind, v):
    # Prometheus ranks NaN last in topk/bottomk; map it onto the far end (a tie with an
    # infinity there counts as a tie: conservative).
    if kind in ("topk", "sort_desc"):
        return -math.inf if math.isnan(v) else -v
    return math.inf if math.isnan(v) else v


def _group_key(labels, grouping):
    if grouping is None:
        return ()
    mod, names = grouping
    if mod == "by":
        return tuple(labels.get(n, "") for n in names)
    return tuple(sorted((k, v) for k, v in labels.items() if k not in names and k != "__name__"))


def tie_verdict(kind, k, grouping, samples):
    """samples: [(labels, value)] of the inner expression at one time.

    Returns "ordered" (set and order are defined), "unordered" (the set is defined, the
    order within it is not) or "undefined" (ties decide which series topk/bottomk keep).
    """
    groups = {}
    for labels, v in samples:
        groups.setdefault(_group_key(labels, grouping), []).append(_rank_key(kind, v))
    verdict = "ordered"
    for keys in groups.values():
        keys.sort()
        n = len(keys) if k is None else min(k, len(keys))
        if k is not None and k < len(keys) and k > 0 and keys[k - 1] == keys[k]:
            return "undefined"
        if any(keys[i] == keys[i + 1] for i in range(n - 1)):
            verdict = "unordered"
    if grouping is not None and len(groups) > 1 and verdict == "ordered":
        verdict = "unordered"  # the order between groups is an implementation detail
    return verdict


# ------------------------------------------------------------------ answers -> script


def vector_samples(result):
    return [(r["metric"], float(r["value"][1])) for r in result]


def instant_lines(resp):
    d = resp["data"]
    if d["resultType"] == "scalar":
        return [fmt_value(float(d["result"][1]))]
    if d["resultType"] == "vector":
        return ["%s %s" % (fmt_labels(m), fmt_value(v)) for m, v in vector_samples(d["result"])]
    raise ValueError("unexpected result type %s" % d["resultType"])


def range_lines(resp, start, end, step):
    d = resp["data"]
    if d["resultType"] != "matrix":
        raise ValueError("unexpected result type %s" % d["resultType"])
    n = (end - start) // step + 1
    out = []
    for s in d["result"]:
        vals = [None] * n
        for t, v in s["values"]:
            t_ms = round(float(t) * 1000)
            idx, rem = divmod(t_ms - start, step)
            if rem or not 0 <= idx < n:
                raise ValueError("point at %s off the steps" % t)
            vals[idx] = float(v)
        while vals and vals[-1] is None:
            vals.pop()
        out.append("%s %s" % (fmt_labels(s["metric"]), fmt_sequence(vals)))
    return out


def load_blocks(blocks):
    out = []
    for b in blocks:
        out.append("load %s" % fmt_duration_ms(b.step_ms))
        for key in sorted(b.series):
            labels = b.series[key][0]
            out.append("  %s %s" % (fmt_labels(labels), fmt_sequence(b.row(key))))
        out.append("")
    return out


# ------------------------------------------------------------------ checks


def check_ingested(prom, blocks, end_ms):
    """Prometheus must hold exactly the samples we sent (stale markers are not returned)."""
    want = {}
    for b in blocks:
        for labels, samples in b.samples():
            want[labels_key(labels)] = [(t, v) for t, v in samples if v is not STALE]
    resp, _ = prom.instant('{__name__=~".+"}[%ds]' % (end_ms // 1000 + 1), end_ms)
    if resp.get("status") != "success":
        raise RuntimeError("raw sample read failed: %s" % resp)
    got = {}
    for s in resp["data"]["result"]:
        got[labels_key(s["metric"])] = [(round(float(t) * 1000), float(v)) for t, v in s["values"]]
    bad = []
    for k in want:
        g = got.get(k)
        w = want[k]
        if g is None or len(g) != len(w) or any(
                tg != tw or not (same_bits(vg, vw) or (math.isnan(vg) and math.isnan(vw)))
                for (tg, vg), (tw, vw) in zip(g, w)):
            bad.append(k)
    extra = set(got) - set(want)
    if bad or extra:
        raise RuntimeError("Prometheus does not hold the samples sent: %d differ (%s), %d extra"
                           % (len(bad), bad[:3], len(extra)))
    return sum(len(v) for v in want.values())


def promtool_check(promtool, blocks, end_ms, cases, workdir):
    """Runs promtool's engine on the same load notation (at 1 s) with our expectations.

    cases: [(expr, t_ms, [(labels, value)])]; answers with a NaN are left out (promtool
    compares with reflect.DeepEqual, and NaN != NaN). Returns (cases, cases differing only
    in the last bits, ok, promtool's output).
    """
    # evaluation_interval is also the default subquery step: 1m, as on the server (its
    # global default) and in the test-script runner.
    lines = ["rule_files: []", "evaluation_interval: 1m", "tests:", "  - interval: 1s",
             "    input_series:"]
    for b in blocks:
        f = b.step_ms // 1000
        for key in sorted(b.series):
            labels, vals = b.series[key]
            row = [None] * (max(vals) * f + 1)
            for i, v in vals.items():
                row[i * f] = v
            lines.append("      - series: %s" % yaml_str(fmt_labels(labels)))
            lines.append("        values: %s" % yaml_str(fmt_sequence(row)))
    lines.append("    promql_expr_test:")
    n = 0
    for expr, t_ms, samples in cases:
        if any(math.isnan(v) for _, v in samples):
            continue
        n += 1
        lines.append("      - expr: %s" % yaml_str(expr))
        lines.append("        eval_time: %s" % fmt_duration_ms(t_ms))
        if not samples:
            lines.append("        exp_samples: []")
            continue
        lines.append("        exp_samples:")
        for labels, v in samples:
            lines.append("          - labels: %s" % yaml_str(fmt_labels(labels) if labels else "{}"))
            lines.append("            value: %s" % yaml_float(v))
    # One case after the last eval time so that promtool loads every sample.
    lines += ["      - expr: vector(1)", "        eval_time: %s" % fmt_duration_ms(end_ms + 3600_000),
              "        exp_samples:", "          - labels: '{}'", "            value: 1"]
    path = os.path.join(workdir, "promtool_unittest.yml")
    Path(path).write_text("\n".join(lines) + "\n")
    p = subprocess.run([promtool, "test", "rules", path], capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    if p.returncode == 0:
        return n, 0, True, out
    # promtool compares exactly, and its loader creates series in map order, so sums come
    # out in a different order than on the server: accept differences in the last bits.
    cases = re.findall(r"expr: (.*), time: (\S+),\n\s+exp: (.*)\n\s+got: (.*)\n", out)
    if not cases or out.count("expr: ") != len(cases):
        return n, 0, False, out
    for _, _, exp, got in cases:
        e, g = _parse_promtool_samples(exp), _parse_promtool_samples(got)
        if len(e) != len(g) or any(le != lg or not _close(ve, vg, 1e-9) for (le, ve), (lg, vg) in zip(e, g)):
            return n, len(cases), False, out
    return n, len(cases), True, out


def _parse_promtool_samples(text):
    pat = r'(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\}) (\S+?)(?:, |$)'
    return [(lab, float(v)) for lab, v in re.findall(pat, text.strip())]


def _close(a, b, rel):
    if a == b:
        return True
    return abs(a - b) <= rel * max(abs(a), abs(b))


def yaml_str(s):
    return "'" + s.replace("'", "''") + "'"


def yaml_float(v):
    if math.isinf(v):
        return "+.inf" if v > 0 else "-.inf"
    r = repr(v)
    return r if ("e" in r or "." in r) else r + ".0"


# ------------------------------------------------------------------ main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the generated test scripts")
    ap.add_argument("--prometheus", default="prometheus")
    ap.add_argument("--promtool", default="promtool")
    ap.add_argument("--memcgtool", help="memcgtool binary; without it only Prometheus' side runs")
    ap.add_argument("--queries", default=str(HERE / "queries.promql"))
    ap.add_argument("--seeds", default="12", help="data seeds, comma-separated: one script each")
    ap.add_argument("--epsilon", default="1e-9")
    ap.add_argument("--no-self-check", action="store_true")
    args = ap.parse_args()

    prom_bin = shutil.which(args.prometheus)
    if prom_bin is None:
        log("SKIPPED: prometheus not installed (scripts/deps.sh test)")
        return SKIP
    # A ctest timeout or ^C ends us through SIGTERM/SIGINT: unwind so the server stops.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    queries = read_queries(args.queries)
    scripts = []
    for seed in [int(x) for x in args.seeds.split(",") if x.strip()]:
        path = generate(args, prom_bin, queries, seed, out_dir)
        if path is None:
            return 1
        scripts.append(str(path))

    if not args.memcgtool:
        log("no --memcgtool: Prometheus' side only")
        return 0
    # --no-range-check: every expectation here is an answer Prometheus gave; the runner's
    # extra check (an instant eval must also be the middle step of t-1m..t+1m) would
    # compare against answers nobody asked Prometheus for, and does not hold for @ start()
    # / end() or where a step of that range errors (many-to-many at t+1m). The range
    # behaviour is covered by the explicit `eval range` commands.
    cmd = [args.memcgtool, "test", "promql", "--epsilon", args.epsilon, "--no-range-check"] + scripts
    log("running: %s" % " ".join(cmd))
    p = subprocess.run(cmd)
    log("memcgtool exit %d; scripts: %s" % (p.returncode, " ".join(scripts)))
    return 0 if p.returncode == 0 else 1


def generate(args, prom_bin, queries, seed, out_dir):
    """Prometheus' answers on seed's data as a test script; its path, None on a failed check."""
    blocks, end_ms = data.build(seed)
    script_path = out_dir / ("agreement_seed%d.test" % seed)
    rnd = random.Random(seed)
    evals = []  # script text blocks
    promtool_cases = []
    recheck = []  # (kind, params, response)
    stats = {"instant": 0, "range": 0, "fail": 0, "ordered": 0, "skipped_ties": 0}
    times_seen = set()
    with Prometheus(prom_bin, tmp_parent=str(out_dir)) as prom:
        # Send in time windows, every series in order: the head only takes in-order samples.
        all_series = [s for b in blocks for s in b.samples()]
        win = 120_000
        for w0 in range(0, end_ms + 1, win):
            batch = [(l, [(t, v) for t, v in s if w0 <= t < w0 + win]) for l, s in all_series]
            prom.remote_write([(l, s) for l, s in batch if s])
        n_samples = check_ingested(prom, blocks, end_ms)
        log("seed %d: prometheus holds the %d samples of %d series (+ staleness markers)"
            % (seed, n_samples, len(all_series)))

        for qi, q in enumerate(queries):
            spec = order_spec(q)
            times = sorted(rnd.sample(INSTANT_POOL, INSTANTS_PER_QUERY))
            for t in times:
                resp, _ = prom.instant(q, t)
                at = fmt_duration_ms(t)
                if resp["status"] != "success":
                    if resp.get("errorType") == "bad_data" and "parse error" in resp.get("error", ""):
                        raise SystemExit("Prometheus cannot parse %r: %s" % (q, resp["error"]))
                    evals.append("eval_fail instant at %s %s\n" % (at, q))
                    stats["fail"] += 1
                    times_seen.add(t)
                    continue
                cmd = "eval"
                if spec:
                    kind, k, inner, grouping = spec
                    iresp, _ = prom.instant(inner, t)
                    verdict = "unordered"
                    if iresp["status"] == "success" and iresp["data"]["resultType"] == "vector":
                        verdict = tie_verdict(kind, k, grouping, vector_samples(iresp["data"]["result"]))
                    if verdict == "undefined":
                        stats["skipped_ties"] += 1
                        continue
                    if verdict == "ordered":
                        cmd = "eval_ordered"
                        stats["ordered"] += 1
                lines = instant_lines(resp)
                evals.append("%s instant at %s %s\n%s" % (cmd, at, q, "".join("  %s\n" % l for l in lines)))
                stats["instant"] += 1
                times_seen.add(t)
                d = resp["data"]
                samples = ([({}, float(d["result"][1]))] if d["resultType"] == "scalar"
                           else vector_samples(d["result"]))
                promtool_cases.append((q, t, samples))
                if rnd.random() < 0.1:
                    recheck.append(("instant", (q, t), resp))
            for start, end, step in rnd.sample(RANGE_POOL, RANGES_PER_QUERY):
                resp, _ = prom.range(q, start, end, step)
                head = "range from %s to %s step %s %s" % (
                    fmt_duration_ms(start), fmt_duration_ms(end), fmt_duration_ms(step), q)
                if resp["status"] != "success":
                    evals.append("eval_fail %s\n" % head)
                    stats["fail"] += 1
                    continue
                if spec and spec[0] in ("topk", "bottomk"):
                    iresp, _ = prom.range(spec[2], start, end, step)
                    if ranges_tied(spec, iresp):
                        stats["skipped_ties"] += 1
                        continue
                lines = range_lines(resp, start, end, step)
                evals.append("eval %s\n%s" % (head, "".join("  %s\n" % l for l in lines)))
                stats["range"] += 1
                if rnd.random() < 0.1:
                    recheck.append(("range", (q, start, end, step), resp))

        # Prometheus agrees with itself: the same questions again, the same answers.
        for kind, params, first in recheck:
            again, _ = prom.instant(*params) if kind == "instant" else prom.range(*params)
            if canonical(again) != canonical(first):
                log("FAIL: Prometheus answered %s %r differently the second time" % (kind, params))
                return None
        log("prometheus re-asked %d queries: same answers" % len(recheck))

    header = [
        "# Generated by tests/promql/agreement/agreement.py (seed %d): do not edit." % seed,
        "# The samples below were written into Prometheus 2.42 by remote write; every",
        "# expectation is Prometheus' own answer through its HTTP API.",
        "",
    ]
    script_path.write_text("\n".join(header + load_blocks(blocks)) + "\n" + "\n".join(evals))
    log("wrote %s: %d queries, %d instant evals at %d distinct timestamps, %d range evals, "
        "%d eval_fail, %d eval_ordered, %d left out (ties make topk's choice arbitrary)"
        % (script_path, len(queries), stats["instant"], len(times_seen), stats["range"],
           stats["fail"], stats["ordered"], stats["skipped_ties"]))

    if not args.no_self_check:
        promtool = shutil.which(args.promtool)
        if promtool is None:
            log("promtool missing: the promtool cross-check did not run")
        else:
            with tempfile.TemporaryDirectory(prefix="memcg_exporter_test_promql_", dir=str(out_dir)) as tmp:
                n, inexact, ok, output = promtool_check(promtool, blocks, end_ms, promtool_cases, tmp)
                if not ok:
                    log(output[-6000:])
                    log("FAIL: promtool's engine disagrees with the Prometheus server on the same notation")
                    return None
                log("promtool test rules agrees on %d instant expectations (same load notation; "
                    "%d differ in the last bits: summation order)" % (n, inexact))
    return script_path


def canonical(resp):
    """An answer with its series in label order (Prometheus builds some from maps)."""
    d = resp.get("data")
    if not d or d.get("resultType") not in ("vector", "matrix"):
        return resp
    return {**resp, "data": {**d, "result": sorted(d["result"], key=lambda s: labels_key(s["metric"]))}}


def ranges_tied(spec, iresp):
    kind, k, _, grouping = spec
    if iresp["status"] != "success":
        return True
    by_t = {}
    for s in iresp["data"]["result"]:
        for t, v in s["values"]:
            by_t.setdefault(t, []).append((s["metric"], float(v)))
    return any(tie_verdict(kind, k, grouping, smp) == "undefined" for smp in by_t.values())


if __name__ == "__main__":
    sys.exit(main())
