"""Pieces shared by the PromQL agreement test and the PromQL benchmark.

- a float formatter that prints every value exactly (shortest round trip),
- a writer for the PromQL test-script series notation (values and label sets),
- a hand-written encoder for Prometheus' remote-write protobuf (WriteRequest),
- a Prometheus 2.42 server on loopback with a temp storage dir, stopped and removed on
  exit (also when this process is killed: the child gets SIGTERM from the kernel),
- a small client for Prometheus' HTTP query API.

Python 3 stdlib only, plus Debian's python3-snappy for remote write.
"""

import ctypes
import decimal
import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

# The staleness marker Prometheus writes when a series disappears (value.StaleNaN).
STALE_BITS = 0x7FF0000000000002


class Stale:
    """The staleness marker as a sample value (a NaN with a fixed payload)."""

    def __repr__(self):
        return "stale"


STALE = Stale()


def fmt_value(v):
    """Exact text for a sample value in the test-script notation (and for humans)."""
    if v is STALE:
        return "stale"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    if math.isfinite(v) and v == int(v) and abs(v) < 2**53:
        # 3.0 -> "3", -0.0 -> "-0" (the sign survives: the parser negates the number).
        s = str(int(v))
        if v == 0 and math.copysign(1.0, v) < 0:
            s = "-0"
        return s
    return repr(v)  # shortest text that reads back as the same double


def go_float(v):
    """Go's strconv.FormatFloat(v, 'g', -1, 64), as Prometheus and the exporter print `le`."""
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    sign, digits, exp = decimal.Decimal(repr(v)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    dp = len(ds) + exp  # position of the decimal point
    x = dp - 1
    neg = "-" if sign else ""
    if x < -4 or x >= 6:  # shortest: %e below 1e-4 and from 1e6 on
        m = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return "%s%se%s%02d" % (neg, m, "-" if x < 0 else "+", abs(x))
    if dp <= 0:
        return neg + "0." + "0" * (-dp) + ds
    if dp >= len(ds):
        return neg + ds + "0" * (dp - len(ds))
    return neg + ds[:dp] + "." + ds[dp:]


def quote_label_value(v):
    out = []
    for ch in v:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def fmt_labels(labels):
    """name{a="b", ...} with __name__ outside the braces, other labels sorted."""
    name = labels.get("__name__", "")
    rest = sorted((k, v) for k, v in labels.items() if k != "__name__")
    inner = ", ".join("%s=%s" % (k, quote_label_value(v)) for k, v in rest)
    if name and not rest:
        return name
    return "%s{%s}" % (name, inner)


def labels_key(labels):
    return tuple(sorted(labels.items()))


def fmt_duration_ms(ms):
    """A test-script duration ("90s", "1234ms", "0s"); always non-negative here."""
    if ms < 0:
        raise ValueError("negative duration %d" % ms)
    if ms % 1000 == 0:
        return "%ds" % (ms // 1000)
    return "%dms" % ms


def same_bits(a, b):
    if a is STALE or b is STALE:
        return a is b
    return struct.pack("<d", a) == struct.pack("<d", b)


def fmt_sequence(values, exact_expand=True):
    """Values (float, STALE, or None for "no sample") in the expanding notation.

    Runs of absent slots become "_xN", runs of bit-identical finite numbers "vxN"
    (N+1 copies); "a+bxN" is only used where every step is an exact integer addition,
    so the parser's repeated float additions give back exactly these doubles.
    """
    out = []
    i = 0
    n = len(values)
    while i < n:
        v = values[i]
        if v is None:
            j = i
            while j < n and values[j] is None:
                j += 1
            out.append("_" if j - i == 1 else "_x%d" % (j - i))
            i = j
            continue
        if v is STALE or math.isnan(v) or math.isinf(v):
            out.append(fmt_value(v))  # "NaNx3" would lex as one identifier
            i += 1
            continue
        j = i + 1
        while j < n and values[j] is not None and values[j] is not STALE and same_bits(values[j], v):
            j += 1
        if j - i > 1:
            out.append("%sx%d" % (fmt_value(v), j - i - 1))
            i = j
            continue
        if exact_expand and _is_small_int(v) and i + 2 < n:
            d = values[i + 1]
            if d is not None and d is not STALE and _is_small_int(d) and d != v:
                step = d - v
                j = i + 1
                while (j + 1 < n and values[j + 1] is not None and values[j + 1] is not STALE
                       and _is_small_int(values[j + 1]) and values[j + 1] - values[j] == step):
                    j += 1
                if j - i >= 2:
                    sign = "+" if step > 0 else "-"
                    out.append("%s%s%sx%d" % (fmt_value(v), sign, fmt_value(abs(step)), j - i))
                    i = j + 1
                    continue
        out.append(fmt_value(v))
        i += 1
    return " ".join(out)


def _is_small_int(v):
    return (math.isfinite(v) and v == int(v) and abs(v) < 2**50
            and not (v == 0 and math.copysign(1.0, v) < 0))


# ---------------------------------------------------------------- remote write


def _varint(n):
    out = bytearray()
    if n < 0:
        n += 1 << 64
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_bytes(field, payload):
    return _varint((field << 3) | 2) + _varint(len(payload)) + payload


def encode_write_request(series):
    """series: [(labels dict, [(t_ms, value)])] -> prometheus.WriteRequest bytes.

    WriteRequest{1: repeated TimeSeries}; TimeSeries{1: repeated Label, 2: repeated Sample};
    Label{1: name, 2: value}; Sample{1: double value, 2: int64 timestamp}.
    """
    out = bytearray()
    for labels, samples in series:
        ts = bytearray()
        for k, v in sorted(labels.items()):
            ts += _field_bytes(1, _field_bytes(1, k.encode()) + _field_bytes(2, v.encode()))
        for t, v in samples:
            raw = struct.pack("<Q", STALE_BITS) if v is STALE else struct.pack("<d", v)
            ts += _field_bytes(2, b"\x09" + raw + b"\x10" + _varint(t))
        out += _field_bytes(1, bytes(ts))
    return bytes(out)


# ---------------------------------------------------------------- the server


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _die_with_parent():
    # PR_SET_PDEATHSIG: if this script is killed (ctest timeout), Prometheus goes too.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)


class Prometheus:
    """A Prometheus server on 127.0.0.1:<free port> with its own temp storage dir."""

    def __init__(self, binary="prometheus", extra_args=(), tmp_prefix="memcg_exporter_test_promql_",
                 tmp_parent=None):
        self.binary = binary
        self.tmp_parent = tmp_parent
        self.extra_args = list(extra_args)
        self.tmp_prefix = tmp_prefix
        self.proc = None
        self.dir = None
        self.port = None
        self.log = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        if self.tmp_parent is not None:
            # Left over only if a run was SIGKILLed (the server itself dies with us).
            for old in Path(self.tmp_parent).glob(self.tmp_prefix + "*"):
                shutil.rmtree(old, ignore_errors=True)
        self.dir = tempfile.mkdtemp(prefix=self.tmp_prefix, dir=self.tmp_parent)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            # evaluation_interval is the default subquery step ([10m:]).
            f.write("global:\n  scrape_interval: 1h\n  evaluation_interval: 1m\nscrape_configs: []\n")
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        args = [self.binary, "--config.file=" + cfg,
                "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
                "--web.listen-address=127.0.0.1:%d" % self.port,
                "--web.enable-remote-write-receiver",
                "--storage.tsdb.retention.time=100y"] + self.extra_args
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                with urllib.request.urlopen(self.url("/-/ready"), timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus not ready after 60 s:\n" + self.log_tail())

    def log_tail(self, n=20):
        try:
            with open(os.path.join(self.dir, "prometheus.log")) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def remote_write(self, series):
        import snappy  # Debian python3-snappy (block format, as remote write wants)
        body = snappy.compress(encode_write_request(series))
        req = urllib.request.Request(self.url("/api/v1/write"), data=body, method="POST", headers={
            "Content-Encoding": "snappy",
            "Content-Type": "application/x-protobuf",
            "X-Prometheus-Remote-Write-Version": "0.1.0",
        })
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                r.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError("remote write refused: %s %s" % (e.code, e.read().decode(errors="replace")))

    def api(self, path, params, timeout=120):
        """POST to the query API; returns (json, wall seconds). Errors come back as json."""
        data = urllib.parse.urlencode(params).encode()
        req = urllib.request.Request(self.url(path), data=data, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            body = e.read()
        wall = time.perf_counter() - t0
        return json.loads(body), wall

    def instant(self, expr, t_ms, stats=False):
        p = {"query": expr, "time": "%d.%03d" % divmod(t_ms, 1000)}
        if stats:
            p["stats"] = "all"
        return self.api("/api/v1/query", p)

    def range(self, expr, start_ms, end_ms, step_ms, stats=False):
        p = {"query": expr, "start": "%d.%03d" % divmod(start_ms, 1000),
             "end": "%d.%03d" % divmod(end_ms, 1000), "step": "%d.%03d" % divmod(step_ms, 1000)}
        if stats:
            p["stats"] = "all"
        return self.api("/api/v1/query_range", p)
