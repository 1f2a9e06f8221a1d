#!/usr/bin/env python3
"""bench/query_isolation.py - do queries starve ingest? A real profstore holding 24 h of a synthetic
CPU profile (12,420-node call tree, one profile every 5 min: 288, tests/integration/ui_util.py's),
then, twice (with the query pool, --query.max-concurrency=20, and without it, =0: queries on the
event loops as before the pool):

  - push latency idle: sequential pushes of a small Go CPU profile (go/cpu-01) to another series;
  - push latency under load: the same while --clients threads (default 20) each run 24 h merges
    (/api/v1/profiles/query, format=top) back to back;
  - /-/healthy: polled every 10 ms the whole time, its largest latency and p99;
  - merges done and their median latency.

Prints figures, never asserts. Target (issue 11): under load, push p99 within 2x of idle, /-/healthy
< 50 ms throughout.

    bench/query_isolation.py [--profstore BUILD/profstore] [--clients 20] [--seconds 10] [--pushes 200]
"""

import argparse
import http.client
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import bench_env  # noqa: F401  (tests/integration on sys.path, PROFSTORE_BIN)

CPU_NS = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
STEP = 300
POINTS_24H = 288
VARIANTS = 4


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def timed(port, method, path, body=None, headers=None, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t0 = time.monotonic()
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    r.read()
    dt = time.monotonic() - t0
    c.close()
    return r.status, dt


def fill(srv, end):
    from ui_util import synthetic_profile
    bodies = [synthetic_profile(end, k) for k in range(VARIANTS)]
    for k in range(POINTS_24H):
        ts = end - (POINTS_24H - 1 - k) * STEP
        q = urllib.parse.urlencode({"time": str(ts), "labels": 'job="bench",instance="synth:1"'},
                                   quote_via=urllib.parse.quote)
        st, _ = srv.push(bodies[k % VARIANTS], query=q)
        if st != 200:
            raise SystemExit("push %d: %d %r" % (k, st, srv.last_raw[:300]))


class Pusher:
    def __init__(self, body):
        self.port, self.body, self.last = 0, body, 0.0

    def push(self):
        # a later time for every push (of both phases): each is a new profile, in the last hour
        self.last = max(self.last + 0.001, time.time() - 3600)
        ts = "%.3f" % self.last
        q = urllib.parse.urlencode({"time": ts, "labels": 'job="pusher"'}, quote_via=urllib.parse.quote)
        st, dt = timed(self.port, "POST", "/api/v1/profiles/write?" + q, body=self.body)
        if st != 200:
            raise SystemExit("push: %d" % st)
        return dt


def merge_load(port, end, clients, stop, out):
    """In a process of its own (the measuring process keeps its GIL to itself): clients threads of
    24 h merges until stop is set; puts the merge latencies on out."""
    merges = []

    def merger():
        q = urllib.parse.urlencode({"query": CPU_NS + '{job="bench"}', "start": end - 86400, "end": end,
                                    "format": "top", "limit": "20"})
        while not stop.is_set():
            st, dt = timed(port, "GET", "/api/v1/profiles/query?" + q)
            if st == 200:
                merges.append(dt)

    workers = [threading.Thread(target=merger, daemon=True) for _ in range(clients)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out.put(merges)


def run_phase(port, end, args, pusher):
    stop = threading.Event()
    health = []

    def healthy():
        while not stop.is_set():
            st, dt = timed(port, "GET", "/-/healthy", timeout=30)
            health.append(dt)
            time.sleep(0.01)

    hthread = threading.Thread(target=healthy, daemon=True)
    hthread.start()
    idle = [pusher.push() for _ in range(args.pushes)]
    idle_health = list(health)
    mstop, mout = multiprocessing.Event(), multiprocessing.Queue()
    load = multiprocessing.Process(target=merge_load, args=(port, end, args.clients, mstop, mout))
    load.start()
    time.sleep(1.0)  # the merges are running
    health.clear()
    t0 = time.monotonic()
    loaded = []
    while time.monotonic() - t0 < args.seconds or len(loaded) < 20:
        loaded.append(pusher.push())
    load_health = list(health)
    stop.set()
    mstop.set()
    merges = mout.get(timeout=600)
    load.join(timeout=60)
    hthread.join(timeout=30)
    return idle, loaded, idle_health, load_health, merges


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profstore", default=os.environ["PROFSTORE_BIN"])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--pushes", type=int, default=200)
    args = ap.parse_args()
    os.environ["PROFSTORE_BIN"] = args.profstore
    import conftest
    conftest.PROFSTORE_BIN = args.profstore
    from conftest import Server, fixture_bytes

    pusher = Pusher(fixture_bytes("go/cpu-01.pb.gz"))
    end = int(time.time())
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        print("query_isolation: %d clients of 24 h merges (288 profiles of 12,420 nodes), %.0f s of pushes each phase"
              % (args.clients, args.seconds))
        for conc in ("20", "0"):
            srv = Server(Path(tmp) / ("s" + conc), data_dir=data,
                         extra_args=["--query.max-concurrency", conc, "--threads", "2"])
            srv.start()
            try:
                if conc == "20":
                    t0 = time.monotonic()
                    fill(srv, end)
                    print("  filled 24 h in %.1f s" % (time.monotonic() - t0))
                pusher.port = srv.port
                idle, loaded, ih, lh, merges = run_phase(srv.port, end, args, pusher)
            finally:
                srv.stop()
            name = "query pool (--query.max-concurrency=20)" if conc == "20" else "no pool (=0: queries on the loops)"
            ms = lambda x: x * 1000.0  # noqa: E731
            print("  %s" % name)
            print("    push idle:       p50 %7.2f ms  p99 %7.2f ms  (%d pushes)" % (ms(pct(idle, 50)), ms(pct(idle, 99)), len(idle)))
            print("    push under load: p50 %7.2f ms  p99 %7.2f ms  (%d pushes)  p99 ratio %.2fx"
                  % (ms(pct(loaded, 50)), ms(pct(loaded, 99)), len(loaded), pct(loaded, 99) / pct(idle, 99)))
            print("    /-/healthy idle: max %7.2f ms; under load: p99 %7.2f ms  max %7.2f ms  (%d polls)"
                  % (ms(max(ih) if ih else float("nan")), ms(pct(lh, 99)), ms(max(lh) if lh else float("nan")), len(lh)))
            print("    merges: %d done, median %.0f ms" % (len(merges), ms(statistics.median(merges)) if merges else float("nan")))


if __name__ == "__main__":
    main()
