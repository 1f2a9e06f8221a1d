"""Connection hardening (web/connguard.c): HTTP/1 framing, timeouts with 408, --web.max-connections,
EMFILE, h2c and the HTTP/2 reset cap. Raw sockets throughout: the point is what a hostile client
sends. Timeouts are set to 1 s so that every cut happens within a couple of seconds."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import struct
import time
import urllib.parse
from typing import List, Optional, Tuple

import pytest

from conftest import Server

FAST = ["--web.read-header-timeout", "1s", "--web.body-idle-timeout", "1s", "--web.body-min-rate", "100",
        "--web.idle-timeout", "1s"]


@pytest.fixture(scope="module")
def fast(module_server_factory) -> Server:
    s = module_server_factory(start=False, name="fast", retention="0", threads=1)
    s.extra_args = list(FAST)
    return s.start()


def connect(srv: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", srv.port), timeout=10)


def read_all(s: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything until the server closes (EOF or reset)."""
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except ConnectionResetError:
        pass
    return out


def split_responses(raw: bytes) -> List[Tuple[int, dict, bytes]]:
    """HTTP/1.1 responses with a Content-Length, one after another."""
    out = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        n = int(hdrs.get("content-length", "0"))
        out.append((status, hdrs, rest[:n]))
        raw = rest[n:]
    return out


def metric(srv: Server, name: str) -> Optional[float]:
    st, _, body = srv.get("/metrics")
    assert st == 200
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def trickle(srv: Server, head: bytes, body: bytes, chunk: int, interval: float) -> Tuple[bytes, int]:
    """Sends head, then body chunk by chunk every interval s until the server answers; returns
    what it answered (up to its close) and how many body bytes were sent."""
    s = connect(srv)
    s.sendall(head)
    sent = 0
    while sent < len(body):
        s.sendall(body[sent:sent + chunk])
        sent += chunk
        r, _, _ = select.select([s], [], [], interval)
        if r:
            break
    out = read_all(s)
    s.close()
    return out, min(sent, len(body))


def form_post(path: str, body: bytes, close: bool = False) -> bytes:
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n%s"
            b"Content-Length: %d\r\n\r\n" % (path.encode(), b"Connection: close\r\n" if close else b"", len(body)))


# ---- HTTP/1 framing: request smuggling ----

HIDDEN = b"POST /api/v1/admin/compact HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"

SMUGGLERS = {
    "cl_and_te": (b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"0\r\n\r\n" + HIDDEN,
                  "the request has both Content-Length and Transfer-Encoding: its body's length is ambiguous; "
                  "send one of them"),
    "te_and_cl": (b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-length: 0\r\n\r\n"
                  b"0\r\n\r\n" + HIDDEN,
                  "the request has both Content-Length and Transfer-Encoding: its body's length is ambiguous; "
                  "send one of them"),
    "two_cl": (b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: %d\r\n\r\n"
               % len(HIDDEN) + HIDDEN,
               "the request has two different Content-Length headers: its body's length is ambiguous; send one"),
    "two_te": (b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
               b"\r\n\r\n0\r\n\r\n" + HIDDEN,
               "the request has more than one Transfer-Encoding header; send one (Transfer-Encoding: chunked)"),
}


@pytest.mark.parametrize("kind", sorted(SMUGGLERS))
def test_smuggled_request_refused(fast, kind):
    raw, msg = SMUGGLERS[kind]
    s = connect(fast)
    s.sendall(raw)
    resps = split_responses(read_all(s))
    s.close()
    assert len(resps) == 1  # one answer, then the connection is closed: the hidden request never ran
    st, hdrs, body = resps[0]
    assert st == 400
    assert hdrs["connection"] == "close"
    assert json.loads(body) == {"status": "error", "errorType": "bad_data", "error": msg}
    st, _, body = fast.get("/metrics")
    assert b'handler="/api/v1/admin/compact"' not in body


def test_framing_refused_counted_and_connect_shape(fast):
    before = metric(fast, "profstore_http_framing_refused_total")
    s = connect(fast)
    s.sendall(b"POST /querier.v1.QuerierService/LabelNames HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}")
    resps = split_responses(read_all(s))
    assert [r[0] for r in resps] == [400]
    assert json.loads(resps[0][2]) == {
        "code": "invalid_argument",
        "message": "the request has two different Content-Length headers: its body's length is ambiguous; send one"}
    assert metric(fast, "profstore_http_framing_refused_total") == before + 1


def test_identical_content_lengths_and_keepalive_still_work(fast):
    s = connect(fast)
    s.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n"
              b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    resps = split_responses(read_all(s))
    assert [(r[0], r[2]) for r in resps] == [(200, b"Profstore is Healthy.\n")] * 2


# ---- timeouts ----

def test_slowloris_header_cut_with_408(fast):
    head = b"GET /-/healthy HTTP/1.1\r\nHost: " + b"x" * 200 + b"\r\n\r\n"
    out, sent = trickle(fast, b"", head, 1, 0.1)
    assert sent < len(head)
    (st, hdrs, body), = split_responses(out)
    assert st == 408 and hdrs["connection"] == "close"
    assert json.loads(body) == {"status": "error", "errorType": "timeout", "error":
                                "request header not complete within 1s of its first byte (--web.read-header-timeout)"}


def test_stalled_body_408(fast):
    body = b"query=1%2B1&pad=" + b"a" * 100
    out, _ = trickle(fast, form_post("/api/v1/query", body), body[:10], 10, 0.1)
    (st, _, rbody), = split_responses(out)
    assert st == 408
    assert json.loads(rbody) == {"status": "error", "errorType": "timeout",
                                 "error": "no byte of the request body for 1s (--web.body-idle-timeout)"}


def test_one_byte_a_tick_body_408(fast):
    body = b"query=1%2B1&pad=" + b"a" * 100
    out, sent = trickle(fast, form_post("/api/v1/query", body), body, 1, 0.2)
    assert sent < len(body)
    (st, _, rbody), = split_responses(out)
    assert st == 408
    err = json.loads(rbody)
    assert err["errorType"] == "timeout"
    assert err["error"].startswith("request body too slow: ")
    assert err["error"].endswith(" under 100 bytes/s (--web.body-min-rate)")
    assert metric(fast, 'profstore_http_timeouts_total{kind="body_rate"}') >= 1


def test_steady_slow_body_succeeds(fast):
    """~2.5 s of body at 240 bytes/s: longer than a 2 s total timeout would allow, never idle for
    1 s, faster than the minimum rate."""
    body = b"query=1%2B1&pad=" + b"a" * 584
    out, sent = trickle(fast, form_post("/api/v1/query", body, close=True), body, 24, 0.1)
    assert sent == len(body)
    (st, _, rbody), = split_responses(out)
    assert st == 200
    assert json.loads(rbody)["data"]["result"][1] == "2"


def test_silent_and_idle_connections_closed(fast):
    before = metric(fast, 'profstore_http_timeouts_total{kind="no_request"}')
    s = connect(fast)
    assert read_all(s) == b""  # nothing asked, nothing answered: closed after the header timeout
    s = connect(fast)
    s.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
    resps = split_responses(read_all(s))  # kept alive, then closed when idle for 1 s
    assert [(r[0], r[1]["connection"]) for r in resps] == [(200, "keep-alive")]
    assert metric(fast, 'profstore_http_timeouts_total{kind="no_request"}') == before + 1
    assert metric(fast, 'profstore_http_timeouts_total{kind="keepalive_idle"}') >= 1


# ---- the connection bound and file descriptors ----

def test_max_connections_idle_evicted_for_waiting_clients(make_server):
    srv = make_server(retention="0", threads=1, extra_args=["--web.max-connections", "8"])
    idle = [connect(srv) for _ in range(20)]
    st, _, body = srv.get("/-/healthy", timeout=10)  # waits in the backlog until idle ones make room
    assert (st, body) == (200, b"Profstore is Healthy.\n")
    assert metric(srv, "profstore_http_connections_limit") == 8
    assert metric(srv, 'profstore_http_connections_evicted_total{reason="max_connections"}') >= 1
    assert metric(srv, "profstore_http_connections") <= 8
    for s in idle:
        s.close()


class LimitedServer(Server):
    """A server started under prlimit with few file descriptors."""

    NOFILE = 64

    def args(self):
        return ["prlimit", "--nofile=%d:%d" % (self.NOFILE, self.NOFILE), "--"] + super().args()


def cpu_seconds(pid: int) -> float:
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def test_fd_exhaustion_no_spin_and_health_answers(tmp_path):
    srv = LimitedServer(tmp_path / "lim", retention="0")
    srv.start()
    try:
        idle = [connect(srv) for _ in range(120)]  # more than the descriptors left
        time.sleep(0.3)
        c0 = cpu_seconds(srv.proc.pid)
        time.sleep(1.0)
        used = cpu_seconds(srv.proc.pid) - c0
        assert used < 0.5  # was 2 s a second (both loops spinning on EMFILE)
        st, _, body = srv.get("/-/healthy", timeout=10)
        assert (st, body) == (200, b"Profstore is Healthy.\n")
        evicted = metric(srv, 'profstore_http_connections_evicted_total{reason="fd_limit"}')
        refused = metric(srv, 'profstore_http_connections_refused_total{reason="fd_limit"}')
        # idle connections were closed for room; nobody was refused while some were idle (in
        # any loop: the loop that runs out asks the others when it has none of its own)
        assert evicted >= 1 and refused == 0, (evicted, refused)
        for s in idle:
            s.close()
    finally:
        srv.kill()


# ---- HTTP/2: h2c off by default, the reset cap ----

def h2_frame(t: int, flags: int, sid: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload


def h2_get(path: str) -> bytes:
    """HPACK: :method GET, :scheme http (static), :path and :authority literal, not indexed."""
    p, a = path.encode(), b"127.0.0.1"
    return b"\x82\x86\x04" + bytes([len(p)]) + p + b"\x01" + bytes([len(a)]) + a


def h2_frames(data: bytes) -> List[Tuple[int, int, bytes]]:
    out, i = [], 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        out.append((data[i + 3], int.from_bytes(data[i + 5:i + 9], "big") & 0x7FFFFFFF, data[i + 9:i + 9 + n]))
        i += 9 + n
    return out


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def test_h2c_off_by_default(fast):
    s = connect(fast)
    s.sendall(PREFACE + h2_frame(4, 0, 0))
    assert read_all(s).startswith(b"HTTP/1.1 400 ")
    s = connect(fast)
    s.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
              b"HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
    s.settimeout(10)
    first = s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200 OK\r\n")  # answered as HTTP/1.1, no 101
    s.close()
    st, _, body = fast.get("/api/v1/status/flags")
    flags = json.loads(body)["data"]
    assert flags["web.enable-h2c"] == "false"
    assert flags["web.max-connections"] == "512"
    assert flags["web.http2-max-resets"] == "100"
    assert flags["web.body-min-rate"] == "100B"


def test_h2c_enabled_and_rapid_reset_capped(make_server):
    srv = make_server(retention="0", threads=1, extra_args=["--web.enable-h2c", "--web.http2-max-resets", "20"])
    # a well-behaved HTTP/2 client: one GET answered
    s = connect(srv)
    s.sendall(PREFACE + h2_frame(4, 0, 0))
    s.settimeout(10)
    s.recv(65536)  # the server's SETTINGS
    s.sendall(h2_frame(1, 0x5, 1, h2_get("/-/healthy")))
    got = b""
    while not any(t == 0 and sid == 1 for t, sid, _ in h2_frames(got)):
        got += s.recv(65536)
    assert [p for t, sid, p in h2_frames(got) if t == 0 and sid == 1][0] == b"Profstore is Healthy.\n"
    s.close()
    # rapid reset: HEADERS + RST_STREAM, 50 times; past 20 resets GOAWAY(ENHANCE_YOUR_CALM) and close
    s = connect(srv)
    s.sendall(PREFACE + h2_frame(4, 0, 0))
    s.settimeout(10)
    s.recv(65536)
    burst = b"".join(h2_frame(1, 0x5, 1 + 2 * i, h2_get("/-/healthy")) + h2_frame(3, 0, 1 + 2 * i, struct.pack(">I", 8))
                     for i in range(50))
    s.sendall(burst)
    frames = h2_frames(read_all(s))
    goaway = [p for t, _, p in frames if t == 7]
    assert len(goaway) == 1
    assert int.from_bytes(goaway[0][4:8], "big") == 0xB  # ENHANCE_YOUR_CALM
    assert goaway[0][8:] == b"too many streams reset by the client (--web.http2-max-resets)"
    assert metric(srv, "profstore_http2_reset_flood_total") == 1


def test_idle_http2_connections_evicted_at_the_bound(make_server):
    srv = make_server(retention="0", threads=1, extra_args=["--web.enable-h2c", "--web.max-connections", "4"])
    idle = []
    for _ in range(6):
        s = connect(srv)
        s.sendall(PREFACE + h2_frame(4, 0, 0))
        idle.append(s)
    st, _, body = srv.get("/-/healthy", timeout=10)
    assert (st, body) == (200, b"Profstore is Healthy.\n")
    assert metric(srv, 'profstore_http_connections_evicted_total{reason="max_connections"}') >= 1
    for s in idle:
        s.close()


def test_answer_not_read_disconnects(fast):
    """A client that stops reading its answers (slow read) is disconnected once the kernel's queue
    has stood still for --web.idle-timeout."""
    before = metric(fast, 'profstore_http_timeouts_total{kind="write_stall"}')
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect(("127.0.0.1", fast.port))
    s.sendall(b"GET /ui/vendor/uPlot.esm.js HTTP/1.1\r\nHost: x\r\n\r\n" * 20)
    deadline = time.monotonic() + 10
    while metric(fast, 'profstore_http_timeouts_total{kind="write_stall"}') == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert metric(fast, 'profstore_http_timeouts_total{kind="write_stall"}') == before + 1
    got = read_all(s)  # what the kernel had queued, then the end
    assert got.startswith(b"HTTP/1.1 200 OK\r\n")
    assert len(got) < 20 * 145000
    s.close()


# ---- HTTP/2: the header and body timeouts, per stream ----

@pytest.fixture(scope="module")
def fast_h2(module_server_factory) -> Server:
    """The FAST timeouts over h2c; h2o's own HTTP/2 idle timeout (--web.idle-timeout, reset by any
    read) kept out of the way."""
    s = module_server_factory(start=False, name="fast_h2", retention="0", threads=1)
    s.extra_args = FAST[:-1] + ["30s", "--web.enable-h2c"]
    return s.start()


def hpack_literal(name: str, value: str) -> bytes:
    """Literal header field without indexing, new name, no Huffman."""
    n, v = name.encode(), value.encode()
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def h2_post_headers(path: str, n: int) -> bytes:
    return (b"\x83\x86" + hpack_literal(":path", path) + hpack_literal(":authority", "127.0.0.1")
            + hpack_literal("content-type", "application/x-www-form-urlencoded")
            + hpack_literal("content-length", str(n)))


def h2_open(srv: Server) -> socket.socket:
    s = connect(srv)
    s.sendall(PREFACE + h2_frame(4, 0, 0))
    s.settimeout(10)
    return s


def h2_until(s: socket.socket, done, got: bytes = b"") -> bytes:
    """Reads until done(frames) or the server closes."""
    while not done(h2_frames(got)):
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        got += d
    return got


def h2_flagged(data: bytes) -> List[Tuple[int, int, int, bytes]]:
    """(type, flags, stream, payload) of each whole frame in data."""
    out, i = [], 0
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        out.append((data[i + 3], data[i + 4], int.from_bytes(data[i + 5:i + 9], "big") & 0x7FFFFFFF,
                    data[i + 9:i + 9 + n]))
        i += 9 + n
    return out


def h2_dribble(srv: Server, body: bytes, chunk: int, interval: float,
               upto: Optional[int] = None, then: bytes = b"") -> Tuple[List[Tuple[int, int, bytes]], int]:
    """POST /api/v1/query on stream 1 (Content-Length: len(body)), its body in DATA frames of chunk
    bytes every interval s (only the first upto bytes, then silence) until the server answers;
    the frames of stream 1 (HEADERS, DATA...) up to END_STREAM and the body bytes sent. Then, on
    the same connection, frames then, answered on stream 3, whose frames are returned too."""
    upto = len(body) if upto is None else upto
    s = h2_open(srv)
    s.sendall(h2_frame(1, 0x4, 1, h2_post_headers("/api/v1/query", len(body))))

    def answered(data: bytes) -> bool:
        return any(sid == 1 and fl & 1 and t in (0, 1) for t, fl, sid, _ in h2_flagged(data))

    sent, got = 0, b""
    while sent < upto:
        piece = body[sent:min(sent + chunk, upto)]
        sent += len(piece)
        s.sendall(h2_frame(0, 0x1 if sent == len(body) else 0, 1, piece))
        r, _, _ = select.select([s], [], [], interval)
        if r:
            got += s.recv(65536)
            if any(t == 1 and sid == 1 for t, _, sid, _ in h2_flagged(got)):
                break
    while not answered(got):
        d = s.recv(65536)
        if not d:
            break
        got += d
    if then:
        s.sendall(then)
        while not any(sid == 3 and fl & 1 and t in (0, 1) for t, fl, sid, _ in h2_flagged(got)):
            d = s.recv(65536)
            if not d:
                break
            got += d
    s.close()
    return [(t, sid, p) for t, _, sid, p in h2_flagged(got) if sid in (1, 3)], sent


def h2_status(block: bytes) -> int:
    """h2o 2.2.5 encodes a :status outside the static table as a literal of index 8, plain."""
    if block[0] & 0x80:
        return {8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500}[block[0] & 0x7F]
    assert block[0] & 0x0F == 8 or block[0] == 0x48, block
    assert block[1] == 3, block
    return int(block[2:5])


def test_h2_incomplete_header_block_goaway(fast_h2):
    """HEADERS without END_HEADERS, then CONTINUATIONs that never end it: the connection (every
    stream waits behind a header block) gets GOAWAY PROTOCOL_ERROR after the header timeout."""
    before = metric(fast_h2, 'profstore_http_timeouts_total{kind="header"}')
    s = h2_open(fast_h2)
    block = h2_get("/-/healthy")
    s.sendall(h2_frame(1, 0x1, 1, block[:3]))
    sent = 0
    got = b""
    for i in range(40):  # 8 s of CONTINUATIONs, a byte each 0.2 s
        try:
            s.sendall(h2_frame(9, 0, 1, block[3:4]))
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += 1
        r, _, _ = select.select([s], [], [], 0.2)
        if r:
            d = s.recv(65536)
            got += d
            if not d or any(t == 7 for t, _, _ in h2_frames(got)):
                break
    got = h2_until(s, lambda fs: False, got)
    s.close()
    assert sent < 40
    goaway = [p for t, _, p in h2_frames(got) if t == 7]
    assert goaway == [struct.pack(">II", 1, 1) +  # last stream 1, PROTOCOL_ERROR
                      b"request header not complete within 1s of its first byte (--web.read-header-timeout)"]
    assert not any(t in (0, 1) for t, _, _ in h2_frames(got))  # no answer on stream 1
    assert metric(fast_h2, 'profstore_http_timeouts_total{kind="header"}') == before + 1


def test_h2_stalled_body_408(fast_h2):
    before = metric(fast_h2, 'profstore_http_timeouts_total{kind="body_idle"}')
    body = b"query=1%2B1&pad=" + b"a" * 100
    frames, sent = h2_dribble(fast_h2, body, 10, 5.0, upto=10,  # 10 of its 116 bytes, then nothing
                              then=h2_frame(1, 0x5, 3, h2_get("/-/healthy")))
    assert sent == 10
    s3 = [(t, p) for t, sid, p in frames if sid == 3]
    frames = [f for f in frames if f[1] == 1]
    assert h2_status(frames[0][2]) == 408
    # the connection goes on: the next stream is answered
    assert h2_status(s3[0][1]) == 200 and b"".join(p for t, p in s3 if t == 0) == b"Profstore is Healthy.\n"
    assert json.loads(b"".join(p for t, _, p in frames if t == 0)) == {
        "status": "error", "errorType": "timeout",
        "error": "no byte of the request body for 1s (--web.body-idle-timeout)"}
    assert metric(fast_h2, 'profstore_http_timeouts_total{kind="body_idle"}') == before + 1


def test_h2_dribbled_body_408(fast_h2):
    before = metric(fast_h2, 'profstore_http_timeouts_total{kind="body_rate"}')
    body = b"query=1%2B1&pad=" + b"a" * 100
    frames, sent = h2_dribble(fast_h2, body, 1, 0.2)  # 5 bytes/s, under 100
    assert sent < len(body)
    assert [t for t, _, _ in frames][0] == 1 and h2_status(frames[0][2]) == 408
    err = json.loads(b"".join(p for t, _, p in frames if t == 0))
    assert sorted(err) == ["error", "errorType", "status"] and (err["status"], err["errorType"]) == ("error", "timeout")
    m = re.fullmatch(r"request body too slow: (\d+) bytes in (\d+) ms, under 100 bytes/s \(--web\.body-min-rate\)",
                     err["error"])
    assert m and int(m.group(1)) * 1000 < 100 * (int(m.group(2)) - 1000)
    assert metric(fast_h2, 'profstore_http_timeouts_total{kind="body_rate"}') == before + 1


def test_h2_steady_slow_body_succeeds(fast_h2):
    """~2.5 s of body at 240 bytes/s over HTTP/2: never idle for 1 s, above the minimum rate."""
    body = b"query=1%2B1&pad=" + b"a" * 584
    frames, sent = h2_dribble(fast_h2, body, 24, 0.1)
    assert sent == len(body)
    assert h2_status(frames[0][2]) == 200
    assert json.loads(b"".join(p for t, _, p in frames if t == 0))["data"]["result"][1] == "2"


def test_h2_partial_headers_frame_goaway(fast_h2):
    """A HEADERS frame that never arrives whole (its first 10 of 100 bytes, then silence): timed
    from its first byte too; no stream was opened (last stream 0)."""
    before = metric(fast_h2, 'profstore_http_timeouts_total{kind="header"}')
    s = h2_open(fast_h2)
    s.sendall(struct.pack(">I", 100)[1:] + bytes([1, 0x5]) + struct.pack(">I", 1) + h2_get("/-/healthy")[:10])
    got = h2_until(s, lambda fs: False)
    s.close()
    goaway = [p for t, _, p in h2_frames(got) if t == 7]
    assert goaway == [struct.pack(">II", 0, 1) +
                      b"request header not complete within 1s of its first byte (--web.read-header-timeout)"]
    assert metric(fast_h2, 'profstore_http_timeouts_total{kind="header"}') == before + 1


def test_h2_over_tls_dribbled_body_408(tmp_path):
    """The same per-stream bound on HTTP/2 negotiated by TLS (ALPN h2), h2c off."""
    import ssl
    from test_tls import TlsServer, make_ca, make_cert, tls_yml
    make_ca(tmp_path, "ca")
    make_cert(tmp_path, "ca", "srv", "IP:127.0.0.1")
    (tmp_path / "web.yml").write_text(tls_yml(tmp_path))
    srv = TlsServer(tmp_path / "s", web_config_file=tmp_path / "web.yml", retention="0", threads=1,
                    extra_args=FAST[:-1] + ["30s"])
    srv.curl_args = ("--cacert", str(tmp_path / "ca.crt"))
    srv.start()
    try:
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        ctx.set_alpn_protocols(["h2"])
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10), server_hostname="127.0.0.1")
        assert s.selected_alpn_protocol() == "h2"
        s.sendall(PREFACE + h2_frame(4, 0, 0))
        body = b"query=1%2B1&pad=" + b"a" * 100
        s.sendall(h2_frame(1, 0x4, 1, h2_post_headers("/api/v1/query", len(body))))
        got = b""
        for i in range(40):  # 5 bytes/s, under 100, for at most 8 s
            s.sendall(h2_frame(0, 0, 1, body[i:i + 1]))
            r, _, _ = select.select([s], [], [], 0.2)
            if r or s.pending():
                got += s.recv(65536)
                if any(sid == 1 and fl & 1 for t, fl, sid, _ in h2_flagged(got) if t in (0, 1)):
                    break
        while not any(sid == 1 and fl & 1 for t, fl, sid, _ in h2_flagged(got) if t in (0, 1)):
            got += s.recv(65536)
        s.close()
        frames = [(t, p) for t, _, sid, p in h2_flagged(got) if sid == 1]
        assert frames[0][0] == 1 and h2_status(frames[0][1]) == 408
        err = json.loads(b"".join(p for t, p in frames if t == 0))
        assert err["errorType"] == "timeout" and err["error"].endswith(" under 100 bytes/s (--web.body-min-rate)")
    finally:
        srv.kill()


# ---- a request handed over: no header or body timeout while it is handled ----
#
# Once a request is complete and its handler runs (on the query pool, or waiting for the writer),
# its bytes are still in the socket's input buffer: they are neither a header still arriving nor a
# body that stalled. The header and body timeouts here are 1 s; the queries run until their own
# --query.timeout of 4 s ends them ({job!~"(a|aa)+$"} over 5,000 series: a few ms of regex each,
# many seconds in all), so they take 4 s however busy the machine: the answer is that timeout's
# 503, not a 408 after 1 s.

LONG_QUERY = "match%5B%5D=" + urllib.parse.quote('{job=~"a.*", job!~"(a|aa)+$"}')
QUERY_TIMEOUT = {"status": "error", "errorType": "timeout",
                 "error": "query timed out in query execution (the limit is 4s, --query.timeout)"}


@pytest.fixture(scope="module")
def long_srv(module_server_factory) -> Server:
    from test_query_limits import fill
    s = module_server_factory(start=False, name="long", threads=1)
    s.extra_args = FAST + ["--web.enable-h2c", "--query.timeout", "4s", "--query.max-regex-steps", "1000000000000"]
    s.start()
    fill(s, 27)
    return s


def timeouts(srv: Server) -> Tuple[Optional[float], ...]:
    return tuple(metric(srv, 'profstore_http_timeouts_total{kind="%s"}' % k) for k in ("header", "body_idle", "body_rate"))


def test_long_query_http1_get_not_cut(long_srv):
    before = timeouts(long_srv)
    s = connect(long_srv)
    t0 = time.monotonic()
    s.sendall(b"GET /api/v1/series?%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % LONG_QUERY.encode())
    (st, _, body), = split_responses(read_all(s, timeout=120))
    took = time.monotonic() - t0
    s.close()
    assert (st, json.loads(body)) == (503, QUERY_TIMEOUT)  # was 408 after 1 s (header not complete)
    assert took >= 3.9
    assert timeouts(long_srv) == before


def test_long_query_http1_post_not_cut(long_srv):
    """A POST whose whole body came: not a body stalled while its query runs."""
    before = timeouts(long_srv)
    s = connect(long_srv)
    body = LONG_QUERY.encode()
    t0 = time.monotonic()
    s.sendall(form_post("/api/v1/series", body, close=True) + body)
    (st, _, rbody), = split_responses(read_all(s, timeout=120))
    took = time.monotonic() - t0
    s.close()
    assert (st, json.loads(rbody)) == (503, QUERY_TIMEOUT)  # was 408 after 1 s (body idle)
    assert took >= 3.9
    assert timeouts(long_srv) == before


def test_long_query_h2_not_cut(long_srv):
    """The same over HTTP/2 (h2c), with --web.idle-timeout 1 s: a stream being handled is no idle
    connection."""
    before = timeouts(long_srv)
    s = h2_open(long_srv)
    t0 = time.monotonic()
    s.sendall(h2_frame(1, 0x5, 1, h2_get("/api/v1/series?" + LONG_QUERY)))
    s.settimeout(120)
    got = b""
    while not any(sid == 1 and fl & 1 and t in (0, 1) for t, fl, sid, _ in h2_flagged(got)):
        d = s.recv(65536)
        if not d:
            break
        got += d
    took = time.monotonic() - t0
    s.close()
    frames = [(t, p) for t, sid, p in h2_frames(got) if sid == 1]
    assert frames and frames[0][0] == 1 and h2_status(frames[0][1]) == 503, h2_frames(got)[:4]
    assert json.loads(b"".join(p for t, p in frames if t == 0)) == QUERY_TIMEOUT
    assert took >= 3.9
    assert timeouts(long_srv) == before


class WriteLock:
    """LMDB's write lock on a data directory, held by this process (liblmdb through ctypes): the
    server's writer waits for it as for a slow fsync."""

    def __init__(self, data_dir):
        import ctypes
        self.c = ctypes
        self.lib = ctypes.CDLL("liblmdb.so.0")
        self.env, self.txn = ctypes.c_void_p(), ctypes.c_void_p()
        assert self.lib.mdb_env_create(ctypes.byref(self.env)) == 0
        assert self.lib.mdb_env_set_maxdbs(self.env, 64) == 0
        assert self.lib.mdb_env_set_maxreaders(self.env, 512) == 0
        assert self.lib.mdb_env_open(self.env, str(data_dir).encode(), 0, 0o644) == 0

    def __enter__(self):
        assert self.lib.mdb_txn_begin(self.env, None, 0, self.c.byref(self.txn)) == 0
        return self

    def __exit__(self, *exc):
        self.lib.mdb_txn_abort(self.txn)
        self.lib.mdb_env_close(self.env)


def test_push_held_by_the_writer_not_cut(long_srv):
    """A push waits for its commit; the writer waits 4 s for LMDB's write lock. Its answer is 200
    (it is committed), not a 408 for a body that stalled."""
    import threading
    before = timeouts(long_srv)
    out = {}

    def push():
        t0 = time.monotonic()
        out["st"] = long_srv.push("go/cpu-01.pb.gz", labels='{job="held"}', timeout=60)
        out["took"] = time.monotonic() - t0

    with WriteLock(long_srv.data_dir):
        th = threading.Thread(target=push)
        th.start()
        time.sleep(4.0)
        assert th.is_alive()  # still waiting for the writer
    th.join(60)
    assert out["st"][0] == 200, out
    assert out["took"] >= 3.9
    assert timeouts(long_srv) == before
    assert [s["labels"].get("job") for s in long_srv.series()].count("held") == 2  # cpu, samples
