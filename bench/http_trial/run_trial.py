#!/usr/bin/env python3
"""The HTTP server trial's driver: the same hostile tests against each trial
server (ours, libmicrohttpd, Boost.Beast; see trial_common.h), side by side in
one run, then the table and the bounds each server holds.

  run_trial.py BUILD_DIR [--slow 1000] [--scrapes 40] [--servers ours,mhd,beast]

Every server gets a fresh process per scenario, 2 threads and the same limits
(head 16 KiB, body 64 KiB, read/handshake timeout, idle timeout, connection cap,
queue wait). Each scrape is a new connection asking for /metrics without gzip
(~190 KB), so its latency includes the connect (and the TLS handshake).
"""
import argparse
import os
import resource
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SCRAPE_TIMEOUT = 10.0


# ---------------------------------------------------------------- servers
class Server:
    def __init__(self, binary, *args):
        self.proc = subprocess.Popen([binary, *map(str, args)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("port "):
            self.proc.kill()
            raise RuntimeError(f"{binary} did not start: {line!r}")
        self.port = int(line.split()[1])

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def threads(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------- clients
def client_tls():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def connect(port, tls=None, timeout=SCRAPE_TIMEOUT):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if tls:
        s = tls.wrap_socket(s, server_hostname="localhost")
    return s


def read_response(s, want_close=True):
    """Reads one response; returns (status or 'closed'/'reset'/'timeout', body length)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return ("closed" if not data else "short", 0)
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = None
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        while length is not None and len(body) < length:
            chunk = s.recv(262144)
            if not chunk:
                break
            body += chunk
        if length is None and want_close:
            while True:
                chunk = s.recv(262144)
                if not chunk:
                    break
                body += chunk
        return (status, len(body))
    except (ConnectionResetError, BrokenPipeError):
        return ("reset", 0)
    except (socket.timeout, ssl.SSLError, TimeoutError):
        return ("timeout", 0)


def scrape(port, tls=None, timeout=SCRAPE_TIMEOUT):
    t0 = time.monotonic()
    try:
        s = connect(port, tls, timeout)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        status, n = read_response(s)
        s.close()
    except (OSError, ssl.SSLError) as e:
        status, n = type(e).__name__, 0
    dt = time.monotonic() - t0
    return dt if status == 200 and n > 100000 else None, status


def scrapes(port, n, tls=None, gap=0.05):
    """Latencies of n sequential scrapes; a failed one counts as SCRAPE_TIMEOUT."""
    lat, failed = [], []
    for _ in range(n):
        dt, st = scrape(port, tls)
        if dt is None:
            failed.append(str(st))
            dt = SCRAPE_TIMEOUT
        lat.append(dt)
        time.sleep(gap)
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(round(0.99 * len(lat) + 0.5)) - 1)]
    return statistics.median(lat), p99, failed


def one_request(port, raw, timeout=10.0):
    try:
        s = connect(port, timeout=timeout)
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = read_response(s)[0]
        s.close()
        return r
    except OSError as e:
        return type(e).__name__


def padded_head(total):
    head = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
    end = b"Connection: close\r\n\r\n"
    i = 0
    while len(head) + len(end) + 1000 < total:
        # 1 KB lines: few enough headers that only the size limit can apply
        head += b"X-Pad-%04d: " % i + b"a" * 986 + b"\r\n"
        i += 1
    return head + end


def chunked(total, piece=1000):
    out = b"POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n" \
          b"Connection: close\r\n\r\n"
    sent = 0
    while sent < total:
        n = min(piece, total - sent)
        out += b"%x\r\n" % n + b"b" * n + b"\r\n"
        sent += n
    return out + b"0\r\n\r\n"


# ---------------------------------------------------------------- scenarios
def open_slowloris(port, n):
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n")
            s.setblocking(False)
            socks.append(s)
        except OSError:
            pass
    return socks


class Trickler(threading.Thread):
    """Sends one more header line to every slow connection each second (the
    classic slowloris: a server whose timeout restarts on each byte never
    closes them)."""

    def __init__(self, socks):
        super().__init__(daemon=True)
        self.socks, self.stop = socks, threading.Event()

    def run(self):
        i = 0
        while not self.stop.wait(1.0):
            i += 1
            for s in self.socks:
                try:
                    s.send(b"X-T-%d: 1\r\n" % i)
                except OSError:
                    pass


def open_tls_stalls(port, n):
    """TCP connections that send a ClientHello and then never answer."""
    ctx = client_tls()
    socks = []
    for _ in range(n):
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=2)
            raw.setblocking(False)
            s = ctx.wrap_socket(raw, server_hostname="localhost", do_handshake_on_connect=False)
            try:
                s.do_handshake()
            except ssl.SSLWantReadError:
                pass
            socks.append(s)
        except (OSError, ssl.SSLError):
            pass
    return socks


def scenario_slow(binary, args, n, nscrape, tls_stall, read_timeout_ms):
    """n slow connections (partial heads trickled, or stalled TLS handshakes),
    scrapes while they are open, RSS per connection, and how many the server
    still holds after twice the read timeout."""
    r = {}
    tls = client_tls() if tls_stall else None
    srv = Server(binary, *args)
    try:
        scrapes(srv.port, 3, tls)  # warm: buffers, pools, TLS context
        r["idle_med"], r["idle_p99"], _ = scrapes(srv.port, nscrape, tls)
        time.sleep(0.3)
        rss0, fd0 = srv.rss_kib(), srv.fds()
        t0 = time.monotonic()
        socks = open_tls_stalls(srv.port, n) if tls_stall else open_slowloris(srv.port, n)
        trick = None
        if not tls_stall:
            trick = Trickler(socks)
            trick.start()
        time.sleep(0.5)
        r["opened"] = len(socks)
        r["held"] = srv.fds() - fd0
        r["rss_per_conn_kib"] = (srv.rss_kib() - rss0) / max(1, len(socks))
        r["med"], r["p99"], r["failed"] = scrapes(srv.port, nscrape, tls)
        r["window_s"] = time.monotonic() - t0
        # Still held after twice the read timeout (from the first connection)?
        wait = 2 * read_timeout_ms / 1000 - (time.monotonic() - t0)
        if wait > 0:
            time.sleep(wait)
        r["held_after_2x_timeout"] = srv.fds() - fd0
        if trick:
            trick.stop.set()
            trick.join()
        for s in socks:
            s.close()
    finally:
        srv.stop()
    return r


def scenario_limits(binary, args, pem):
    r = {}
    srv = Server(binary, *args)
    try:
        p = srv.port
        r["head_15k"] = one_request(p, padded_head(15 * 1024))
        r["head_32k"] = one_request(p, padded_head(32 * 1024))
        small = b"c" * 1000
        r["body_1k"] = one_request(p, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                                      b"Connection: close\r\n\r\n" + small)
        big = b"c" * 100000
        r["body_100k"] = one_request(p, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
                                        b"Connection: close\r\n\r\n" + big)
        r["chunked_3k"] = one_request(p, chunked(3000))
        r["chunked_100k"] = one_request(p, chunked(100000))
        # Idle keep-alive: one answered request, then nothing; when does the server close?
        s = connect(p, timeout=15)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        read_response(s, want_close=False)
        t0 = time.monotonic()
        try:
            s.recv(1)
            r["idle_close_s"] = time.monotonic() - t0
        except OSError:
            r["idle_close_s"] = time.monotonic() - t0
        s.close()
        # 408: a partial head, then nothing.
        s = connect(p, timeout=15)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        st = read_response(s)[0]
        r["partial_head"] = f"{st} after {time.monotonic() - t0:.1f} s"
        s.close()
        # Queue: two requests that hold both workers for 1.5 s, then a scrape.
        res = {}

        def slow(i):
            res[i] = one_request(p, b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        ts = [threading.Thread(target=slow, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        time.sleep(0.1)
        dt, st = scrape(p)
        t0 = time.monotonic()
        for t in ts:
            t.join()
        r["scrape_behind_2_slow_handlers"] = f"{st} in {dt:.2f} s" if dt else f"{st}"
        # Slow readers: 4 clients with a 4 KiB receive buffer ask for /metrics
        # and never read it; do scrapes still pass?
        readers = []
        for _ in range(4):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", p))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            readers.append(s)
        time.sleep(0.3)
        r["slow_reader_med"], r["slow_reader_p99"], r["slow_reader_failed"] = scrapes(p, 10)
        for s in readers:
            s.close()
    finally:
        srv.stop()
    return r


def scenario_cap(binary, args, cap):
    """cap + 50 idle connections: how many does the server refuse, and is it
    serving again once they are gone?"""
    r = {}
    srv = Server(binary, *args, "--max-conn", cap)
    try:
        fd0 = srv.fds()
        socks = []
        for _ in range(cap + 50):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=2)
            socks.append(s)
        time.sleep(0.5)
        refused, answered = 0, set()
        for s in socks:
            s.setblocking(False)
            try:
                d = s.recv(4096)
                refused += 1
                if d:
                    answered.add(d.split(b" ", 2)[1].decode())
            except BlockingIOError:
                pass
            except OSError:
                refused += 1
        r["cap_refused"] = f"{refused} of 50" + (f" ({','.join(sorted(answered))})" if answered else " (closed)")
        r["cap_held"] = srv.fds() - fd0
        t0 = time.monotonic()
        _, st = scrape(srv.port, timeout=3.0)
        r["cap_scrape"] = f"{st} after {time.monotonic() - t0:.1f} s"
        for s in socks:
            s.close()
        time.sleep(0.5)
        dt, st = scrape(srv.port)
        r["cap_after"] = st
    finally:
        srv.stop()
    return r


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--scrapes", type=int, default=40)
    ap.add_argument("--servers", default="ours,mhd,beast")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    names = {"ours": "ours (epoll)", "mhd": "libmicrohttpd", "beast": "Boost.Beast"}
    servers = [s for s in a.servers.split(",") if s]
    tmp = tempfile.mkdtemp(prefix="memcg_exporter_test_http_trial_")
    try:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=localhost"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        common = ["--threads", 2, "--queue-wait-ms", 500]
        res = {}
        for name in servers:
            b = os.path.join(a.build_dir, "bench", "http_trial", f"http_trial_{name}")
            if not os.access(b, os.X_OK):
                print(f"{name}: {b} not built, skipped", file=sys.stderr)
                continue
            print(f"== {names[name]}", file=sys.stderr, flush=True)
            r = {}
            base = Server(b, *common)
            r["threads"] = base.threads()
            r["idle_rss_kib"] = base.rss_kib()
            r["base_med"], r["base_p99"], _ = scrapes(base.port, a.scrapes)
            base.stop()
            slow_args = common + ["--read-timeout-ms", 5000, "--idle-timeout-ms", 5000]
            r["loris"] = scenario_slow(b, slow_args, a.slow, a.scrapes, False, 5000)
            r["tls"] = scenario_slow(b, slow_args + ["--tls", cert, key], a.slow, a.scrapes,
                                     True, 5000)
            r.update(scenario_limits(b, common + ["--read-timeout-ms", 3000,
                                                  "--idle-timeout-ms", 2000], cert))
            r.update(scenario_cap(b, common, 100))
            res[name] = r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    cols = [n for n in servers if n in res]
    ms = lambda v: f"{v * 1000:.1f} ms"
    failed = lambda f, n: f"{len(f)} of {n}" + (f" ({','.join(sorted(set(f)))})" if f else "")
    rows = [
        ("threads in the process", lambda r: str(r["threads"])),
        ("idle RSS", lambda r: f"{r['idle_rss_kib'] / 1024:.1f} MiB"),
        ("scrape median / p99, idle", lambda r: f"{ms(r['base_med'])} / {ms(r['base_p99'])}"),
        (f"{a.slow} slowloris: opened / held", lambda r: f"{r['loris']['opened']} / {r['loris']['held']}"),
        ("  scrape median / p99", lambda r: f"{ms(r['loris']['med'])} / {ms(r['loris']['p99'])}"),
        ("  scrapes failed", lambda r: failed(r['loris']['failed'], a.scrapes)),
        ("  RSS per slow connection", lambda r: f"{r['loris']['rss_per_conn_kib']:.1f} KiB"),
        ("  still held after 2x read timeout (trickled)", lambda r: str(r['loris']['held_after_2x_timeout'])),
        (f"{a.slow} stalled TLS handshakes: opened / held", lambda r: f"{r['tls']['opened']} / {r['tls']['held']}"),
        ("  TLS scrape median / p99 before they open", lambda r: f"{ms(r['tls']['idle_med'])} / {ms(r['tls']['idle_p99'])}"),
        ("  TLS scrape median / p99", lambda r: f"{ms(r['tls']['med'])} / {ms(r['tls']['p99'])}"),
        ("  TLS scrapes failed", lambda r: failed(r['tls']['failed'], a.scrapes)),
        ("  RSS per stalled handshake", lambda r: f"{r['tls']['rss_per_conn_kib']:.1f} KiB"),
        ("  still held after 2x handshake timeout", lambda r: str(r['tls']['held_after_2x_timeout'])),
        ("head 15 KiB (want 200)", lambda r: str(r["head_15k"])),
        ("head 32 KiB (want 431)", lambda r: str(r["head_32k"])),
        ("body 1 KB (want 200)", lambda r: str(r["body_1k"])),
        ("body 100 KB (want 413)", lambda r: str(r["body_100k"])),
        ("chunked body 3 KB", lambda r: str(r["chunked_3k"])),
        ("chunked body 100 KB", lambda r: str(r["chunked_100k"])),
        ("idle keep-alive closed after (idle 2 s)", lambda r: f"{r['idle_close_s']:.1f} s"),
        ("partial head (read timeout 3 s; want 408)", lambda r: r["partial_head"]),
        ("scrape behind 2 slow handlers (queue 0.5 s; want 503)", lambda r: r["scrape_behind_2_slow_handlers"]),
        ("4 slow readers: scrape median / p99", lambda r: f"{ms(r['slow_reader_med'])} / {ms(r['slow_reader_p99'])}"),
        ("  scrapes failed", lambda r: failed(r['slow_reader_failed'], 10)),
        ("cap 100, 150 idle: refused (want 50, 503)", lambda r: r["cap_refused"]),
        ("  connections the server holds", lambda r: str(r["cap_held"])),
        ("  a scrape at the cap (3 s timeout)", lambda r: r["cap_scrape"]),
        ("  scrape once they are gone", lambda r: str(r["cap_after"])),
    ]
    w0 = max(len(t) for t, _ in rows)
    w = max([len(names[n]) for n in cols] + [max(len(f(res[n])) for _, f in rows) for n in cols])
    print(f"{'':{w0}} | " + " | ".join(f"{names[n]:{w}}" for n in cols))
    print("-" * (w0 + 1) + ("+" + "-" * (w + 2)) * len(cols))
    for title, f in rows:
        print(f"{title:{w0}} | " + " | ".join(f"{f(res[n]):{w}}" for n in cols))

    print("\nBounds (the current server's): scrape median < 1 s under the slow connections,"
          " no worker held by a slow client, RSS per slow connection within 2x of ours")
    ours = res.get("ours")
    for n in cols:
        r = res[n]
        fails = []
        for k, what in (("loris", "slowloris"), ("tls", "stalled TLS")):
            if r[k]["med"] >= 1.0:
                fails.append(f"scrape median {r[k]['med']:.2f} s under {what}")
        if r["loris"]["med"] >= 1.0:
            fails.append("a partial head holds a worker")
        if r["slow_reader_med"] >= 1.0:
            fails.append("a slow reader holds a worker")
        if ours and n != "ours":
            for k, what in (("loris", "slowloris"), ("tls", "stalled TLS")):
                if r[k]["rss_per_conn_kib"] > 2 * max(ours[k]["rss_per_conn_kib"], 1.0):
                    fails.append(f"RSS per {what} connection {r[k]['rss_per_conn_kib']:.1f} KiB"
                                 f" > 2x ours ({ours[k]['rss_per_conn_kib']:.1f} KiB)")
        print(f"  {names[n]}: " + ("holds every bound" if not fails else "FAILS: " + "; ".join(fails)))
    print("\nThe other hostile tests, where a server misses what ours is built to do (every scrape"
          " answered, 408, 411/413, 431, 503 over the cap and after the queue wait, deadlines that a"
          " trickle does not extend):")
    for n in cols:
        r, d = res[n], []
        for k, what in (("loris", "slowloris"), ("tls", "stalled TLS")):
            if r[k]["failed"]:
                d.append(f"{failed(r[k]['failed'], a.scrapes)} scrapes failed under {what}")
        if r["loris"]["held_after_2x_timeout"] > r["loris"]["opened"] // 10:
            d.append(f"{r['loris']['held_after_2x_timeout']} trickled partial heads still open after"
                     " 2x the read timeout (the timeout restarts on every byte)")
        if r["tls"]["held_after_2x_timeout"] > r["tls"]["opened"] // 10:
            d.append("stalled handshakes outlive the handshake timeout")
        if not str(r["partial_head"]).startswith("408"):
            d.append(f"partial head: {r['partial_head']} (no 408)")
        if not str(r["head_32k"]).startswith("431"):
            d.append(f"oversized head: {r['head_32k']}")
        if not str(r["body_100k"]).startswith("413"):
            d.append(f"oversized body: {r['body_100k']}")
        if not str(r["chunked_100k"]).startswith(("411", "413")):
            d.append(f"oversized chunked body: {r['chunked_100k']}")
        if not str(r["scrape_behind_2_slow_handlers"]).startswith("503"):
            d.append("no queue wait: a request behind busy workers waits for them"
                     f" ({r['scrape_behind_2_slow_handlers']})")
        if "503" not in r["cap_refused"]:
            d.append(f"over the cap: {r['cap_refused']} refused, the rest wait in the listen backlog"
                     f" (a scrape at the cap: {r['cap_scrape']})")
        print(f"  {names[n]}: " + ("none" if not d else "; ".join(d)))


if __name__ == "__main__":
    main()
