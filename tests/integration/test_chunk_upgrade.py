"""Schema 6 -> 9 (docs/FORMAT.md: 7 packed chunks, 8 rollups, 9 references to twin chunks): a data directory written by the schema 6 profstore
(tests/testdata/store-v6, made by its make.py with the commit before packed chunks) opens,
is upgraded in place, and every stored profile reads back byte for byte as the schema 6 profstore
answered (its answers.json); its V1 chunks stay as they are, the chunks closed after the upgrade
are packed (encoding 08), and the answers do not change across the compaction and a restart."""

import gzip
import hashlib
import json
import subprocess

import pytest

from conftest import PROFSTORE_BIN, TESTDATA

FIXTURE = TESTDATA / "store-v6"


def dump(data_dir, db):
    """{key hex: value bytes} of named database db (mdb_dump, lmdb-utils)."""
    r = subprocess.run(["mdb_dump", "-s", db, str(data_dir)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("HEADER=END\n", 1)[1].splitlines()
    out = {}
    for i in range(0, len(lines) - 1, 2):
        if lines[i] == "DATA=END":
            break
        out[lines[i].strip()] = bytes.fromhex(lines[i + 1].strip())
    return out


def encodings(data_dir):
    """The encoding byte of every chunk, in key order."""
    return [v[0] for _, v in sorted(dump(data_dir, "chunks").items())]


def answers(srv):
    series = srv.get_json("/api/v1/debug/series")
    prof = {}
    for s in series["data"]:
        for p in s["profiles"]:
            prof["%d/%d" % (s["id"], p["ts"])] = hashlib.sha256(srv.profile_bytes(s["id"], p["ts"])).hexdigest()
    return {"series": series, "profiles": prof}


@pytest.fixture
def v6_dir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "data.mdb").write_bytes(gzip.decompress((FIXTURE / "data.mdb.gz").read_bytes()))
    return d


def test_schema6_store_reads_back_byte_for_byte(make_server, v6_dir):
    want = json.loads((FIXTURE / "answers.json").read_text())
    assert len(want["profiles"]) == 2 * 2 * 12 + 4 * 3  # cpu: 2 jobs x 2 types x 12; heap: 4 types x 3
    assert dump(v6_dir, "info")[b"schema".hex()] == bytes([0, 0, 0, 6])
    assert encodings(v6_dir) == [1] * 8  # 4 cpu series x 2 chunks of 5 profiles, V1
    srv = make_server(data_dir=v6_dir, retention="0", storage_compact_max_profiles=5, storage_compact_window="0",
                      threads=1)
    assert answers(srv) == want
    # upgraded in place: version 15 written, the old chunks untouched, the label times built from
    # the series' data (schema 10): a record per name and per pair; every series in the series
    # index (schema 13: the watermark is the last series id); the profile series' label times
    # (schema 15) the same records (every series of this store is a profile series)
    assert srv.stop() == 0
    assert dump(v6_dir, "info")[b"schema".hex()] == bytes([0, 0, 0, 15])
    assert dump(v6_dir, "info")[b"seriesw".hex()] == (8).to_bytes(8, "big")
    assert len(dump(v6_dir, "series")) == 8
    lt = dump(v6_dir, "ltimes")
    assert sorted(bytes.fromhex(k).split(b"\0")[0] for k in lt if b"\0" not in bytes.fromhex(k)) == \
        sorted({bytes.fromhex(k).split(b"\0")[0] for k in dump(v6_dir, "postings")})
    assert {bytes.fromhex(k) for k in lt if b"\0" in bytes.fromhex(k)} == \
        {bytes.fromhex(k) for k in dump(v6_dir, "postings")}
    pt = dump(v6_dir, "ptimes")
    assert {k: v for k, v in pt.items() if not k.startswith("00")} == lt
    # and per profile type (its key 00 hash(type)): the type's record, its names' and pairs'
    types = {bytes.fromhex(k).split(b"\0")[1] for k in dump(v6_dir, "postings") if k.startswith(b"__name__\0".hex())}
    assert sorted(v[1:] for k, v in pt.items() if len(k) == 18) == sorted(types)
    assert all(v[:1] == b"\x01" for k, v in pt.items() if len(k) == 18)
    for k, v in pt.items():  # each type's own times hold its __name__ pair
        if len(k) == 18:
            assert k + (b"__name__\0" + v[1:]).hex() in pt
    assert encodings(v6_dir) == [1] * 8
    # the heads (2 cpu profiles a series, 3 heap) folded into chunks now are packed where it pays
    srv.start()
    res = srv.post_json("/api/v1/admin/compact")
    assert res == {"status": "success", "data": {"chunks": 8}}, res
    assert answers(srv) == want
    assert srv.stop() == 0
    # in key order: the 4 cpu series (2 old chunks, then the head of 2 profiles each: samples/count
    # as a reference (9) to its cpu/nanoseconds twin, packed, schema 9), then the 4 heap series'
    # heads of 3 profiles: two pack, two (few values: a zstd frame would not be shorter) stay V1
    assert encodings(v6_dir) == [1, 1, 9, 1, 1, 8, 1, 1, 9, 1, 1, 8, 8, 8, 1, 1]
    # the rollup backfill of the windows compacted before the upgrade ran (none is closed here:
    # 2 minutes of profiles) and is done
    assert dump(v6_dir, "info")[b"rollfill".hex()] == b"\x00"
    check = subprocess.run([PROFSTORE_BIN, "--data-dir", str(v6_dir), "--storage.check"], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    srv.start()
    assert answers(srv) == want
