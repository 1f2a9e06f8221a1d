#!/usr/bin/python3
"""bench/symbols.py - a symbolized flame graph over 24 h (--symbols.dir): the first query after a
start (cold: every address read from the debug file through libdwfl), the next ones (warm: from
the cache), and the same query on a server without --symbols.dir (the frames as module+0xoffset:
the merge alone); then the same with the debug file fetched from a local debuginfod (Debian's
`debuginfod -F` on a loopback port, --debuginfod.url, no --symbols.dir): the first query (it
queues the fetch and answers unsymbolized), the time until the file has landed
(profstore_debuginfod_fetches_total), and the first symbolized query after it (cold cache).

  /usr/bin/python3 bench/symbols.py [--profiles 96] [--stacks 200] [--depth 16] [--addresses 5000]
                                    [--profstore build/profstore] [--elf build/profstore]

The program symbolized is --elf (default: profstore's own RelWithDebInfo binary, -g: thousands of
functions, inlining everywhere), placed as the debug file of its build id. --profiles CPU profiles
15 min apart (24 h at 96), each --stacks stacks --depth frames deep, the frames drawn from
--addresses addresses inside its functions (nm), all unsymbolized (OTLP locations with a mapping
at a process address). Prints the milliseconds of /api/v1/profiles/query?format=flamegraph over
the whole range: cold, then the median of 5 warm, then without symbols (median of 5), then the
debuginfod figures (--no-debuginfod skips them).
"""
import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import bench_env  # noqa: F401  (first: sys.path, PROFSTORE_BIN)

from conftest import Server  # noqa: E402
from otlp_util import Builder, post  # noqa: E402

T0 = 1796022000 * 10**9
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
BASE = 0x555555554000


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=int, default=96)
    ap.add_argument("--stacks", type=int, default=200)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--addresses", type=int, default=5000)
    ap.add_argument("--profstore", default=None)
    ap.add_argument("--elf", default=str(bench_env.ROOT / "build" / "profstore"))
    ap.add_argument("--no-debuginfod", action="store_true")
    a = ap.parse_args()
    if a.profstore:
        import os
        os.environ["PROFSTORE_BIN"] = a.profstore
    bid = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", a.elf)).group(1)
    loads = [l.split() for l in run("readelf", "-lW", a.elf).splitlines() if l.strip().startswith("LOAD")]
    text = [l for l in loads if "E" in l[6:-1]][0]
    p_off, p_vaddr = int(text[1], 16), int(text[2], 16)
    m_start, m_off = BASE + (p_vaddr & ~0xfff), p_off & ~0xfff
    fns = []
    for line in run("nm", "-S", "--defined-only", a.elf).splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT" and int(f[1], 16) > 0:
            fns.append((int(f[0], 16), int(f[1], 16)))
    rnd = random.Random(1)
    pool = []
    for _ in range(a.addresses):
        s, n = rnd.choice(fns)
        pool.append(m_start + (s + rnd.randrange(n) - p_vaddr) + (p_off - m_off))
    tmp = Path(tempfile.mkdtemp(prefix="bench_symbols."))
    symdir = tmp / "debug"
    (symdir / ".build-id" / bid[:2]).mkdir(parents=True)
    shutil.copy(a.elf, symdir / ".build-id" / bid[:2] / (bid[2:] + ".debug"))
    print("elf %s: %d functions, build id %s; %d profiles x %d stacks x %d frames from %d addresses"
          % (a.elf, len(fns), bid, a.profiles, a.stacks, a.depth, len(pool)))

    def fill(srv):
        for i in range(a.profiles):
            b = Builder()
            sc = b.resource({"service.name": "native"})
            p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10_000_000, T0 + i * 900 * 10**9, 10**10)
            m = b.mapping("/opt/app/profstore", m_start, m_start + (1 << 30), m_off, bid)
            for _ in range(a.stacks):
                b.sample(p, [b.location(rnd.choice(pool), m) for _ in range(a.depth)], rnd.randrange(1, 20))
            assert post(srv.port, b.req).status == 200

    q = urllib.parse.urlencode({"query": CPU + '{service_name="native"}', "start": str(T0 // 10**9 - 60),
                                "end": str(T0 // 10**9 + 86400), "format": "flamegraph"})

    def timed(srv):
        t = time.perf_counter()
        st, _, body = srv.get("/api/v1/profiles/query?" + q, timeout=120)
        dt = (time.perf_counter() - t) * 1000
        assert st == 200, body[:200]
        return dt, len(json.loads(body)["names"])

    srv = Server(tmp / "srv", extra_args=["--symbols.dir", str(symdir)]).start()
    try:
        fill(srv)
        srv.stop()
        srv.start()  # a fresh cache
        cold, names = timed(srv)
        warm = [timed(srv)[0] for _ in range(5)]
        print("symbolized: cold %.0f ms, warm %.0f ms (median of 5; %d names)" % (cold, statistics.median(warm), names))
        srv.stop()
        srv.extra_args = []
        srv.start()
        off = [timed(srv) for _ in range(6)]
        print("without --symbols.dir: %.0f ms (median of 5 after the first, %.0f ms; %d names)"
              % (statistics.median(x[0] for x in off[1:]), off[0][0], off[0][1]))
        if not a.no_debuginfod:
            srv.stop()
            debuginfod(srv, tmp, symdir, bid, timed)
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def debuginfod(srv, tmp, symdir, bid, timed):
    """The cold flame graph with the debug file fetched from a local debuginfod server."""
    import socket
    import urllib.request
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(tmp / "debuginfod.log", "wb")
    d = subprocess.Popen(["debuginfod", "-F", "-t", "0", "-g", "0", "-d", str(tmp / "dbgd.sqlite"), "-p", str(port),
                          str(symdir)], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = "http://127.0.0.1:%d" % port
        deadline = time.time() + 60
        while True:  # until its scan has indexed the file
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, bid), timeout=10) as r:
                    if r.status == 200:
                        size = len(r.read())
                        break
            except Exception:
                pass
            assert time.time() < deadline, "debuginfod did not index %s" % symdir
            time.sleep(0.2)
        srv.extra_args = ["--debuginfod.url", url, "--debuginfod.cache-dir", str(tmp / "dcache")]
        srv.start()
        t0 = time.perf_counter()
        first, names0 = timed(srv)
        while sum(v for k, v in srv.metrics().items() if k.startswith("profstore_debuginfod_fetches_total")) < 1:
            time.sleep(0.01)
        landed = (time.perf_counter() - t0) * 1000
        m = srv.metrics()
        assert m['profstore_debuginfod_fetches_total{result="ok"}'] == 1, m
        cold, names = timed(srv)
        warm = [timed(srv)[0] for _ in range(5)]
        print("debuginfod (%d bytes): first query %.0f ms (%d names, unsymbolized), file landed %.0f ms after it "
              "was sent, then cold %.0f ms, warm %.0f ms (median of 5; %d names)"
              % (size, first, names0, landed, cold, statistics.median(warm), names))
    finally:
        srv.stop()
        d.terminate()
        d.wait()


if __name__ == "__main__":
    main()
