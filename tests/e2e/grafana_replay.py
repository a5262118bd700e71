#!/usr/bin/env python3
"""Replays, against a Prometheus HTTP API at BASE (the exporter's /api/v1 over
its history), the requests Grafana's Prometheus data source sends, as it sends
them, and checks every answer has Prometheus' envelope and the shape Grafana
parses.

The list was read from Grafana's source (10.x-12.x; the backend in
pkg/promlib, the frontend in packages/grafana-prometheus/src) and written here
in our own words:
  connect ("Save & test"): pkg/promlib/healthcheck.go runs the instant query
      1+1 over the time range 1..4 s, so query?query=1+1&time=4; then
      heuristics.go reads status/buildinfo (no "features": Prometheus).
  data source init (datasource.ts): rules (loadRules) and query_exemplars with
      query=test and start/end in MILLIseconds (areExemplarsAvailable).
  query editor, metrics browser, variables (language_provider.ts,
      resource_clients.ts, through pkg/promlib/resource): label/__name__/values,
      labels (with and without match[], e.g. {__name__=~".+",} with a trailing
      comma), label/<L>/values with match[], series with match[]={__name__!=""}
      or {__name__="m",L!=""}, metadata (none, limit=40000, metric=m); all with
      start/end in seconds and limit=40000. Label values, metadata, buildinfo
      and rules always go as GET (client.go's GET-only list); the others as the
      data source's HTTP method (POST by default since Grafana 9: form body;
      the suggestions resource POSTs with the parameters in the URL and an
      empty body; a 400 or 405 answer is retried as GET).
  panels (pkg/promlib/client/client.go): query_range with query, start, end
      (seconds, fractions allowed), step (seconds, e.g. "15" or "0.5") and
      timeout when the data source sets one (e.g. "60s"); query with query,
      time, timeout; query_exemplars with query, start, end.
  Not sent by Grafana: format_query (Grafana issue 78928: it cannot format a
  query that still holds template variables), parse_query.
  errors: a bad query answers 400 bad_data, a too-fine step 400 bad_data, a
      query past its timeout 503 timeout, each in Prometheus' error envelope.

usage: grafana_replay.py BASE METRIC LABEL   (e.g. memcg_memory_usage_bytes cgroup)
Prints one PASS/FAIL line per request; exit 0 when all pass.
"""
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

base, metric, label = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
fails = 0
LIMIT = "40000"  # Grafana's DEFAULT_SERIES_LIMIT


def call(method, path, params, where):
    """where: "url" (GET, or a POST with the parameters in the URL and an empty
    body, as the suggestions resource sends) or "form" (a POST form body)."""
    enc = urllib.parse.urlencode(params, doseq=True)
    url, data = base + path, None
    if where == "url":
        url += ("?" + enc) if enc else ""
        if method == "POST":
            data = b""
    else:
        data = enc.encode()
    req = urllib.request.Request(url, data=data, method=method)
    if method == "POST":
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), json.loads(e.read())


def check(name, method, path, params, shape, want_error=None, want_status=None, where=None):
    global fails
    where = where or ("form" if method == "POST" else "url")
    try:
        status, ctype, body = call(method, path, params, where)
        ok = ctype.startswith("application/json")
        if want_error:
            ok = ok and (body.get("status") == "error" and body.get("errorType") == want_error
                         and isinstance(body.get("error"), str) and status >= 400
                         and (want_status is None or status == want_status))
            why = "%d %s" % (status, json.dumps(body)[:200])
        else:
            ok = ok and status == 200 and body.get("status") == "success" and shape(body["data"])
            why = "%d %s" % (status, json.dumps(body)[:300])
    except Exception as e:  # noqa: BLE001 - any failure is a FAIL line
        ok, why = False, repr(e)
    print(("PASS " if ok else "FAIL ") + "%-4s %-28s %s" % (method, path[:28], name)
          + ("" if ok else "  " + why))
    fails += 0 if ok else 1


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_value(p):
    return isinstance(p, list) and len(p) == 2 and num(p[0]) and isinstance(p[1], str) \
        and float(p[1]) == float(p[1])


def is_vector(d, nonempty=True):
    return (d["resultType"] == "vector" and (not nonempty or len(d["result"]) > 0) and all(
        isinstance(s["metric"], dict) and is_value(s["value"]) for s in d["result"]))


def is_matrix(d, nonempty=True):
    return (d["resultType"] == "matrix" and (not nonempty or len(d["result"]) > 0) and all(
        isinstance(s["metric"], dict) and len(s["values"]) > 0
        and all(is_value(p) for p in s["values"]) for s in d["result"]))


def strings(d, must=()):
    return isinstance(d, list) and all(isinstance(x, str) for x in d) and all(m in d for m in must)


def label_sets(d, nonempty=True):
    return isinstance(d, list) and (not nonempty or len(d) > 0) and all(
        isinstance(x, dict) and all(isinstance(v, str) for v in x.values()) for x in d)


def metadata(d, names=None):
    return isinstance(d, dict) and len(d) > 0 and (names is None or sorted(d) == names) and all(
        isinstance(v, list) and v and v[0]["type"] in ("counter", "gauge", "histogram", "summary",
                                                       "unknown")
        and isinstance(v[0]["help"], str) and "unit" in v[0] for v in d.values())


now = time.time()
start, end = now - 300, now
s, e = str(int(start)), str(int(end))
sel = '%s{%s=~".+"}' % (metric, label)

# Connect: the health check and the heuristics.
for m in ("POST", "GET"):
    check("save&test 1+1 at t=4", m, "/api/v1/query", {"query": "1+1", "time": "4"},
          lambda d: d["resultType"] == "scalar" and is_value(d["result"]) and d["result"][1] == "2"
          and d["result"][0] == 4)
check("heuristics buildinfo", "GET", "/api/v1/status/buildinfo", {},
      lambda d: isinstance(d["version"], str) and isinstance(d["revision"], str)
      and not d.get("features"))
# Data source init.
check("loadRules", "GET", "/api/v1/rules", {},
      lambda d: isinstance(d["groups"], list))
check("areExemplarsAvailable (ms times)", "POST", "/api/v1/query_exemplars",
      {"query": "test", "start": str(int(start * 1000)), "end": str(int(end * 1000))},
      lambda d: d == [])

# Query editor, metrics browser, variables (resources).
check("metric names", "GET", "/api/v1/label/__name__/values",
      {"start": s, "end": e, "limit": LIMIT}, lambda d: strings(d, [metric]))
check("metadata (browser)", "GET", "/api/v1/metadata", {}, lambda d: metadata(d) and metric in d)
check("metadata limit", "GET", "/api/v1/metadata", {"limit": LIMIT}, lambda d: metric in d)
check("metadata of one metric", "GET", "/api/v1/metadata", {"metric": metric},
      lambda d: metadata(d, [metric]))
for m in ("POST", "GET"):
    check("label keys", m, "/api/v1/labels", {"start": s, "end": e, "limit": LIMIT},
          lambda d: strings(d, ["__name__", label]))
    check("label keys match[] m", m, "/api/v1/labels",
          {"start": s, "end": e, "limit": LIMIT, "match[]": metric},
          lambda d: strings(d, ["__name__", label]))
    check("label keys of 2 queries", m, "/api/v1/labels",
          {"start": s, "end": e, "match[]": [metric, "up"]}, lambda d: strings(d, [label]))
    check("series match all", m, "/api/v1/series",
          {"start": s, "end": e, "limit": LIMIT, "match[]": '{__name__!=""}'},
          lambda d: label_sets(d) and any(x.get("__name__") == metric for x in d))
    check("series for label values", m, "/api/v1/series",
          {"start": s, "end": e, "limit": LIMIT,
           "match[]": '{__name__="%s",%s!=""}' % (metric, label)},
          lambda d: label_sets(d) and all(x["__name__"] == metric and x[label] for x in d))
    check("series of a selector", m, "/api/v1/series", {"match[]": [sel, "up"], "start": s,
                                                        "end": e},
          lambda d: label_sets(d) and all(x["__name__"] == metric and label in x for x in d))
check("suggestions: labels, params in URL", "POST", "/api/v1/labels",
      {"match[]": '{__name__=~".+",}', "start": s, "end": e, "limit": LIMIT},
      lambda d: strings(d, ["__name__", label]), where="url")
check("suggestions: values, params in URL", "GET", "/api/v1/label/%s/values" % label,
      {"match[]": metric, "start": s, "end": e, "limit": LIMIT}, lambda d: strings(d) and d)
check("label_values(L)", "GET", "/api/v1/label/%s/values" % label,
      {"start": s, "end": e, "limit": LIMIT}, lambda d: strings(d) and d)
check("label_values(m, L)", "GET", "/api/v1/label/%s/values" % label,
      {"match[]": sel, "start": s, "end": e}, lambda d: strings(d) and d)
check("label values, no match", "GET", "/api/v1/label/no_such_label/values",
      {"start": s, "end": e}, lambda d: d == [])

# Panels, variables' query_result(q), Explore.
for m in ("POST", "GET"):
    check("panel range query", m, "/api/v1/query_range",
          {"query": "sum by (%s) (%s)" % (label, metric), "start": "%.3f" % start,
           "end": "%.3f" % end, "step": "15"}, is_matrix)
    check("range query, fractional step, timeout", m, "/api/v1/query_range",
          {"query": "rate(%s[1m])" % metric, "start": "%.3f" % (now - 30), "end": "%.3f" % now,
           "step": "0.5", "timeout": "60s"}, lambda d: is_matrix(d, nonempty=False))
    check("instant query, timeout", m, "/api/v1/query",
          {"query": metric, "time": "%.3f" % now, "timeout": "60s"}, is_vector)
    check("query_result(q)", m, "/api/v1/query",
          {"query": "topk(3, %s)" % metric, "time": e}, is_vector)
    check("exemplars", m, "/api/v1/query_exemplars",
          {"query": metric, "start": "%.3f" % start, "end": "%.3f" % end}, lambda d: d == [])
check("RFC3339 time", "GET", "/api/v1/query",
      {"query": metric, "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now))},
      is_vector)
check("duration step", "GET", "/api/v1/query_range",
      {"query": metric, "start": "%.3f" % (now - 60), "end": "%.3f" % now, "step": "1m"},
      lambda d: is_matrix(d, nonempty=False))

# Errors, in Prometheus' envelope and status codes.
for m in ("POST", "GET"):
    check("bad query", m, "/api/v1/query", {"query": "sum(", "time": e}, None, "bad_data", 400)
    check("too many points", m, "/api/v1/query_range",
          {"query": metric, "start": "0", "end": e, "step": "1"}, None, "bad_data", 400)
    # 3.6 million subquery steps: stops at the 100 ms timeout, well before the
    # 30 s the client waits.
    check("query past its timeout", m, "/api/v1/query",
          {"query": "count_over_time(sum(%s)[1h:1ms])" % metric, "time": e, "timeout": "100ms"},
          None, "timeout", 503)
# The timeout is checked during the evaluation, not after it: the same query
# without a short timeout takes several times as long (compared in this run,
# not against a fixed bound).
heavy = {"query": "count_over_time(sum(%s)[1h:1ms])" % metric, "time": e}
# (At most 5 s: where the history is larger it stops at that timeout instead.)
t0 = time.monotonic()
st, _, body = call("GET", "/api/v1/query", dict(heavy, timeout="5s"), "url")
full = time.monotonic() - t0
ok = (st == 200 and is_vector(body["data"])) or (st == 503 and body["errorType"] == "timeout")
print(("PASS " if ok else "FAIL ") + "the same query, 5s timeout: %d in %.3f s" % (st, full))
fails += 0 if ok else 1
# The quickest of three: one descheduled on a loaded machine says nothing of
# where the evaluation stops; one that ran to the end would be ~full each time.
shorts = []
for _ in range(3):
    t0 = time.monotonic()
    check("the same query, 100ms timeout", "GET", "/api/v1/query", dict(heavy, timeout="100ms"),
          None, "timeout", 503)
    shorts.append(time.monotonic() - t0)
short = min(shorts)
ok = short * 3 < full
print(("PASS " if ok else "FAIL ") + "timeout cuts the evaluation short: %.3f s vs %.3f s to the end"
      % (short, full))
fails += 0 if ok else 1
check("series without match[]", "GET", "/api/v1/series", {}, None, "bad_data", 400)
check("bad time", "GET", "/api/v1/query", {"query": "1", "time": "yesterday"}, None, "bad_data",
      400)
print("grafana replay: %d failed" % fails)
sys.exit(1 if fails else 0)
