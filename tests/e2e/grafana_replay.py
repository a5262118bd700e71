#!/usr/bin/env python3
"""Replays the requests Grafana's Prometheus data source sends against a
Prometheus HTTP API at BASE (the exporter's /api/v1 over its history) and
checks every answer has Prometheus' envelope and the shape Grafana parses.

The requests, as Grafana (9.x-11.x) sends them:
  Save & test:   query?query=1+1&time=T (POST form by default, GET when the
                 data source is set to GET), then status/buildinfo
  variables:     label_values(L) -> label/L/values?start&end,
                 label_values(m, L) -> label/L/values?match[]=m&start&end and
                 (older) series?match[]=m&start&end, query_result(q) ->
                 query?query=q&time=T, metrics(re) -> label/__name__/values
  query editor:  labels?match[]&start&end, series?match[], metadata,
                 metadata?metric=m
  panels:        query_range (start, end, step in seconds), instant query,
                 query_exemplars
  errors:        a bad query and a too-fine step answer errorType bad_data.

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


def call(method, path, params):
    data = None
    url = base + path
    enc = urllib.parse.urlencode(params, doseq=True)
    if method == "GET":
        url += ("?" + enc) if enc else ""
    else:
        data = enc.encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def check(name, method, path, params, shape, want_error=None):
    global fails
    try:
        status, body = call(method, path, params)
        ok = True
        why = ""
        if want_error:
            ok = (body.get("status") == "error" and body.get("errorType") == want_error
                  and isinstance(body.get("error"), str) and status >= 400)
            why = json.dumps(body)[:200]
        else:
            ok = status == 200 and body.get("status") == "success" and shape(body["data"])
            why = json.dumps(body)[:300]
    except Exception as e:  # noqa: BLE001 - any failure is a FAIL line
        ok, why = False, repr(e)
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else "  " + why))
    fails += 0 if ok else 1


def is_vector(d, nonempty=True):
    return (d["resultType"] == "vector" and (not nonempty or len(d["result"]) > 0) and all(
        isinstance(s["metric"], dict) and len(s["value"]) == 2 and isinstance(s["value"][1], str)
        and float(s["value"][1]) == float(s["value"][1]) for s in d["result"]))


def is_matrix(d, nonempty=True):
    return (d["resultType"] == "matrix" and (not nonempty or len(d["result"]) > 0) and all(
        len(s["values"]) > 0 and all(len(p) == 2 and isinstance(p[1], str) for p in s["values"])
        for s in d["result"]))


now = time.time()
start, end = now - 300, now
sel = '%s{%s=~".+"}' % (metric, label)
for m in ("POST", "GET"):
    check(m + " save&test 1+1", m, "/api/v1/query", {"query": "1+1", "time": "%.3f" % now},
          lambda d: d["resultType"] == "scalar" and d["result"][1] == "2")
    check(m + " instant query", m, "/api/v1/query", {"query": metric, "time": "%.3f" % now},
          is_vector)
    check(m + " query_range", m, "/api/v1/query_range",
          {"query": "sum by (%s) (%s)" % (label, metric), "start": int(start), "end": int(end),
           "step": "15"}, is_matrix)
check("buildinfo", "GET", "/api/v1/status/buildinfo", {},
      lambda d: isinstance(d["version"], str) and "revision" in d)
check("label_values(L)", "GET", "/api/v1/label/%s/values" % label,
      {"start": int(start), "end": int(end)}, lambda d: isinstance(d, list) and len(d) > 0)
check("label_values(m, L)", "GET", "/api/v1/label/%s/values" % label,
      {"match[]": sel, "start": int(start), "end": int(end)},
      lambda d: isinstance(d, list) and len(d) > 0)
check("metric names", "GET", "/api/v1/label/__name__/values",
      {"start": int(start), "end": int(end)}, lambda d: metric in d)
check("series?match[] (label_values, old)", "GET", "/api/v1/series",
      {"match[]": [sel, "up"], "start": int(start), "end": int(end)},
      lambda d: len(d) > 0 and all(x["__name__"] == metric and label in x for x in d))
check("POST series", "POST", "/api/v1/series", {"match[]": sel},
      lambda d: len(d) > 0)
check("labels with match[]", "GET", "/api/v1/labels",
      {"match[]": sel, "start": int(start), "end": int(end)},
      lambda d: "__name__" in d and label in d)
check("labels", "POST", "/api/v1/labels", {"start": int(start), "end": int(end)},
      lambda d: "__name__" in d)
check("query_result(q)", "GET", "/api/v1/query",
      {"query": "topk(3, %s)" % metric, "time": int(end)}, is_vector)
check("RFC3339 time", "GET", "/api/v1/query",
      {"query": metric, "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now))},
      is_vector)
check("duration step", "GET", "/api/v1/query_range",
      {"query": metric, "start": "%.3f" % (now - 60), "end": "%.3f" % now, "step": "1m"},
      lambda d: is_matrix(d, nonempty=False))
check("metadata", "GET", "/api/v1/metadata", {},
      lambda d: metric in d and d[metric][0]["type"] in ("gauge", "counter", "histogram"))
check("metadata?metric=", "GET", "/api/v1/metadata", {"metric": metric},
      lambda d: list(d.keys()) == [metric])
check("exemplars", "GET", "/api/v1/query_exemplars",
      {"query": metric, "start": int(start), "end": int(end)}, lambda d: d == [])
check("bad query", "GET", "/api/v1/query", {"query": "sum(", "time": int(now)}, None, "bad_data")
check("too many points", "GET", "/api/v1/query_range",
      {"query": metric, "start": 0, "end": int(now), "step": "1"}, None, "bad_data")
check("series without match[]", "GET", "/api/v1/series", {}, None, "bad_data")
check("bad time", "GET", "/api/v1/query", {"query": "1", "time": "yesterday"}, None, "bad_data")
print("grafana replay: %d failed" % fails)
sys.exit(1 if fails else 0)
