#!/usr/bin/python3
"""bench/overload.py - the write side at 10x its capacity: no crash, RSS bounded, every 200 durable,
health and small queries keep answering.

  /usr/bin/python3 bench/overload.py [--duration 60] [--factor 10] [--profstore build/profstore]
                                     [--sender c | python]

1. Starts profstore (its own data dir, default flags but --threads 2, --web.max-connections 10000
   for the senders' connections, and any --server-arg) and measures its capacity:
   closed-loop senders push a generated CPU profile (--samples samples, distinct stacks, each
   push its own series) for --measure seconds: 200s a second. --sender c: --measure-conns (64)
   connections of bench_overload_send, each sending again when answered; --sender python: 8
   synchronous threads (too few to fill the group commit: they measure their latency more than
   the capacity; on 2 shared cores, two runs minutes apart: 106/s, and 256/s with 64 connections).
2. Offers --factor times that rate, open loop, for --duration seconds, while a prober asks
   /-/healthy and /api/v1/labels every 100 ms and RSS is sampled every 100 ms. --sender c (the
   default): bench_overload_send (bench/overload_send.c, built next to the other benchmarks), one
   epoll loop (--sender-threads) over up to --sender-conns keep-alive connections; a push due
   while every connection is busy is counted as skipped, not sent late. --sender python: --procs
   sender processes (Python threads alone could not offer more than ~1.5x), each an asyncio loop
   of --conns keep-alive connections sending prebuilt requests on a schedule of their own (a
   connection that falls behind sends at once, never in a burst); on 2 cores these could offer
   only ~7x, the C sender needs a fraction of their CPU. 429 and 503 answers are counted with
   whether they said Retry-After.
3. Stops the server (SIGTERM), starts it again and checks that every push answered 200 is stored.
Prints the capacity, the offered and achieved rates, the 200/429/503/other counts, RSS (max
sampled, VmHWM), the health and query latencies (max, p99), and the durability check."""

import argparse
import http.client
import multiprocessing
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))
import pprof_decode as pd  # noqa: E402


def gen_profile(nsamples, seed=1):
    """A CPU profile of nsamples samples with distinct stacks (depth 12 over up to 4,000 functions)."""
    rnd = random.Random(seed)
    strings = ["", "samples", "count", "cpu", "nanoseconds"]
    nfun = min(4000, max(100, nsamples))
    p = pd.Profile()
    p.sample_type = [pd.ValueType(1, 2), pd.ValueType(3, 4)]
    p.period_type = pd.ValueType(3, 4)
    p.period = 10000000
    for i in range(nfun):
        strings.append("bench/pkg%d.Func%d" % (i % 50, i))
        p.function.append(pd.Function(id=i + 1, name=len(strings) - 1))
        p.location.append(pd.Location(id=i + 1, line=[pd.Line(function_id=i + 1, line=10 + i % 90)]))
    for _ in range(nsamples):
        n = rnd.randint(1, 20)
        p.sample.append(pd.Sample(location_id=[rnd.randint(1, nfun) for _ in range(12)], value=[n, n * 10000000]))
    p.string_table = strings
    p.duration_nanos = 10 * 10**9
    return pd.encode(p, gzip_level=6)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, binary, data_dir, log, extra=()):
        self.binary, self.data_dir, self.log, self.extra = binary, data_dir, log, list(extra)
        self.proc = None

    def start(self):
        self.port = free_port()
        self.proc = subprocess.Popen([self.binary, "--listen", "127.0.0.1:%d" % self.port, "--data-dir",
                                      str(self.data_dir), "--retention", "0", "--threads", "2",
                                      "--web.max-connections", "10000"] + self.extra,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self.get("/-/ready")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("profstore did not get ready")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)

    def request(self, method, path, body=None, timeout=30.0):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers={"Content-Type": "application/octet-stream"})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def get(self, path, timeout=30.0):
        return self.request("GET", path, timeout=timeout)

    def status_kb(self, field):
        try:
            for line in open("/proc/%d/status" % self.proc.pid):
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0


def push_path(i):
    return "/api/v1/profiles/write?name=process_cpu&labels=" + urllib.parse.quote('{job="bench",req="%d"}' % i)


def raw_request(path, body):
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Length: %d\r\n\r\n" % (path.encode(), len(body))) + body


async def read_response(reader):
    """(status, has Retry-After, wants close) of one answer on a keep-alive connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    status = int(lines[0].split()[1])
    clen, retry, close = 0, False, False
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            clen = int(v)
        elif k == b"retry-after":
            retry = True
        elif k == b"connection" and v.strip().lower() == b"close":
            close = True
    if clen:
        await reader.readexactly(clen)
    return status, retry, close


def sender_proc(k, port, body, per, nconns, start_at, stop_at, out):
    """One sender process: nconns keep-alive connections on one asyncio loop, each pushing every per
    seconds (ids (k*1000 + conn + 1)*10^6 + n); puts (counts, retry-after counts, acked ids) on out."""
    import asyncio
    counts, retry, acked = {}, {}, []

    async def conn_main(c):
        rw, n = None, 0
        nxt = start_at + per * (k * nconns + c) / (nconns * 64)
        while True:
            now = time.monotonic()
            if now >= stop_at:
                break
            if nxt > now:
                await asyncio.sleep(nxt - now)
            i = (k * 1000 + c + 1) * 10**6 + n  # above the ids of the capacity phase
            n += 1
            try:
                if rw is None:
                    rw = await asyncio.open_connection("127.0.0.1", port)
                rw[1].write(raw_request(push_path(i), body))
                st, ra, close = await asyncio.wait_for(read_response(rw[0]), 120)
                if close:
                    rw[1].close()
                    rw = None
            except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                st, ra = "error:" + type(e).__name__, False
                if rw is not None:
                    rw[1].close()
                rw = None
            counts[st] = counts.get(st, 0) + 1
            if ra:
                retry[st] = retry.get(st, 0) + 1
            if st == 200:
                acked.append(i)
            nxt = max(nxt + per, time.monotonic() - per)  # behind: at once, but no burst
        if rw is not None:
            rw[1].close()

    async def run():
        await asyncio.gather(*(conn_main(c) for c in range(nconns)))

    asyncio.run(run())
    out.put((counts, retry, acked))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profstore", default=str(HERE.parent / "build" / "profstore"))
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--factor", type=float, default=10.0)
    ap.add_argument("--measure", type=float, default=5.0)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--sender", choices=("c", "python"), default="c",
                    help="the open-loop load: bench_overload_send (c) or asyncio processes (python)")
    ap.add_argument("--sender-bin", default=str(HERE.parent / "build" / "bench" / "bench_overload_send"))
    ap.add_argument("--measure-conns", type=int, default=64, help="closed-loop connections measuring the capacity (c)")
    ap.add_argument("--sender-conns", type=int, default=8000,
                    help="keep-alive connections of the C sender at most (a 200 may wait seconds in the queues)")
    ap.add_argument("--sender-threads", type=int, default=1, help="epoll loops of the C sender")
    ap.add_argument("--procs", type=int, default=4, help="sender processes (python; c: --procs x --conns connections)")
    ap.add_argument("--conns", type=int, default=750, help="keep-alive connections per sender process")
    ap.add_argument("--server-arg", action="append", default=[], help="one more profstore flag (repeatable)")
    args = ap.parse_args()

    body = gen_profile(args.samples)
    work = Path(tempfile.mkdtemp(prefix="ps-overload-"))
    log = open(work / "profstore.log", "ab")
    srv = Server(args.profstore, work / "data", log, args.server_arg)
    srv.start()
    lock = threading.Lock()
    acked = []
    counts = {}
    next_id = [0]

    def take_id():
        with lock:
            next_id[0] += 1
            return next_id[0]

    def one_push():
        i = take_id()
        try:
            st, _ = srv.request("POST", push_path(i), body)
        except OSError as e:
            st = "error:" + type(e).__name__
        with lock:
            counts[st] = counts.get(st, 0) + 1
            if st == 200:
                acked.append(i)
        return st

    # 1. capacity, closed loop
    if args.sender == "c":
        # the C sender's closed loop: --measure-conns pushes always in flight, enough to fill the
        # group commit (8 synchronous Python senders measured their own latency more than capacity)
        body_path, acked_path = work / "body.pb.gz", work / "acked-measure.txt"
        body_path.write_bytes(body)
        res = subprocess.run([args.sender_bin, "--port", str(srv.port), "--body", str(body_path), "--closed", "1",
                              "--duration", str(args.measure), "--conns", str(args.measure_conns), "--id-base", "1",
                              "--acked", str(acked_path)], stdout=subprocess.PIPE, check=True, text=True)
        for line in res.stdout.splitlines():
            f = line.split()
            if f[0] == "status" and int(f[2]):
                counts[int(f[1]) if f[1].isdigit() else f[1]] = int(f[2])
        acked.extend(int(x) for x in acked_path.read_text().split())
        capacity = counts.get(200, 0) / args.measure
        how = "%d connections of bench_overload_send" % args.measure_conns
    else:
        stop_at = time.monotonic() + args.measure

        def closed():
            while time.monotonic() < stop_at:
                one_push()

        ts = [threading.Thread(target=closed) for _ in range(8)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        capacity = counts.get(200, 0) / (time.monotonic() - t0)
        how = "8 Python senders"
    print("capacity: %.0f pushes/s (%d-sample CPU profile, %d bytes gzipped; closed loop, %s, %.0f s)"
          % (capacity, args.samples, len(body), how, args.measure))
    measure_counts = dict(counts)
    counts.clear()

    # 2. open loop at factor x capacity, from --procs processes
    rate = capacity * args.factor
    nconns = args.procs * args.conns
    per = nconns / rate  # seconds between one connection's pushes
    start_at = time.monotonic() + 0.5
    stop_at = start_at + args.duration
    rss_max = [0]
    lat = {"health": [], "labels": []}
    done = threading.Event()

    def prober():
        while not done.is_set():
            for name, path in (("health", "/-/healthy"), ("labels", "/api/v1/labels")):
                t = time.monotonic()
                try:
                    st, _ = srv.get(path, timeout=30)
                except OSError:
                    st = None
                lat[name].append((time.monotonic() - t, st))
            time.sleep(0.1)

    anon_max = [0]
    anon_by_10s = {}  # the max anonymous RSS of each 10 s of the load: bounded, or growing?

    def sampler():
        while not done.is_set():
            rss_max[0] = max(rss_max[0], srv.status_kb("VmRSS"))
            anon = srv.status_kb("RssAnon")  # the rest: LMDB's mapped file
            anon_max[0] = max(anon_max[0], anon)
            k = int((time.monotonic() - start_at) // 10)
            anon_by_10s[k] = max(anon_by_10s.get(k, 0), anon)
            time.sleep(0.1)

    retries = {}
    csend = {}
    if args.sender == "c":
        body_path, acked_path = work / "body.pb.gz", work / "acked.txt"
        body_path.write_bytes(body)
        cmd = [args.sender_bin, "--port", str(srv.port), "--body", str(body_path), "--rate", "%.3f" % rate,
               "--duration", str(args.duration), "--conns", str(args.sender_conns), "--threads", str(args.sender_threads),
               "--id-base", str(10**9), "--acked", str(acked_path)]
        aux = [threading.Thread(target=prober), threading.Thread(target=sampler)]
        for t in aux:
            t.start()
        start_at = time.monotonic()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True)
        for line in res.stdout.splitlines():
            f = line.split()
            if f[0] == "status":  # status CLASS N retry_after N latency_ms median X p99 Y max Z
                key = int(f[1]) if f[1].isdigit() else f[1]
                if int(f[2]):
                    counts[key] = int(f[2])
                if int(f[4]):
                    retries[key] = int(f[4])
                csend[key] = (float(f[7]), float(f[9]), float(f[11]))
            elif f[0] == "skipped_at":  # second:count ...
                csend["skipped_at"] = " ".join(f[1:]) or "-"
            else:
                csend[f[0]] = float(f[1])
        acked.extend(int(x) for x in acked_path.read_text().split())
        elapsed = args.duration  # the offered rate is over the schedule's time, not the grace after it
    else:
        mp = multiprocessing.get_context("fork")
        out = mp.Queue()
        procs = [mp.Process(target=sender_proc, args=(k, srv.port, body, per, args.conns, start_at, stop_at, out))
                 for k in range(args.procs)]
        for p in procs:
            p.start()
        aux = [threading.Thread(target=prober), threading.Thread(target=sampler)]  # after the fork
        for t in aux:
            t.start()
        for _ in procs:
            c, r, a = out.get()
            for kk, v in c.items():
                counts[kk] = counts.get(kk, 0) + v
            for kk, v in r.items():
                retries[kk] = retries.get(kk, 0) + v
            acked.extend(a)
        for p in procs:
            p.join()
        elapsed = time.monotonic() - start_at
    done.set()
    for t in aux:
        t.join()
    hwm = srv.status_kb("VmHWM")
    alive = srv.proc.poll() is None
    offered = csend["sent"] if args.sender == "c" else sum(counts.values())
    print("overload: %.0f s, target %.0f pushes/s (%.0fx), offered %.0f/s (%.1fx capacity)"
          % (elapsed, rate, args.factor, offered / elapsed, offered / elapsed / capacity if capacity else 0))
    if args.sender == "c":
        print("sender: bench_overload_send, %d epoll loop(s), up to %d keep-alive connections (%d opened, %d connects), "
              "%.1f s of its CPU; skipped (every connection busy) %d, unanswered after the grace %d"
              % (args.sender_threads, args.sender_conns, csend["connections"], csend["connects"], csend["sender_cpu"],
                 csend["skipped"], csend["unanswered"]))
        if csend["skipped"]:
            print("skipped in second (of the run): count: " + csend["skipped_at"])
        for k in (200, 429, 503, "other", "error"):
            if counts.get(k):
                print("latency of %s answers: median %.1f ms, p99 %.1f ms, max %.1f ms" % ((k,) + csend[k]))
    else:
        print("senders: %d processes x %d keep-alive connections" % (args.procs, args.conns))
    print("answers: " + ", ".join("%s: %d" % (k, v) for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))))
    for st in (429, 503):
        if counts.get(st):
            print("refused %d: %d, with Retry-After: %d" % (st, counts[st], retries.get(st, 0)))
    print("stored (200): %.0f/s" % (counts.get(200, 0) / elapsed))
    print("server alive after the load: %s" % alive)
    print("RSS: max sampled %.1f MiB (anonymous at most %.1f MiB; the rest is LMDB's mapped file), VmHWM %.1f MiB"
          % (rss_max[0] / 1024, anon_max[0] / 1024, hwm / 1024))
    print("anonymous RSS max per 10 s: " + ", ".join("%.0f" % (anon_by_10s[k] / 1024) for k in sorted(anon_by_10s)
                                                       if k >= 0) + " MiB")
    for name in ("health", "labels"):
        xs = sorted(x for x, _ in lat[name])
        bad = sum(1 for _, st in lat[name] if st != 200)
        if xs:
            print("%s (%s): %d probes, not 200: %d, latency max %.1f ms, p99 %.1f ms, median %.1f ms"
                  % (name, "/-/healthy" if name == "health" else "/api/v1/labels", len(xs), bad, xs[-1] * 1000,
                     xs[int(len(xs) * 0.99) - 1] * 1000 if len(xs) >= 100 else xs[-1] * 1000, xs[len(xs) // 2] * 1000))

    # 3. durability: every 200 is there after a restart
    rc = srv.stop()
    srv.start()
    st, data = srv.get("/api/v1/label/req/values", timeout=120)
    import json
    stored = set(int(v) for v in json.loads(data)["data"])
    want = set(acked)
    missing = want - stored
    print("durable: %d acknowledged (incl. %d while measuring), %d stored after SIGTERM (exit %d) and restart, "
          "%d missing" % (len(want), measure_counts.get(200, 0), len(stored & want), rc, len(missing)))
    srv.stop()
    log.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0 if alive and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
