#!/usr/bin/python3
"""bench/forward.py - forwarding A -> B on loopback (src/forward): throughput, A's CPU per profile
with and without forwarding, and the catch-up after an outage of B.

  /usr/bin/python3 bench/forward.py [--profiles 3000] [--senders 4] [--rate 500] [--outage 300]
                                    [--rw-requests 200] [--shards 2] [--profstore build/profstore]
                                    [--sender-bin build/bench/bench_overload_send] [--catchup-only]
                                    [--perf DIR]

1. Ingest alone: a profstore without forward: gets --profiles pushes of go/cpu-01.pb.gz (200 stacks,
   2 sample types, time_nanos 1 s after the last push of its series; 100 series) from --senders
   keep-alive connections; its CPU (utime + stime of /proc/PID/stat) per profile.
2. Forwarding: the same into A, which forwards to B (Connect push); the time from the first push
   until A's /api/v1/status/forward says B acknowledged all: profiles/s forwarded; A's CPU per
   profile (ingest + forwarding) next to step 1's, and the share forwarding adds.
3. Samples: --rw-requests remote-write requests (100 series x 20 samples) into A, forwarded to B's
   /api/v1/write: samples/s forwarded.
4. Catch-up: B killed; pushes go on at --rate profiles/s for --outage seconds (default 300, the
   issue's 5 minutes); B restarted on the same port while the pushes go on at --rate: the time
   until less than a second of pushes is pending, the backlog and the rate A sent at meanwhile, as
   a multiple of the live rate, and the CPU seconds of A, B and the sender during the catch-up.
   The live load is bench_overload_send (bench/overload_send.c, open loop, --series 100: the same
   series and stamped bodies as steps 1-2), so the live rate really is --rate: Python pushers
   reached only 320/s of 500 on 2 cores. --perf DIR: `perf record -g` of A and of B during the
   catch-up (DIR/a.data, DIR/b.data). --catchup-only: step 4 alone.
Prints every figure; exits 1 when B does not end up with every profile A stored.
"""
import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import bench_env  # noqa: F401  (first: sys.path, PROFSTORE_BIN)

HERE = Path(__file__).resolve().parent


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=int, default=3000)
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--outage", type=float, default=300.0)
    ap.add_argument("--rw-requests", type=int, default=200)
    ap.add_argument("--shards", type=int, default=2, help="queue_config.max_shards of A's endpoints")
    ap.add_argument("--batch", type=int, default=500, help="queue_config.max_samples_per_send of A's endpoints")
    ap.add_argument("--profstore", default=None)
    ap.add_argument("--sender-bin", default=str(Path(__file__).resolve().parent.parent / "build" / "bench" /
                                                "bench_overload_send"))
    ap.add_argument("--catchup-only", action="store_true", help="step 4 only")
    ap.add_argument("--perf", default=None, help="perf record -g of A and B during the catch-up, into this dir")
    return ap.parse_args()


ARGS = parse_args()
if ARGS.profstore:
    os.environ["PROFSTORE_BIN"] = str(Path(ARGS.profstore).resolve())

import conftest  # noqa: E402
from conftest import Server, fixture_bytes  # noqa: E402

BODY = fixture_bytes("go/cpu-01.pb.gz")
T0 = int(time.time()) - 7200  # pushes are stamped from here on, 1 s apart per series
NSERIES = 100

import gzip  # noqa: E402
import zlib  # noqa: E402
import pprof_decode as pd  # noqa: E402

_base = pd.decode(BODY)
_base.time_nanos = 0
RAW = pd.encode(_base)  # uncompressed, without time_nanos
_bodies = {}
_bodies_lock = threading.Lock()


def body_at(sec):
    """The fixture stamped time_nanos = sec (field 9 appended: the last one wins), gzipped, as a
    client sends it: A then forwards the body as received."""
    with _bodies_lock:
        b = _bodies.get(sec)
    if b is None:
        v, out = sec * 10**9, bytearray([9 << 3])
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        b = gzip.compress(RAW + bytes(out), compresslevel=6)
        with _bodies_lock:
            _bodies[sec] = b
    return b


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy():
    """Seconds of CPU (all CPUs) the machine spent busy (not idle or iowait), from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """CPU seconds by thread kind ("writer", "decode", "http", "fwd-b", ...: the name less its -N)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        kind = name.rsplit("-", 1)[0] if name.rsplit("-", 1)[-1].isdigit() else name
        out[kind] = out.get(kind, 0) + (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    return out


def thread_cpu_delta(t0, t1):
    return ", ".join("%s %.1f" % (k, t1[k] - t0.get(k, 0)) for k in sorted(t1, key=lambda k: -(t1[k] - t0.get(k, 0)))
                     if t1[k] - t0.get(k, 0) >= 0.05)


class Pusher:
    """Pushes profiles k = start, start+1, ...: series k % NSERIES at T0 + k // NSERIES seconds."""

    def __init__(self, port, senders):
        self.port = port
        self.senders = senders
        self.lock = threading.Lock()
        self.next = 0
        self.ok = 0
        self.bad = 0

    def _path(self, k):
        return "/api/v1/profiles/write?labels=%%7Bjob%%3D%%22bench%%22%%2Cs%%3D%%22%d%%22%%7D" % (k % NSERIES)

    def take(self, limit):
        with self.lock:
            if self.next >= limit:
                return None
            k = self.next
            self.next += 1
            return k

    def worker(self, limit, pace):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        while True:
            k = pace() if pace else self.take(limit)
            if k is None:
                break
            try:
                conn.request("POST", self._path(k), body=body_at(T0 + k // NSERIES))
                r = conn.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                ok = False
            with self.lock:
                self.ok += ok
                self.bad += not ok
        conn.close()

    def run(self, limit, pace=None):
        ths = [threading.Thread(target=self.worker, args=(limit, pace)) for _ in range(self.senders)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()


def fwd_status(a):
    return a.get_json("/api/v1/status/forward")["data"][0]


def wait_sent(a, n, timeout=1800):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        e = fwd_status(a)
        if e["sent"] >= n and e["pending"] == 0:
            return e
        time.sleep(0.05)
    raise SystemExit("forwarding did not finish: %r" % fwd_status(a))


def config(dirpath, b_port, protocol="pyroscope_push", path=""):
    p = Path(dirpath) / ("fwd-%s.yml" % protocol)
    p.write_text("forward:\n  - name: b\n    url: http://127.0.0.1:%d%s\n    protocol: %s\n"
                 "    queue_config: {batch_send_deadline: 200ms, max_samples_per_send: %d, capacity: %d,"
                 " max_shards: %d}\n" % (b_port, path, protocol, ARGS.batch, max(2500, ARGS.batch * ARGS.shards),
                                         ARGS.shards))
    return p


def main():
    tmp = Path(tempfile.mkdtemp(prefix="bench-forward-"))
    n = ARGS.profiles
    flags = dict(retention="0", threads="2")
    for sec in range(T0, T0 + n // NSERIES + 1):
        body_at(sec)
    print("# bench/forward: %d profiles of go/cpu-01.pb.gz (%d bytes, time_nanos set per push), %d senders, "
          "max_shards %d; loopback, fsync on, %d CPUs" % (n, len(body_at(T0)), ARGS.senders, ARGS.shards,
                                                         os.cpu_count()))

    if not ARGS.catchup_only:
        # 1. ingest alone
        a0 = Server(tmp / "a0", **flags).start()
        c0 = cpu_seconds(a0.proc.pid)
        t = time.monotonic()
        p = Pusher(a0.port, ARGS.senders)
        p.run(n)
        dt0 = time.monotonic() - t
        cpu0 = cpu_seconds(a0.proc.pid) - c0
        a0.kill()
        print("ingest alone: %d pushed in %.2f s (%.0f profiles/s), A's CPU %.1f us/profile (%d refused)"
              % (p.ok, dt0, p.ok / dt0, cpu0 / max(p.ok, 1) * 1e6, p.bad))

        # 2. forwarding
        b = Server(tmp / "b", **flags).start()
        a = Server(tmp / "a", config=str(config(tmp, b.port)), **flags).start()
        ca, cb = cpu_seconds(a.proc.pid), cpu_seconds(b.proc.pid)
        t = time.monotonic()
        p = Pusher(a.port, ARGS.senders)
        p.run(n)
        t_pushed = time.monotonic() - t
        e = wait_sent(a, p.ok)
        dt = time.monotonic() - t
        cpu_a = cpu_seconds(a.proc.pid) - ca
        cpu_b = cpu_seconds(b.proc.pid) - cb
        per0, per = cpu0 / max(n, 1) * 1e6, cpu_a / max(p.ok, 1) * 1e6
        print("forwarding: %d pushed in %.2f s, all acknowledged by B after %.2f s: %.0f profiles/s forwarded "
              "(%d requests)" % (p.ok, t_pushed, dt, p.ok / dt, e["requests"]))
        print("A's CPU per profile: %.1f us with forwarding, %.1f us ingest alone: forwarding adds %.0f%% "
              "(target <= 30%%); B's %.1f us" % (per, per0, (per - per0) / per0 * 100, cpu_b / max(p.ok, 1) * 1e6))

        # 3. samples (a second A, forwarding remote write to B)
        import snappy
        sys.path.insert(0, str(tmp))
        (tmp / "rw1.proto").write_text(
            'syntax = "proto3"; package prometheus;\n'
            "message WriteRequest { repeated TimeSeries timeseries = 1; }\n"
            "message Sample { double value = 1; int64 timestamp = 2; }\n"
            "message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }\n"
            "message Label { string name = 1; string value = 2; }\n")
        subprocess.run(["protoc", "--python_out=%s" % tmp, "-I", str(tmp), "rw1.proto"], check=True)
        import rw1_pb2
        ar = Server(tmp / "ar", config=str(config(tmp, b.port, "remote_write", "/api/v1/write")), **flags).start()
        t0ms = (int(time.time()) - 3600) * 1000
        bodies = []
        for r in range(ARGS.rw_requests):
            req = rw1_pb2.WriteRequest()
            for s in range(100):
                ts = req.timeseries.add()
                ts.labels.add(name="__name__", value="bench_fwd")
                ts.labels.add(name="s", value=str(s))
                for k in range(20):
                    ts.samples.add(value=float(r * 20 + k), timestamp=t0ms + (r * 20 + k) * 100)
            bodies.append(snappy.compress(req.SerializeToString()))
        ca = cpu_seconds(ar.proc.pid)
        t = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", ar.port, timeout=60)
        for body in bodies:
            conn.request("POST", "/api/v1/write", body=body, headers={
                "Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                "X-Prometheus-Remote-Write-Version": "0.1.0"})
            r = conn.getresponse()
            r.read()
            assert r.status == 204, r.status
        total = ARGS.rw_requests * 2000
        e = wait_sent(ar, total)
        dt = time.monotonic() - t
        print("samples: %d in %d remote-write requests, all acknowledged by B after %.2f s: %.0f samples/s "
              "forwarded; A's CPU %.2f us/sample" % (total, ARGS.rw_requests, dt, total / dt,
                                                     (cpu_seconds(ar.proc.pid) - ca) / total * 1e6))
        ar.kill()

    # 4. catch-up after an outage of B
    if ARGS.catchup_only:
        b = Server(tmp / "b", **flags).start()
        a = Server(tmp / "a", config=str(config(tmp, b.port)), **flags).start()
    port = b.port
    b.kill()
    raw = tmp / "raw.pb"
    raw.write_bytes(RAW)

    def sender_cmd(id_base, duration):
        return [ARGS.sender_bin, "--port", str(a.port), "--body", str(raw), "--rate", str(ARGS.rate),
                "--duration", str(duration), "--series", str(NSERIES), "--stamp-t0", str(T0),
                "--id-base", str(id_base), "--conns", "256", "--grace", "60"]

    def results(out):
        r = {}
        for line in out.splitlines():
            f = line.split()
            if f and f[0] == "status":
                r["status_" + f[1]] = int(f[2])
            elif len(f) == 2 and f[0] != "skipped_at":
                r[f[0]] = float(f[1])
        return r

    id0 = n + 10 * NSERIES  # later than step 2's
    t_down = time.monotonic()
    r1 = results(subprocess.run(sender_cmd(id0, ARGS.outage), stdout=subprocess.PIPE, check=True,
                                text=True).stdout)
    down = time.monotonic() - t_down
    time.sleep(0.5)
    backlog = fwd_status(a)["pending"]
    live = r1["status_200"] / r1["duration"]
    conftest.free_port = lambda: port
    b.start()
    t_up = time.monotonic()
    st_up = fwd_status(a)
    snd = subprocess.Popen(sender_cmd(int(r1["next_id"]), 1e6), stdout=subprocess.PIPE, text=True)
    cpu0 = [cpu_seconds(a.proc.pid), cpu_seconds(b.proc.pid), cpu_seconds(snd.pid)]
    th0 = [thread_cpu(a.proc.pid), thread_cpu(b.proc.pid)]
    busy0 = machine_busy()
    perfs = []
    if ARGS.perf:
        Path(ARGS.perf).mkdir(parents=True, exist_ok=True)
        for name, pid in (("a", a.proc.pid), ("b", b.proc.pid)):
            perfs.append(subprocess.Popen(["perf", "record", "-g", "-q", "-p", str(pid), "-o",
                                           str(Path(ARGS.perf) / (name + ".data"))],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    while fwd_status(a)["pending"] > ARGS.rate:  # within a second of the live edge
        time.sleep(0.05)
    catch = time.monotonic() - t_up
    cpu1 = [cpu_seconds(a.proc.pid), cpu_seconds(b.proc.pid), cpu_seconds(snd.pid)]
    th1 = [thread_cpu(a.proc.pid), thread_cpu(b.proc.pid)]
    busy1 = machine_busy()
    st_catch = fwd_status(a)
    for pr in perfs:
        pr.send_signal(signal.SIGINT)
    for pr in perfs:
        pr.wait()
    snd.send_signal(signal.SIGINT)
    r2 = results(snd.communicate()[0])
    live2 = r2["status_200"] / max(r2["elapsed"], 1e-9)
    sent_catch = st_catch["sent"] - st_up["sent"]
    reqs = st_catch["requests"] - st_up["requests"]
    e = wait_sent(a, 0)
    drain = sent_catch / catch
    print("catch-up: B down %.0f s while the sender pushed %d profiles (%.0f/s live: --rate %.0f asked; %d skipped, "
          "%d refused), backlog %d profiles" % (down, r1["status_200"], live, ARGS.rate, r1["skipped"],
                                                r1["sent"] - r1["status_200"], backlog))
    print("catch-up: B back; A caught up (less than 1 s of pushes pending) in %.1f s while %.0f/s more were pushed: "
          "%d profiles sent in %d requests, drain rate %.0f profiles/s = %.1fx the live rate (target >= 5x)"
          % (catch, live2, sent_catch, reqs, drain, drain / live))
    print("catch-up CPU seconds: A %.1f, B %.1f, sender %.1f (%.0f%% of %d CPUs); per profile sent: B %.0f us"
          % (cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], cpu1[2] - cpu0[2],
             (sum(cpu1) - sum(cpu0)) / catch / os.cpu_count() * 100, os.cpu_count(),
             (cpu1[1] - cpu0[1]) / max(sent_catch, 1) * 1e6))
    print("catch-up CPU seconds by thread: A %s; B %s" % (thread_cpu_delta(th0[0], th1[0]),
                                                          thread_cpu_delta(th0[1], th1[1])))
    print("catch-up machine: %.0f%% of %d CPUs busy, other processes %.1f CPU s"
          % ((busy1 - busy0) / catch / os.cpu_count() * 100, os.cpu_count(),
             (busy1 - busy0) - (sum(cpu1) - sum(cpu0))))
    # B holds every profile A stored
    sa = {(s["labels"]["s"], s["labels"]["__name__"]): len(s["profiles"]) for s in a.series() if "profiles" in s}
    sb = {(s["labels"]["s"], s["labels"]["__name__"]): len(s["profiles"]) for s in b.series() if "profiles" in s}
    ok = sa == sb
    print("B holds the same profiles as A: %s (%d profiles; %d sent in all)" % (ok, sum(sa.values()) // 2, e["sent"]))
    a.kill()
    b.kill()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
