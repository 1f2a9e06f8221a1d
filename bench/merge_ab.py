#!/usr/bin/python3
"""bench/merge_ab.py - the merges of bench_storage's series 0 on two kept stores, A and B, each
served by its own binary (two builds, or two schema versions): server CPU per merge, rounds
alternating A and B, and whether the merged profiles are the same.

  bench_storage --series 2 --no-sync --keep --data-dir DIR_A --profstore BIN_A   (then B)
  /usr/bin/python3 bench/merge_ab.py BIN_A DIR_A/data BIN_B DIR_B/data [--rounds 10] [--per 20] [--raw]

For each of the two types of bench_storage's Go CPU profiles (cpu:nanoseconds, samples:count) of
instance host-00: the 24 h merge (GET /api/v1/profiles/query, format=pprof), or with --raw 23
merges of 59 min 59 s, each straddling two hour windows, so that no rollup serves them and every
profile is read from its chunk. The first call of each server is not timed; then --rounds rounds
of --per calls each, A then B; CPU is utime + stime of /proc/PID/stat over a round (10 ms ticks).
"Same" compares `go tool pprof -traces` of the two 24 h merges (every stack and its value; the
pprof bytes differ by the node ids of the two stores).
"""
import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

START, END = 1795910400, 1795996790  # bench_storage's 24 h (2026-11-29)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(binary, data_dir):
    p = free_port()
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:%d" % p, "--data-dir", data_dir, "--retention", "0",
                             "--storage.compact-window", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % p, timeout=1)
            return proc, p
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("merge_ab: %s did not get ready" % binary)


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def merge(port, name, start, end):
    q = urllib.parse.urlencode({"query": '{__name__=~"process_cpu:%s:.*",job="bench-storage",instance="host-00"}' % name,
                                "start": start, "end": end, "format": "pprof"})
    return urllib.request.urlopen("http://127.0.0.1:%d/api/v1/profiles/query?%s" % (port, q), timeout=120).read()


def one(port, name, raw):
    if not raw:
        return merge(port, name, START, END)
    return b"".join(merge(port, name, START + h * 3600 + 1800, START + h * 3600 + 1800 + 3599) for h in range(23))


def traces(body):
    with tempfile.NamedTemporaryFile(suffix=".pb") as f:
        f.write(body)
        f.flush()
        out = subprocess.run(["go", "tool", "pprof", "-traces", f.name], capture_output=True, text=True,
                             check=True).stdout
    return sorted(out.split("-----------+-------------------------------------------------------")[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_a")
    ap.add_argument("dir_a")
    ap.add_argument("bin_b")
    ap.add_argument("dir_b")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per", type=int, default=20)
    ap.add_argument("--raw", action="store_true")
    o = ap.parse_args()
    servers = {"A": start(o.bin_a, o.dir_a), "B": start(o.bin_b, o.dir_b)}
    try:
        for name in ("cpu:nanoseconds", "samples:count"):
            whole = {t: merge(p, name, START, END) for t, (_, p) in servers.items()}
            ta, tb = traces(whole["A"]), traces(whole["B"])
            print("%s: 24 h merge, %d stacks in A, %d in B, the same: %s" % (name, len(ta), len(tb), ta == tb))
            for t, (_, p) in servers.items():
                one(p, name, o.raw)  # first read, not timed
            ms = {t: [] for t in servers}
            for _ in range(o.rounds):
                for t, (proc, p) in servers.items():
                    c0 = cpu_seconds(proc.pid)
                    for _ in range(o.per):
                        one(p, name, o.raw)
                    ms[t].append((cpu_seconds(proc.pid) - c0) / o.per * 1e3)
            for t in servers:
                print("  %s %s server CPU per %s: median %.2f ms (min %.2f, max %.2f), %d rounds of %d" % (
                    t, name, "23 raw merges" if o.raw else "24 h merge", statistics.median(ms[t]), min(ms[t]),
                    max(ms[t]), o.rounds, o.per))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
