#!/usr/bin/env python3
"""bench/conns.py - connections (web/connguard.c) against a real profstore. Prints, never asserts:

  - RSS of the server idle, then holding 512 idle connections (KiB per connection), and the CPU
    it spends over 2 s holding them (the per-loop tick walks them every 100 ms);
  - accept rate: connect + GET /-/healthy + close, one client, sequentially (connections/s);
  - requests/s over one kept-alive connection (the framing check runs on each);
  - with --web.max-connections=512 and 1,000 idle connections open, how long a health check waits
    (idle connections are closed for clients in the backlog);
  - under prlimit --nofile=256 with 400 idle connections: CPU over 2 s (no EMFILE spin) and the
    health check's wait.

    bench/conns.py [--profstore BUILD/profstore]
"""

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Srv:
    def __init__(self, binary, args, prefix=()):
        self.dir = tempfile.mkdtemp(prefix="ps-conns-")
        self.port = free_port()
        self.proc = subprocess.Popen(list(prefix) + [binary, "--listen", "127.0.0.1:%d" % self.port, "--data-dir",
                                                     self.dir + "/data", "--threads", "2"] + list(args),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if self.get(1.0).startswith(b"HTTP/1.1 200"):
                    return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("profstore did not start")

    def get(self, timeout=10.0, path="/-/healthy") -> bytes:
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
            out = b""
            while True:
                d = s.recv(65536)
                if not d:
                    return out
                out += d

    def rss_kib(self) -> int:
        for line in open("/proc/%d/status" % self.pid()):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def pid(self) -> int:
        # under prlimit the server is prlimit's exec'd image: the same pid
        return self.proc.pid

    def cpu(self) -> float:
        f = open("/proc/%d/stat" % self.pid()).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def hold(port, n):
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profstore", default=str(ROOT / "build" / "profstore"))
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))

    s = Srv(a.profstore, [])
    time.sleep(0.3)
    base = s.rss_kib()
    socks = hold(s.port, 512)
    time.sleep(0.5)
    rss = s.rss_kib()
    c0 = s.cpu()
    time.sleep(2.0)
    idle_cpu = s.cpu() - c0
    print("idle connections: RSS %d KiB idle, %d KiB with 512 (%.1f KiB each); CPU holding them %.3f s over 2 s"
          % (base, rss, (rss - base) / 512.0, idle_cpu))
    for x in socks:
        x.close()
    time.sleep(0.3)

    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        s.get()
    dt = time.perf_counter() - t0
    print("accept rate: %.0f connections/s (connect + GET /-/healthy + close, one client, %d)" % (n / dt, n))

    with socket.create_connection(("127.0.0.1", s.port)) as c:
        req = b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"
        n = 5000
        t0 = time.perf_counter()
        for _ in range(n):
            c.sendall(req)
            got = b""
            while not got.endswith(b"Healthy.\n"):
                got += c.recv(4096)
        dt = time.perf_counter() - t0
    print("keep-alive: %.0f requests/s on one connection (%d)" % (n / dt, n))
    s.stop()

    s = Srv(a.profstore, ["--web.max-connections", "512"])
    socks = hold(s.port, 1000)
    t0 = time.perf_counter()
    ok = s.get(30).startswith(b"HTTP/1.1 200")
    print("max-connections 512, 1000 idle open: health check answered %s after %.2f s" % (ok, time.perf_counter() - t0))
    for x in socks:
        x.close()
    s.stop()

    s = Srv(a.profstore, [], prefix=["prlimit", "--nofile=256:256", "--"])
    socks = hold(s.port, 400)
    time.sleep(0.2)
    c0 = s.cpu()
    time.sleep(2.0)
    fd_cpu = s.cpu() - c0
    t0 = time.perf_counter()
    ok = s.get(30).startswith(b"HTTP/1.1 200")
    print("nofile 256, 400 idle open: CPU %.3f s over 2 s; health check answered %s after %.2f s"
          % (fd_cpu, ok, time.perf_counter() - t0))
    for x in socks:
        x.close()
    s.stop()


if __name__ == "__main__":
    sys.exit(main())
