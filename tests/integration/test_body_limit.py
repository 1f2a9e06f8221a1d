"""--max-body-size while a body arrives (web/connguard.c): h2o's own limit is the larger of
--max-body-size and --debuginfo.max-file-bytes (256 MiB), and h2o reads a whole body before a
handler runs; every route but the debug file upload refuses a body over --max-body-size (32 MiB
here, the default) with 413 as soon as its Content-Length says so, or once the bytes that arrived
pass it (chunked HTTP/1.1, HTTP/2 without content-length). Each client pushes a 100 MiB body as
fast as the server takes it and stops at the answer; the server's peak RSS (VmHWM) must stay well
under the body."""

from __future__ import annotations

import json
import re
import select
import socket
import subprocess
import time

import h2.config  # python3-h2
import h2.connection as h2conn
import h2.events
import h2.settings
import pytest

from scrape_util import sanitized_binary

MAX = 32 << 20
BODY = 100 << 20
PIECE = 1 << 20
SO_FAR = re.compile(r"request body larger than --max-body-size \(33554432 bytes\): (\d+) bytes arrived so far")
ANNOUNCED = "request body of 104857600 bytes is larger than --max-body-size (33554432 bytes)"


@pytest.fixture
def srv(make_server):
    return make_server(retention="0", threads=1, extra_args=["--web.enable-h2c"])


def hwm(srv) -> int:
    """The server's peak resident memory so far, bytes."""
    with open("/proc/%d/status" % srv.proc.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def assert_peak(srv, base: int, most: int) -> None:
    if not sanitized_binary():  # ASan's quarantine keeps freed memory: its RSS says nothing
        assert hwm(srv) - base < most, (hwm(srv) - base, most)


def refused(srv) -> float:
    return srv.metrics()["profstore_http_body_too_large_total"]


def parse_response(raw: bytes):
    """(status, headers, body) of one whole HTTP/1.1 answer with a Content-Length, or None."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode().split("\r\n")
    hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    n = int(hdrs["content-length"])
    if len(rest) < n:
        return None
    return int(lines[0].split()[1]), hdrs, rest[:n]


def h1_push(srv, path: str, chunked: bool, after_get: bool = False):
    """POSTs a BODY-byte body (Content-Length, or chunks of 1 MiB) as fast as the server reads it,
    reading at the same time, and stops sending at the answer: (status, headers, body, bytes sent,
    whether the server closed after the answer). after_get: on a kept-alive connection, after a
    query answered on it (by the query pool: not from a callback of the connection)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    if after_get:
        s.sendall(b"GET /api/v1/query?query=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # answered off the loop
        raw = b""
        while parse_response(raw) is None:
            d = s.recv(65536)
            assert d, raw
            raw += d
        assert parse_response(raw)[0] == 200
    head = "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n" % path
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else "Content-Length: %d\r\n\r\n" % BODY
    s.sendall(head.encode())
    unit = (b"%x\r\n" % PIECE + b"\0" * PIECE + b"\r\n") if chunked else b"\0" * PIECE
    s.setblocking(False)
    sent, pos, raw, ans, closed = 0, 0, b"", None, False
    deadline = time.monotonic() + 60
    while ans is None and not closed and time.monotonic() < deadline:
        want_w = [s] if sent < len(unit) * (BODY // PIECE) else []
        r, w, _ = select.select([s], want_w, [], 1)
        if r:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                d = b""
            closed = not d
            raw += d
            ans = parse_response(raw)
        if w and ans is None and not closed:
            try:
                n = s.send(unit[pos:])
            except (BrokenPipeError, ConnectionResetError):
                continue
            sent += n
            pos = (pos + n) % len(unit)
    s.settimeout(10)
    while not closed:  # the server closes after its answer
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            d = b""
        closed = not d
        raw += d
    s.close()
    ans = parse_response(raw)
    assert ans is not None, raw[:300]
    return ans + (sent, closed)


@pytest.mark.parametrize("path", ["/api/v1/write", "/ingest"])
def test_content_length_refused_at_once(srv, path):
    """A Content-Length over --max-body-size: 413 right after the header; hardly a byte is read."""
    base = hwm(srv)
    st, hdrs, body, sent, closed = h1_push(srv, path, chunked=False)
    assert (st, hdrs["connection"], json.loads(body)) == (
        413, "close", {"status": "error", "errorType": "bad_data", "error": ANNOUNCED})
    assert closed
    assert sent < 16 << 20, sent  # what the sockets' buffers took before the answer came back
    assert_peak(srv, base, 8 << 20)
    assert refused(srv) == 1
    assert srv.get("/-/ready")[0] == 200


@pytest.mark.parametrize("path", ["/api/v1/write", "/ingest"])
def test_chunked_refused_while_arriving(srv, path):
    """Chunked HTTP/1.1 (no length): 413 once the decoded bytes pass --max-body-size, at most a
    socket read (what the kernel held) later."""
    base = hwm(srv)
    st, hdrs, body, sent, closed = h1_push(srv, path, chunked=True)
    err = json.loads(body)
    assert (st, hdrs["connection"], err["errorType"]) == (413, "close", "bad_data"), err
    got = int(SO_FAR.fullmatch(err["error"]).group(1))
    assert MAX < got <= MAX + (16 << 20), got
    assert sent < MAX + (32 << 20), sent  # the client stopped at the answer, far from 100 MiB
    assert closed
    assert_peak(srv, base, 80 << 20)
    assert refused(srv) == 1


def test_chunked_refused_on_kept_alive_connection(srv):
    """The second request of a connection is held to the limit as its first."""
    st, _, body, sent, closed = h1_push(srv, "/api/v1/write", chunked=True, after_get=True)
    got = int(SO_FAR.fullmatch(json.loads(body)["error"]).group(1))
    assert (st, closed) == (413, True)
    assert MAX < got <= MAX + (16 << 20), got
    assert refused(srv) == 1


def test_curl_chunked_expect_continue(srv, tmp_path):
    """curl's chunked upload (Expect: 100-continue, then the body) is refused once past the limit."""
    f = tmp_path / "big"
    with open(f, "wb") as out:
        out.truncate(BODY)
    base = hwm(srv)
    r = subprocess.run(["curl", "-sS", "-H", "Transfer-Encoding: chunked", "--data-binary", "@%s" % f,
                        "-w", "\n%{http_code} %{size_upload}", srv.url("/ingest")],
                       capture_output=True, text=True, timeout=60)
    body, _, tail = r.stdout.rpartition("\n")
    code, up = tail.split()
    got = int(SO_FAR.fullmatch(json.loads(body)["error"]).group(1))
    assert code == "413", r
    assert MAX < got <= MAX + (16 << 20), got
    assert int(up) < MAX + (32 << 20), up
    assert_peak(srv, base, 80 << 20)


class H2Client:
    """An HTTP/2 client (prior knowledge) that sends a stream's body as its flow control allows,
    reading as it goes."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.conn = h2conn.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.status, self.body, self.ended, self.reset = {}, {}, set(), {}

    def flush(self):
        d = self.conn.data_to_send()
        if d:
            self.sock.sendall(d)

    def read(self, timeout: float) -> None:
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return
        d = self.sock.recv(1 << 20)
        assert d, "the server closed the connection"
        for ev in self.conn.receive_data(d):
            if isinstance(ev, h2.events.ResponseReceived):
                self.status[ev.stream_id] = int(dict(ev.headers)[":status"])
            elif isinstance(ev, h2.events.DataReceived):
                self.body[ev.stream_id] = self.body.get(ev.stream_id, b"") + ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                self.ended.add(ev.stream_id)
            elif isinstance(ev, h2.events.StreamReset):
                self.reset[ev.stream_id] = ev.error_code
        self.flush()

    def push(self, path: str, total: int, with_length: bool):
        """POSTs total bytes on a new stream until the server answers it: (status, body, bytes sent)."""
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1"),
                ("content-type", "application/x-protobuf")]
        if with_length:
            hdrs.append(("content-length", str(total)))
        self.conn.send_headers(sid, hdrs)
        self.flush()
        sent, deadline = 0, time.monotonic() + 60
        zeros = b"\0" * self.conn.max_outbound_frame_size
        while sid not in self.ended and sid not in self.reset and time.monotonic() < deadline:
            n = 0
            if sid not in self.status and sent < total:
                n = min(self.conn.local_flow_control_window(sid), len(zeros), total - sent)
                if n > 0:
                    self.conn.send_data(sid, zeros[:n], end_stream=sent + n == total)
                    sent += n
                    self.flush()
            self.read(0 if n > 0 else 1)
        return self.status.get(sid), self.body.get(sid, b""), sent

    def get(self, path: str) -> int:
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                     (":authority", "127.0.0.1")], end_stream=True)
        self.flush()
        deadline = time.monotonic() + 10
        while sid not in self.ended and time.monotonic() < deadline:
            self.read(1)
        return self.status.get(sid)


@pytest.mark.parametrize("with_length", [True, False], ids=["content-length", "no-length"])
def test_h2_stream_refused_while_arriving(srv, with_length):
    """HTTP/2: the stream is answered 413 (its whole answer, though DATA keeps coming), at its
    content-length or once its bytes pass --max-body-size; the connection goes on."""
    base = hwm(srv)
    c = H2Client(srv.port)
    st, body, sent = c.push("/api/v1/write", BODY, with_length)
    err = json.loads(body)
    assert (st, err["status"], err["errorType"]) == (413, "error", "bad_data"), (st, body)
    if with_length:
        assert err["error"] == ANNOUNCED
        assert sent < 16 << 20, sent
        assert_peak(srv, base, 8 << 20)
    else:
        got = int(SO_FAR.fullmatch(err["error"]).group(1))
        assert MAX < got <= MAX + (16 << 20), got
        assert sent < MAX + (40 << 20), sent
        assert_peak(srv, base, 80 << 20)
    assert c.get("/-/ready") == 200  # the same connection, a new stream
    assert refused(srv) == 1
