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
                             [--pool-only]

Beside the client's view, the server's own: its /-/healthy histogram (from the request's first byte
on the loop to the answer) and the polls over 50 ms, which tell a loop slow to answer from a
client (or a host) slow to ask.
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


def run_phase(port, end, args, pusher, snap=lambda: None):
    """snap() is called before the idle pushes, after them and after the loaded ones."""
    stop = threading.Event()
    snaps = [snap()]
    health = []

    def healthy():
        while not stop.is_set():
            st, dt = timed(port, "GET", "/-/healthy", timeout=30)
            health.append(dt)
            time.sleep(0.01)

    hthread = threading.Thread(target=healthy, daemon=True)
    hthread.start()
    idle = [pusher.push() for _ in range(args.pushes)]
    snaps.append(snap())
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
    snaps.append(snap())
    load_health = list(health)
    stop.set()
    mstop.set()
    merges = mout.get(timeout=600)
    load.join(timeout=60)
    hthread.join(timeout=30)
    return idle, loaded, idle_health, load_health, merges, snaps


def hist_delta(a, b):
    return {le: n - a.get(le, 0) for le, n in b.items() if n - a.get(le, 0)}


def epoll_threads(pid):
    """The threads of pid waiting in epoll_wait now (x86-64 syscalls 232, 281): the HTTP loops of
    an idle server."""
    out = set()
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            if open("/proc/%d/task/%s/syscall" % (pid, tid)).read().split()[0] in ("232", "281"):
                out.add(tid)
        except (FileNotFoundError, PermissionError, IndexError):
            pass
    return out


def sched(pid, loops=()):
    """{class: [run ns, runqueue wait ns, timeslices]} of pid's threads, from /proc/PID/task/TID/schedstat;
    classes: "loops" (tids in loops), then by priority: "nice0" (the writer, main...), "idle" (query
    threads, SCHED_IDLE), "nice5" (decode threads)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            st = open("/proc/%d/task/%s/stat" % (pid, tid)).read().rsplit(")", 1)[1].split()
            run, wait, n = (int(x) for x in open("/proc/%d/task/%s/schedstat" % (pid, tid)).read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
        cls = "loops" if tid in loops else "idle" if int(st[38]) == 5 else "nice%d" % int(st[16])
        acc = out.setdefault(cls, [0, 0, 0])
        acc[0] += run
        acc[1] += wait
        acc[2] += n
    return out


def sched_delta(a, b):
    return "; ".join("%s: ran %.0f ms, waited for a CPU %.0f ms over %d slices (%.2f ms each)"
                     % (k, (v[0] - a.get(k, [0, 0, 0])[0]) / 1e6, (v[1] - a.get(k, [0, 0, 0])[1]) / 1e6,
                        v[2] - a.get(k, [0, 0, 0])[2],
                        (v[1] - a.get(k, [0, 0, 0])[1]) / 1e6 / max(1, v[2] - a.get(k, [0, 0, 0])[2]))
                     for k, v in sorted(b.items()))


def histogram(srv, family, match=""):
    """The server's histogram family (its buckets whose labels contain match): {le: count}, not
    cumulative."""
    st, _, body = srv.get("/metrics")
    prev, out = 0, {}
    for line in body.decode().splitlines():
        if line.startswith(family + "_bucket{") and match in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            n = int(float(line.split()[-1]))
            if n - prev:
                out[le] = n - prev
            prev = n
    return out


def healthy_histogram(srv, handler="/-/healthy"):
    """profstore_http_request_duration_seconds for handler."""
    return histogram(srv, "profstore_http_request_duration_seconds", 'handler="%s"' % handler)


def txn_histogram(srv):
    return histogram(srv, "profstore_writer_transaction_duration_seconds")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profstore", default=os.environ["PROFSTORE_BIN"])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--pushes", type=int, default=200)
    ap.add_argument("--pool-only", action="store_true", help="only the phase with the query pool")
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
        for conc in ("20",) if args.pool_only else ("20", "0"):
            srv = Server(Path(tmp) / ("s" + conc), data_dir=data,
                         extra_args=["--query.max-concurrency", conc, "--threads", "2"])
            srv.start()
            try:
                if conc == "20":
                    t0 = time.monotonic()
                    fill(srv, end)
                    print("  filled 24 h in %.1f s" % (time.monotonic() - t0))
                pusher.port = srv.port
                loops = epoll_threads(srv.proc.pid)
                s0, c0 = sched(srv.proc.pid, loops), sched(os.getpid())
                idle, loaded, ih, lh, merges, snaps = run_phase(
                    srv.port, end, args, pusher,
                    lambda: (healthy_histogram(srv, "/api/v1/profiles/write"), txn_histogram(srv)))
                s1, c1 = sched(srv.proc.pid, loops), sched(os.getpid())
                hist = healthy_histogram(srv)
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
            print("    /-/healthy polls over 50 ms: %d; the server's own timing (both phases), by bucket: %s"
                  % (sum(1 for x in lh if x > 0.05), hist))
            print("    pushes, the server's own timing by bucket: idle %s; under load %s"
                  % (hist_delta(snaps[0][0], snaps[1][0]), hist_delta(snaps[1][0], snaps[2][0])))
            print("    write transactions (build, commit, fsync) by bucket: idle %s; under load %s"
                  % (hist_delta(snaps[0][1], snaps[1][1]), hist_delta(snaps[1][1], snaps[2][1])))
            print("    server threads (%d loops): %s" % (len(loops), sched_delta(s0, s1)))
            print("    this (measuring) process: %s" % sched_delta(c0, c1))
            print("    host load average at the end: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
