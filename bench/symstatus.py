#!/usr/bin/python3
"""bench/symstatus.py - GET /api/v1/status/symbols over a day of whole-host profiles: what the
status page's Symbols section costs to read, with build ids of their own per process.

  /usr/bin/python3 bench/symstatus.py [--profiles 96] [--build-ids 1000] [--per-profile 200]
                                      [--stacks 400] [--profstore build/profstore]

--profiles OTLP CPU profiles 15 min apart (24 h at 96: one (hour, build id) record per build id
each hour), each with --per-profile mappings drawn from --build-ids build ids (none has a debug
file: all are missing, so each is looked up in --symbols.dir) and --stacks stacks of 4 frames
without symbols. Prints the milliseconds of the API over the whole day (median of 5), with
state=missing (limit 100) and state=all&limit=10000, and the records the day holds.
"""
import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import bench_env  # noqa: F401  (first: sys.path, PROFSTORE_BIN)

from conftest import Server  # noqa: E402
from otlp_util import Builder, post  # noqa: E402

T0 = 1796022000 * 10**9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=int, default=96)
    ap.add_argument("--build-ids", type=int, default=1000)
    ap.add_argument("--per-profile", type=int, default=200)
    ap.add_argument("--stacks", type=int, default=400)
    ap.add_argument("--profstore", default=None)
    a = ap.parse_args()
    if a.profstore:
        import os
        os.environ["PROFSTORE_BIN"] = a.profstore
    rnd = random.Random(1)
    bids = ["%040x" % rnd.getrandbits(160) for _ in range(a.build_ids)]
    tmp = Path(tempfile.mkdtemp(prefix="bench_symstatus."))
    (tmp / "debug").mkdir()
    srv = Server(tmp / "srv", retention="0", extra_args=["--symbols.dir", str(tmp / "debug")]).start()
    try:
        for i in range(a.profiles):
            b = Builder()
            sc = b.resource({"service.name": "host"})
            p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10_000_000, T0 + i * 900 * 10**9, 10**10)
            maps = [b.mapping("/usr/lib/lib%s.so" % x[:8], 0x7f0000000000 + (j << 24), 0x7f0000000000 + (j << 24) + (1 << 24),
                              0, x) for j, x in enumerate(rnd.sample(bids, a.per_profile))]
            for _ in range(a.stacks):
                b.sample(p, [b.location(0x7f0000000000 + (rnd.randrange(len(maps)) << 24) + rnd.randrange(1 << 20),
                                        maps[rnd.randrange(len(maps))]) for _ in range(4)], rnd.randrange(1, 20))
            assert post(srv.port, b.req).status == 200

        def timed(q):
            t = time.perf_counter()
            st, _, body = srv.get("/api/v1/status/symbols?" + q, timeout=120)
            dt = (time.perf_counter() - t) * 1000
            assert st == 200, body[:200]
            return dt, json.loads(body)["data"]

        day = "start=%d&end=%d" % (T0 // 10**9, T0 // 10**9 + 86400)
        _, d = timed(day + "&state=all&limit=10000")
        n = d["missing"]["buildIds"] + d["available"]["buildIds"]
        for q in ("state=missing", "state=all&limit=10000"):
            ms = [timed(day + "&" + q)[0] for _ in range(5)]
            print("%s: %.1f ms (median of 5; %d build ids listed of %d)"
                  % (q, statistics.median(ms), len(timed(day + "&" + q)[1]["buildIds"]), n))
        print("%d profiles over 24 h, %d build ids, %d of them per profile: up to %d (hour, build id) records"
              % (a.profiles, a.build_ids, a.per_profile, min(a.profiles * a.per_profile, 24 * a.build_ids)))
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
