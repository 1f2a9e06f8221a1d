#!/usr/bin/env python3
"""bench/soak.py - a soak run: one profstore under mixed load for a long time, sampled every 10 s.

Load, all at once, against one server (its data dir kept across restarts):
  - pushes of the pprof fixtures (tests/testdata/pprof: Go CPU, heap, goroutine, Node CPU) to 8
    series groups, --push-rate a second, each at its own increasing second (time=);
  - remote_write 1.0 (protobuf encoded here, snappy) of --rw-series counters once a second;
  - scrapes of --targets gotarget processes (tests/gotarget, built with go), every
    --scrape-interval, all of Parca's default profiles; each reload adds or removes the last one;
  - queries, one every 0.5 s in turn: query_range over the remote-written counters and over
    profile totals, a 5 min merge (/api/v1/profiles/query, flame graph), /pyroscope/render of
    15 min, /api/v1/series;
  - compactions (POST /api/v1/admin/compact) every --compact-every, retention (POST
    /api/v1/admin/retention) every --retention-every, with --retention short enough that it deletes
    (default 10m), and the server's own compactor and retention passes;
  - a reload (SIGHUP, the config rewritten) every --reload-every, a SIGKILL + restart every
    --kill-every.
Every --sample-every seconds a CSV row (soak.csv in --out): RSS (VmRSS, RssAnon), open fds, data
file size, and per kind of request its count, errors, p50 and p99 latency in that window. Requests
that fail because the server was being killed/restarted are counted as "down", not as errors.

At the end the load stops and every acknowledged write (a push answered 200: each series it named
at its timestamp; a remote-write sample answered 204) newer than the retention cutoff must be
readable: listed by /api/v1/debug/series (float samples with the same value bits) and each profile
served by /api/v1/debug/profile. Prints a summary: RSS and fds at start/max/end, the latency
table, error counts, acknowledged vs verified, and a verdict whether RSS (anonymous memory: the
heap; file pages are LMDB's map and follow the data) and fds grow without bound: the maximum of
the last third of the run against the middle third.

    bench/soak.py [--duration 30m] [--profstore build/profstore] [--out bench/soak-out/<time>]
    bench/soak.py --duration 3m --reload-every 20s --kill-every 60s --compact-every 15s \\
                  --retention-every 20s --retention 1m      # every event within 3 minutes

Exit status 0 when every acknowledged write was verified, there were no errors and the verdict is
bounded; 1 otherwise (the summary says why). Needs go (for gotarget; without it: no scrapes) and
python3-snappy.
"""

import argparse
import csv
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

try:
    import snappy  # python3-snappy
except ImportError:
    raise SystemExit("soak: needs python3-snappy (apt-get install python3-snappy)")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TESTDATA = Path(os.environ.get("PS_TESTDATA") or (ROOT / "tests" / "testdata"))
GOTARGET_SRC = ROOT / "tests" / "gotarget"

CPU_NS = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
# the push groups: instance p<k> pushes FIXTURES[k]
FIXTURES = ["go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/heap-01.pb.gz",
            "go/goroutine-01.pb.gz", "node/cpu-01.pb.gz", "go/cpu-seed2-01.pb.gz", "go/allocs-01.pb.gz"]
KINDS = ["push", "remote_write", "query_range", "profiles_query", "render", "series", "compact", "retention"]
LIGHT = ["-duty", "10", "-cpu-workers", "1", "-alloc-workers", "1", "-mutex-workers", "1", "-idle-waiters", "2"]


def duration(s: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", s.strip())
    if not m:
        raise argparse.ArgumentTypeError("not a duration: %r (e.g. 90s, 5m, 1h)" % s)
    return float(m.group(1)) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600}[m.group(2)]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


# ---- remote write 1.0, encoded by hand (prompb WriteRequest) ----
def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def write_request(series):
    """series: [(sorted [(name, value)], ts_ms, value)] -> serialized WriteRequest."""
    out = bytearray()
    for labels, ts, v in series:
        ts_bytes = bytearray()
        for n, val in labels:
            ts_bytes += _ld(1, _ld(1, n.encode()) + _ld(2, val.encode()))
        sample = _varint(1 << 3 | 1) + struct.pack("<d", v) + _varint(2 << 3 | 0) + _varint(ts)
        ts_bytes += _ld(2, sample)
        out += _ld(1, bytes(ts_bytes))
    return bytes(out)


class Stats:
    """Per-kind latencies and outcomes, for the current window and the whole run."""

    def __init__(self):
        self.lock = threading.Lock()
        self.win = {k: [] for k in KINDS}
        self.win_err = {k: 0 for k in KINDS}
        self.all = {k: [] for k in KINDS}
        self.err = {k: 0 for k in KINDS}
        self.down = {k: 0 for k in KINDS}
        self.codes = {k: {} for k in KINDS}
        self.err_examples = []

    def ok(self, kind, secs):
        with self.lock:
            self.win[kind].append(secs)
            self.all[kind].append(secs)

    def fail(self, kind, what, down):
        with self.lock:
            if down:
                self.down[kind] += 1
                return
            self.err[kind] += 1
            self.win_err[kind] += 1
            self.codes[kind][what] = self.codes[kind].get(what, 0) + 1
            if len(self.err_examples) < 20:
                self.err_examples.append("%s: %s" % (kind, what))

    def take_window(self):
        with self.lock:
            w, e = self.win, self.win_err
            self.win = {k: [] for k in KINDS}
            self.win_err = {k: 0 for k in KINDS}
            return w, e


class Soak:
    def __init__(self, a):
        self.a = a
        self.out = Path(a.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.data = self.out / "data"
        shutil.rmtree(self.data, ignore_errors=True)
        self.port = free_port()
        self.proc = None
        self.gen = 0            # bumped at each kill: a request that spans one is "down"
        self.up = threading.Event()
        self.stop = threading.Event()
        self.stats = Stats()
        self.lock = threading.Lock()
        self.acked_push = []    # (labels tuple, ts_ns)
        self.acked_rw = []      # (series index, ts_ms, value)
        self.old_push_refused = 0
        self.restarts = []      # seconds from SIGKILL to ready
        self.durable_checked = self.durable_lost = 0  # acknowledged writes looked for after each restart
        self.reloads = 0
        self.reload_variant = 0
        self.targets = []
        self.scrape_ok = True
        self.logf = open(self.out / "profstore.log", "ab")
        help_text = subprocess.run([a.profstore, "--help"], capture_output=True, text=True).stdout
        self.admin_flag = ["--web.enable-admin-api"] if "--web.enable-admin-api" in help_text else []

    # ---- processes ----
    def gotarget(self):
        if not self.a.targets:
            return None
        go = shutil.which("go")
        if go is None or not (GOTARGET_SRC / "main.go").exists():
            print("soak: no go or no gotarget sources: running without scrapes", file=sys.stderr)
            return None
        out = HERE / "soak-out" / "gotarget"  # built once, again when main.go changes
        if out.exists() and out.stat().st_mtime >= (GOTARGET_SRC / "main.go").stat().st_mtime:
            return out
        env = dict(os.environ)
        if "HOME" not in env and "GOCACHE" not in env:
            env["GOCACHE"] = str(HERE / "soak-out" / "gocache")
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([go, "build", "-trimpath", "-o", str(out), "."], cwd=str(GOTARGET_SRC), env=env,
                       check=True, capture_output=True, timeout=600)
        return out

    def start_targets(self):
        binary = self.gotarget()
        if binary is None:
            self.scrape_ok = False
            return
        for i in range(self.a.targets):
            port = free_port()
            log = open(self.out / ("gotarget-%d.log" % i), "ab")
            p = subprocess.Popen([str(binary), "-addr", "127.0.0.1:%d" % port, "-workload-seed", str(i % 3 + 1)]
                                 + LIGHT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            log.close()
            self.targets.append((p, "127.0.0.1:%d" % port))
        deadline = time.monotonic() + 20
        for p, addr in self.targets:
            while True:
                try:
                    c = http.client.HTTPConnection(addr.split(":")[0], int(addr.split(":")[1]), timeout=1)
                    c.request("GET", "/healthz")
                    if c.getresponse().status == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline or p.poll() is not None:
                    raise SystemExit("soak: gotarget %s did not start" % addr)
                time.sleep(0.1)

    def write_config(self):
        """Every target but the last; the last one too on every other reload."""
        addrs = [addr for _, addr in self.targets]
        if len(addrs) > 1 and self.reload_variant % 2 == 1:
            addrs = addrs[:-1]
        text = "global:\n  scrape_interval: %ds\n" % int(self.a.scrape_interval)
        if addrs:
            text += ("scrape_configs:\n  - job_name: gotarget\n    static_configs:\n      - targets: [%s]\n"
                     "        labels: {soak: \"1\"}\n" % ", ".join("'%s'" % x for x in addrs))
        path = self.out / "profstore.yml"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        return path

    def server_args(self):
        a = self.a
        return ([a.profstore, "--listen", "127.0.0.1:%d" % self.port, "--data-dir", str(self.data),
                 "--config", str(self.out / "profstore.yml"), "--threads", "2", "--retention", a.retention_flag,
                 "--storage.retention-interval", "%ds" % max(1, int(a.retention_every / 2)),
                 "--storage.compact-max-profiles", "30", "--storage.compact-interval", "5s"] + self.admin_flag)

    def start_server(self):
        self.logf.write(("\n==== start: %s\n" % " ".join(self.server_args())).encode())
        self.logf.flush()
        self.proc = subprocess.Popen(self.server_args(), stdout=self.logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("soak: profstore exited with %s; see %s" % (self.proc.returncode,
                                                                               self.out / "profstore.log"))
            try:
                if self.request("GET", "/-/ready", timeout=1)[0] == 200:
                    self.up.set()
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise SystemExit("soak: profstore not ready after 60 s")

    def kill_restart(self):
        with self.lock:
            self.up.clear()
            self.gen += 1
            t0 = time.monotonic()
            self.proc.kill()
            self.proc.wait()
            self.start_server()
            self.restarts.append(time.monotonic() - t0)

    # ---- HTTP ----
    def request(self, method, path, body=None, headers=None, timeout=30.0):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            h = {"Connection": "close"}
            h.update(headers or {})
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def timed(self, kind, method, path, body=None, headers=None, want=(200,)):
        """One request, counted; returns (status, body) or None when it failed."""
        self.up.wait()
        gen = self.gen
        t0 = time.monotonic()
        try:
            st, data = self.request(method, path, body, headers)
        except (OSError, http.client.HTTPException) as e:
            self.stats.fail(kind, type(e).__name__, down=gen != self.gen or not self.up.is_set())
            return None
        dt = time.monotonic() - t0
        if st in want:
            self.stats.ok(kind, dt)
            return st, data
        down = gen != self.gen or not self.up.is_set()
        self.stats.fail(kind, "%d %s" % (st, data[:160].decode(errors="replace")), down=down)
        return None

    # ---- load ----
    def pusher(self):
        bodies = [(TESTDATA / "pprof" / f).read_bytes() for f in FIXTURES]
        last = [0] * len(FIXTURES)
        k = 0
        period = 1.0 / self.a.push_rate
        next_t = time.monotonic()
        while not self.stop.is_set():
            i = k % len(FIXTURES)
            k += 1
            ts = max(int(time.time()), last[i] + 1)
            last[i] = ts
            q = urllib.parse.urlencode({"labels": '{job="soak_push",instance="p%d"}' % i, "time": str(ts)},
                                       quote_via=urllib.parse.quote)
            r = self.timed("push", "POST", "/api/v1/profiles/write?" + q, bodies[i])
            if r is not None:
                js = json.loads(r[1])
                with self.lock:
                    for s in js["data"]["series"]:
                        self.acked_push.append((tuple(sorted(s["labels"].items())), js["data"]["timestamp_ns"]))
            if k % 50 == 0:  # a push older than the retention: refused (400), not stored
                q = urllib.parse.urlencode({"labels": '{job="soak_push",instance="old"}',
                                            "time": str(int(time.time() - self.a.retention - 120))},
                                           quote_via=urllib.parse.quote)
                try:
                    st, _ = self.request("POST", "/api/v1/profiles/write?" + q, bodies[0])
                    if st == 400:
                        self.old_push_refused += 1
                except OSError:
                    pass
            next_t += period
            self.stop.wait(max(0.0, next_t - time.monotonic()))

    def remote_writer(self):
        n = self.a.rw_series
        seq = 0
        last_ts = 0
        while not self.stop.is_set():
            seq += 1
            ts = max(int(time.time() * 1000), last_ts + 1)
            last_ts = ts
            series = [([("__name__", "soak_rw_total"), ("i", "%03d" % j), ("job", "soak_rw")], ts, float(seq * (j + 1)))
                      for j in range(n)]
            body = snappy.compress(write_request(series))
            r = self.timed("remote_write", "POST", "/api/v1/write", body,
                           {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                            "X-Prometheus-Remote-Write-Version": "0.1.0"}, want=(204,))
            if r is not None:
                with self.lock:
                    self.acked_rw.extend((j, ts, v) for j, (_, _, v) in enumerate(series))
            self.stop.wait(1.0)

    def querier(self):
        k = 0
        self.stop.wait(5)  # the first pushes store the profile types the queries name
        while not self.stop.is_set():
            now = int(time.time())
            kind = ["query_range", "query_range", "profiles_query", "render", "series"][k % 5]
            k += 1
            if kind == "query_range":
                q = ("sum(rate(soak_rw_total[1m]))" if k % 2 else
                     'sum by (instance) (%s{soak="1"})' % CPU_NS)
                path = "/api/v1/query_range?" + urllib.parse.urlencode(
                    {"query": q, "start": now - 300, "end": now, "step": "15s"})
            elif kind == "profiles_query":
                path = "/api/v1/profiles/query?" + urllib.parse.urlencode(
                    {"query": '%s{job=~"soak_push|gotarget"}' % CPU_NS, "start": now - 300, "end": now,
                     "format": "flamegraph", "max_nodes": 2048})
            elif kind == "render":
                path = "/pyroscope/render?" + urllib.parse.urlencode(
                    {"query": '%s{job="soak_push"}' % CPU_NS, "from": "now-15m", "until": "now", "maxNodes": 1024})
            else:
                path = "/api/v1/series?" + urllib.parse.urlencode(
                    {"match[]": '{job=~"soak_.*"}', "start": now - 600, "end": now})
            self.timed(kind, "GET", path)
            self.stop.wait(0.5)

    def admin(self, kind, every):
        while not self.stop.wait(every):
            self.timed(kind, "POST", "/api/v1/admin/" + kind, b"")

    # ---- sampling ----
    def proc_stats(self):
        pid = self.proc.pid
        rss = anon = fds = None
        try:
            for line in open("/proc/%d/status" % pid):
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
            fds = len(os.listdir("/proc/%d/fd" % pid))
        except OSError:
            pass
        try:
            st = os.stat(self.data / "data.mdb")
            data = st.st_blocks * 512 // 1024
        except OSError:
            data = None
        return pid, rss, anon, fds, data

    def sampler(self, writer, t_start):
        while not self.stop.wait(self.a.sample_every):
            with self.lock:
                pid, rss, anon, fds, data = self.proc_stats()
                restarts = len(self.restarts)
            w, e = self.stats.take_window()
            row = {"t_s": round(time.monotonic() - t_start, 1), "pid": pid, "restarts": restarts,
                   "reloads": self.reloads, "rss_kib": rss, "rss_anon_kib": anon, "fds": fds, "data_kib": data}
            for k in KINDS:
                row[k + "_n"] = len(w[k])
                row[k + "_err"] = e[k]
                p50, p99 = pct(w[k], 0.5), pct(w[k], 0.99)
                row[k + "_p50_ms"] = "" if p50 is None else round(p50 * 1000, 2)
                row[k + "_p99_ms"] = "" if p99 is None else round(p99 * 1000, 2)
            self.samples.append(row)
            writer.writerow(row)
            self.csvf.flush()
            if self.a.verbose:
                print("t=%5.0fs rss=%s anon=%s fds=%s data=%s restarts=%d push=%d rw=%d" % (
                    row["t_s"], rss, anon, fds, data, restarts, row["push_n"], row["remote_write_n"]), flush=True)

    # ---- the run ----
    def run(self):
        a = self.a
        self.start_targets()
        self.write_config()
        self.start_server()
        self.samples = []
        fields = ["t_s", "pid", "restarts", "reloads", "rss_kib", "rss_anon_kib", "fds", "data_kib"]
        for k in KINDS:
            fields += [k + "_n", k + "_err", k + "_p50_ms", k + "_p99_ms"]
        self.csvf = open(self.out / "soak.csv", "w", newline="")
        writer = csv.DictWriter(self.csvf, fieldnames=fields)
        writer.writeheader()
        t_start = time.monotonic()
        print("soak: %s for %.0f s, server on port %d, data in %s, admin flag %s, %d gotargets" % (
            a.profstore, a.duration, self.port, self.data, self.admin_flag or "not needed", len(self.targets)),
            flush=True)
        threads = [threading.Thread(target=self.pusher), threading.Thread(target=self.remote_writer),
                   threading.Thread(target=self.querier), threading.Thread(target=self.querier),
                   threading.Thread(target=self.admin, args=("compact", a.compact_every)),
                   threading.Thread(target=self.admin, args=("retention", a.retention_every)),
                   threading.Thread(target=self.sampler, args=(writer, t_start))]
        for t in threads:
            t.daemon = True
            t.start()
        next_reload = t_start + a.reload_every
        next_kill = t_start + a.kill_every
        end = t_start + a.duration
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_kill:
                self.kill_restart()
                next_kill += a.kill_every
                checked, lost = self.check_durable()
                print("soak: t=%.0fs SIGKILL + restart #%d: ready after %.2f s; %d acknowledged writes listed "
                      "again, %d lost" % (now - t_start, len(self.restarts), self.restarts[-1], checked - lost, lost),
                      flush=True)
            elif now >= next_reload:
                self.reload_variant += 1
                self.write_config()
                with self.lock:
                    self.proc.send_signal(signal.SIGHUP)
                self.reloads += 1
                next_reload += a.reload_every
            time.sleep(min(0.2, max(0.0, min(next_kill, next_reload, end) - time.monotonic())))
        self.stop.set()
        for t in threads:
            t.join(60)
        with self.lock:
            final = self.proc_stats()
        return self.verify(final)

    def check_durable(self):
        """Right after a restart: every write acknowledged before the kill (newer than the retention
        cutoff) is listed by /api/v1/debug/series. Returns (checked, lost)."""
        with self.lock:
            pushes, floats = list(self.acked_push), list(self.acked_rw)
        cutoff_ns = int((time.time() - self.a.retention + 30) * 1e9)
        st, data = self.request("GET", "/api/v1/debug/series", timeout=300)
        if st != 200:
            raise SystemExit("soak: debug/series: %d" % st)
        stored = {tuple(sorted(s["labels"].items())): s for s in json.loads(data)["data"]}
        by_profile = {k: {p["ts"] for p in s.get("profiles", [])} for k, s in stored.items()}
        lost = checked = 0
        for labels, ts in pushes:
            if ts >= cutoff_ns:
                checked += 1
                lost += ts not in by_profile.get(labels, ())
        samples = {}
        for k, s in stored.items():
            d = dict(k)
            if d.get("__name__") == "soak_rw_total":
                samples[int(d["i"])] = {int(t) for t, _, _ in s.get("samples", [])}
        for j, ts, _ in floats:
            if ts * 1_000_000 >= cutoff_ns:
                checked += 1
                lost += ts not in samples.get(j, ())
        self.durable_checked += checked
        self.durable_lost += lost
        return checked, lost

    def verify(self, final):
        a = self.a
        cutoff_ns = int((time.time() - a.retention + 30) * 1e9)  # slack for the retention pass running now
        st, data = self.request("GET", "/api/v1/debug/series", timeout=300)
        if st != 200:
            raise SystemExit("soak: debug/series: %d" % st)
        stored = {tuple(sorted(s["labels"].items())): s for s in json.loads(data)["data"]}
        by_profile = {k: {p["ts"] for p in s.get("profiles", [])} for k, s in stored.items()}
        push_total = len(self.acked_push)
        push_check = [x for x in self.acked_push if x[1] >= cutoff_ns]
        push_listed = push_read = 0
        missing = []
        for labels, ts in push_check:
            if ts in by_profile.get(labels, ()):
                push_listed += 1
                sid = stored[labels]["id"]
                st, body = self.request("GET", "/api/v1/debug/profile?id=%d&time=%d" % (sid, ts))
                if st == 200 and body[:2] == b"\x1f\x8b":
                    push_read += 1
                elif len(missing) < 5:
                    missing.append("unreadable %s @%d: %d" % (dict(labels), ts, st))
            elif len(missing) < 5:
                missing.append("not listed %s @%d" % (dict(labels), ts))
        expired = sum(1 for labels, ts in self.acked_push
                      if ts < int((time.time() - a.retention - 2 * a.retention_every - 60) * 1e9)
                      and ts not in by_profile.get(labels, ()))
        expired_of = sum(1 for _, ts in self.acked_push
                         if ts < int((time.time() - a.retention - 2 * a.retention_every - 60) * 1e9))
        # remote-written samples
        floats = {}
        for k, s in stored.items():
            d = dict(k)
            if d.get("__name__") == "soak_rw_total":
                floats[int(d["i"])] = {int(t): bits for t, _, bits in s.get("samples", [])}
        rw_check = [x for x in self.acked_rw if x[1] * 1_000_000 >= cutoff_ns]
        rw_ok = 0
        for j, ts, v in rw_check:
            bits = floats.get(j, {}).get(ts)
            if bits is not None and int(bits, 16) == struct.unpack("<Q", struct.pack("<d", v))[0]:
                rw_ok += 1
            elif len(missing) < 10:
                missing.append("float soak_rw_total{i=%03d} @%d: %s" % (j, ts, bits))
        scraped = sum(len(s.get("profiles", [])) for k, s in stored.items() if dict(k).get("job") == "gotarget")
        return self.summary(final, push_total, push_check, push_listed, push_read, expired, expired_of, rw_check,
                            rw_ok, scraped, missing)

    def summary(self, final, push_total, push_check, push_listed, push_read, expired, expired_of, rw_check,
                rw_ok, scraped, missing):
        a = self.a
        s = self.samples
        ok = True
        lines = ["", "soak summary: %.0f s, %d samples every %.0f s (%s)" % (a.duration, len(s), a.sample_every,
                                                                           self.out / "soak.csv")]

        def col(name):
            return [r[name] for r in s if r[name] is not None]

        for name, label in (("rss_kib", "RSS (KiB)"), ("rss_anon_kib", "RSS anon (KiB)"), ("fds", "open fds"),
                            ("data_kib", "data.mdb (KiB)")):
            v = col(name)
            if v:
                lines.append("  %-16s start %9d  max %9d  end %9d" % (label, v[0], max(v), v[-1]))
        lines.append("  restarts %d (SIGKILL -> ready: max %.2f s), reloads %d" % (
            len(self.restarts), max(self.restarts) if self.restarts else 0, self.reloads))
        lines.append("  %-15s %8s %7s %6s %9s %9s %9s" % ("kind", "ok", "errors", "down", "p50 ms", "p99 ms", "max ms"))
        for k in KINDS:
            xs = self.stats.all[k]
            lines.append("  %-15s %8d %7d %6d %9s %9s %9s" % (
                k, len(xs), self.stats.err[k], self.stats.down[k],
                "%.1f" % (pct(xs, .5) * 1000) if xs else "-", "%.1f" % (pct(xs, .99) * 1000) if xs else "-",
                "%.1f" % (max(xs) * 1000) if xs else "-"))
            if self.stats.err[k]:
                ok = False
        for e in self.stats.err_examples[:8]:
            lines.append("    error: " + e)
        lines.append("  acknowledged pushes: %d series-profiles, %d newer than the retention cutoff: %d listed, "
                     "%d read back" % (push_total, len(push_check), push_listed, push_read))
        lines.append("  acknowledged remote-write samples: %d, %d newer than the cutoff: %d read back (same bits)"
                     % (len(self.acked_rw), len(rw_check), rw_ok))
        lines.append("  after each SIGKILL + restart: %d acknowledged writes looked for, %d lost" % (
            self.durable_checked, self.durable_lost))
        if self.durable_lost:
            ok = False
        lines.append("  retention: %d of %d acknowledged profiles past the retention are gone; %d pushes older "
                     "than the retention refused (400)" % (expired, expired_of, self.old_push_refused))
        lines.append("  scraped gotarget profiles stored: %d%s" % (scraped, "" if self.scrape_ok else " (no go)"))
        if push_read != len(push_check) or rw_ok != len(rw_check):
            ok = False
            for m in missing:
                lines.append("    missing: " + m)
        # verdict: the last third against the middle third
        n = len(s)
        verdict = []
        if n >= 6:
            mid, last = s[n // 3:2 * n // 3], s[2 * n // 3:]
            for name, rel, slack in (("rss_anon_kib", 1.25, 8192), ("rss_kib", 1.5, 16384), ("fds", 1.0, 8)):
                m1 = max((r[name] for r in mid if r[name] is not None), default=0)
                m2 = max((r[name] for r in last if r[name] is not None), default=0)
                bounded = m2 <= m1 * rel + slack
                verdict.append("%s %s (max middle third %d, last third %d)" % (
                    name, "bounded" if bounded else "GROWS", m1, m2))
                if not bounded and name != "rss_kib":  # file pages follow the data, for information
                    ok = False
            m1 = max((r["data_kib"] for r in mid if r["data_kib"] is not None), default=0)
            m2 = max((r["data_kib"] for r in last if r["data_kib"] is not None), default=0)
            verdict.append("data.mdb (for information) max middle third %d KiB, last third %d KiB" % (m1, m2))
        else:
            verdict.append("too short for a verdict (fewer than 6 samples)")
        lines.append("  verdict: " + "; ".join(verdict))
        log = (self.out / "profstore.log").read_text(errors="replace")
        nerr = len(re.findall(r"level=error", log))
        lines.append("  server log: %d level=error lines, %d level=warn (%s)" % (
            nerr, len(re.findall(r"level=warn", log)), self.out / "profstore.log"))
        lines.append("  result: %s" % ("PASS" if ok else "FAIL"))
        text = "\n".join(lines)
        print(text, flush=True)
        (self.out / "summary.txt").write_text(text + "\n")
        return 0 if ok else 1

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for p, _ in self.targets:
            if p.poll() is None:
                p.terminate()
                p.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profstore", default=str(ROOT / "build" / "profstore"))
    ap.add_argument("--out", default=None, help="default bench/soak-out/<UTC time>")
    ap.add_argument("--duration", type=duration, default=duration("30m"))
    ap.add_argument("--sample-every", type=duration, default=10.0)
    ap.add_argument("--reload-every", type=duration, default=60.0)
    ap.add_argument("--kill-every", type=duration, default=300.0)
    ap.add_argument("--compact-every", type=duration, default=60.0)
    ap.add_argument("--retention-every", type=duration, default=120.0)
    ap.add_argument("--retention", type=duration, default=600.0, help="--retention of the server (default 10m)")
    ap.add_argument("--scrape-interval", type=duration, default=10.0)
    ap.add_argument("--targets", type=int, default=3, help="gotarget processes to scrape (0: none)")
    ap.add_argument("--push-rate", type=float, default=4.0, help="pushes a second")
    ap.add_argument("--rw-series", type=int, default=20, help="remote-written series, one sample a second each")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each sample")
    a = ap.parse_args()
    a.retention_flag = "%ds" % int(a.retention)
    if a.out is None:
        a.out = str(HERE / "soak-out" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    soak = Soak(a)
    try:
        rc = soak.run()
    finally:
        soak.close()
    sys.exit(rc)


if __name__ == "__main__":
    main()
