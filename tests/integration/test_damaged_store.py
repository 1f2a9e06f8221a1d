"""A damaged store is refused or reported, never a crash (storage/check.c): a data.mdb cut short
(a partial copy or restore) or emptied beside the store's other files is refused at start with its
sizes; --storage.check reads every record and names the damaged ones; a read that meets a damaged
chunk answers 500 naming it, and the server goes on.

The chunk bytes are found through liblmdb itself (ctypes, read-only): a value's address in LMDB's
map less the map's address is its offset in data.mdb."""

import ctypes
import json
import os
import random
import re
import shutil
import struct
import subprocess
import time
import urllib.parse

import pytest

from conftest import PROFSTORE_BIN, Server

T0 = int(time.time()) - 3600
NPROF = 12  # profiles per series, compacted into chunks of 5 (and a head of 2)


def run_bin(*args, timeout=60):
    return subprocess.run([PROFSTORE_BIN, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def lmdb_meta(path):
    """(page size, last page, txnid) of the newer meta page of an LMDB file."""
    with open(path, "rb") as f:
        b = f.read(2 * 65536)
    psize = struct.unpack_from("<I", b, 40)[0]
    metas = [struct.unpack_from("<QQ", b, off + 136) for off in (0, psize)]
    last, txn = max(metas, key=lambda m: m[1])
    return psize, last, txn


class MDBVal(ctypes.Structure):
    _fields_ = [("mv_size", ctypes.c_size_t), ("mv_data", ctypes.c_void_p)]


def map_base(path):
    """Where this process mapped path (LMDB maps data.mdb whole, from offset 0)."""
    real = os.path.realpath(path)
    for line in open("/proc/self/maps"):
        f = line.split()
        if len(f) >= 6 and f[5] == real and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
    raise AssertionError("data.mdb not mapped")


def record_spans(data_dir, db):
    """[(key bytes, value's offset in data.mdb, value's length, key's offset)] of every record of
    named database db."""
    lib = ctypes.CDLL("liblmdb.so.0")
    env, txn, cur, dbi = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint()
    assert lib.mdb_env_create(ctypes.byref(env)) == 0
    assert lib.mdb_env_set_maxdbs(env, 64) == 0
    assert lib.mdb_env_open(env, str(data_dir).encode(), 0x20000 | 0x200000, 0o644) == 0  # RDONLY | NOTLS
    base = map_base(data_dir / "data.mdb")
    assert lib.mdb_txn_begin(env, None, 0x20000, ctypes.byref(txn)) == 0
    assert lib.mdb_dbi_open(txn, db.encode(), 0, ctypes.byref(dbi)) == 0
    assert lib.mdb_cursor_open(txn, dbi, ctypes.byref(cur)) == 0
    out, k, v = [], MDBVal(), MDBVal()
    op = 0  # MDB_FIRST
    while lib.mdb_cursor_get(cur, ctypes.byref(k), ctypes.byref(v), op) == 0:
        out.append((ctypes.string_at(k.mv_data, k.mv_size), v.mv_data - base, v.mv_size, k.mv_data - base))
        op = 8  # MDB_NEXT
    lib.mdb_cursor_close(cur)
    lib.mdb_txn_abort(txn)
    lib.mdb_env_close(env)
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A stopped store: 3 profile series of NPROF profiles each (chunks and head records), the
    cpu-01 fixture's 2 sample types each, and 20 float series."""
    wd = tmp_path_factory.mktemp("damaged_src")
    srv = Server(wd, threads=1, extra_args=["--storage.compact-max-profiles", "5"]).start()
    try:
        for job in ("a", "b", "c"):
            for i in range(NPROF):
                st, js = srv.push("go/cpu-01.pb.gz", labels='{job="%s"}' % job, time=str(T0 + 10 * i))
                assert st == 200, js
        from test_query_limits import remote_write
        remote_write(srv, [({"__name__": "f", "i": str(i)}, [((T0 + k) * 1000, float(k)) for k in range(100)])
                           for i in range(20)])
    finally:
        assert srv.stop() == 0
    return srv.data_dir


def copy_store(store, tmp_path):
    d = tmp_path / "data"
    shutil.copytree(store, d)
    return d


def start_refused(make_server, d):
    srv = make_server(start=False, data_dir=d, threads=1)
    srv.start(wait_ready=False)
    rc = srv.proc.wait(30)
    srv._close_log()
    return rc, srv.log()


# ---- refused at open ----

def test_truncated_data_file_refused_with_sizes(store, tmp_path, make_server):
    d = copy_store(store, tmp_path)
    f = d / "data.mdb"
    psize, last, _ = lmdb_meta(f)
    size = os.path.getsize(f)
    assert size == (last + 1) * psize
    cut = (size // 2) // psize * psize + 100  # half, and not on a page boundary
    os.truncate(f, cut)
    rc, log = start_refused(make_server, d)
    assert rc == 1, log
    msg = ("data directory %s: data.mdb is %d bytes, but its last page (%d, of %d bytes) ends at %d: the file was cut "
           "short (a partial copy or restore?); restore the whole file, or check it with --storage.check"
           % (d, cut, last, psize, size))
    assert 'msg="cannot open storage"' in log and msg in log.replace('\\"', '"'), log
    assert os.path.getsize(f) == cut  # nothing written
    r = run_bin("--data-dir", str(d), "--storage.check")
    assert (r.returncode, r.stdout) == (1, "profstore: %s\n" % msg)


def test_shorter_than_the_meta_pages_refused(store, tmp_path, make_server):
    d = copy_store(store, tmp_path)
    os.truncate(d / "data.mdb", 5000)
    rc, log = start_refused(make_server, d)
    assert rc == 1
    assert ("data directory %s: data.mdb is 5000 bytes, shorter than LMDB's two meta pages (8192 bytes): the file was "
            "cut short (a partial copy or restore?); restore the whole file" % d) in log


def lmdb_scratch(data_dir, ops):
    """Runs write transactions on a database "scratch" of the store (liblmdb through ctypes), one
    per op: ("put", key, value) or ("del", key). profstore never opens that database."""
    lib = ctypes.CDLL("liblmdb.so.0")
    env = ctypes.c_void_p()
    assert lib.mdb_env_create(ctypes.byref(env)) == 0
    assert lib.mdb_env_set_maxdbs(env, 64) == 0
    assert lib.mdb_env_set_mapsize(env, ctypes.c_size_t(1 << 30)) == 0
    assert lib.mdb_env_open(env, str(data_dir).encode(), 0, 0o644) == 0
    for op in ops:
        txn, dbi = ctypes.c_void_p(), ctypes.c_uint()
        assert lib.mdb_txn_begin(env, None, 0, ctypes.byref(txn)) == 0
        assert lib.mdb_dbi_open(txn, b"scratch", 0x40000, ctypes.byref(dbi)) == 0  # MDB_CREATE
        kb = ctypes.create_string_buffer(op[1], len(op[1]))
        k = MDBVal(len(op[1]), ctypes.cast(kb, ctypes.c_void_p))
        if op[0] == "put":
            vb = ctypes.create_string_buffer(op[2], len(op[2]))
            v = MDBVal(len(op[2]), ctypes.cast(vb, ctypes.c_void_p))
            assert lib.mdb_put(txn, dbi, ctypes.byref(k), ctypes.byref(v), 0) == 0
        else:
            assert lib.mdb_del(txn, dbi, ctypes.byref(k), None) == 0
        assert lib.mdb_txn_commit(txn) == 0
    lib.mdb_env_close(env)


def free_pages(data_dir):
    """The page numbers on LMDB's free list (FREE_DBI: txnid -> count, then page numbers)."""
    lib = ctypes.CDLL("liblmdb.so.0")
    env, txn, cur = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.mdb_env_create(ctypes.byref(env)) == 0
    assert lib.mdb_env_open(env, str(data_dir).encode(), 0x20000, 0o644) == 0
    assert lib.mdb_txn_begin(env, None, 0x20000, ctypes.byref(txn)) == 0
    assert lib.mdb_cursor_open(txn, 0, ctypes.byref(cur)) == 0
    out, k, v, op = set(), MDBVal(), MDBVal(), 0
    while lib.mdb_cursor_get(cur, ctypes.byref(k), ctypes.byref(v), op) == 0:
        ids = struct.unpack("<%dQ" % (v.mv_size // 8), ctypes.string_at(v.mv_data, v.mv_size))
        out.update(ids[1:1 + ids[0]])
        op = 8
    lib.mdb_cursor_close(cur)
    lib.mdb_txn_abort(txn)
    lib.mdb_env_close(env)
    return out


def test_short_file_whose_missing_pages_are_free_opens(tmp_path, make_server):
    """LMDB does not write pages freed in the transaction that took them: a file may end before its
    last page in use when its tail is free. Such a file opens (and a page more cut is refused)."""
    d = tmp_path / "data"
    srv = make_server(name="a", data_dir=d, threads=1)
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="tail"}', time=str(T0))
    assert st == 200, js
    sid = js["data"]["series"][1]["id"]
    want = srv.profile_bytes(sid, T0 * 10**9)
    assert srv.stop() == 0
    # a big value (overflow pages at the end of the file), deleted, then small writes
    lmdb_scratch(d, [("put", b"small", b"x"), ("put", b"big", b"y" * 200000), ("del", b"big")] +
                 [("put", b"small", b"z%d" % i) for i in range(3)])
    f = d / "data.mdb"
    psize, last, _ = lmdb_meta(f)
    assert os.path.getsize(f) == (last + 1) * psize
    free = free_pages(d)
    first = last
    while first - 1 in free:
        first -= 1
    assert last in free and last - first >= 3, (last, sorted(free))
    os.truncate(f, first * psize)  # every missing page is free
    srv = make_server(name="b", data_dir=d, threads=1)
    assert srv.profile_bytes(sid, T0 * 10**9) == want
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="tail"}', time=str(T0 + 10))
    assert st == 200, js
    assert srv.stop() == 0
    r = run_bin("--data-dir", str(d), "--storage.check")
    assert (r.returncode, r.stdout.endswith("no damage found\n")) == (0, True), r
    # the same, one used page more cut
    d2 = tmp_path / "data2"
    shutil.copytree(d, d2)
    psize, last, _ = lmdb_meta(d2 / "data.mdb")
    free = free_pages(d2)
    used = max(p for p in range(2, last + 1) if p not in free)
    os.truncate(d2 / "data.mdb", used * psize)
    rc, log = start_refused(make_server, d2)
    assert rc == 1
    assert "data directory %s: data.mdb is %d bytes, but its last page (%d, of %d bytes)" % (
        d2, used * psize, last, psize) in log.replace('\\"', '"')


@pytest.mark.parametrize("beside", ["lock.mdb", "space.reserve"])
def test_empty_data_file_beside_the_store_refused(store, tmp_path, make_server, beside):
    d = copy_store(store, tmp_path)
    os.truncate(d / "data.mdb", 0)
    for other in ("lock.mdb", "space.reserve"):
        if other != beside:
            os.unlink(d / other)
    rc, log = start_refused(make_server, d)
    assert rc == 1
    assert ("data directory %s: data.mdb is empty (0 bytes) beside %s: the store's data file was lost or cut to "
            "nothing; restore it, or remove the directory's files to start an empty store" % (d, beside)) in log
    assert os.path.getsize(d / "data.mdb") == 0


def test_empty_data_file_alone_starts_a_store(tmp_path, make_server):
    d = tmp_path / "data"
    d.mkdir()
    (d / "data.mdb").write_bytes(b"")
    srv = make_server(data_dir=d, threads=1)
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="x"}')
    assert st == 200, js
    assert srv.stop() == 0


# ---- --storage.check and reads of damaged chunks ----

def test_check_of_a_sound_store(store, tmp_path):
    d = copy_store(store, tmp_path)
    before = (d / "data.mdb").read_bytes()
    r = run_bin("--data-dir", str(d), "--storage.check")
    # 6 profile series (3 jobs x 2 types): 12 profiles each, 2 chunks of 5 + 2 head records
    assert (r.returncode, r.stdout, r.stderr) == (
        0, "%s: 26 series (20 float), 12 chunks, 12 head records, 72 profiles, 2000 float samples checked: "
           "no damage found\n" % d, "")
    assert (d / "data.mdb").read_bytes() == before  # read-only


def test_damaged_chunk_reported_and_500(store, tmp_path, make_server):
    d = copy_store(store, tmp_path)
    chunks = record_spans(d, "chunks")
    assert len(chunks) == 12
    key, off, n, _ = chunks[0]
    sid = int.from_bytes(key[:8], "big")
    max_ts = int.from_bytes(key[8:], "big") ^ (1 << 63)
    with open(d / "data.mdb", "r+b") as f:  # the chunk's header: n = 0
        f.seek(off + 1)
        f.write(b"\x00\x00")
    r = run_bin("--data-dir", str(d), "--storage.check")
    lines = r.stdout.splitlines()
    assert r.returncode == 1, r
    assert re.fullmatch(r"damaged: series %d: damaged chunk \(up to %d, %d bytes\): .+" % (sid, max_ts, n), lines[0])
    assert lines[1:] == ["%s: 26 series (20 float), 12 chunks, 12 head records, 67 profiles, 2000 float samples "
                         "checked: DAMAGED" % d,
                         "1 damaged record; reads that meet one answer 500 naming it"]
    srv = make_server(data_dir=d, threads=1)
    names = srv.get_json("/api/v1/label/__name__/values")["data"]
    answers = {}
    for metric in names:
        if metric == "f":
            continue
        for job in "abc":
            st, _, body = srv.get("/api/v1/profiles/query?" + urllib.parse.urlencode(
                {"query": '%s{job="%s"}' % (metric, job), "start": T0 - 10, "end": T0 + 10 * NPROF}), timeout=30)
            answers[(metric, job)] = (st, body)
    assert len(answers) == 6, names
    bad = [k for k, (st, _) in answers.items() if st != 200]
    assert len(bad) == 1, {k: v[0] for k, v in answers.items()}
    st, body = answers[bad[0]]
    assert st == 500
    # a pprof request's error is text, as go tool pprof prints it
    assert body == b"series %d: damaged chunk header (chunk up to %d)\n" % (sid, max_ts)
    assert srv.running()
    assert srv.stop() == 0


@pytest.mark.parametrize("seed", range(8))
def test_random_damage_in_chunks_never_crashes(store, tmp_path, make_server, seed):
    """Bytes overwritten at random inside the stored chunks (profile and float): every read answers
    200 or a 500 naming the damage, the server never dies, and --storage.check says DAMAGED or
    (damage the decoders cannot tell, e.g. inside a value) no damage found."""
    d = copy_store(store, tmp_path)
    rnd = random.Random(seed)
    profile_spans = record_spans(d, "chunks") + record_spans(d, "head")
    float_spans = record_spans(d, "fchunks") + record_spans(d, "fhead")
    with open(d / "data.mdb", "r+b") as f:
        for key, off, n, _ in rnd.sample(profile_spans, 3) + rnd.sample(float_spans, 2):
            for _ in range(rnd.choice([1, 3, 16])):
                f.seek(off + rnd.randrange(n))
                f.write(bytes([rnd.randrange(256)]))
    r = run_bin("--data-dir", str(d), "--storage.check")
    assert r.returncode in (0, 1), r
    last = r.stdout.splitlines()[-1 if r.returncode == 0 else -2]
    assert last.endswith("no damage found" if r.returncode == 0 else "DAMAGED"), r.stdout
    srv = make_server(data_dir=d, threads=1)
    statuses = []
    names = [n for n in srv.get_json("/api/v1/label/__name__/values")["data"] if n != "f"]
    assert len(names) == 2, names
    queries = [("/api/v1/profiles/query", {"query": '%s{job="%s"}' % (n, j), "start": T0 - 10, "end": T0 + 10 * NPROF})
               for j in "abc" for n in names]
    queries += [("/api/v1/query_range", {"query": q, "start": T0, "end": T0 + 120, "step": 15})
                for q in ("sum(f)", "sum(rate(f[1m]))", 'sum(%s{job=~".+"})' % names[0])]
    queries += [("/api/v1/series", {"match[]": '{__name__=~".+"}', "start": T0 - 10, "end": T0 + 200})]
    for path, params in queries:
        st, _, body = srv.get(path + "?" + urllib.parse.urlencode(params), timeout=30)
        assert st in (200, 500), (path, params, st, body[:300])
        if st == 500:  # the error in the API's shape; a pprof request's is text
            err = body.decode() if path.startswith("/api/v1/profiles/") else json.loads(body)["error"]
            assert re.match(r"series \d+: damaged ", err), (path, err)
        statuses.append(st)
    assert srv.running()
    assert srv.stop() == 0
    if 500 in statuses:
        assert r.returncode == 1, r.stdout


# what is written at the start of the LMDB leaf page holding the chunks' keys: its header (16
# bytes), or past the page number and flags a count of keys far too large and garbage offsets
LEAF_DAMAGE = {"ff": (0, b"\xff" * 16), "zero": (0, b"\x00" * 16),
               "keys": (12, struct.pack("<HH", 0xFF00, 0x0100) + b"\xf0\xff" * 64)}


@pytest.mark.parametrize("how", sorted(LEAF_DAMAGE))
def test_check_reports_damaged_lmdb_pages(store, tmp_path, how):
    """LMDB's own page damaged: what LMDB does with it (an error, or a crash in the check's child
    process: SIGSEGV, or SIGBUS where a garbage offset lands past the file's end) is reported as
    damage, exit 1."""
    d = copy_store(store, tmp_path)
    psize, _, _ = lmdb_meta(d / "data.mdb")
    key_off = record_spans(d, "chunks")[0][3]
    at, data = LEAF_DAMAGE[how]
    with open(d / "data.mdb", "r+b") as f:
        f.seek(key_off // psize * psize + at)
        f.write(data)
    r = run_bin("--data-dir", str(d), "--storage.check")
    lines = r.stdout.splitlines()
    assert r.returncode == 1, r
    # keys: LMDB reads garbage keys, then (by the garbage) crashes in the check's child or fails; or,
    # where the garbage names a page reference that is not there (the page's bytes depend on the
    # pushes' times), it says so after some garbage keys or none, as for ff and zero
    lmdb_said = any(l.startswith("damaged: database chunks: LMDB's pages are damaged") for l in lines)
    if how == "keys" and not lmdb_said:
        key = r"damaged: chunks: a key of \d+ bytes \(16 expected\)"
        if lines[-1] == "%s: DAMAGED" % d:  # the check's child ended on the garbage, at its first get or later
            garbage = lines[:-2]
            assert all(re.fullmatch(key, l) for l in garbage), r.stdout[-2000:]
            m = re.fullmatch(r"damaged: LMDB's own pages: the check ended on (signal 11 \(Segmentation fault\)|"
                             r"signal 7 \(Bus error\)|exit status 1) at record (\d+) of database chunks", lines[-2])
            assert m, lines[-2]  # the record being read: the one after the garbage listed (the first 100 are)
            assert int(m.group(2)) == len(garbage) + 1 if len(garbage) < 100 else int(m.group(2)) > 100, lines[-2]
        else:
            assert all(l.startswith("damaged: ") for l in lines[:100]), r.stdout[-2000:]
            assert all(re.fullmatch(key, l) for l in lines[:99]), r.stdout[-2000:]
            assert lines[-2].endswith("checked: DAMAGED") and "(the first 100 listed)" in lines[-1], lines[-2:]
    else:  # LMDB said so: the other databases are checked all the same. Before it does, LMDB may hand
        # out garbage keys from the damaged page (schema 9's references are small values stored in the
        # leaf page itself, not on overflow pages: ff reads 40 of them first); a garbage key of 16 bytes
        # reads as a chunk, damaged (the page's bytes depend on the pushes' times: make test met it once)
        garbage = lines[:-3]
        assert all(re.fullmatch(r"damaged: chunks: a key of \d+ bytes \(16 expected\)|damaged: series \d+: damaged chunk "
                                r"\(up to \d+, \d+ bytes\): chunk: .+", l) for l in garbage), r.stdout
        assert re.fullmatch(r"damaged: database chunks: LMDB's pages are damaged, the rest of it unread: .+", lines[-3])
        assert re.fullmatch(r"%s: 26 series \(20 float\), \d+ chunks, 12 head records, \d+ profiles, 2000 float samples "
                            r"checked: DAMAGED" % re.escape(str(d)), lines[-2]), lines[-2]
        assert lines[-1] == "%d damaged record%s; reads that meet one answer 500 naming it" % (
            len(garbage) + 1, "s" if garbage else ""), lines[-1]
