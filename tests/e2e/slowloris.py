#!/usr/bin/env python3
"""Slowloris against one exporter on loopback: opens N connections from
127.0.0.2 that each send a partial request head (or nothing, --idle) and keep
it open, then times scrapes of /metrics from 127.0.0.1. Prints one line:
  connected=N scrapes_ok=K of M max_ms=X
Exits 1 if any scrape took longer than --max-ms or failed."""
import argparse, socket, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--conns", type=int, default=1000)
ap.add_argument("--scrapes", type=int, default=5)
ap.add_argument("--max-ms", type=float, default=1000)
ap.add_argument("--idle", action="store_true")
ap.add_argument("--path", default="/metrics")
ap.add_argument("--pid", type=int, default=0, help="print this process' RSS while the connections are open")
a = ap.parse_args()

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
time.sleep(1.0)
connected = 0
for s in socks:
    try:
        s.getpeername()
        if not a.idle:
            s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ")
        connected += 1
    except OSError:
        pass

def scrape():
    t = time.time()
    try:
        c = socket.create_connection(("127.0.0.1", a.port), timeout=a.max_ms / 1000 + 2)
        c.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % a.path).encode())
        data = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
        c.close()
        ok = data.startswith(b"HTTP/1.1 200")
    except OSError:
        ok = False
    return ok, (time.time() - t) * 1000

ok = 0
worst = 0.0
for i in range(a.scrapes):
    # keep the slow ones trickling, as slowloris does
    if not a.idle:
        for s in socks:
            try:
                s.send(b"a")
            except OSError:
                pass
    good, ms = scrape()
    worst = max(worst, ms)
    if good and ms <= a.max_ms:
        ok += 1
    time.sleep(0.2)
rss = ""
if a.pid:
    for l in open("/proc/%d/status" % a.pid):
        if l.startswith("VmRSS:"):
            rss = " rss_kib=%s" % l.split()[1]
print("connected=%d scrapes_ok=%d of %d max_ms=%.0f%s" % (connected, ok, a.scrapes, worst, rss))
for s in socks:
    s.close()
sys.exit(0 if ok == a.scrapes else 1)
