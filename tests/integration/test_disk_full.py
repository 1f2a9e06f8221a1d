"""A full store is survivable: on a real small file system (a 20 MiB tmpfs, mounted when the tests
run as root, else skipped) and at --storage.max-size, writes get 507 saying what is full, the
metrics say so, reads go on, retention frees space (LMDB's deletes need pages: the disk reserve and
the map's headroom give them) and writes succeed again without a restart; a restart while the disk
is full answers 507 too, and nothing acknowledged is lost."""

import os
import subprocess
import time
import urllib.parse

import pytest

from test_remote_write import pb, post, v1_body  # noqa: F401 (pb: the fixture)

HEAP = "go/heap-01.pb.gz"


def push(srv, job, t=None, pad=""):
    labels = '{job="%s"%s}' % (job, ',pad="%s"' % pad if pad else "")
    return srv.push(HEAP, labels=labels, time=str(t) if t is not None else None)


def wait_dropped(srv, n, timeout=20.0):
    """Waits until retention dropped n series (it runs every second here)."""
    deadline = time.monotonic() + timeout
    while srv.metrics()["profstore_retention_series_dropped_total"] < n:
        assert time.monotonic() < deadline, srv.metrics()["profstore_retention_series_dropped_total"]
        time.sleep(0.2)
    assert srv.metrics()["profstore_retention_series_dropped_total"] == n


def jobs(srv):
    return {s["labels"]["job"] for s in srv.series()}


@pytest.fixture
def tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs: %s" % r.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill_disk(path):
    """Writes path until the file system is full."""
    with open(path, "wb") as f:
        chunk = b"\0" * (1 << 20)
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
    try:
        with open(path, "ab") as f:  # the last partial MiB
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass


def test_full_tmpfs_is_507_reads_go_on_restart_and_space_returns(make_server, tmpfs):
    srv = make_server(retention="0", data_dir=tmpfs / "data", storage_disk_reserve="1MiB")
    assert (tmpfs / "data" / "space.reserve").stat().st_size == 1 << 20
    acked = []
    for i in range(5):
        st, js = push(srv, "a%d" % i)
        assert st == 200, js
        acked.append("a%d" % i)
    fill_disk(tmpfs / "filler")
    st, js = push(srv, "b0")
    assert st == 507, js
    assert js["status"] == "error"
    assert js["error"].startswith("committing: disk full: "), js
    assert js["error"].endswith(" bytes free on %s (data directory %s)" % (tmpfs, tmpfs / "data")), js
    m = srv.metrics()
    assert m["profstore_storage_disk_full"] == 1
    assert m['profstore_writes_refused_total{reason="disk_full"}'] == 1
    assert not (tmpfs / "data" / "space.reserve").exists()  # given up for retention and compaction
    # reads go on
    assert jobs(srv) == set(acked)
    assert srv.get("/-/healthy")[0] == 200
    # a restart while full: 507 again, saying so (not a 500)
    srv.restart()
    st, js = push(srv, "b1")
    assert st == 507, js
    # (refused before the transaction when the store has no free pages either, else by its commit)
    assert js["error"].split(": ", 1)[0] in ("writing", "committing"), js
    assert js["error"].split(": ", 2)[1] == "disk full", js
    # space returns: writes succeed without a restart, the reserve is taken back
    os.unlink(tmpfs / "filler")
    st, js = push(srv, "b2")
    assert st == 200, js
    acked.append("b2")
    assert srv.metrics()["profstore_storage_disk_full"] == 0
    assert (tmpfs / "data" / "space.reserve").stat().st_size == 1 << 20
    srv.restart()
    assert jobs(srv) == set(acked)


def test_reserve_sized_to_a_small_disk(make_server, tmpfs):
    # the default 32 MiB reserve cannot be taken on a 20 MiB disk: every write was 507 for good
    srv = make_server(data_dir=tmpfs / "data", storage_disk_reserve="32MiB")
    assert (tmpfs / "data" / "space.reserve").stat().st_size == (20 << 20) // 16
    st, js = push(srv, "a0")
    assert st == 200, js
    assert 'msg="disk reserve sized to the disk" reserve=1310720 configured=33554432' in srv.log(), srv.log()


def test_full_disk_at_start_says_so(make_server, tmpfs):
    srv = make_server(data_dir=tmpfs / "data", storage_disk_reserve="1MiB")
    srv.stop()
    os.unlink(tmpfs / "data" / "space.reserve")
    fill_disk(tmpfs / "filler")
    srv.start()
    line = [x for x in srv.log().splitlines() if "writes are refused from the start" in x]
    assert len(line) == 1, srv.log()
    assert "disk full: " in line[0] and "writes resume once 1048576 bytes are free" in line[0], line
    st, js = push(srv, "a0")
    assert st == 507, js
    assert srv.get("/-/ready")[0] == 200  # reads go on
    os.unlink(tmpfs / "filler")
    st, js = push(srv, "a1")
    assert st == 200, js


def test_full_tmpfs_retention_frees_and_writes_resume(make_server, tmpfs, pb):
    srv = make_server(retention="1m", data_dir=tmpfs / "data", storage_disk_reserve="256KiB",
                      storage_retention_interval="1s")
    vfs = os.statvfs(tmpfs)
    with open(tmpfs / "filler", "wb") as f:  # all but 3 MiB
        f.truncate(0)
        left = vfs.f_bavail * vfs.f_frsize - (3 << 20)
        while left > 0:
            n = min(left, 1 << 20)
            f.write(b"\0" * n)
            left -= n
    # remote-write series 56 s old (out of retention in 4 s) until the disk is full
    old_ms = (int(time.time()) - 56) * 1000
    nseries = 0
    for r in range(40):
        series = [({"__name__": "old", "i": "%d-%d" % (r, i), "pad": "x" * 300}, [(old_ms, 1.0)]) for i in range(500)]
        st, _, data = post(srv, v1_body(pb, series))
        if st != 204:
            break
        nseries += 500
    assert st == 507 and b"disk full" in data, (st, data)
    assert nseries >= 1000
    # retention (run at once on a full disk, then every second) drops the old series: it commits on
    # the full file system (in the reserve), then writes succeed again in the pages it freed
    wait_dropped(srv, nseries)
    st, js = push(srv, "after", int(time.time()))
    assert st == 200, js
    assert jobs(srv) == {"after"}
    assert srv.metrics()["profstore_storage_disk_full"] == 0


def test_max_size_507_retention_frees_and_writes_resume(make_server, pb):
    """--storage.max-size: the same without root (the limit is LMDB's map, kept with headroom)."""
    srv = make_server(retention="1m", storage_max_size="2MiB", storage_retention_interval="1s")
    old_ms = (int(time.time()) - 56) * 1000
    nseries = 0
    for r in range(40):
        series = [({"__name__": "old", "i": "%d-%d" % (r, i), "pad": "x" * 300}, [(old_ms, 1.0)]) for i in range(200)]
        st, _, data = post(srv, v1_body(pb, series))
        if st != 204:
            break
        nseries += 200
    assert st == 507, (st, data)
    msg = data.decode()
    assert msg.startswith("writing: ") and msg.endswith(
        " of 2097152 bytes in use: the store reached its maximum size (--storage.max-size)\n"), msg
    assert srv.metrics()["profstore_storage_disk_full"] == 1
    assert srv.metrics()['profstore_writes_refused_total{reason="disk_full"}'] == 1
    assert len(srv.series()) == nseries  # reads go on
    wait_dropped(srv, nseries)
    st, js = push(srv, "after", int(time.time()))
    assert st == 200, js
    assert jobs(srv) == {"after"}
    assert srv.metrics()["profstore_storage_disk_full"] == 0
