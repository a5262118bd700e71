#!/usr/bin/env python3
"""Slowloris against one exporter on loopback: opens N connections from
127.0.0.2 that each send a partial request head (or nothing, --idle) and keep
it open, then times scrapes of /metrics from 127.0.0.1. Prints one line:
  connected=N scrapes_ok=K of M median_ms=X max_ms=Y baseline_ms=Z
Exits 1 if any scrape failed or the median scrape took longer than --max-ms.
The bound is on the median of the scrapes, not on the slowest one: on a
loaded 2-core machine one scrape can lose a second to the scheduler, which
says nothing about the exporter; a server that lets the slow connections
hold it misses the bound on every scrape. baseline_ms is the median of as
many scrapes before the slow connections were opened (same run, same load).
Over TLS (--tls CA_FILE): the slow connections finish the handshake first
and then send their partial head (or nothing, --idle); with --tls-stall they
stop halfway through the handshake (a partial ClientHello) instead. Scrapes
are then made over TLS, each on a new connection (a full handshake each)."""
import argparse, socket, ssl, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--conns", type=int, default=1000)
ap.add_argument("--scrapes", type=int, default=5)
ap.add_argument("--max-ms", type=float, default=1000)
ap.add_argument("--idle", action="store_true")
ap.add_argument("--path", default="/metrics")
ap.add_argument("--pid", type=int, default=0, help="print this process' RSS while the connections are open")
ap.add_argument("--tls", default="", help="CA file: speak TLS, verify the server with it")
ap.add_argument("--tls-stall", action="store_true", help="stop halfway through the handshake")
ap.add_argument("--cert", default="", help="client certificate (with --key) for the scrapes")
ap.add_argument("--key", default="")
a = ap.parse_args()
ctx = None
if a.tls:
    ctx = ssl.create_default_context(cafile=a.tls)
    if a.cert:
        ctx.load_cert_chain(a.cert, a.key)
# The first bytes of a TLS 1.2 ClientHello record: the server waits for the rest.
PARTIAL_HELLO = bytes.fromhex("160301020001000200fc0303") + b"\x00" * 8

def scrape():
    t = time.time()
    try:
        c = socket.create_connection(("127.0.0.1", a.port), timeout=30)
        if ctx:
            c = ctx.wrap_socket(c, server_hostname="127.0.0.1")
        c.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % a.path).encode())
        data = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
        c.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except (OSError, ssl.SSLError):
        ok = False
    return ok, (time.time() - t) * 1000

def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0

baseline = median([scrape()[1] for _ in range(a.scrapes)])

socks = []
t0 = time.time()
for i in range(a.conns):
    s = socket.socket()
    s.setblocking(False)
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", a.port))
    except BlockingIOError:
        pass
    socks.append(s)
# Wait for the connects to finish (the backlog drains at the server's pace):
# polled with a generous deadline, not one fixed second.
pending = set(range(len(socks)))
deadline = time.time() + 60
while pending and time.time() < deadline:
    for i in list(pending):
        try:
            socks[i].getpeername()
            pending.discard(i)
        except OSError:
            pass
    if pending:
        time.sleep(0.1)
connected = 0
for i, s in enumerate(socks):
    try:
        s.getpeername()
        if ctx and a.tls_stall:
            s.send(PARTIAL_HELLO)
        elif ctx:
            s.setblocking(True)
            s.settimeout(10)
            s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
            s.setblocking(False)
            socks[i] = s
        if not a.idle and not a.tls_stall:
            s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ")
        connected += 1
    except (OSError, ssl.SSLError):
        pass

ok = 0
times = []
for i in range(a.scrapes):
    # keep the slow ones trickling, as slowloris does
    if not a.idle and not a.tls_stall:
        for s in socks:
            try:
                s.send(b"a")
            except (OSError, ssl.SSLError):
                pass
    good, ms = scrape()
    times.append(ms)
    if good:
        ok += 1
    time.sleep(0.2)
rss = ""
if a.pid:
    for l in open("/proc/%d/status" % a.pid):
        if l.startswith("VmRSS:"):
            rss = " rss_kib=%s" % l.split()[1]
med = median(times)
print("connected=%d scrapes_ok=%d of %d median_ms=%.0f max_ms=%.0f baseline_ms=%.0f bound_ms=%.0f%s"
      % (connected, ok, a.scrapes, med, max(times), baseline, a.max_ms, rss))
for s in socks:
    s.close()
sys.exit(0 if ok == a.scrapes and med <= a.max_ms else 1)
