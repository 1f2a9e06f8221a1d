#!/usr/bin/python3
"""bench/otlp.py - OTLP profiles ingest (POST /v1development/profiles) next to the pprof push of the
same stacks (POST /api/v1/profiles/write), same run: samples/s and the server's CPU per sample.

  /usr/bin/python3 bench/otlp.py [--processes 200] [--stacks 20] [--depth 32] [--rounds 30]
                                 [--senders 4] [--profstore build/profstore]

The load is whole-host profiling as the OpenTelemetry eBPF profiler sends it: --processes
processes, each its own service, each with --stacks distinct stacks --depth frames deep (three
quarters native, unsymbolized: an address in the process's executable or in a shared libc, both
with build ids; the rest symbolized), CPU samples (samples:count, period 50 ms). One round is
one OTLP request holding every process (a ResourceProfiles each, one dictionary), or the same
stacks as one pprof per process (cpu:nanoseconds), pushed one by one. --rounds rounds, 10 s apart,
from --senders keep-alive connections, into a fresh server for each protocol. Bodies are encoded
(protoc's Python classes, tests/integration/otlp_util.py; pprof_decode.encode) and gzipped before
the clock starts. CPU: utime + stime of /proc/PID/stat over the run.
"""
import argparse
import gzip
import http.client
import os
import random
import tempfile
import threading
import time
from pathlib import Path

import bench_env  # noqa: F401  (first: sys.path, PROFSTORE_BIN)

import pprof_decode as pd  # noqa: E402
from conftest import Server  # noqa: E402
from otlp_util import Builder  # noqa: E402

T0 = 1796022000 * 10**9
PERIOD = 50_000_000


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=200)
    ap.add_argument("--stacks", type=int, default=20)
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--profstore", default=None)
    return ap.parse_args()


def workload(a):
    """[process][stack] = (frames leaf first, count); a frame is ("native", mapping, addr) or
    ("fn", name)."""
    rnd = random.Random(1)
    procs = []
    for p in range(a.processes):
        stacks = []
        for s in range(a.stacks):
            native = a.depth * 3 // 4
            frames = [("native", "libc" if k % 3 == 0 else "exe", 0x1000 + rnd.randrange(1 << 20) * 16)
                      for k in range(native)]
            frames += [("fn", "fn_%d" % rnd.randrange(400)) for _ in range(a.depth - native)]
            stacks.append((frames, rnd.randrange(1, 50)))
        procs.append(stacks)
    return procs


def otlp_bodies(a, procs):
    out = []
    for r in range(a.rounds):
        b = Builder()
        libc = b.mapping("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000000000, 0x7f0000200000, 0,
                         "6e3c087aca9b39549e4ba92c451f1e399b586e28")
        for p, stacks in enumerate(procs):
            exe = b.mapping("/usr/bin/proc-%d" % p, 0x400000, 0x900000, 0, "%040x" % (p + 1))
            sc = b.resource({"service.name": "proc-%d" % p, "process.executable.name": "/usr/bin/proc-%d" % p,
                             "host.name": "node-1"})
            prof = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), PERIOD, T0 + r * 10**10, 10**10)
            for frames, n in stacks:
                locs = [b.location(f[2], libc if f[1] == "libc" else exe) if f[0] == "native" else b.frame(f[1])
                        for f in frames]
                b.sample(prof, locs, n)
        out.append(gzip.compress(b.req.SerializeToString(), 1))
    return out


def pprof_bodies(a, procs):
    """[(query, body)] per round and process."""
    out = []
    for r in range(a.rounds):
        for p, stacks in enumerate(procs):
            prof = pd.Profile()
            strs = {"": 0}

            def s(v):
                if v not in strs:
                    strs[v] = len(strs)
                return strs[v]
            prof.sample_type = [pd.ValueType(s("cpu"), s("nanoseconds"))]
            prof.period_type = pd.ValueType(s("cpu"), s("nanoseconds"))
            prof.period = PERIOD
            prof.time_nanos = T0 + r * 10**10
            prof.duration_nanos = 10**10
            prof.mapping = [pd.Mapping(1, 0x7f0000000000, 0x7f0000200000, 0, s("/usr/lib/x86_64-linux-gnu/libc.so.6"),
                                       s("6e3c087aca9b39549e4ba92c451f1e399b586e28")),
                            pd.Mapping(2, 0x400000, 0x900000, 0, s("/usr/bin/proc-%d" % p), s("%040x" % (p + 1)))]
            locs, fns = {}, {}
            for frames, n in stacks:
                ids = []
                for f in frames:
                    if f not in locs:
                        if f[0] == "native":
                            locs[f] = pd.Location(len(locs) + 1, 1 if f[1] == "libc" else 2, f[2])
                        else:
                            if f[1] not in fns:
                                fns[f[1]] = pd.Function(len(fns) + 1, s(f[1]))
                            locs[f] = pd.Location(len(locs) + 1, 0, 0, [pd.Line(fns[f[1]].id, 0)])
                    ids.append(locs[f].id)
                prof.sample.append(pd.Sample(ids, [n * PERIOD]))
            prof.location = list(locs.values())
            prof.function = list(fns.values())
            prof.string_table = list(strs)
            q = "name=process_cpu&labels=%7Bservice_name%3D%22proc-" + str(p) + "%22%7D"
            out.append((q, pd.encode(prof, gzip_level=1)))
    return out


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def send_all(port, reqs, senders):
    """reqs: [(path, headers, body)]; returns seconds; raises on a non-200."""
    errors = []
    idx = [0]
    lock = threading.Lock()

    def worker():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                if idx[0] >= len(reqs) or errors:
                    break
                path, h, body = reqs[idx[0]]
                idx[0] += 1
            c.request("POST", path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            if r.status != 200:
                errors.append((r.status, data[:300]))
        c.close()
    ts = [threading.Thread(target=worker) for _ in range(senders)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise SystemExit("bench/otlp.py: %r" % errors[0])
    return time.monotonic() - t0


def run(a, name, reqs, nsamples):
    wd = Path(tempfile.mkdtemp(prefix="bench_otlp_"))
    srv = Server(wd, retention="0")
    srv.start()
    try:
        c0 = cpu_seconds(srv.proc.pid)
        secs = send_all(srv.port, reqs, a.senders)
        cpu = cpu_seconds(srv.proc.pid) - c0
        nbytes = sum(len(b) for _, _, b in reqs)
        print("%-5s %5d requests, %8d samples, %6.1f MB gzipped: %6.2f s, %9.0f samples/s, "
              "server CPU %6.2f s = %5.2f us/sample" % (name, len(reqs), nsamples, nbytes / 1e6, secs,
                                                        nsamples / secs, cpu, cpu / nsamples * 1e6))
        return nsamples / secs, cpu / nsamples
    finally:
        srv.stop()


def main():
    a = parse_args()
    if a.profstore:
        os.environ["PROFSTORE_BIN"] = a.profstore
    procs = workload(a)
    nsamples = a.rounds * a.processes * a.stacks
    print("whole host: %d processes x %d stacks x %d frames (3/4 native), %d rounds, %d senders"
          % (a.processes, a.stacks, a.depth, a.rounds, a.senders))
    t = time.monotonic()
    otlp = [("/v1development/profiles", {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, b)
            for b in otlp_bodies(a, procs)]
    pprof = [("/api/v1/profiles/write?" + q, {"Content-Type": "application/octet-stream"}, b)
             for q, b in pprof_bodies(a, procs)]
    print("encoded in %.1f s" % (time.monotonic() - t))
    r_otlp = run(a, "otlp", otlp, nsamples)
    r_pprof = run(a, "pprof", pprof, nsamples)
    print("otlp / pprof: samples/s %.2fx, CPU per sample %.2fx" % (r_otlp[0] / r_pprof[0], r_otlp[1] / r_pprof[1]))


if __name__ == "__main__":
    main()
