#!/usr/bin/env python3
"""PromQL in alerts/ and dashboards/: find it, substitute Grafana's variables, name
the metrics it reads, run it against a Prometheus.

  dashboards_promql.py names --table T.json [--table ...] --rules R.yml... --dashboards D.json...
      every metric name the rules and dashboards read must be in the exporter's metric
      table (GET /api/v1/metrics; several tables are united), and every label they match
      on or group by must be one of those metrics' labels (or job, instance, le).
      Recording-rule names (level:metric:ops) and Prometheus' own series (up, ALERTS,
      ...) are not looked up; nor are labels of expressions that read them.
  dashboards_promql.py queries --prometheus URL --dashboards D.json... --cgroup LABEL
      [--cgroup LABEL...] --scrape-interval 1s --range 120 [--core UID:TITLE[:REFIDS]...]
      every query of every dashboard (panel targets, template variables, annotations,
      and the exporter-API URLs of Infinity targets) with the variables substituted as
      Grafana does (query variables run in order; cgroup = the --cgroup values, which the
      variable must list; the others their first value), panels as range queries over
      the last --range seconds; any error fails. The --core panels' targets (all, or
      the listed refIds) must return data for the first --cgroup.
  dashboards_promql.py lint --dashboards D.json... [--provisioning P.yml...]
      shape checks without a server (schema, uid, variables, units, $instance scope).
  dashboards_promql.py list --dashboards D.json...
      prints every expression after substitution (for a human).

Python 3 standard library only, plus python3-yaml for the rule files.
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# --------------------------------------------------------------------------------------
# Grafana's variable formats (public/app/plugins/datasource/prometheus: a multi-value or
# include-all variable inside a query is joined as (a|b) with every value regex-escaped;
# a single value is only escaped for the string literal).


def regex_escape(value):
    """Grafana's prometheusSpecialRegexEscape: a literal inside a PromQL string that is a
    regex (the PromQL string unescapes \\\\ to \\, so a dot becomes \\\\. in the query)."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), value)


def regular_escape(value):
    """Grafana's prometheusRegularEscape."""
    return value.replace("\\", "\\\\").replace("'", "\\\\'")


def format_variable(values, multi):
    if multi:
        if len(values) == 1:
            return regex_escape(values[0])
        return "(" + "|".join(regex_escape(v) for v in values) + ")"
    return regular_escape(values[0])


def parse_duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text)
    if not m:
        raise ValueError("bad duration %r" % text)
    n = float(m.group(1))
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def fmt_duration(seconds):
    ms = int(round(seconds * 1000))
    if ms % 1000:
        return "%dms" % ms
    s = ms // 1000
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s % n == 0 and s >= n:
            return "%d%s" % (s // n, unit)
    return "%ds" % s


# Grafana's rangeutil.roundInterval: (below this many ms, use this many ms)
ROUND_INTERVAL_MS = [
    (10, 1), (15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500), (1500, 1000),
    (3500, 2000), (7500, 5000), (12500, 10000), (17500, 15000), (25000, 20000), (45000, 30000),
    (90000, 60000), (210000, 120000), (450000, 300000), (750000, 600000), (1050000, 900000),
    (1500000, 1200000), (2700000, 1800000), (5400000, 3600000), (9000000, 7200000),
    (16200000, 10800000), (32400000, 21600000), (86400000, 43200000), (604800000, 86400000),
    (1814400000, 604800000), (3628800000, 2592000000),
]


def grafana_interval(range_s, max_points, min_interval_s):
    """$__interval: range / max data points, rounded as Grafana's roundInterval does,
    never below the data source's min interval (its scrape interval)."""
    raw_ms = range_s * 1000 / max(max_points, 1)
    rounded = next((r for limit, r in ROUND_INTERVAL_MS if raw_ms < limit), 31536000000)
    return max(rounded / 1000, min_interval_s)


class Context:
    """Values of Grafana's built-in and dashboard variables for one query run."""

    def __init__(self, range_s, scrape_s, variables, max_points=1000):
        self.range_s = range_s
        self.scrape_s = scrape_s
        self.interval_s = grafana_interval(range_s, max_points, scrape_s)
        # Grafana: max($__interval + scrape interval, 4 * scrape interval)
        self.rate_interval_s = max(self.interval_s + scrape_s, 4 * scrape_s)
        self.variables = variables  # name -> (values list, multi bool)

    def builtins(self):
        return {
            "__rate_interval": fmt_duration(self.rate_interval_s),
            "__interval": fmt_duration(self.interval_s),
            "__interval_ms": str(int(self.interval_s * 1000)),
            "__range": fmt_duration(self.range_s),
            "__range_s": str(int(self.range_s)),
            "__range_ms": str(int(self.range_s * 1000)),
        }

    def substitute(self, expr):
        values = self.builtins()
        for name, (vals, multi) in self.variables.items():
            values[name] = format_variable(vals, multi)

        def repl(m):
            name = m.group(1) or m.group(2) or m.group(3)
            if name not in values:
                raise KeyError("unknown variable $%s in %r" % (name, expr))
            return values[name]

        # ${name}, ${name:fmt} (format ignored: only the default is used here), [[name]], $name
        return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", repl, expr)


# --------------------------------------------------------------------------------------
# Where the PromQL is in a dashboard.


def walk_panels(panels):
    for p in panels or []:
        yield p
        yield from walk_panels(p.get("panels"))


def dashboard_queries(dash):
    """(kind, where, expr, panel) for every PromQL expression of a dashboard."""
    out = []
    for p in walk_panels(dash.get("panels")):
        for t in p.get("targets", []) or []:
            if t.get("expr"):
                out.append(("panel", "%s / %s" % (p.get("title"), t.get("refId")), t["expr"], p))
            elif t.get("url"):  # the exporter's own API (Infinity data source)
                out.append(("url", "%s / %s" % (p.get("title"), t.get("refId")), t["url"], dict(t, title=p.get("title"))))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if q:
            out.append(("variable", v["name"], q, v))
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append(("annotation", a.get("name"), a["expr"], a))
    return out


LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(.*),\s*)?(\w+)\s*\)\s*$", re.S)
QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)
LABEL_NAMES = re.compile(r"^\s*label_names\(\s*(.*?)\s*\)\s*$", re.S)


def variable_promql(q):
    """The PromQL inside a variable query (label_values(expr, label), query_result(expr),
    or a bare expression), or None when it holds none (label_values(label))."""
    m = LABEL_VALUES.match(q)
    if m:
        return m.group(1)
    m = QUERY_RESULT.match(q)
    if m:
        return m.group(1)
    m = LABEL_NAMES.match(q)
    if m:
        return m.group(1) or None
    return q


# --------------------------------------------------------------------------------------
# Metric names in a PromQL expression.

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan", "start", "end",
}
AGGREGATORS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile",
}
TOKEN = re.compile(
    r'''(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)'''
    r"|(?P<num>(?:0x[0-9a-fA-F]+|\d[\w.]*))"
    r"|(?P<ident>[A-Za-z_:][\w:]*)"
    r"|(?P<sym>[{}()\[\],]|[^\s\w])"
    r"|(?P<ws>\s+)"
)


def analyze(expr):
    """(selectors, clause_labels): every vector selector as (metric name or None,
    [label names of its matchers]) and the label names of by / without / on / ignoring /
    group_left / group_right lists."""
    toks = [(m.lastgroup, m.group(0)) for m in TOKEN.finditer(expr) if m.lastgroup != "ws"]
    selectors = []
    clause = set()
    depth_bracket = 0

    def matchers(j):  # toks[j] == "{": label names up to the matching "}", and the index after
        labels, name = [], None
        j += 1
        while j < len(toks) and toks[j][1] != "}":
            if toks[j][0] == "ident" and j + 1 < len(toks) and toks[j + 1][1] in ("=", "!", "~", "=~"):
                if toks[j][1] == "__name__" and toks[j + 1][1] == "=" and toks[j + 2][0] == "str":
                    name = toks[j + 2][1][1:-1]
                else:
                    labels.append(toks[j][1])
            j += 1
        return labels, name, j + 1

    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else (None, None)
        if kind == "sym":
            if text == "[":
                depth_bracket += 1
            elif text == "]":
                depth_bracket -= 1
            elif text == "{" and not depth_bracket:
                labels, name, i = matchers(i)
                selectors.append((name, labels))
                continue
            i += 1
            continue
        if depth_bracket or kind != "ident":
            i += 1
            continue
        low = text.lower()
        if low in ("by", "without", "on", "ignoring", "group_left", "group_right"):
            j = i + 1
            if j < len(toks) and toks[j][1] == "(":
                j += 1
                while j < len(toks) and toks[j][1] != ")":
                    if toks[j][0] == "ident":
                        clause.add(toks[j][1])
                    j += 1
            i = j + 1
            continue
        if low in KEYWORDS:
            i += 1
            continue
        if nxt[1] == "(" or (text in AGGREGATORS and nxt[1] and nxt[1].lower() in ("by", "without")):
            i += 1  # a function or an aggregation
            continue
        if nxt[1] == "{":
            labels, _, i = matchers(i + 1)
            selectors.append((text, labels))
            continue
        selectors.append((text, []))
        i += 1
    return selectors, clause


def metric_names(expr):
    """Metric names an expression selects (bare names and {__name__="..."})."""
    return {n for n, _ in analyze(expr)[0] if n}


def is_recording_name(name):
    return ":" in name


PROMETHEUS_OWN = {"up", "ALERTS", "ALERTS_FOR_STATE", "scrape_duration_seconds",
                  "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
                  "scrape_series_added"}


# Labels every series has once Prometheus scraped it, or that PromQL / the rules make.
# Prometheus' and the scrape config's labels; "cluster" is the label a fleet's targets
# carry for the dashboards' cluster variable.
TARGET_LABELS = {"job", "instance", "cluster", "__name__", "alertname", "alertstate", "severity"}


def table_names(tables):
    """Every series name a metric table allows (histograms: _bucket with le, _sum,
    _count) -> its label names."""
    out = {}
    for t in tables:
        for m in t["metrics"]:
            out.setdefault(m["name"], set()).update(m.get("labels", []))
            if m["type"] in ("histogram", "summary"):
                for suf in ("_bucket", "_sum", "_count"):
                    out.setdefault(m["name"] + suf, set()).update(m.get("labels", []))
                out[m["name"] + "_bucket"].add("le")
    return out


def label_problems(expr, known):
    """Label names the expression matches on or groups by that the metrics it reads do not
    have (only for expressions that read exporter metrics alone: recording rules' labels
    are not in the table)."""
    selectors, clause = analyze(expr)
    problems = []
    # labels the expression makes itself: label_replace(v, "dst", "repl", "src", "regex")
    own = set(re.findall(r'"(\w+)"\s*,\s*"[^"]*"\s*,\s*"\w*"\s*,\s*"', expr))
    made = set(own)
    for name, labels in selectors:
        if not name or is_recording_name(name) or name in PROMETHEUS_OWN:
            return []
        if name not in known:
            continue  # reported as an unknown metric
        own |= known[name]
        for lab in labels:
            if lab not in known[name] | TARGET_LABELS:
                problems.append("label %s of %s" % (lab, name))
    for lab in clause:
        if own - made and lab not in own | TARGET_LABELS:
            problems.append("label %s in a by/without/on list" % lab)
    return problems


def load_rules(paths):
    import yaml  # python3-yaml (scripts/deps.sh test)

    exprs = []
    for path in paths:
        with open(path) as f:
            doc = yaml.safe_load(f)
        for g in doc.get("groups", []):
            for r in g.get("rules", []):
                exprs.append(("%s: %s" % (path, r.get("alert") or r.get("record")), r["expr"]))
    return exprs


def default_context(dashboards):
    """A context where every dashboard variable has a placeholder value (for the name
    check, which only needs the expression to tokenize)."""
    variables = {}
    for d in dashboards:
        for v in d.get("templating", {}).get("list", []):
            variables.setdefault(v["name"], (["x"], bool(v.get("multi") or v.get("includeAll"))))
    return Context(3600, 15, variables)


def cmd_names(args):
    tables = []
    for path in args.table:
        with open(path) as f:
            tables.append(json.load(f))
    known = table_names(tables)
    dashboards = [json.load(open(p)) for p in args.dashboards]
    ctx = default_context(dashboards)
    uses = []  # (where, expr)
    uses += load_rules(args.rules)
    for path, d in zip(args.dashboards, dashboards):
        for kind, where, expr, _ in dashboard_queries(d):
            if kind == "url":
                continue
            promql = variable_promql(expr) if kind == "variable" else expr
            if promql:
                uses.append(("%s: %s %s" % (path, kind, where), ctx.substitute(promql)))
    # label_values(expr, label): the label must be one of expr's
    for path, d in zip(args.dashboards, dashboards):
        for kind, where, expr, _ in dashboard_queries(d):
            m = LABEL_VALUES.match(expr) if kind == "variable" else None
            if m and m.group(1):
                uses.append(("%s: variable %s" % (path, where),
                             "sum by (%s) (%s)" % (m.group(2), ctx.substitute(m.group(1)))))
    missing = []
    bad_labels = []
    checked = set()
    for where, expr in uses:
        for n in metric_names(expr):
            if is_recording_name(n) or n in PROMETHEUS_OWN:
                continue
            checked.add(n)
            if n not in known:
                missing.append((n, where))
        for p in label_problems(expr, known):
            bad_labels.append((p, where))
    for n, where in missing:
        print("UNKNOWN METRIC %s (in %s)" % (n, where))
    for p, where in bad_labels:
        print("UNKNOWN LABEL %s (in %s)" % (p, where))
    print("names: %d expressions, %d distinct exporter metric names checked against %d in the "
          "table, %d unknown metrics, %d unknown labels" % (len(uses), len(checked), len(known),
                                                           len(missing), len(bad_labels)))
    return 1 if missing or bad_labels or not checked else 0


# --------------------------------------------------------------------------------------
# Running the queries.


class Prom:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def get(self, path, params):
        q = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen("%s%s?%s" % (self.url, path, q), timeout=30) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            try:
                body = json.load(e)
            except ValueError:
                return None, "HTTP %d" % e.code
        if body.get("status") != "success":
            return None, "%s: %s" % (body.get("errorType"), body.get("error"))
        if body.get("warnings"):
            return body["data"], "warnings: %s" % body["warnings"]
        return body["data"], None


def series_with_data(result):
    """Series of a range/instant result that hold at least one finite value."""
    out = []
    for s in result:
        vals = s.get("values") or ([s["value"]] if "value" in s else [])
        if any(not math.isnan(float(v[1])) for v in vals):
            out.append(s)
    return out


def run_variable(prom, ctx, v, start, end):
    """Values of a query variable the way Grafana gets them: label_values(expr, label)
    through the label values API (match[] = expr), label_values(label) without it, and
    query_result(expr) / a bare expression as an instant query."""
    q = v.get("query")
    if isinstance(q, dict):
        q = q.get("query")
    m = LABEL_VALUES.match(q)
    if m:
        params = {"start": start, "end": end}
        if m.group(1):
            params["match[]"] = ctx.substitute(m.group(1))
        data, err = prom.get("/api/v1/label/%s/values" % m.group(2), params)
        return data or [], err
    data, err = prom.get("/api/v1/query", {"query": ctx.substitute(variable_promql(q)), "time": end})
    return [json.dumps(s["metric"]) for s in (data or {}).get("result", [])], err


def fetch_json(url):
    """GET a JSON API. A 503 is the exporter's "too many requests at once, retry
    later" (its queue wait passed on a loaded machine): retried, as a client
    should, up to 10 times a second apart; any other error is returned."""
    for attempt in range(10):
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return json.load(r), None
        except urllib.error.HTTPError as e:
            if e.code != 503 or attempt == 9:
                return None, str(e)
            time.sleep(1)
        except (urllib.error.URLError, ValueError) as e:
            return None, str(e)


def cmd_queries(args):
    prom = Prom(args.prometheus)
    dashboards = [(p, json.load(open(p))) for p in args.dashboards]
    scrape_s = parse_duration(args.scrape_interval)
    end = time.time()
    start = end - args.range
    failures = []
    ran = 0
    with_data = 0
    report = []
    test_cgroup = args.cgroup[0]
    core = {}  # (uid, title) -> refIds that must have data (None: all the panel's targets)
    for c in args.core or []:
        uid, _, rest = c.partition(":")
        title, _, refs = rest.partition(":")
        core[(uid, title)] = set(refs) if refs else None
    core_seen = set()
    core_with_data = 0
    for path, d in dashboards:
        name = path.split("/")[-1]
        # Variables in their order, each query run with the ones before it substituted:
        # cgroup takes the test's cgroups (which the variable must list), the others
        # Grafana's default, the first value.
        variables = {}
        for v in d.get("templating", {}).get("list", []):
            multi = bool(v.get("multi") or v.get("includeAll"))
            if v["type"] == "datasource":
                variables[v["name"]] = (["test-" + str(v.get("query"))], False)
                continue
            if v["type"] != "query":
                cur = (v.get("current") or {}).get("value") or str(v.get("query", "")).split(",")[0]
                variables[v["name"]] = ([cur[0] if isinstance(cur, list) else cur], multi)
                continue
            ran += 1
            ctx = Context(args.range, scrape_s, variables)
            label = "%s: variable %s" % (name, v["name"])
            try:
                got, err = run_variable(prom, ctx, v, start, end)
            except KeyError as e:
                got, err = [], str(e)
            report.append("%-72s values=%d" % (label, len(got)))
            if got:
                with_data += 1
            if err:
                failures.append("%s: %s" % (label, err))
            if v["name"] == "cgroup":
                missing = [c for c in args.cgroup if c not in got]
                if missing:
                    failures.append("%s: %d values, not %s" % (label, len(got), missing))
                variables["cgroup"] = (list(args.cgroup), multi)
            elif got:
                variables[v["name"]] = ([got[0]], False)
            elif v.get("includeAll") and v.get("allValue"):
                # Grafana: no values and All -> the allValue (e.g. cluster=~".*" where
                # no target has a cluster label)
                variables[v["name"]] = ([v["allValue"]], False)
            else:
                failures.append("%s: no values" % label)
                variables[v["name"]] = (["none"], False)
        ctx = Context(args.range, scrape_s, variables)
        step = max(ctx.interval_s, scrape_s)
        for kind, where, expr, obj in dashboard_queries(d):
            if kind == "variable":
                continue
            ran += 1
            label = "%s: %s %s" % (name, kind, where)
            title = obj.get("title") if kind in ("panel", "url") else None
            key = (d.get("uid"), title)
            ref = obj.get("refId") if kind == "url" else where.rsplit(" / ", 1)[-1]
            is_core = key in core and (core[key] is None or ref in core[key])
            try:
                if kind == "url":
                    url = ctx.substitute(expr)
                    body, err = fetch_json(url)
                    rows = []
                    if not err:
                        sel = obj.get("root_selector")
                        rows = body.get(sel) if sel else body
                        if not isinstance(rows, list):
                            err = "root_selector %r is not a list in the answer" % sel
                            rows = []
                    mine = [r for r in rows if isinstance(r, dict) and r.get("cgroup") == test_cgroup]
                    series = rows
                else:
                    promql = ctx.substitute(expr)
                    target = next((t for t in obj.get("targets", []) if t.get("expr") == expr), {})
                    if target.get("instant") and not target.get("range"):
                        # Grafana runs an instant target once, at the end of the range
                        data, err = prom.get("/api/v1/query", {"query": promql, "time": end})
                    else:
                        data, err = prom.get("/api/v1/query_range",
                                             {"query": promql, "start": start, "end": end, "step": step})
                    series = series_with_data(data["result"]) if data else []
                    mine = [s for s in series if s["metric"].get("cgroup") == test_cgroup]
            except KeyError as e:
                failures.append("%s: %s" % (label, e))
                continue
            if err:
                failures.append("%s: %s\n    %s" % (label, err, ctx.substitute(expr)))
                continue
            if series:
                with_data += 1
            if is_core:
                core_seen.add(key)
                if mine:
                    core_with_data += 1
                else:
                    failures.append("%s: core panel without data for %s (%d series/rows with data)\n    %s"
                                    % (label, test_cgroup, len(series), ctx.substitute(expr)))
            report.append("%-72s series=%d test_cgroup=%d%s" % (label, len(series), len(mine),
                                                                " CORE" if is_core else ""))
    for (uid, title) in core:
        if (uid, title) not in core_seen:
            failures.append("core panel %s:%s is not in the dashboards" % (uid, title))
    if args.report:
        with open(args.report, "w") as f:
            f.write("\n".join(report) + "\n")
    for f in failures:
        print("FAIL %s" % f)
    print("queries: %d run, %d returned data, %d failed; core queries with data for %s: %d of %d"
          % (ran, with_data, len(failures), test_cgroup, core_with_data,
             sum(1 for r in report if r.endswith(" CORE"))))
    return 1 if failures else 0


HARD_CODED = re.compile(r'\b(instance|job)\s*(=~|!~|!=|=)\s*"(?!\$)')
NO_UNIT_TYPES = {"row", "text", "news", "dashlist", "alertlist"}


def cmd_lint(args):
    """Shape checks on the dashboards (no server): Grafana schema 39+, a unique uid,
    the data source and node as variables (no data source uid, instance or job written
    in), a unit on every panel that shows numbers, every query scoped to $instance,
    and the provisioning files."""
    import yaml  # python3-yaml

    errors = []
    uids = {}
    for path in args.dashboards:
        d = json.load(open(path))
        name = path.split("/")[-1]
        if d.get("schemaVersion", 0) < 39:
            errors.append("%s: schemaVersion %s < 39" % (name, d.get("schemaVersion")))
        if not d.get("uid") or d["uid"] in uids:
            errors.append("%s: uid %r missing or not unique" % (name, d.get("uid")))
        uids[d.get("uid")] = name
        if d.get("id") is not None:
            errors.append("%s: has a numeric id (leave it out: Grafana assigns it)" % name)
        tvars = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
        if tvars.get("datasource", {}).get("type") != "datasource":
            errors.append("%s: no datasource variable" % name)
        if "instance" not in tvars:
            errors.append("%s: no instance variable" % name)
        ids = set()
        for p in walk_panels(d.get("panels")):
            title = p.get("title")
            if p.get("id") in ids:
                errors.append("%s: panel id %s twice" % (name, p.get("id")))
            ids.add(p.get("id"))
            if "gridPos" not in p:
                errors.append("%s: %s: no gridPos" % (name, title))
            if p.get("type") in NO_UNIT_TYPES:
                continue
            if not (p.get("fieldConfig", {}).get("defaults", {}).get("unit")):
                errors.append("%s: %s: no unit" % (name, title))
            if not p.get("description"):
                errors.append("%s: %s: no description" % (name, title))
            for obj in [p] + list(p.get("targets", [])):
                ds = obj.get("datasource")
                if ds is not None and not str(ds.get("uid", "")).startswith("${"):
                    errors.append("%s: %s: data source uid %r is not a variable" % (name, title, ds.get("uid")))
            for t in p.get("targets", []):
                e = t.get("expr") or t.get("url") or ""
                if not e:
                    errors.append("%s: %s: target %s without a query" % (name, title, t.get("refId")))
                if HARD_CODED.search(e):
                    errors.append("%s: %s: hard-coded instance/job in %r" % (name, title, e))
                if "$instance" not in e and "${instance}" not in e:
                    errors.append("%s: %s: query not scoped to $instance: %r" % (name, title, e))
        for a in d.get("annotations", {}).get("list", []):
            e = a.get("expr")
            if e and ("$instance" not in e or HARD_CODED.search(e)):
                errors.append("%s: annotation %s not scoped to $instance" % (name, a.get("name")))
    for path in args.provisioning or []:
        doc = yaml.safe_load(open(path))
        if doc.get("apiVersion") != 1:
            errors.append("%s: apiVersion is not 1" % path)
        if "providers" in doc:
            for pr in doc["providers"]:
                if pr.get("type") != "file" or not pr.get("options", {}).get("path"):
                    errors.append("%s: provider %s without type file and options.path" % (path, pr.get("name")))
        elif "datasources" in doc:
            if not any(ds.get("type") == "prometheus" and ds.get("url") for ds in doc["datasources"]):
                errors.append("%s: no prometheus data source with a url" % path)
        else:
            errors.append("%s: neither providers nor datasources" % path)
    for e in errors:
        print("FAIL %s" % e)
    npanels = sum(1 for path in args.dashboards for _ in walk_panels(json.load(open(path)).get("panels")))
    print("dashboards lint: %d dashboards, %d panels, %d provisioning files, %d problems"
          % (len(args.dashboards), npanels, len(args.provisioning or []), len(errors)))
    return 1 if errors else 0


def cmd_list(args):
    for path in args.dashboards:
        d = json.load(open(path))
        ctx = default_context([d])
        for kind, where, expr, _ in dashboard_queries(d):
            print("%s %s %s\n  %s" % (path, kind, where, ctx.substitute(expr)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("names")
    n.add_argument("--table", action="append", required=True)
    n.add_argument("--rules", nargs="*", default=[])
    n.add_argument("--dashboards", nargs="*", default=[])
    q = sub.add_parser("queries")
    q.add_argument("--prometheus", required=True)
    q.add_argument("--dashboards", nargs="+", required=True)
    q.add_argument("--cgroup", action="append", required=True)
    q.add_argument("--scrape-interval", default="1s")
    q.add_argument("--range", type=float, default=120)
    q.add_argument("--report")
    q.add_argument("--core", action="append", help="UID:panel title that must have data for the first --cgroup")
    lt = sub.add_parser("lint")
    lt.add_argument("--dashboards", nargs="+", required=True)
    lt.add_argument("--provisioning", nargs="*")
    li = sub.add_parser("list")
    li.add_argument("--dashboards", nargs="+", required=True)
    args = ap.parse_args()
    return {"names": cmd_names, "queries": cmd_queries, "lint": cmd_lint, "list": cmd_list}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
