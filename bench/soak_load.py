#!/usr/bin/env python3
"""The load and the figures of bench/soak.sh (see there): scrapers, API and
live-view clients, cgroup churn, RSS/fd samples every 5 s. Prints a table and
the targets; exits 1 if one is missed."""
import argparse, http.client, os, statistics, subprocess, sys, threading, time, urllib.parse

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--pid", type=int, required=True)
ap.add_argument("--seconds", type=float, default=60)
ap.add_argument("--churn", required=True, help="parent memcg directory for churned cgroups")
ap.add_argument("--file", required=True, help="a file the churned cgroups' processes read")
ap.add_argument("--token", default="")
ap.add_argument("--warmup", type=float, default=45, help="seconds before growth is measured (>= the history's retention)")
a = ap.parse_args()
u = urllib.parse.urlparse(a.url)
stop = time.time() + a.seconds
lock = threading.Lock()
lat = []
errors = {}
requests = [0]


def get(path, headers=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    t = time.time()
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
        ok = r.status == 200
        code = r.status
    except Exception as e:  # noqa: BLE001 - any failure is an error to count
        ok, code, body = False, type(e).__name__, b""
    finally:
        c.close()
    ms = (time.time() - t) * 1000
    with lock:
        requests[0] += 1
        if not ok:
            errors[(path.split("?")[0], code)] = errors.get((path.split("?")[0], code), 0) + 1
    return ok, ms, body


def scraper(rate):
    period = 1.0 / rate
    nxt = time.time()
    while time.time() < stop:
        ok, ms, _ = get("/metrics", {"Accept-Encoding": "gzip"})
        with lock:
            lat.append(ms)
        nxt += period
        time.sleep(max(0, nxt - time.time()))


def api():
    auth = {"Authorization": "Bearer " + a.token} if a.token else {}
    rng = "/api/v1/query_range?query=" + urllib.parse.quote("rate(memcg_memory_failcnt_total[10s])")
    paths = ["/api/v1/cgroups", "/api/v1/reclaim/report?window=1m", "/", None,
             "/api/v1/query?query=soak:usage:sum", "/api/v1/rules", "/api/v1/alerts"]
    i = 0
    while time.time() < stop:
        p = paths[i % len(paths)]
        if p is None:
            now = int(time.time())
            p = rng + "&start=%d&end=%d&step=1" % (now - 60, now)
        get(p)
        if i % 7 == 0:
            get("/api/v1/controller/state", auth)
        i += 1
        time.sleep(0.2)


made = [0]
removed = [0]


def churn():
    live = []
    i = 0
    while time.time() < stop:
        d = os.path.join(a.churn, "churn%d" % i)
        i += 1
        try:
            os.mkdir(d)
            p = subprocess.Popen(["sh", "-c", "echo $$ > %s/cgroup.procs; exec head -c 64M %s > /dev/null; sleep 5"
                                  % (d, a.file)])
            live.append((time.time() + 2, d, p))
            made[0] += 1
        except OSError:
            pass
        while live and live[0][0] < time.time():
            _, d, p = live.pop(0)
            p.kill()
            p.wait()
            for _ in range(50):
                try:
                    os.rmdir(d)
                    removed[0] += 1
                    break
                except OSError:
                    time.sleep(0.05)
        time.sleep(0.2)
    for _, d, p in live:
        p.kill()
        p.wait()
        for _ in range(50):
            try:
                os.rmdir(d)
                removed[0] += 1
                break
            except OSError:
                time.sleep(0.05)


def sample():
    rss = anon = 0
    with open("/proc/%d/status" % a.pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                rss = int(l.split()[1])
            elif l.startswith("RssAnon:"):
                anon = int(l.split()[1])
    fds = len(os.listdir("/proc/%d/fd" % a.pid))
    hist = 0
    ok, _, body = get("/metrics")
    for l in body.decode(errors="replace").splitlines():
        if l.startswith("memcg_exporter_history_bytes "):
            hist = int(float(l.split()[1])) // 1024
    return rss, fds, hist, anon


threads = [threading.Thread(target=scraper, args=(5,)) for _ in range(4)]
threads += [threading.Thread(target=api), threading.Thread(target=churn)]
for t in threads:
    t.start()
t0 = time.time()
samples = []
while time.time() < stop:
    samples.append((time.time() - t0,) + sample())
    time.sleep(min(5, max(0, stop - time.time())))
for t in threads:
    t.join()
samples.append((time.time() - t0,) + sample())

# RSS = anonymous memory (heap, stacks: where a leak shows) + file pages
# (the binary's and libraries' code and data as they are first touched).
print("   t(s)  RSS(KiB)  anon(KiB)  file(KiB)  fds  history(KiB)")
for t, rss, fds, hist, anon in samples:
    print("%7.0f %9d %10d %10d %4d %13d" % (t, rss, anon, rss - anon, fds, hist))
warm = [s for s in samples if s[0] >= max(a.warmup, a.seconds / 3)] or samples[-1:]
rss0, rss1 = warm[0][1], max(s[1] for s in warm)
# Descriptors: the median of the first and of the second half after warm-up
# (a walk holds two trees' directories for a moment: single samples spike).
half = max(1, len(warm) // 2)
fd0 = statistics.median(s[2] for s in warm[:half])
fd1 = statistics.median(s[2] for s in warm[half:] or warm[-1:])
fdmax = max(s[2] for s in warm)
growth = (rss1 - rss0) * 100.0 / rss0
anon0, anon1 = warm[0][4], max(s[4] for s in warm)
anon_growth = (anon1 - anon0) * 100.0 / anon0 if anon0 else 0
lat.sort()
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0
failed = sum(errors.values())
print("requests: %d (scrapes %d at %.1f/s), failed: %d %s" % (
    requests[0], len(lat), len(lat) / a.seconds, failed, dict(errors) if errors else ""))
print("scrape latency ms: p50 %.1f  p99 %.1f  max %.1f" % (p(0.5), p(0.99), lat[-1] if lat else 0))
print("cgroups churned: %d made, %d removed" % (made[0], removed[0]))
print("RSS after warm-up: %d -> max %d KiB (%+.1f%%); fds (medians) %d -> %d, max %d" % (
    rss0, rss1, growth, fd0, fd1, fdmax))
print("  of it anonymous: %d -> max %d KiB (%+.1f%%); file-backed %d -> max %d KiB" % (
    anon0, anon1, anon_growth, rss0 - anon0, max(s[1] - s[4] for s in warm)))
left = [d for d in os.listdir(a.churn) if d.startswith("churn")]
ok = True
for name, good in [("0 failed requests", failed == 0),
                   ("RSS growth after warm-up < 5%% (%+.1f%%)" % growth, growth < 5),
                   ("fds flat after warm-up (medians %+d <= 8)" % (fd1 - fd0), fd1 - fd0 <= 8),
                   ("every churned cgroup removed (%d left)" % len(left), not left)]:
    print(("PASS " if good else "MISS ") + name)
    ok &= good
sys.exit(0 if ok else 1)
