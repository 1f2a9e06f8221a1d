#!/usr/bin/env python3
"""bench/adhoc.py - what a shared (ad hoc) profile costs: ms per Upload (Connect JSON, base64) and per
Get (the flame graph of one sample type, the file decoded again each time) of a real profile, beside
a plain /pyroscope/render of the same profile pushed as a series; the stored bytes per upload. One
keep-alive connection each, median and best of N. Prints, never asserts.

    bench/adhoc.py [--profstore BUILD/profstore] [--n 50] [--profile tests/testdata/pprof/go/cpu-01.pb.gz|synthetic]

A CPU profile (its cpu sample type is the one rendered); "synthetic" is ui_util's 12,420-node one.
"""

import argparse
import base64
import http.client
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import bench_env  # noqa: F401  (tests/integration on sys.path, PROFSTORE_BIN)

SVC = "/adhocprofiles.v1.AdHocProfileService/"


def timed(conn, method, path, body=None, headers=None):
    t0 = time.perf_counter()
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    dt = time.perf_counter() - t0
    assert r.status == 200, (path, r.status, data[:300])
    return dt, data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profstore", default=os.environ["PROFSTORE_BIN"])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--profile", default=str(Path(os.environ.get("PS_TESTDATA") or bench_env.ROOT / "tests" / "testdata") / "pprof" / "go" / "cpu-01.pb.gz"))
    a = ap.parse_args()
    os.environ["PROFSTORE_BIN"] = a.profstore
    import conftest  # noqa: E402
    conftest.PROFSTORE_BIN = a.profstore
    if a.profile == "synthetic":  # ui_util's 12,420-node Go-like CPU profile
        from ui_util import synthetic_profile
        raw = synthetic_profile(1796022000)  # gzipped
    else:
        raw = Path(a.profile).read_bytes()
    work = Path(tempfile.mkdtemp(prefix="profstore-bench-adhoc-"))
    srv = conftest.Server(work / "s", retention="0").start()
    try:
        st, js = srv.push(raw, labels='{job="bench"}')
        assert st == 200, js
        ts = js["data"]["timestamp_ns"] // 10**9
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        ct = {"Content-Type": "application/json"}
        up = json.dumps({"name": Path(a.profile).name + ".pb.gz" if a.profile == "synthetic" else Path(a.profile).name, "profile": base64.b64encode(raw).decode()}).encode()
        ups, gets, renders, ids = [], [], [], []
        size0 = os.path.getsize(srv.data_dir / "data.mdb")
        for _ in range(a.n):
            dt, data = timed(conn, "POST", SVC + "Upload", up, ct)
            ups.append(dt)
            ids.append(json.loads(data)["id"])
        size1 = os.path.getsize(srv.data_dir / "data.mdb")
        get = json.dumps({"id": ids[0], "profileType": "cpu"}).encode()
        q = "process_cpu:cpu:nanoseconds:cpu:nanoseconds" + '{job="bench"}'
        rpath = "/pyroscope/render?" + "&".join("%s=%s" % kv for kv in (
            ("query", q.replace("{", "%7B").replace("}", "%7D").replace('"', "%22")), ("from", ts - 1), ("until", ts + 1)))
        timed(conn, "POST", SVC + "Get", get, ct)
        timed(conn, "GET", rpath)
        for _ in range(a.n):  # interleaved: the same machine noise for both
            gets.append(timed(conn, "POST", SVC + "Get", get, ct)[0])
            renders.append(timed(conn, "GET", rpath)[0])
        conn.close()
    finally:
        srv.stop()
    print("bench/adhoc.py: %s (%d bytes), %d rounds, one keep-alive connection, median (best)"
          % (a.profile if a.profile == "synthetic" else Path(a.profile).name, len(raw), a.n))
    for name, v in (("Upload (JSON, base64, stored)", ups), ("Get (cpu flame graph)", gets),
                    ("/pyroscope/render (the series)", renders)):
        print("  %-32s %7.2f ms  (%.2f ms)" % (name, statistics.median(v) * 1e3, min(v) * 1e3))
    print("  Get / render: %.2f×; data file growth per upload: %.0f bytes"
          % (statistics.median(gets) / statistics.median(renders), (size1 - size0) / a.n))


if __name__ == "__main__":
    main()
