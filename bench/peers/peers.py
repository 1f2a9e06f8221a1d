#!/usr/bin/python3
"""bench/peers/peers.py - profstore beside Parca (github.com/parca-dev/parca, Apache-2.0), the same
real profiles into both in one run, side by side:

  /usr/bin/python3 bench/peers/peers.py [--days 7] [--one-step 300] [--series 100]
                                        [--many-step 3600] [--senders 16] [--repeat 3]
                                        [--parca PATH] [--parca-no-wal] [--profstore build/profstore]
  make bench-peers                      # builds Parca the first time (scripts/install-parca.sh)

What it feeds: the six Go CPU fixtures (tests/testdata/pprof/go/cpu-01..05, cpu-seed2-01: real
profiles of tests/gotarget, the bases of bench/gen.c), each as it is and in --variants - 1
variants made the way bench/gen.c makes them (samples dropped, counts scaled), time_nanos
rewritten for each profile (the deflate state of the rest kept: a profile costs one gzip tail):
one series (job="one") every --one-step s over the last --days days, and
--series series (job="many") every --many-step s over the same days, back-dated (the newest a
minute ago) so a 7-day range is filled in a few minutes. The same gzipped bytes go to both:
profstore `POST /api/v1/profiles/write?name=process_cpu&labels={...}` (HTTP/1.1, keep-alive),
Parca `parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw` (gRPC over h2c, one series with
one raw profile a call, as Parca's own scraper sends): first the one series from one connection
(a push waits for the answer to the one before), then the --series series from --senders
connections (gRPC: streams on one channel), each sender owning whole series and sending them in
time order (profstore refuses a profile older than its series' newest).

What it prints, per server: ingest profiles/s of both phases and server CPU per profile (utime +
stime of /proc/PID/stat from the first push to the last answer), peak RSS (VmHWM), bytes on disk per profile
(du of the data directory, while running and after a stop; profstore's disk reserve
file left out), and merge latency (first call, then the median of
--repeat) of `process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta` over the last 1 h, 24 h and 7 d
of the one series and of all --series series, answered as pprof by both (profstore
`GET /api/v1/profiles/query?query=...&start=...&end=...`, Parca `QueryService/Query` mode MERGE,
REPORT_TYPE_PPROF). Every merged profile's total is checked against `go tool pprof -top -unit=ns`
of the same input files merged by pprof itself (exact nanoseconds), and the answers' totals read
by `go tool pprof` too. Then every fixture of tests/testdata/pprof is pushed once to both and
each one that one server accepts and the other refuses is flagged, with both answers; each one a
server takes is read back (its last sample type) and its total checked against go tool pprof's
of the file.

Parca runs as `parca --enable-persistence --storage-enable-wal` (its WAL is written every 50 ms
after the answer, where profstore answers a push once it is fsynced; --parca-no-wal leaves the
WAL off: then what Parca holds in memory is lost on a crash), a filesystem bucket in its work directory, debuginfod off, on
127.0.0.1 only. The UI of the module as served is empty (its React build is not in the module).
"""
import argparse
import atexit
import gzip
import http.client
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_env  # noqa: F401,E402  (first: sys.path, PROFSTORE_BIN)

import pprof_decode as pd  # noqa: E402
from conftest import PPROF_DIR, Server, free_port, name_param  # noqa: E402

ROOT = bench_env.ROOT
BASES = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz", "go/cpu-05.pb.gz",
         "go/cpu-seed2-01.pb.gz"]
CPU_TYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
MIB = 1024 * 1024


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--one-step", type=int, default=300, help="seconds between the one series' profiles")
    ap.add_argument("--series", type=int, default=100)
    ap.add_argument("--many-step", type=int, default=3600, help="seconds between each of --series' profiles")
    ap.add_argument("--senders", type=int, default=16)
    ap.add_argument("--variants", type=int, default=20, help="distinct profiles made of each fixture (bench/gen.c's way)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pprof-files", type=int, default=300,
                    help="merges of up to this many profiles are checked against pprof merging the files sent")
    ap.add_argument("--profstore", default=None)
    ap.add_argument("--profstore-args", default="--query.max-concurrency=0",
                    help="extra profstore flags (default: queries on the HTTP threads at nice 0, as Parca's "
                         "goroutines run; '' keeps the SCHED_IDLE query pool)")
    ap.add_argument("--parca", default=None, help="the parca binary (default: scripts/install-parca.sh builds it)")
    ap.add_argument("--parca-no-wal", action="store_true")
    ap.add_argument("--no-parca", action="store_true", help="profstore's side alone (no Parca build)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args()


# ---- protobuf by hand (the few Parca messages the bench needs; field numbers from Parca's protos:
# proto/parca/profilestore/v1alpha1/profilestore.proto, proto/parca/query/v1alpha1/query.proto) ----

def pb_len(num, payload):
    out = bytearray()
    pd.put_len(out, num, payload)
    return bytes(out)


def pb_int(num, v):
    out = bytearray()
    pd.put_int(out, num, v)
    return bytes(out)


def write_raw_request(labels, raw):
    """WriteRawRequest{series: [RawProfileSeries{labels: LabelSet{labels}, samples: [RawSample{raw}]}]}"""
    ls = b"".join(pb_len(1, pb_len(1, k.encode()) + pb_len(2, v.encode())) for k, v in sorted(labels.items()))
    return pb_len(2, pb_len(1, ls) + pb_len(2, pb_len(1, raw)))


def timestamp(ns):
    return pb_int(1, ns // 10**9) + pb_int(2, ns % 10**9)


def query_merge_request(query, start_ns, end_ns):
    """QueryRequest{mode: MODE_MERGE, merge: {query, start, end}, report_type: REPORT_TYPE_PPROF}"""
    merge = pb_len(1, query.encode()) + pb_len(2, timestamp(start_ns)) + pb_len(3, timestamp(end_ns))
    return pb_int(1, 2) + pb_len(3, merge) + pb_int(5, 1)


def query_response_pprof(data):
    """QueryResponse -> (pprof bytes, total)"""
    prof, total = None, None
    for num, wt, v in pd.iter_fields(data):
        if num == 6:
            prof = bytes(v)
        elif num == 9:
            total = pd.to_signed64(v)
    return prof, total


# ---- the profiles ----

class Stamper:
    """One fixture's bytes with time_nanos (field 9) set to any time, gzipped (level 1): the other
    top-level fields as they are, then field 9. The deflate state after the unchanging part is
    kept (zlib's compressobj.copy()), so each profile compresses only its last bytes."""

    def __init__(self, raw):
        out = bytearray()
        pos = 0
        while pos < len(raw):
            start = pos
            key, pos = pd.read_varint(raw, pos)
            wt = key & 7
            if wt == 0:
                _, pos = pd.read_varint(raw, pos)
            elif wt == 2:
                n, pos = pd.read_varint(raw, pos)
                pos += n
            elif wt == 1:
                pos += 8
            elif wt == 5:
                pos += 4
            else:
                raise ValueError("wire type %d" % wt)
            if key >> 3 != 9:
                out += raw[start:pos]
        self.size = len(out)
        self.crc = zlib.crc32(out)
        self.comp = zlib.compressobj(1, zlib.DEFLATED, -15)
        self.head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff" + self.comp.compress(bytes(out))

    def at(self, ts_ns):
        tail = bytearray()
        pd.put_int(tail, 9, ts_ns)
        c = self.comp.copy()
        body = c.compress(bytes(tail)) + c.flush()
        return self.head + body + struct.pack("<II", zlib.crc32(tail, self.crc), (self.size + len(tail)) & 0xFFFFFFFF)


def variants(n):
    """n variants of each fixture, as bench/gen.c makes them: each sample dropped with probability
    1/10, the others' values scaled by one random factor in [0, 2) on the count (the cpu value stays
    count x period), a sample whose count rounds to 0 dropped too; variant 0 is the fixture itself.
    -> [(Stamper, [total per sample type])], fixture-major."""
    out = []
    for k, rel in enumerate(BASES):
        raw = pd.gunzip_if_needed((PPROF_DIR / rel).read_bytes())
        out.append((Stamper(raw), pd.totals(pd.decode(raw))))
        rnd = random.Random(k + 1)
        for _ in range(1, n):
            p = pd.decode(raw)
            kept = []
            for smp in p.sample:
                if rnd.random() < 0.1:
                    continue
                c = int(smp.value[0] * rnd.random() * 2 + 0.5)
                if c == 0:
                    continue
                smp.value = [c, c * p.period]
                kept.append(smp)
            p.sample = kept
            p.time_nanos = 0
            out.append((Stamper(pd.encode(p)), pd.totals(p)))
    return out


def workload(a, now_ns, nvariants):
    """[(job, instance, ts_ns, variant index)] in time order per series; newest a minute before now."""
    end = (now_ns // 10**9 - 60) * 10**9
    span = int(a.days * 86400) * 10**9
    out = []
    for job, nseries, step in (("one", 1, a.one_step), ("many", a.series, a.many_step)):
        n = span // (step * 10**9)
        for s in range(nseries):
            for i in range(n):
                ts = end - (n - 1 - i) * step * 10**9
                out.append((job, "i%d" % s, ts, (s * 7 + i) % nvariants))
    return out, end


# ---- the servers ----

def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def vm_hwm(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def du(path, skip=()):
    total = 0
    for dp, _, files in os.walk(path):
        for f in files:
            if f in skip:
                continue
            try:
                total += os.lstat(os.path.join(dp, f)).st_blocks * 512
            except OSError:
                pass
    return total


class Profstore:
    name = "profstore"
    not_data = ("space.reserve",)  # --storage.disk-reserve's file (1 MiB here): space held, no data

    def __init__(self, wd, args):
        self.srv = Server(wd / "profstore", retention="0", extra_args=args.split())

    def start(self):
        self.srv.start()
        self.pid = self.srv.proc.pid
        self.data_dir = self.srv.data_dir

    def stop(self):
        return self.srv.stop(timeout=120)

    def sender(self):
        return ProfstoreSender(self.srv.port)

    def merge(self, query, start_ns, end_ns):
        q = urllib.parse.urlencode({"query": query, "start": rfc3339(start_ns), "end": rfc3339(end_ns)})
        st, _, data = self.srv.get("/api/v1/profiles/query?" + q, timeout=300)
        if st != 200:
            raise SystemExit("profstore merge %s: %d %r" % (query, st, data[:300]))
        return data

    def push_once(self, rel, raw, name):
        q = urllib.parse.urlencode({"name": name, "labels": '{job="fixtures",fixture="%s"}' % rel})
        st, _, data = self.srv.request("POST", "/api/v1/profiles/write?" + q, body=raw, timeout=60)
        return st == 200, "%d %s" % (st, data[:200].decode(errors="replace").strip())


class ProfstoreSender:
    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def send(self, job, instance, body):
        q = "name=process_cpu&labels=" + urllib.parse.quote('{job="%s",instance="%s"}' % (job, instance))
        self.c.request("POST", "/api/v1/profiles/write?" + q, body=body,
                       headers={"Content-Type": "application/octet-stream"})
        r = self.c.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("profstore push: %d %r" % (r.status, data[:300]))

    def close(self):
        self.c.close()


def rfc3339(ns):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + ".%09dZ" % (ns % 10**9)


class Parca:
    name = "parca"
    not_data = ()

    def __init__(self, wd, binary, wal):
        self.wd = wd / "parca"
        self.wd.mkdir(parents=True)
        self.binary = binary
        self.wal = wal
        self.data_dir = self.wd / "data"
        self.data_dir.mkdir()
        (self.wd / "parca.yaml").write_text(
            'object_storage:\n  bucket:\n    type: "FILESYSTEM"\n    config:\n      directory: "%s"\n'
            % (self.data_dir / "bucket"))

    def start(self):
        import grpc
        self.port = free_port()
        args = [str(self.binary), "--config-path", str(self.wd / "parca.yaml"),
                "--http-address", "127.0.0.1:%d" % self.port, "--enable-persistence",
                "--storage-path", str(self.data_dir / "storage"), "--debuginfod-upstream-servers=",
                "--debuginfo-cache-dir", str(self.wd / "debuginfo-cache"), "--log-level", "warn"]
        if self.wal:
            args.append("--storage-enable-wal")
        self.logf = open(self.wd / "parca.log", "ab")
        self.proc = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.wd)
        self.pid = self.proc.pid
        self.args = args
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % self.port, options=[
            ("grpc.max_receive_message_length", 1 << 30), ("grpc.max_send_message_length", 1 << 30)])
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise SystemExit("parca exited with %s; log:\n%s" % (self.proc.returncode, self.log()))
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                c.request("GET", "/metrics")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("parca not ready after 60 s; log:\n%s" % self.log())
            time.sleep(0.1)
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self._write = self.unary("/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw")
        self._query = self.unary("/parca.query.v1alpha1.QueryService/Query")

    def unary(self, method):
        return self.channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)

    def log(self):
        try:
            return (self.wd / "parca.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self):
        self.channel.close()
        self.proc.terminate()
        try:
            rc = self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.logf.close()
        return rc

    def sender(self):
        return ParcaSender(self)

    def merge(self, query, start_ns, end_ns):
        data = self._query(query_merge_request(query, start_ns, end_ns), timeout=300)
        prof, _ = query_response_pprof(data)
        if prof is None:
            raise SystemExit("parca merge %s: no pprof in the answer" % query)
        return prof

    def push_once(self, rel, raw, name):
        import grpc
        try:
            self._write(write_raw_request({"__name__": name, "job": "fixtures", "fixture": rel}, raw), timeout=60)
            return True, "OK"
        except grpc.RpcError as e:
            return False, "%s: %s" % (e.code().name, e.details())


class ParcaSender:
    def __init__(self, parca):
        self.write = parca._write

    def send(self, job, instance, body):
        self.write(write_raw_request({"__name__": "process_cpu", "job": job, "instance": instance}, body),
                   timeout=120)

    def close(self):
        pass


# ---- measuring ----

def ingest(server, work, bodies, senders):
    """Pushes every profile; each sender owns whole series (balanced by profile count), in time order."""
    count = {}
    for w in work:
        count[(w[0], w[1])] = count.get((w[0], w[1]), 0) + 1
    owner, load = {}, [0] * senders
    for s in sorted(count, key=lambda s: (-count[s], s)):  # the largest first, to the least loaded
        k = load.index(min(load))
        owner[s] = k
        load[k] += count[s]
    queues = [[] for _ in range(senders)]
    for w, body in zip(work, bodies):
        queues[owner[(w[0], w[1])]].append((w[0], w[1], body))
    errors = []

    def run(q):
        s = server.sender()
        try:
            for job, inst, body in q:
                s.send(job, inst, body)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
        finally:
            s.close()
    ts = [threading.Thread(target=run, args=(q,)) for q in queues]
    c0 = cpu_seconds(server.pid)
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.monotonic() - t0
    cpu = cpu_seconds(server.pid) - c0
    if errors:
        raise SystemExit("%s ingest: %s" % (server.name, errors[0]))
    return secs, cpu


def write(path, data):
    path.write_bytes(data)
    return path


def pprof_total(paths, tmp, sample_index="cpu", unit="nanoseconds"):
    """The total `go tool pprof -top` prints for these files merged, exact: -unit=ns for
    nanoseconds, -unit=B for bytes, counts as they are."""
    flag = {"nanoseconds": ["-unit=ns"], "bytes": ["-unit=B"]}.get(unit, [])
    r = subprocess.run(["go", "tool", "pprof", "-top", "-sample_index=" + sample_index] + flag +
                       [str(p) for p in paths], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PPROF_TMPDIR=str(tmp / "pprof"), TZ="UTC"),
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise SystemExit("go tool pprof: %s" % r.stderr[-2000:])
    m = re.search(r"of (-?\d+)(?:ns|B)? total", r.stdout)
    if not m:
        raise SystemExit("go tool pprof -top: no total in:\n%s" % r.stdout[:2000])
    return int(m.group(1))


def answer_total(data, sample_type):
    """The sum of a pprof answer's values of that sample type."""
    p = pd.decode(data)
    i = [t for t, _ in p.type_names()].index(sample_type)
    return sum(smp.value[i] for smp in p.sample)


def check_fixtures(srv, tmp, differ_totals):
    """Pushes every fixture once; for each one taken, reads its last sample type back (a merge over
    its second) and compares the total with go tool pprof's of the file. -> {rel: (taken, answer)}"""
    out = {}
    for rel in fixture_list():
        raw = (PPROF_DIR / rel).read_bytes()
        name = parca_name(rel) if srv.name == "parca" else (name_param(rel) or parca_name(rel))
        ok, msg = srv.push_once(rel, raw, name)
        out[rel] = (ok, msg)
        if not ok:
            continue
        p = pd.decode(raw)
        st, su = p.type_names()[-1]
        pt, pu = p.period_type_names() or (st, su)
        delta = (p.duration_nanos != 0) if srv.name == "parca" else name in ("process_cpu", "wall")
        q = "%s:%s:%s:%s:%s%s{job=\"fixtures\",fixture=\"%s\"}" % (name, st, su, pt, pu, ":delta" if delta else "",
                                                                    rel)
        got_path = write(tmp / ("%s-fixture.pb.gz" % srv.name), srv.merge(q, p.time_nanos - 10**9, p.time_nanos + 10**9))
        got = pprof_total([got_path], tmp, st, su)
        want = pprof_total([PPROF_DIR / rel], tmp, st, su)
        if got != want:
            differ_totals.append("%s: %s %s: %d, go tool pprof %d" % (srv.name, rel, st, got, want))
            out[rel] = (ok, "stored, but %s totals %d (go tool pprof: %d)" % (st, got, want))
        else:
            out[rel] = (ok, "%s %d = go tool pprof" % (st, got))
    return out


def main():
    a = parse_args()
    if a.profstore:
        os.environ["PROFSTORE_BIN"] = str(Path(a.profstore).resolve())
    binary = a.parca
    if a.no_parca:
        ver = "no Parca (--no-parca)"
    elif binary is None:
        r = subprocess.run([str(ROOT / "scripts" / "install-parca.sh")], stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise SystemExit("bench/peers: scripts/install-parca.sh failed (above)")
        binary = r.stdout.strip().splitlines()[-1]
    if not a.no_parca:
        ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    wd = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    if not a.keep:  # removed however the run ends (a SystemExit too); the servers are stopped by then
        atexit.register(shutil.rmtree, wd, True)
    tmp = wd / "tmp"
    (tmp / "pprof").mkdir(parents=True)

    t = time.monotonic()
    bases = variants(a.variants)
    now = time.time_ns()
    work, end = workload(a, now, len(bases))
    bodies = [bases[w[3]][0].at(w[2]) for w in work]
    nbytes = sum(len(b) for b in bodies)
    n_one = sum(1 for w in work if w[0] == "one")
    print("peers: profstore (%s %s) and %s, same run, 2 cores shared with other work (load %.1f)"
          % (os.environ["PROFSTORE_BIN"], a.profstore_args, ver, os.getloadavg()[0]))
    print("data: %d profiles (%.1f MB gzipped; %d variants of each of the 6 Go CPU fixtures): 1 series every %d s "
          "(%d) + %d series every %d s (%d) over %g d, back-dated; %d senders (encoded in %.1f s)"
          % (len(work), nbytes / 1e6, a.variants, a.one_step, n_one, a.series, a.many_step, len(work) - n_one,
             a.days, a.senders, time.monotonic() - t))

    # pprof's own totals of the same inputs, per query range
    windows = [("1h", 3600), ("24h", 86400), ("%gd" % a.days, int(a.days * 86400))]
    expect = {}
    files = {}
    for w, body in zip(work, bodies):
        files.setdefault(w[0], []).append((w[2], w[3], body))
    cases = []
    for job, sel in (("one", '{job="one"}'), ("many", '{job="many"}')):
        for wname, secs in windows:
            # half a second off the profiles' whole seconds: no profile on a bound (Parca keeps ms)
            start = end - secs * 10**9 + 5 * 10**8
            cases.append((job, wname, CPU_TYPE + sel, start, end + 5 * 10**8))
    # pprof's totals of the same inputs: up to --pprof-files profiles, pprof merges the very files
    # sent; past that (the 7 d and 100-series merges: thousands of files), the sum of the profiles'
    # values (and pprof's total of each fixture is checked to be the sum of its values)
    t = time.monotonic()
    for k in range(0, len(bases), a.variants):  # the fixtures themselves: pprof's total = the sum of their values
        got = pprof_total([write(tmp / "fixture.pb.gz", bases[k][0].at(end))], tmp)
        if got != bases[k][1][1]:
            raise SystemExit("go tool pprof totals %s at %d ns, the sum of its values is %d"
                             % (BASES[k // a.variants], got, bases[k][1][1]))
    for job, wname, q, start, stop in cases:
        sel = [(b, body) for ts, b, body in files[job] if start <= ts <= stop]
        if len(sel) <= a.pprof_files:
            d = tmp / ("in-%s-%s" % (job, wname))
            d.mkdir()
            paths = [write(d / ("%06d.pb.gz" % k), body) for k, (_, body) in enumerate(sel)]
            expect[(job, wname)] = (len(sel), pprof_total(paths, tmp))
            shutil.rmtree(d)
        else:
            expect[(job, wname)] = (len(sel), sum(bases[b][1][1] for b, _ in sel))
    print("go tool pprof: the inputs' totals in %.1f s (merging the files sent up to %d profiles; past that, "
          "the sum of their values, which pprof's totals of the fixtures equal)" % (time.monotonic() - t, a.pprof_files))

    results = {}
    mismatches = []
    differ_totals = []
    servers = [Profstore(wd, a.profstore_args)] + ([] if a.no_parca else [Parca(wd, binary, not a.parca_no_wal)])
    for srv in servers:
        r = results[srv.name] = {}
        srv.start()
        try:
            one = [(w, b) for w, b in zip(work, bodies) if w[0] == "one"]
            many = [(w, b) for w, b in zip(work, bodies) if w[0] != "one"]
            secs1, cpu1 = ingest(srv, [w for w, _ in one], [b for _, b in one], 1)
            secs, cpu = ingest(srv, [w for w, _ in many], [b for _, b in many], a.senders)
            r["ingest1"] = len(one) / secs1
            r["ingest"] = len(many) / secs
            r["cpu_us"] = (cpu + cpu1) / len(work) * 1e6
            print("%-9s ingest: the one series (%d profiles, 1 connection) in %.1f s: %.0f profiles/s; the %d series "
                  "(%d profiles, %d connections) in %.1f s: %.0f profiles/s; server CPU %.1f s = %.0f us/profile"
                  % (srv.name, len(one), secs1, r["ingest1"], a.series, len(many), a.senders, secs, r["ingest"],
                     cpu + cpu1, r["cpu_us"]))
            for job, wname, q, start, stop in cases:
                lat, sums = [], []
                for k in range(1 + a.repeat):
                    t0 = time.monotonic()
                    prof = srv.merge(q, start, stop)
                    lat.append(time.monotonic() - t0)
                    sums.append(answer_total(prof, "cpu"))
                # go tool pprof reads the last answer; every answer's sum of cpu values is compared too
                p = write(tmp / ("%s-%s-%s.pb.gz" % (srv.name, job, wname)), prof)
                got = pprof_total([p], tmp)
                n, want = expect[(job, wname)]
                ok = got == want and all(x == want for x in sums)
                if not ok:
                    mismatches.append("%s %s %s: %d ns (the %d answers: %s), go tool pprof %d ns"
                                      % (srv.name, job, wname, got, len(sums), " ".join(map(str, sums)), want))
                r[(job, wname)] = (lat[0], statistics.median(lat[1:]) if a.repeat else lat[0])
                print("%-9s merge %-4s %-4s (%5d profiles): first %8.1f ms, median %8.1f ms; total %d ns %s"
                      % (srv.name, job, wname, n, lat[0] * 1e3, r[(job, wname)][1] * 1e3, got,
                         "= go tool pprof" if ok else "!= go tool pprof %d (each answer: %s)"
                         % (want, " ".join(map(str, sums)))))
            r["fixtures"] = check_fixtures(srv, tmp, differ_totals)
            r["rss"] = vm_hwm(srv.pid)
            r["disk_live"] = du(srv.data_dir, srv.not_data)
        finally:
            rc = srv.stop()
        r["disk"] = du(srv.data_dir, srv.not_data)
        print("%-9s peak RSS %.1f MiB; on disk while running %.1f MiB, after a stop (SIGTERM, exit %s) %.1f MiB "
              "= %.0f bytes/profile" % (srv.name, r["rss"] / MIB, r["disk_live"] / MIB, rc, r["disk"] / MIB,
                                        r["disk"] / len(work)))

    if a.no_parca:
        for rel, (ok, msg) in results["profstore"]["fixtures"].items():
            print("  %-28s profstore %s: %s" % (rel, "accepted" if ok else "REFUSED", msg))
        if differ_totals:
            print("read back with another total than go tool pprof's:\n  " + "\n  ".join(differ_totals))
        if mismatches:
            print("MISMATCH against go tool pprof:\n  " + "\n  ".join(mismatches))
        sys.exit(1 if mismatches else 0)
    print()
    print("fixtures (tests/testdata/pprof, each pushed once to both):")
    differ = 0
    for rel in fixture_list():
        ps, pa = results["profstore"]["fixtures"][rel], results["parca"]["fixtures"][rel]
        mark = "" if ps[0] == pa[0] else "   <-- one accepts, the other refuses"
        differ += ps[0] != pa[0]
        print("  %-28s profstore %-8s parca %-8s%s" % (rel, "accepted" if ps[0] else "REFUSED",
                                                        "accepted" if pa[0] else "REFUSED", mark))
        print("      profstore: %s; parca: %s" % (ps[1], pa[1]))

    print()
    print("side by side (last column: how far profstore is ahead, x = the better one's figure over the other's)")
    P, Q = results["profstore"], results["parca"]
    rows = [("ingest profiles/s, %d series" % a.series, P["ingest"], Q["ingest"], "%.0f", True),
            ("ingest profiles/s, 1 series", P["ingest1"], Q["ingest1"], "%.0f", True),
            ("server CPU us/profile", P["cpu_us"], Q["cpu_us"], "%.0f", False),
            ("peak RSS MiB", P["rss"] / MIB, Q["rss"] / MIB, "%.1f", False),
            ("disk bytes/profile, stopped", P["disk"] / len(work), Q["disk"] / len(work), "%.0f", False),
            ("disk bytes/profile, running", P["disk_live"] / len(work), Q["disk_live"] / len(work), "%.0f", False)]
    for job, wname, *_ in cases:
        label = "merge %s %s, ms" % ("1 series" if job == "one" else "%d series" % a.series, wname)
        rows.append((label, P[(job, wname)][1] * 1e3, Q[(job, wname)][1] * 1e3, "%.1f", False))
    print("| %-32s | %10s | %10s | %-16s |" % ("", "profstore", "parca", "profstore"))
    print("|%s|%s|%s|%s|" % ("-" * 34, "-" * 12, "-" * 12, "-" * 18))
    for label, x, y, fmt, higher in rows:
        ahead = (x / y if higher else y / x) if x and y else float("nan")
        verdict = "%.3gx ahead" % ahead if ahead >= 1 else "%.3gx behind" % (1 / ahead)
        print("| %-32s | %10s | %10s | %-16s |" % (label, fmt % x, fmt % y, verdict))
    if differ_totals:
        print("stored, but read back with another total than go tool pprof's of the file:\n  " +
              "\n  ".join(differ_totals))
    if mismatches:
        print("MISMATCH against go tool pprof:\n  " + "\n  ".join(mismatches))
    print("%d fixtures accepted by one server and refused by the other" % differ)
    if a.keep:
        print("work directory kept: %s" % wd)
    sys.exit(1 if mismatches else 0)


def fixture_list():
    return sorted(str(p.relative_to(PPROF_DIR)) for p in PPROF_DIR.rglob("*") if p.suffix in (".gz", ".pb"))


def parca_name(rel):
    """The __name__ Parca's own scraper gives the profile kind of this fixture."""
    base = rel.split("/")[-1].split("-")[0]
    return {"cpu": "process_cpu", "heap": "memory", "allocs": "memory", "wall": "wall"}.get(base, base)


if __name__ == "__main__":
    main()
