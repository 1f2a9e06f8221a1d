#!/usr/bin/env python3
"""bench/auth.py - what authentication costs a request: µs per request and requests/s of a cheap
endpoint (GET /api/v1/status/buildinfo) over one keep-alive connection, with no web config, with
basic auth (bcrypt cost 10, so every request after the first is a cache hit) and with a bearer
token; and the first basic-auth request (the one bcrypt). Prints, never asserts.

    bench/auth.py [--profstore BUILD/profstore] [--requests 5000]
"""

import argparse
import base64
import hashlib
import http.client
import os
import tempfile
import time
import warnings
from pathlib import Path

import bench_env  # noqa: F401  (tests/integration on sys.path, PROFSTORE_BIN)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import crypt

PATH = "/api/v1/status/buildinfo"


def run(port, n, headers):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.perf_counter()
    conn.request("GET", PATH, headers=headers)
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(n):
        conn.request("GET", PATH, headers=headers)
        r = conn.getresponse()
        r.read()
        assert r.status == 200, r.status
    dt = time.perf_counter() - t0
    conn.close()
    return first, dt / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profstore", default=os.environ["PROFSTORE_BIN"])
    ap.add_argument("--requests", type=int, default=5000)
    a = ap.parse_args()
    os.environ["PROFSTORE_BIN"] = a.profstore
    import conftest  # noqa: E402  (reads PROFSTORE_BIN)
    conftest.PROFSTORE_BIN = a.profstore
    work = Path(tempfile.mkdtemp(prefix="profstore-bench-auth-"))
    h = crypt.crypt("benchpw", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
    web = work / "web.yml"
    web.write_text("basic_auth_users:\n  bench: '%s'\nbearer_tokens:\n  - sha256: %s\n    scopes: [read]\n"
                   % (h, hashlib.sha256(b"benchtoken").hexdigest()))
    basic = {"Authorization": "Basic " + base64.b64encode(b"bench:benchpw").decode()}
    bearer = {"Authorization": "Bearer benchtoken"}
    print("bench/auth.py: %d requests of GET %s, one keep-alive connection, --threads 1, best of 5 rounds" % (a.requests, PATH))
    cases = (("no web config", {}, {}), ("basic auth (cached)", {"web_config_file": web}, basic),
             ("bearer token", {"web_config_file": web}, bearer))
    servers = [conftest.Server(work / name.split()[0], threads=1, **flags).start() for name, flags, _ in cases]
    best = [float("inf")] * len(cases)
    try:
        for i, (_, _, hdrs) in enumerate(cases):
            run(servers[i].port, 200, hdrs)  # warm up (the one bcrypt)
        for _ in range(5):  # rounds, interleaved: the best of each (a shared machine is noisy)
            for i, (_, _, hdrs) in enumerate(cases):
                best[i] = min(best[i], run(servers[i].port, a.requests // 5, hdrs)[1])
    finally:
        for s in servers:
            s.stop()
    for (name, _, _), per in zip(cases, best):
        print("  %-22s %7.1f µs/request  %8.0f requests/s" % (name, per * 1e6, 1 / per))
    rows = list(zip([c[0] for c in cases], best))
    s = conftest.Server(work / "first", threads=1, web_config_file=web).start()
    try:
        first, _ = run(s.port, 1, basic)
    finally:
        s.stop()
    print("  first basic-auth request (bcrypt cost 10, not cached): %.1f ms" % (first * 1e3))
    print("  basic auth (cached) adds %.1f µs a request" % ((rows[1][1] - rows[0][1]) * 1e6))


if __name__ == "__main__":
    main()
