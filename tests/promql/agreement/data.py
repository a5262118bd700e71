"""The series the agreement test loads into Prometheus and writes into the test script.

Shaped like the exporter's (memcg_* names, cgroup/kind/le labels, the reclaim stall
histogram with the exporter's bucket bounds), with the cases that make engines disagree:
counter resets, gaps longer and shorter than the lookback, staleness markers (a cgroup
removed, a series coming back), +Inf limits, NaN/Inf/-0/denormal gauges, non-monotonic and
+Inf-less histograms, irregular (jittered) scrape timestamps.

Every sample sits on a slot of its load block: t = i * step from t = 0, as the test-script
format loads them. Deterministic for a given seed.
"""

import math
import random
import re
from pathlib import Path

from promtest import STALE, go_float

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[2]


def stall_bounds_seconds():
    """The exporter's stall bucket bounds, read from their one definition (tracing/)."""
    text = (SOURCE / "tracing" / "series_table.h").read_text()
    m = re.search(r"kStallBoundsNs\s*=\s*\{([^}]*)\}", text)
    if not m:
        raise RuntimeError("kStallBoundsNs not found in tracing/series_table.h")
    return [int(x.replace("'", "")) / 1e9 for x in m.group(1).split(",") if x.strip()]


class Block:
    """One `load <step>` block: series whose samples sit at multiples of step."""

    def __init__(self, step_ms, slots):
        self.step_ms = step_ms
        self.slots = slots  # slot indexes 0..slots-1
        self.series = {}  # labels tuple -> (labels dict, {slot: value})

    def add(self, labels, values):
        key = tuple(sorted(labels.items()))
        if key in self.series:
            raise ValueError("duplicate series %r" % (labels,))
        self.series[key] = (dict(labels), dict(values))

    def samples(self):
        """[(labels, [(t_ms, value)])], series in label order (as the script lists them).

        Prometheus iterates a selector's series in the order they were created, and sums
        in that order: sending them in script order keeps the last bits comparable.
        """
        out = []
        for key in sorted(self.series):
            labels, vals = self.series[key]
            out.append((labels, [(i * self.step_ms, vals[i]) for i in sorted(vals)]))
        return out

    def row(self, key):
        vals = self.series[key][1]
        return [vals.get(i) for i in range(max(vals) + 1)] if vals else []


CGROUPS = ["/", "/kubepods", "/kubepods/pod-a", "/batch", '/system.slice/odd"name\\x.service']


def build(seed=12):
    rnd = random.Random(seed)
    end_s = 1800  # 30 minutes of data
    a = Block(15_000, end_s // 15 + 1)  # the exporter scraped every 15 s
    b = Block(1_000, end_s + 1)  # irregular scrapes, on 1 s slots

    inst = {"instance": "host-1:9851", "job": "memcg"}

    # ---- failcnt: counters with resets, a removed cgroup (stale), a gap, a late start.
    for n, cg in enumerate(CGROUPS):
        vals = {}
        c = float(rnd.randint(0, 50))
        for i in range(a.slots):
            t = i * 15
            if cg == "/batch" and not (300 <= t < 1200):
                if t == 1200:
                    vals[i] = STALE  # the cgroup was removed
                continue
            if cg == "/kubepods/pod-a" and 600 < t < 1020:
                continue  # 7 min without scrapes: longer than the 5 min lookback
            if cg == "/kubepods" and t in (450, 465):
                continue  # a short gap
            if rnd.random() < 0.06 and i > 0:
                c = float(rnd.randint(0, 3))  # counter reset (the cgroup was recreated)
            else:
                c += rnd.choice([0, 0, 1, 2, 3, 7, 40])
            vals[i] = c
        a.add({"__name__": "memcg_memory_failcnt_total", "cgroup": cg, **inst}, vals)

    # ---- usage and limit: gauges; "/" is unlimited (+Inf); one limit changes.
    for cg in CGROUPS:
        usage, limit = {}, {}
        base = rnd.randint(1 << 28, 1 << 33)
        lim = math.inf if cg == "/" else float(base * 2 + rnd.randint(0, 4096) * 4096)
        for i in range(a.slots):
            t = i * 15
            if cg == "/batch" and not (300 <= t < 1200):
                if t == 1200:
                    usage[i] = STALE
                    limit[i] = STALE
                continue
            if cg == "/kubepods/pod-a" and 600 < t < 1020:
                continue
            if cg == "/kubepods" and t == 900:
                lim = lim / 2 + 0.5  # resized; not a whole number of bytes on purpose
            u = base + rnd.randint(-(1 << 26), 1 << 26) + rnd.choice([0.0, 0.1, 0.25, 1 / 3])
            usage[i] = float(u)
            limit[i] = lim
        a.add({"__name__": "memcg_memory_usage_bytes", "cgroup": cg, **inst}, usage)
        a.add({"__name__": "memcg_memory_limit_bytes", "cgroup": cg, **inst}, limit)

    # ---- the stall histogram: cumulative buckets from simulated stalls.
    bounds = stall_bounds_seconds()
    for cg in ["/kubepods", "/kubepods/pod-a", "/batch"]:
        for kind in ["direct", "memcg"]:
            counts = [0] * (len(bounds) + 1)
            total = 0.0
            series = {le: {} for le in range(len(bounds) + 1)}
            sums, cnts = {}, {}
            mu = math.log(2e-4 if kind == "direct" else 3e-5)
            for i in range(a.slots):
                t = i * 15
                if cg == "/batch" and not (300 <= t < 1200):
                    if t == 1200:
                        for le in series:
                            series[le][i] = STALE
                        sums[i] = cnts[i] = STALE
                    continue
                if cg == "/kubepods/pod-a" and kind == "memcg" and t == 1500:
                    counts = [0] * (len(bounds) + 1)  # reset: the exporter restarted
                    total = 0.0
                burst = rnd.random() < 0.3
                for _ in range(rnd.randint(0, 30 if burst else 3)):
                    d = math.exp(rnd.gauss(mu, 1.6))
                    j = next((k for k, bd in enumerate(bounds) if d <= bd), len(bounds))
                    counts[j] += 1
                    total += d
                run = 0
                for le in range(len(bounds) + 1):
                    run += counts[le]
                    series[le][i] = float(run)
                sums[i] = total
                cnts[i] = float(run)
            base = {"cgroup": cg, "kind": kind, **inst}
            for le in range(len(bounds) + 1):
                le_s = go_float(bounds[le]) if le < len(bounds) else "+Inf"
                a.add({"__name__": "memcg_vmscan_reclaim_stall_seconds_bucket", **base, "le": le_s},
                      series[le])
            a.add({"__name__": "memcg_vmscan_reclaim_stall_seconds_sum", **base}, sums)
            a.add({"__name__": "memcg_vmscan_reclaim_stall_seconds_count", **base}, cnts)

    # ---- histograms that are broken on purpose.
    # Non-monotonic buckets (histogram_quantile's monotonicity fix), and one without +Inf.
    for name, les, drop_inf in [("test_hist_nonmono_bucket", ["0.1", "0.5", "1", "+Inf"], False),
                                ("test_hist_noinf_bucket", ["0.1", "0.5", "1"], True)]:
        cum = {le: 0.0 for le in les}
        rows = {le: {} for le in les}
        for i in range(a.slots):
            inc = [rnd.randint(0, 5) for _ in les]
            run = 0.0
            for le, d in zip(les, inc):
                run += d
                cum[le] += run
                rows[le][i] = cum[le]
            if name == "test_hist_nonmono_bucket" and i % 7 == 3:
                rows["0.5"][i] = rows["0.5"][i] + 9.0  # 0.5 above 1: not monotonic
        for le in les:
            a.add({"__name__": name, "le": le, "job": "test"}, rows[le])

    # ---- awkward floats.
    awkward = {
        "nan": lambda i: math.nan,
        "inf": lambda i: math.inf,
        "neginf": lambda i: -math.inf,
        "huge": lambda i: 1.7976931348623157e308 if i % 2 else 1e308,
        "tiny": lambda i: 5e-324 * (i % 4),
        "negzero": lambda i: -0.0,
        "third": lambda i: i / 3,
        "mixed": lambda i: [0.1, math.nan, -math.inf, 2.5, math.inf, -7.25e-05][i % 6],
    }
    for case, f in awkward.items():
        a.add({"__name__": "memcg_test_awkward", "case": case, "job": "test"},
              {i: float(f(i)) for i in range(a.slots)})

    # ---- jittered scrapes on 1 s slots: reclaim counters and a task gauge.
    for cg in ["/kubepods", "/kubepods/pod-a"]:
        for kind in ["direct", "memcg"]:
            vals = {}
            c = 0.0
            t = rnd.randint(0, 4)
            while t <= end_s:
                c += rnd.randint(0, 20)
                if rnd.random() < 0.03:
                    c = float(rnd.randint(0, 2))
                vals[t] = c
                t += rnd.choice([3, 4, 5, 5, 5, 6, 7]) + (40 if rnd.random() < 0.02 else 0)
            b.add({"__name__": "memcg_vmscan_reclaim_total", "cgroup": cg, "kind": kind, **inst}, vals)
    for cg in ["/kubepods", "/batch"]:
        vals = {}
        t = rnd.randint(0, 3)
        n = float(rnd.randint(1, 40))
        while t <= end_s:
            if cg == "/batch" and 700 <= t < 1000:
                vals[700] = STALE  # gone for a while, then back under the same labels
                t = 1000 + rnd.randint(0, 3)
                continue
            n = max(0.0, n + rnd.randint(-3, 3))
            vals[t] = n
            t += rnd.choice([4, 5, 6])
        b.add({"__name__": "memcg_cgroup_tasks", "cgroup": cg, **inst}, vals)

    return [a, b], end_s * 1000
