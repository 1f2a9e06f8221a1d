"""Makes tests/testdata/store-v6: a schema-6 data directory and what a schema-6 profstore answers
about it, for tests/integration/test_chunk_upgrade.py. Run it with a profstore of schema 6 (the
commit before "storage/chunk.c: zstd stage", 1fcb921):

    PROFSTORE_BIN=/path/to/profstore-v6 /usr/bin/python3 tests/testdata/store-v6/make.py

The store: 2 series of cpu-01 and cpu-02 (their 2 sample types each), 12 profiles 10 s apart
each, in chunks of 5 (2 chunks) and a head of 2; 3 heap profiles (4 sample types) in a head.
answers.json: the /api/v1/debug/series answer, and the sha256 of /api/v1/debug/profile of every
stored profile."""
import gzip
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "integration"))
from conftest import Server  # noqa: E402

T0 = 1796000000  # 2026-11-29T..., in the past: no compact window is due by age (window 0)


def main():
    wd = Path(tempfile.mkdtemp(prefix="store-v6-"))
    srv = Server(wd, threads=1, extra_args=["--storage.compact-max-profiles", "5", "--storage.compact-window",
                                            "0", "--retention", "0"]).start()
    try:
        for i in range(12):
            for job, f in (("a", "go/cpu-01.pb.gz"), ("b", "go/cpu-02.pb.gz")):
                st, js = srv.push(f, labels='{job="%s"}' % job, time=str(T0 + 10 * i))
                assert st == 200, js
        for i in range(3):
            st, js = srv.push("go/heap-01.pb.gz", labels='{job="h"}', time=str(T0 + 10 * i))
            assert st == 200, js
        series = srv.get_json("/api/v1/debug/series")
        prof = {}
        for s in series["data"]:
            for p in s["profiles"]:
                prof["%d/%d" % (s["id"], p["ts"])] = hashlib.sha256(srv.profile_bytes(s["id"], p["ts"])).hexdigest()
    finally:
        assert srv.stop() == 0
    (HERE / "answers.json").write_text(json.dumps({"series": series, "profiles": prof}, indent=1, sort_keys=True)
                                       + "\n")
    with open(srv.data_dir / "data.mdb", "rb") as f, gzip.open(HERE / "data.mdb.gz", "wb", 9) as g:
        g.write(f.read())
    print("chunks/heads: see answers.json; data.mdb %d bytes" % os.path.getsize(srv.data_dir / "data.mdb"))


if __name__ == "__main__":
    main()
