#!/usr/bin/python3
"""bench/debuginfo.py - upload throughput of the debug info service (debuginfo.v1alpha1) for a
large debug file, next to `cp` + fsync of the same file on the same file system.

  /usr/bin/python3 bench/debuginfo.py [--mb 50] [--runs 5] [--profstore build/profstore]

The file: a C program compiled with gcc -g -O2, its debug file split off (objcopy
--only-keep-debug), grown to --mb MB with a section of random bytes (objcopy --add-section
.debug_bench=...: a valid ELF of the same build id, incompressible). Each run: DeleteDebuginfo,
ShouldInitiateUpload (Connect JSON), then the timed part, the raw POST .../Upload/<build id> of the
whole file until its 200 (the file written to <data-dir>/debuginfo/tmp, checked through libelf,
fsynced with its metadata, renamed, the directory fsynced), then UploadFinished. The baseline:
`cp FILE DIR/copy` then `sync DIR/copy` (coreutils' sync of one file is its fsync), timed together,
in the server's data directory. Prints the medians in MB/s (MB = 10^6 bytes).
"""
import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import bench_env  # noqa: F401  (first: sys.path, PROFSTORE_BIN)

from conftest import Server  # noqa: E402

PROG = r"""
#include <stdio.h>
__attribute__((noinline)) long work(long n) { long a = 0; for (long i = 0; i < n; i++) a += i * i; return a; }
int main(int argc, char **argv) { printf("%ld\n", work(argc)); return 0; }
"""
SVC = "/debuginfo.v1alpha1.DebuginfoService/"


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def call(port, method, body, ctype="application/json"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", SVC + method, body=body, headers={"Content-Type": ctype})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profstore", default=None)
    a = ap.parse_args()
    if a.profstore:
        os.environ["PROFSTORE_BIN"] = a.profstore
    tmp = Path(tempfile.mkdtemp(prefix="bench_debuginfo."))
    try:
        (tmp / "p.c").write_text(PROG)
        run("gcc", "-g", "-O2", "-o", str(tmp / "p"), str(tmp / "p.c"))
        run("objcopy", "--only-keep-debug", str(tmp / "p"), str(tmp / "p.debug"))
        with open(tmp / "junk", "wb") as f:
            f.write(os.urandom(a.mb * 10**6))
        dbg = tmp / "big.debug"
        run("objcopy", "--add-section", ".debug_bench=%s" % (tmp / "junk"), str(tmp / "p.debug"), str(dbg))
        bid = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", str(dbg))).group(1)
        data = dbg.read_bytes()
        size = len(data)
        print("debug file: %d bytes (%.1f MB), build id %s; %d runs" % (size, size / 1e6, bid, a.runs))
        srv = Server(tmp / "srv", extra_args=["--debuginfo.max-file-bytes", str(size + 1)]).start()
        try:
            up = []
            for _ in range(a.runs):
                assert call(srv.port, "DeleteDebuginfo", json.dumps({"gnuBuildId": bid}).encode())[0] == 200
                st, body = call(srv.port, "ShouldInitiateUpload", json.dumps(
                    {"file": {"gnuBuildId": bid, "name": "big", "type": "TYPE_EXECUTABLE_NO_TEXT"}}).encode())
                assert st == 200 and json.loads(body)["shouldInitiateUpload"], body
                c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=600)
                t = time.perf_counter()
                c.request("POST", SVC + "Upload/" + bid, body=data)
                r = c.getresponse()
                r.read()
                dt = time.perf_counter() - t
                c.close()
                assert r.status == 200, r.status
                up.append(dt)
                assert call(srv.port, "UploadFinished", json.dumps({"gnuBuildId": bid}).encode())[0] == 200
            cp = []
            dst = srv.data_dir / "copy.debug"
            for _ in range(a.runs):
                if dst.exists():
                    dst.unlink()
                t = time.perf_counter()
                subprocess.run(["cp", str(dbg), str(dst)], check=True)
                subprocess.run(["sync", str(dst)], check=True)
                cp.append(time.perf_counter() - t)
            mu, mc = statistics.median(up), statistics.median(cp)
            print("upload (POST until its 200): median %.0f ms, %.0f MB/s (runs: %s)"
                  % (mu * 1000, size / 1e6 / mu, ", ".join("%.0f" % (x * 1000) for x in up)))
            print("cp + fsync (sync FILE):      median %.0f ms, %.0f MB/s (runs: %s)"
                  % (mc * 1000, size / 1e6 / mc, ", ".join("%.0f" % (x * 1000) for x in cp)))
            print("upload / cp+fsync: %.2fx the time" % (mu / mc))
        finally:
            srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
