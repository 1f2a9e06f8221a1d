"""POST /api/v1/read, STREAMED_XOR_CHUNKS answers that stream: frames are made as the client takes
them, with bounded memory, no sample limit (as Prometheus), and a read slot held until the last
frame is sent or the client goes away.

The store: NSERIES float series of NSAMPLES samples each, written through POST /api/v1/write,
with pseudo-random values (XOR chunks of about 8 bytes a sample), so the answer is far larger
than the memory a streamed read may take. The client reads it slowly through http.client (which
undoes the chunked transfer coding) while the test samples the server's RssAnon: the answer made
whole (as before streaming) would add at least its own size; a streamed read adds its frames in
flight: the piece being sent (64 KiB plus at most one frame), the open series' pending frame and
its scratch copy (1 MiB each at --storage.remote.read-max-bytes-in-frame's default), h2o's buffers.
RssAnon, not VmRSS/VmHWM: reading maps the LMDB file's pages (RssFile, the page cache, shared and
reclaimable), which grow with the data read whatever the answer's memory; VmHWM is printed.

An error after the first frames (a later query over --query.max-series) cuts the answer off.

Expected values are the test's own: the sample count of every XOR chunk (its 2-byte header) adds
up to NSERIES * NSAMPLES."""

import http.client
import random
import struct
import time

import pytest
import snappy

from test_remote_read import (STREAMED, STREAMED_CT, crc32c, make_request, pb, read_uvarint,  # noqa: F401
                              remote_write, write_request)

NSERIES, NSAMPLES = 200, 12000
# 50 h of samples ending at least a day before now (a fixed day in the past could be in the future
# of a machine's clock, and --storage.future-grace refuses such samples); whole days, so chunks are
# cut the same way on every run
T0_MS = (int(time.time()) // 86400 - 4) * 86400 * 1000
STEP_MS = 15000
LIMIT = 3  # --storage.remote.read-concurrent-limit in these tests
ANON_BOUND = 8 << 20  # bytes a streamed read may add to RssAnon (see the module doc)
ANSWER_MIN = 16 << 20  # the answer is at least this big, twice the bound


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                out[k] = int(v.split()[0]) * 1024
    return out


def inflight(srv):
    st, _, data = srv.get("/metrics")
    assert st == 200
    for line in data.decode().splitlines():
        if line.startswith("profstore_remote_reads_inflight "):
            return int(line.split()[1])
    raise AssertionError("no profstore_remote_reads_inflight in /metrics")


@pytest.fixture(scope="module")
def big(module_server_factory, pb):  # noqa: F811
    s = module_server_factory(name="rstream", retention="0",
                              extra_args=["--storage.remote.read-concurrent-limit", str(LIMIT)])
    rnd = random.Random(8)
    for first in range(0, NSERIES, 20):
        series = [({"__name__": "big", "k": "%03d" % k},
                   [(T0_MS + STEP_MS * i, rnd.random()) for i in range(NSAMPLES)]) for k in range(first, first + 20)]
        st, _, data = remote_write(s, write_request(pb, series))
        assert st in (200, 204), data[:300]
    s.restart()  # a fresh heap: what ingestion freed would hide what a read takes
    return s


def stream_request(pb):  # noqa: F811
    return snappy.compress(make_request(pb, [(T0_MS, T0_MS + STEP_MS * NSAMPLES, [(0, "__name__", "big")])],
                                        [STREAMED]).SerializeToString())


def read_frames(pb, conn, resp) -> "FrameCounter":
    """The whole streamed answer fed to a FrameCounter, the connection closed after."""
    fc = FrameCounter(pb)
    while True:
        data = resp.read(1 << 20)
        if not data:
            break
        fc.feed(data)
    conn.close()
    return fc


def open_read(srv, body):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.request("POST", "/api/v1/read", body=body, headers={
        "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Read-Version": "0.1.0"})
    return conn, conn.getresponse()


class FrameCounter:
    """Walks the frames as bytes arrive: frame count, chunk count, samples (XOR chunk headers)."""

    def __init__(self, pb):  # noqa: F811
        self.pb, self.buf, self.frames, self.chunks, self.samples, self.series = pb, b"", 0, 0, 0, []

    def feed(self, data):
        self.buf += data
        while True:
            try:
                n, i = read_uvarint(self.buf, 0)
            except IndexError:
                return
            if len(self.buf) < i + 4 + n:
                return
            body = self.buf[i + 4:i + 4 + n]
            if self.frames == 0:
                assert struct.unpack(">I", self.buf[i:i + 4])[0] == crc32c(body)
            f = self.pb.ChunkedReadResponse()
            f.ParseFromString(body)
            assert len(f.chunked_series) == 1 and f.query_index == 0
            cs = f.chunked_series[0]
            labels = {l.name.decode(): l.value.decode() for l in cs.labels}
            if not self.series or self.series[-1] != labels["k"]:
                self.series.append(labels["k"])
            for c in cs.chunks:
                assert c.type == 1
                self.samples += struct.unpack(">H", c.data[:2])[0]
            self.chunks += len(cs.chunks)
            self.frames += 1
            self.buf = self.buf[i + 4 + n:]


def test_large_streamed_read_bounded_memory(big, pb):  # noqa: F811
    pid = big.proc.pid
    body = stream_request(pb)
    one = snappy.compress(make_request(pb, [(T0_MS, T0_MS + STEP_MS * NSAMPLES, [(0, "k", "000")])],
                                       [STREAMED]).SerializeToString())
    conn, resp = open_read(big, one)  # a first read of one series: h2o's and the reader's buffers exist
    assert len(resp.read()) > 64 << 10
    conn.close()
    base = proc_status(pid)
    conn, resp = open_read(big, body)
    assert resp.status == 200
    assert resp.getheader("content-type") == STREAMED_CT
    assert resp.getheader("content-length") is None  # chunked: made as it goes
    fc, total, peak = FrameCounter(pb), 0, 0
    while True:
        data = resp.read(256 << 10)
        if not data:
            break
        total += len(data)
        fc.feed(data)
        peak = max(peak, proc_status(pid)["RssAnon"])
        time.sleep(0.002)  # a slow client: the server waits, it does not build ahead
    conn.close()
    after = proc_status(pid)
    print("answer %d bytes, %d frames, %d chunks; RssAnon base %d peak %d (+%d); VmHWM %d -> %d; VmRSS %d -> %d"
          % (total, fc.frames, fc.chunks, base["RssAnon"], peak, peak - base["RssAnon"], base["VmHWM"],
             after["VmHWM"], base["VmRSS"], after["VmRSS"]))
    assert fc.buf == b""
    assert fc.samples == NSERIES * NSAMPLES  # no sample limit in streamed mode, every sample
    assert fc.series == ["%03d" % k for k in range(NSERIES)]  # sorted by labels
    assert total >= ANSWER_MIN
    assert peak - base["RssAnon"] < ANON_BOUND
    assert inflight(big) == 0


def canceled(srv):
    st, _, data = srv.get("/metrics")
    for line in data.decode().splitlines():
        if line.startswith("profstore_remote_reads_canceled_total "):
            return int(line.split()[1])
    raise AssertionError("no profstore_remote_reads_canceled_total in /metrics")


def test_disconnect_frees_the_slot(big, pb):  # noqa: F811
    body = stream_request(pb)
    before = canceled(big)
    # more clients than slots go away mid-answer
    for _ in range(LIMIT + 2):
        conn, resp = open_read(big, body)
        assert resp.status == 200
        assert len(resp.read(100 << 10)) == 100 << 10
        conn.sock.close()  # unread bytes: the server's next write fails
        conn.close()
    deadline = time.time() + 5
    while inflight(big) != 0 and time.time() < deadline:
        time.sleep(0.05)
    assert inflight(big) == 0
    assert canceled(big) == before + LIMIT + 2  # each stopped making pieces when its client went
    # then LIMIT reads at once (each holds its slot while the others start) all succeed, whole
    opened = [open_read(big, body) for _ in range(LIMIT)]
    assert [r.status for _, r in opened] == [200] * LIMIT
    assert inflight(big) == LIMIT
    # one more is over the limit while they are open
    conn, resp = open_read(big, body)
    assert (resp.status, resp.read()) == (503, b"too many concurrent remote reads (the limit is 3, "
                                                b"--storage.remote.read-concurrent-limit); retry later\n")
    conn.close()
    for conn, resp in opened:
        fc = read_frames(pb, conn, resp)
        assert fc.buf == b"" and fc.samples == NSERIES * NSAMPLES
    assert inflight(big) == 0
    assert canceled(big) == before + LIMIT + 2  # whole answers are not counted
    st, _, _ = big.get("/-/healthy")
    assert st == 200


def test_error_after_the_first_frames_cuts_the_answer_off(make_server, pb):  # noqa: F811
    """Query 0 streams (over 64 KiB: several pieces), then query 1 selects more than --query.max-series
    series: the status is long sent, so the answer ends short, with no terminating chunk, after whole
    frames of query 0; the slot is freed and the server keeps serving."""
    s = make_server(retention="0", extra_args=["--query.max-series", "5"])
    rnd = random.Random(9)
    series = [({"__name__": "big", "k": "%03d" % k}, [(T0_MS + STEP_MS * i, rnd.random()) for i in range(NSAMPLES)])
              for k in range(6)]
    st, _, data = remote_write(s, write_request(pb, series))
    assert st in (200, 204), data[:300]
    end = T0_MS + STEP_MS * NSAMPLES
    body = snappy.compress(make_request(pb, [(T0_MS, end, [(0, "__name__", "big"), (2, "k", "00[0-4]")]),
                                             (T0_MS, end, [(0, "__name__", "big")])], [STREAMED]).SerializeToString())
    conn, resp = open_read(s, body)
    assert resp.status == 200
    fc, cut = FrameCounter(pb), False
    while True:
        try:
            data = resp.read(64 << 10)
        except http.client.IncompleteRead as e:
            fc.feed(e.partial)
            cut = True
            break
        if not data:
            break
        fc.feed(data)
    conn.close()
    assert cut
    assert fc.buf == b""  # whole frames, all of query 0 (FrameCounter checks the query index)
    assert (fc.series, fc.samples) == (["000", "001", "002", "003", "004"], 5 * NSAMPLES)
    assert inflight(s) == 0
    assert "remote read failed mid-answer, cut off" in s.log_path.read_text()
    # the same query alone is a clean 400 before anything is sent
    alone = snappy.compress(make_request(pb, [(T0_MS, end, [(0, "__name__", "big")])], [STREAMED])
                            .SerializeToString())
    conn, resp = open_read(s, alone)
    assert resp.status == 400
    assert resp.read().startswith(b"the selector matches more than 5 series")
    conn.close()


def thread_cpu(pid):
    """{tid: (scheduling policy, utime + stime in clock ticks)} of every thread of pid."""
    out = {}
    import os
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            fields = open("/proc/%d/task/%s/stat" % (pid, tid)).read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        out[int(tid)] = (int(fields[38]), int(fields[11]) + int(fields[12]))  # stat fields 41, 14 and 15
    return out


def test_streamed_read_made_on_the_query_threads(big, pb):  # noqa: F811
    """Every piece of a streamed answer, the first included, is made on the query pool (its threads
    run SCHED_IDLE, policy 5), not on the event loop that sends it: the loops' CPU for four 16 MiB
    answers is the sending's, the pool's the making's (the larger)."""
    pid = big.proc.pid
    before = thread_cpu(pid)
    for _ in range(4):
        conn, resp = open_read(big, stream_request(pb))
        assert resp.status == 200
        fc = read_frames(pb, conn, resp)
        assert fc.samples == NSERIES * NSAMPLES
    after = thread_cpu(pid)
    pool = sum(t - before.get(tid, (0, 0))[1] for tid, (pol, t) in after.items() if pol == 5)
    rest = sum(t - before.get(tid, (0, 0))[1] for tid, (pol, t) in after.items() if pol != 5)
    print("CPU ticks: query threads %d, the others %d" % (pool, rest))
    assert pool > rest
