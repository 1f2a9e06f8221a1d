"""The gRPC listener (--grpc.listen-address, grpc/): real gRPC clients that are not ours (grpcio
1.85.1 from PyPI: the C-core gRPC library; grpc-go v1.85.0 built from grpc_goclient/main.go) calling grpc.health.v1.Health/Check and methods by path with
raw bytes, over h2c and over TLS with bearer tokens and basic auth from --web.config.file; framing
errors, compression, limits and HTTP/2 abuse through a scripted HTTP/2 client (Debian's python3-h2),
each with the exact grpc-status and grpc-message; a graceful shutdown with a call in flight."""
import base64
import gzip
import hashlib
import os
import socket
import ssl
import struct
import threading
import time
import warnings

import pytest

from conftest import free_port, require_tool

import grpc  # grpcio from PyPI (conftest: pypi_grpc.py; scripts/install-pysdk.sh --grpc)
import h2.config  # python3-h2
import h2.connection as h2conn
import h2.events

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import crypt
    _SALT = crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4)

HEALTH = "/grpc.health.v1.Health/Check"
EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
SERVING, NOT_SERVING = b"\x08\x01", b"\x08\x02"
NO_CREDS = "unauthorized: no credentials: send an Authorization header (basic auth or a bearer token)"


def ident(b):
    return b


def sha(tok):
    return hashlib.sha256(tok.encode()).hexdigest()


class GrpcServer:
    """A Server (conftest) with a gRPC listener on a free loopback port."""

    def __init__(self, make_server, extra=(), tls=False, **flags):
        self.gport = free_port()
        self.srv = make_server(extra_args=["--grpc.listen-address", "127.0.0.1:%d" % self.gport, *extra],
                               start=not tls, **flags)
        if tls:  # the main port speaks TLS too: ready when its log says so
            self.srv.start(wait_ready=False)
            deadline = time.monotonic() + 15
            while "profstore is ready" not in self.srv.log():
                assert self.srv.running() and time.monotonic() < deadline, self.srv.log()
                time.sleep(0.05)

    def channel(self, creds=None, **opts):
        target = "127.0.0.1:%d" % self.gport
        options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
        if creds is not None:
            options.append(("grpc.ssl_target_name_override", "127.0.0.1"))
            return grpc.secure_channel(target, creds, options=options)
        return grpc.insecure_channel(target, options=options)


def call(ch, path, body, metadata=None, timeout=10, compression=None):
    """(status code name, details or response bytes)"""
    try:
        r = ch.unary_unary(path, request_serializer=ident, response_deserializer=ident)(
            body, timeout=timeout, metadata=metadata, compression=compression)
        return "OK", r
    except grpc.RpcError as e:
        return e.code().name, e.details()


@pytest.fixture
def gsrv(make_server):
    s = GrpcServer(make_server, extra=["--grpc.max-recv-msg-size", "1MiB"])
    yield s


# ---- a scripted HTTP/2 client -----------------------------------------------------------------------

class H2:
    def __init__(self, port, tls=None, validate=True):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = tls.wrap_socket(raw, server_hostname="127.0.0.1") if tls else raw
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                        validate_outbound_headers=validate, normalize_outbound_headers=validate,
                                        validate_inbound_headers=False)
        self.conn = h2conn.H2Connection(config=cfg)
        self.conn.initiate_connection()
        self.flush()
        self.headers, self.data, self.trailers, self.resets, self.closed = {}, {}, {}, {}, {}
        self.goaway = None
        self.eof = False

    def flush(self):
        d = self.conn.data_to_send()
        if d:
            self.sock.sendall(d)

    def start(self, path, extra=(), ct="application/grpc", method="POST"):
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1"),
                ("content-type", ct), ("te", "trailers"), *extra]
        self.conn.send_headers(sid, hdrs)
        self.flush()
        return sid

    def send(self, sid, data, end=True):
        self.conn.send_data(sid, data, end_stream=end)
        self.flush()

    def unary(self, path, body, extra=(), **kw):
        sid = self.start(path, extra, **kw)
        self.send(sid, body)
        return self.wait(sid)

    def pump(self, timeout=10.0, until=lambda: False):
        deadline = time.monotonic() + timeout
        while not until() and not self.eof and time.monotonic() < deadline:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                d = self.sock.recv(65536)
            except socket.timeout:
                break
            except (ConnectionResetError, ssl.SSLError):
                d = b""
            if not d:
                self.eof = True
                break
            for ev in self.conn.receive_data(d):
                if isinstance(ev, h2.events.ResponseReceived):
                    self.headers[ev.stream_id] = dict(ev.headers)
                    if ev.stream_ended:
                        self.closed[ev.stream_id] = True
                elif isinstance(ev, h2.events.DataReceived):
                    self.data[ev.stream_id] = self.data.get(ev.stream_id, b"") + ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.TrailersReceived):
                    self.trailers[ev.stream_id] = dict(ev.headers)
                elif isinstance(ev, h2.events.StreamEnded):
                    self.closed[ev.stream_id] = True
                elif isinstance(ev, h2.events.StreamReset):
                    self.resets[ev.stream_id] = ev.error_code
                    self.closed[ev.stream_id] = True
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    self.goaway = (ev.error_code, ev.last_stream_id)
            try:
                self.flush()
            except OSError:
                self.eof = True

    def wait(self, sid, timeout=10.0):
        """(headers, data, trailers-or-headers with grpc-status)"""
        self.pump(timeout, until=lambda: sid in self.closed)
        assert sid in self.closed, "stream %d not answered" % sid
        h = self.headers.get(sid, {})
        t = self.trailers.get(sid, h)
        return h, self.data.get(sid, b""), t

    def raw_frames(self, timeout, until):
        """Frames as (type, flags, stream, payload), read past h2's state machine (which takes
        nothing after a GOAWAY); HEADERS payloads decoded with the connection's HPACK decoder."""
        buf, out = b"", []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while len(buf) >= 9:
                n = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + n:
                    break
                t, fl, sid, p = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7fffffff, buf[9:9 + n]
                buf = buf[9 + n:]
                if t == 1:
                    p = dict(self.conn.decoder.decode(p))
                out.append((t, fl, sid, p))
                if until(out[-1]):
                    return out
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                d = self.sock.recv(65536)
            except socket.timeout:
                break
            except OSError:
                d = b""
            if not d:
                self.eof = True
                break
            buf += d
        return out

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def msg(payload, flag=0):
    return struct.pack(">BI", flag, len(payload)) + payload


def status(t):
    return int(t["grpc-status"]), t.get("grpc-message", "")


# ---- the calls --------------------------------------------------------------------------------------

def test_grpcio_is_the_pypi_pin():
    """grpc is the grpcio that scripts/install-pysdk.sh --grpc pins, from its folder (pypi_grpc.py
    puts it first on sys.path), not a grpc module of the system."""
    import re
    from pathlib import Path
    import pypi_grpc
    script = (Path(__file__).resolve().parents[2] / "scripts" / "install-pysdk.sh").read_text()
    pin = re.search(r'PINS="grpcio==([0-9.]+) ', script).group(1)
    assert (grpc.__version__, os.path.dirname(os.path.dirname(grpc.__file__))) == (pin, pypi_grpc.DIR)


def test_health_and_unknown_methods(gsrv):
    """grpc.health.v1.Health/Check answers SERVING to grpcio; the service names it knows; unknown
    services and methods are UNIMPLEMENTED as grpc-go words them; Export answers an empty export
    with the empty ExportProfilesServiceResponse (test_otlp_http.py exports real ones)."""
    ch = gsrv.channel()
    assert call(ch, HEALTH, b"") == ("OK", SERVING)
    assert call(ch, HEALTH, b"\x0a\x15grpc.health.v1.Health") == ("OK", SERVING)
    svc = b"opentelemetry.proto.collector.profiles.v1development.ProfilesService"
    assert call(ch, HEALTH, b"\x0a" + bytes([len(svc)]) + svc) == ("OK", SERVING)
    assert call(ch, HEALTH, b"\x0a\x03foo") == ("NOT_FOUND", "unknown service foo")
    assert call(ch, HEALTH, b"\x0a\x09") == ("INTERNAL", "grpc: error unmarshalling request: not a grpc.health.v1.HealthCheckRequest")
    assert call(ch, "/x.Y/Z", b"") == ("UNIMPLEMENTED", "unknown service x.Y")
    assert call(ch, "/grpc.health.v1.Health/Watch", b"") == (
        "UNIMPLEMENTED", "unknown method Watch for service grpc.health.v1.Health")
    assert call(ch, EXPORT, b"\x0a\x00") == ("OK", b"")
    # a message that is not ASCII comes back percent-encoded on the wire and decoded by grpcio
    assert call(ch, "/caf\u00e9.S/M", b"") == ("UNIMPLEMENTED", "unknown service caf\u00e9.S")
    c = H2(gsrv.gport)
    h, d, t = c.unary("/caf\u00e9.S/M", msg(b""))
    assert (h[":status"], status(t)) == ("200", (12, "unknown service caf%C3%A9.S"))
    # /metrics on the main port counts them by status
    m = gsrv.srv.metrics()
    got = {k: v for k, v in m.items() if k.startswith("profstore_grpc_")}
    calls = {"OK": 4, "NOT_FOUND": 1, "INTERNAL": 1, "UNIMPLEMENTED": 4}
    want = {'profstore_grpc_calls_total{code="%s"}' % n: calls.get(n, 0)
            for n in ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
                      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
                      "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")}
    want.update({"profstore_grpc_connections": 2, "profstore_grpc_connections_refused_total": 0,
                 "profstore_grpc_reset_flood_total": 0})
    assert got == want
    c.close()


def test_gzip_requests(gsrv):
    """grpcio's gzip compression (grpc-encoding: gzip, compressed flag 1) is taken; a gzip bomb stops
    at --grpc.max-recv-msg-size after decompression; a corrupt gzip body is INTERNAL."""
    ch = gsrv.channel()
    assert call(ch, HEALTH, b"", compression=grpc.Compression.Gzip) == ("OK", SERVING)
    assert call(ch, HEALTH, b"\x0a\x15grpc.health.v1.Health", compression=grpc.Compression.Gzip) == ("OK", SERVING)
    c = H2(gsrv.gport)
    bomb = gzip.compress(b"\0" * (8 << 20))
    assert len(bomb) < (1 << 20)
    h, d, t = c.unary(HEALTH, msg(bomb, 1), [("grpc-encoding", "gzip")])
    assert status(t) == (8, "grpc: received message after decompression larger than max 1048576")
    h, d, t = c.unary(HEALTH, msg(b"\x1f\x8b\x08\x00garbage", 1), [("grpc-encoding", "gzip")])
    assert status(t) == (13, "grpc: failed to decompress the received message: gzip: unexpected end of data "
                             "(truncated stream after 0 bytes out)")
    h, d, t = c.unary(HEALTH, msg(gzip.compress(b"")), [("grpc-encoding", "gzip")])  # flag 0: not compressed
    assert status(t) == (13, "grpc: error unmarshalling request: not a grpc.health.v1.HealthCheckRequest")
    h, d, t = c.unary(HEALTH, msg(b""), [("grpc-encoding", "br")])
    assert status(t) == (12, 'grpc: Decompressor is not installed for grpc-encoding "br"')
    assert t["grpc-accept-encoding"] == "identity,gzip"
    h, d, t = c.unary(HEALTH, msg(gzip.compress(b""), 1), [("grpc-encoding", "gzip")])
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    c.close()
    assert call(ch, HEALTH, b"") == ("OK", SERVING)


def test_message_size_limit(gsrv):
    """A message over --grpc.max-recv-msg-size (1 MiB here) is RESOURCE_EXHAUSTED as soon as its
    length prefix shows it, in grpc-go's words; one byte less goes through."""
    ch = gsrv.channel()
    big = b"\x0a\x00" + b"\x00" * ((1 << 20) - 2)  # field 1 empty, then zeros: not a valid message
    assert len(big) == 1 << 20
    code, det = call(ch, HEALTH, big + b"\x00")
    assert (code, det) == ("RESOURCE_EXHAUSTED", "grpc: received message larger than max (1048577 vs. 1048576)")
    # exactly the limit is read (and found not to be a HealthCheckRequest: tag 0)
    assert call(ch, HEALTH, big) == ("INTERNAL", "grpc: error unmarshalling request: not a grpc.health.v1.HealthCheckRequest")
    code, det = call(ch, HEALTH, b"\x00" * (8 << 20))
    assert (code, det) == ("RESOURCE_EXHAUSTED", "grpc: received message larger than max (8388608 vs. 1048576)")
    assert call(ch, HEALTH, b"") == ("OK", SERVING)


def test_framing_errors(gsrv):
    """Bad gRPC framing, each with its status as grpc/grpc's PROTOCOL-HTTP2.md, compression.md and
    statuscodes.md say (cardinality violations UNIMPLEMENTED, bad framing INTERNAL)."""
    c = H2(gsrv.gport)
    cases = [
        (msg(b"abc")[:5].replace(b"\x03", b"\x64") + b"abc",
         (13, "grpc: the request ended inside a message: its length prefix says 100 bytes, 3 arrived")),
        (b"\x00\x00\x00", (13, "grpc: the request ended inside a message's 5-byte prefix (3 bytes)")),
        (b"", (12, "grpc: no request message for the unary method /grpc.health.v1.Health/Check")),
        (msg(b"", 1), (13, "grpc: compressed flag set with identity or empty encoding")),
        (msg(b"", 2), (13, "grpc: received unexpected payload format 2 (the compressed flag is 0 or 1)")),
        (msg(b"") + msg(b""), (12, "grpc: more than one request message for the unary method /grpc.health.v1.Health/Check")),
    ]
    for body, want in cases:
        h, d, t = c.unary(HEALTH, body)
        assert (h[":status"], status(t), d) == ("200", want, b""), body
    # the compressed flag with grpc-encoding identity is the same error
    h, d, t = c.unary(HEALTH, msg(b"", 1), [("grpc-encoding", "identity")])
    assert status(t) == (13, "grpc: compressed flag set with identity or empty encoding")
    # a message in several DATA frames is put together
    sid = c.start(HEALTH)
    for b in msg(b"\x0a\x15grpc.health.v1.Health"):
        c.send(sid, bytes([b]), end=False)
    c.send(sid, b"", end=True)
    h, d, t = c.wait(sid)
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    assert h["content-type"] == "application/grpc"
    # headers: content type, method, grpc-timeout
    h, d, t = c.unary(HEALTH, msg(b""), ct="application/json")
    assert (h[":status"], status(t)) == ("415", (13, 'invalid gRPC request content-type "application/json"'))
    h, d, t = c.unary(HEALTH, msg(b""), ct="application/grpc+proto")
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    h, d, t = c.unary(HEALTH, msg(b""), ct="application/grpc+json")
    assert (h[":status"], status(t)) == ("415", (13, 'invalid gRPC request content-type "application/grpc+json"'))
    h, d, t = c.unary(HEALTH, msg(b""), method="PUT")
    assert (h[":status"], status(t)) == ("405", (12, "gRPC calls are POST requests"))
    h, d, t = c.unary(HEALTH, msg(b""), [("grpc-timeout", "1x")])
    assert status(t) == (13, 'malformed grpc-timeout "1x"')
    h, d, t = c.unary(HEALTH, msg(b""), [("grpc-timeout", "123456789S")])
    assert status(t) == (13, 'malformed grpc-timeout "123456789S"')
    h, d, t = c.unary(HEALTH, msg(b""), [("grpc-timeout", "5S")])
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    # a deadline that passes while the body is still coming: DEADLINE_EXCEEDED
    sid = c.start(HEALTH, [("grpc-timeout", "300m")])
    c.send(sid, b"\x00\x00", end=False)
    h, d, t = c.wait(sid, timeout=5)
    assert status(t) == (4, "the deadline passed while the call ran")
    c.close()


def test_framing_errors_on_export_store_nothing(gsrv):
    """The framing errors of the issue's list on ProfilesService/Export with a valid request inside:
    a length prefix larger than the body (the request cut short) and the compressed flag without
    grpc-encoding are INTERNAL with their messages and store nothing; the same bytes framed right
    are stored."""
    from test_otlp_http import cpu_request, stored
    body = cpu_request().req.SerializeToString()
    c = H2(gsrv.gport)
    framed = msg(body)
    cases = [
        (framed[:-10], (13, "grpc: the request ended inside a message: its length prefix says %d bytes, %d arrived"
                        % (len(body), len(body) - 10))),
        (msg(body, 1), (13, "grpc: compressed flag set with identity or empty encoding")),
    ]
    for b, want in cases:
        h, d, t = c.unary(EXPORT, b)
        assert (h[":status"], status(t), d) == ("200", want, b"")
    assert stored(gsrv.srv) == {}
    h, d, t = c.unary(EXPORT, framed)
    assert (status(t), d) == ((0, ""), msg(b""))
    assert len(stored(gsrv.srv)) == 2
    c.close()


def test_deadline_from_grpcio(gsrv):
    ch = gsrv.channel()
    assert call(ch, HEALTH, b"", timeout=0.5) == ("OK", SERVING)


# ---- credentials and TLS ----------------------------------------------------------------------------

def _certs(d):
    def openssl(*a):
        import subprocess
        r = subprocess.run(["openssl", *a], cwd=str(d), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    require_tool("openssl")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=ca")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=srv")
    (d / "srv.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "srv.crt", "-days", "2", "-extfile", "srv.ext")


def _web_yml(tmp_path, tls, tokens=("tok-read", "tok-write")):
    y = ""
    if tls:
        y += "tls_server_config:\n  cert_file: %s\n  key_file: %s\n" % (tmp_path / "srv.crt", tmp_path / "srv.key")
    y += "basic_auth_users:\n  alice: %s\n" % crypt.crypt("wonderland", _SALT)
    y += "bearer_tokens:\n"
    scopes = {"tok-read": "[read]", "tok-write": "[write]", "tok-new": "[write]"}
    for t in tokens:
        y += "  - sha256: %s\n    scopes: %s\n" % (sha(t), scopes[t])
    p = tmp_path / "web.yml"
    p.write_text(y)
    return p


def _auth_cases(ch):
    bearer = lambda t: [("authorization", "Bearer " + t)]  # noqa: E731
    basic = lambda u, p: [("authorization", "Basic " + base64.b64encode(("%s:%s" % (u, p)).encode()).decode())]  # noqa
    # health is open, as /-/healthy: probes carry no credentials
    assert call(ch, HEALTH, b"") == ("OK", SERVING)
    assert call(ch, EXPORT, b"") == ("UNAUTHENTICATED", NO_CREDS)
    assert call(ch, "/x.Y/Z", b"") == ("UNAUTHENTICATED", NO_CREDS)  # nothing of the table without credentials
    assert call(ch, EXPORT, b"", bearer("nope")) == ("UNAUTHENTICATED", "unauthorized: invalid credentials")
    assert call(ch, EXPORT, b"", [("authorization", "Token x")]) == (
        "UNAUTHENTICATED", "unauthorized: this server takes no credentials of that scheme")
    assert call(ch, EXPORT, b"", [("authorization", "x" * 5000)]) == (
        "UNAUTHENTICATED", 'unauthorized: malformed Authorization header (expected "Basic <base64 user:password>" '
        'or "Bearer <token>")')
    assert call(ch, EXPORT, b"", bearer("tok-read")) == (
        "PERMISSION_DENIED", "forbidden: this credential lacks the write scope that %s needs" % EXPORT)
    assert call(ch, EXPORT, b"", bearer("tok-write")) == ("OK", b"")
    assert call(ch, "/x.Y/Z", b"", bearer("tok-read")) == ("UNIMPLEMENTED", "unknown service x.Y")
    # basic auth: bcrypt runs on a worker thread, not on the loop
    assert call(ch, EXPORT, b"", basic("alice", "wonderland")) == ("OK", b"")
    assert call(ch, EXPORT, b"", basic("alice", "wrong")) == ("UNAUTHENTICATED", "unauthorized: invalid credentials")
    assert call(ch, HEALTH, b"", bearer("tok-read")) == ("OK", SERVING)


def test_bearer_tokens_h2c(make_server, tmp_path):
    g = GrpcServer(make_server, web_config_file=_web_yml(tmp_path, tls=False))
    _auth_cases(g.channel())


def test_tls_with_tokens_and_reload(make_server, tmp_path):
    """TLS with ALPN h2 and the main port's certificate; grpcio verifies it against the CA; the tokens
    of --web.config.file; SIGHUP swaps them on the gRPC listener too."""
    _certs(tmp_path)
    g = GrpcServer(make_server, tls=True, web_config_file=_web_yml(tmp_path, tls=True))
    creds = grpc.ssl_channel_credentials(root_certificates=(tmp_path / "ca.crt").read_bytes())
    ch = g.channel(creds)
    _auth_cases(ch)
    # a client that does not trust the certificate does not get through
    bad = g.channel(grpc.ssl_channel_credentials(root_certificates=(tmp_path / "srv.crt").read_bytes().replace(b"A", b"A")))
    # h2c to a TLS port fails
    assert call(g.channel(), HEALTH, b"", timeout=3)[0] == "UNAVAILABLE"
    bad.close()
    # ALPN: h2 chosen
    ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    c = H2(g.gport, tls=ctx)
    assert c.sock.selected_alpn_protocol() == "h2"
    h, d, t = c.unary(HEALTH, msg(b""))
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    c.close()
    # reload: tok-write gone, tok-new in
    _web_yml(tmp_path, tls=True, tokens=("tok-read", "tok-new"))
    import signal
    g.srv.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "web configuration reloaded" not in g.srv.log():
        time.sleep(0.05)
    assert call(ch, EXPORT, b"", [("authorization", "Bearer tok-new")]) == ("OK", b"")
    assert call(ch, EXPORT, b"", [("authorization", "Bearer tok-write")]) == (
        "UNAUTHENTICATED", "unauthorized: invalid credentials")


GRPC_GO = "v1.85.0"  # google.golang.org/grpc, through the Go module proxy


def _go_client():
    """grpc_goclient/main.go built against grpc-go GRPC_GO, once, in a cache outside the repository."""
    import os
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path
    go = require_tool("go")
    src = Path(__file__).parent / "grpc_goclient" / "main.go"
    key = hashlib.sha256(src.read_bytes() + GRPC_GO.encode()).hexdigest()[:16]
    d = Path(tempfile.gettempdir()) / ("profstore-grpc-goclient-" + key)
    if (d / "client").exists():
        return d / "client"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, d / "main.go")
    (d / "go.mod").write_text("module grpcclient\n\ngo 1.24\n")
    from conftest import _go_cache
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", CGO_ENABLED="0", **_go_cache())
    r = subprocess.run([go, "get", "google.golang.org/grpc@" + GRPC_GO], cwd=d, env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        if any(e in r.stderr for e in ("dial tcp", "no such host", "connection refused", "i/o timeout")):
            pytest.skip("Go module proxy unreachable, grpc-go not downloaded: " + r.stderr[-300:])
        raise AssertionError(r.stderr)
    r = subprocess.run([go, "build", "-o", "client.new", "."], cwd=d, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    os.replace(d / "client.new", d / "client")
    return d / "client"


def test_go_client(make_server, tmp_path):
    """grpc-go v1.85.0's generated health client and an Invoke of Export, over h2c and TLS, with a
    bearer token in the metadata, gzip-compressed health request."""
    import subprocess
    client = _go_client()
    _certs(tmp_path)
    want = ("health OK SERVING\nhealth-gzip OK SERVING\nhealth-unknown NotFound unknown service nope\n"
            "export Unauthenticated %s\nexport-token OK\n" % NO_CREDS)
    for tls in (False, True):
        d = tmp_path / ("tls" if tls else "h2c")
        d.mkdir()
        for f in ("srv.crt", "srv.key"):
            (d / f).write_bytes((tmp_path / f).read_bytes())
        g = GrpcServer(make_server, tls=tls, web_config_file=_web_yml(d, tls=tls))
        args = [str(client), "-addr", "127.0.0.1:%d" % g.gport, "-token", "tok-write"]
        if tls:
            args += ["-ca", str(tmp_path / "ca.crt")]
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stdout) == (0, want), r.stderr


# ---- HTTP/2 abuse -----------------------------------------------------------------------------------

def _rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def test_rapid_reset(gsrv):
    """A client opening and resetting streams (CVE-2023-44487): past 200 resets in 10 s GOAWAY
    ENHANCE_YOUR_CALM and the connection ends; the server goes on serving."""
    c = H2(gsrv.gport)
    for i in range(400):
        try:  # the server may have sent its GOAWAY and closed already
            sid = c.start(HEALTH)
            c.conn.reset_stream(sid)
            c.flush()
        except OSError:
            break
    c.pump(5, until=lambda: c.goaway is not None)
    assert c.goaway is not None and c.goaway[0] == 11  # ENHANCE_YOUR_CALM
    c.close()
    assert call(gsrv.channel(), HEALTH, b"") == ("OK", SERVING)
    assert gsrv.srv.metrics()["profstore_grpc_reset_flood_total"] == 1


def test_rapid_reset_goaway_reaches_a_client_still_sending(gsrv):
    """The resets in one burst with more bytes behind them: the server ends the session while
    unread bytes wait in its socket, yet its GOAWAY ENHANCE_YOUR_CALM reaches the client (the
    socket's write side is shut and the rest read and dropped; a plain close would answer the
    unread bytes with a reset, which drops the GOAWAY on the client's side)."""
    c = H2(gsrv.gport)
    hdrs = [(":method", "POST"), (":scheme", "http"), (":path", HEALTH), (":authority", "127.0.0.1"),
            ("content-type", "application/grpc"), ("te", "trailers")]
    for i in range(400):
        sid = c.conn.get_next_available_stream_id()
        c.conn.send_headers(sid, hdrs)
        c.conn.reset_stream(sid)
    ping = struct.pack(">I", 8)[1:] + b"\x06\x00" + b"\0\0\0\0" + b"12345678"
    try:
        c.sock.sendall(c.conn.data_to_send() + ping * 40000)
    except OSError:
        pass
    time.sleep(0.5)
    frames = c.raw_frames(5, until=lambda f: f[0] == 7)
    assert frames and frames[-1][0] == 7
    assert struct.unpack(">I", frames[-1][3][4:8])[0] == 11  # GOAWAY ENHANCE_YOUR_CALM
    c.close()
    assert call(gsrv.channel(), HEALTH, b"") == ("OK", SERVING)


def test_huge_headers(gsrv):
    """A request whose header list passes 16 KiB has its stream reset; the connection and the server
    go on."""
    c = H2(gsrv.gport, validate=False)
    sid = c.start(HEALTH, [("x-big", "a" * 20000)])
    c.send(sid, msg(b""))
    c.pump(5, until=lambda: sid in c.closed)
    assert c.resets.get(sid) is not None and sid not in c.headers
    sid = c.start(HEALTH, [("x-%d" % i, "b" * 100) for i in range(200)])
    c.send(sid, msg(b""))
    c.pump(5, until=lambda: sid in c.closed)
    assert c.resets.get(sid) is not None and sid not in c.headers
    h, d, t = c.unary(HEALTH, msg(b""), [("x-small", "a" * 1000)])
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    c.close()


def test_settings_ping_and_window_floods(gsrv):
    """PING and SETTINGS floods from a client that never reads: nghttp2 ends the session once 1000
    ACKs are queued; a WINDOW_UPDATE past 2^31-1 is a FLOW_CONTROL_ERROR; memory stays bounded and
    the server serves other clients throughout."""
    pid = gsrv.srv.proc.pid
    before = _rss_kb(pid)
    c = H2(gsrv.gport)
    frames = b""
    ping = struct.pack(">I", 8)[1:] + b"\x06\x00" + b"\0\0\0\0" + b"12345678"
    settings = struct.pack(">I", 6)[1:] + b"\x04\x00" + b"\0\0\0\0" + b"\x00\x03\x00\x00\x00\x64"
    for i in range(20000):
        frames += ping if i % 2 else settings
    try:
        c.sock.sendall(frames)
    except OSError:
        pass
    time.sleep(0.5)
    assert call(gsrv.channel(), HEALTH, b"") == ("OK", SERVING)
    c.close()
    c = H2(gsrv.gport)
    c.pump(1)
    c.sock.sendall(struct.pack(">I", 4)[1:] + b"\x08\x00" + b"\0\0\0\0" + struct.pack(">I", 2 ** 31 - 1))
    frames = c.raw_frames(5, until=lambda f: f[0] == 7)
    assert frames and frames[-1][0] == 7
    assert struct.unpack(">I", frames[-1][3][4:8])[0] == 3  # GOAWAY FLOW_CONTROL_ERROR
    c.close()
    assert _rss_kb(pid) - before < 64 * 1024
    assert call(gsrv.channel(), HEALTH, b"") == ("OK", SERVING)


def test_concurrent_stream_limit(make_server):
    """--grpc.max-concurrent-streams is the SETTINGS_MAX_CONCURRENT_STREAMS the client is told."""
    g = GrpcServer(make_server, extra=["--grpc.max-concurrent-streams", "7"])
    c = H2(g.gport)
    c.pump(1, until=lambda: c.conn.remote_settings.max_concurrent_streams == 7)
    assert c.conn.remote_settings.max_concurrent_streams == 7
    assert c.conn.remote_settings.max_header_list_size == 16384
    c.close()


def test_connection_limit_and_idle(make_server):
    """--grpc.max-connections: connections past it are closed at accept; --grpc.idle-timeout: a
    silent connection gets GOAWAY NO_ERROR and is closed."""
    g = GrpcServer(make_server, extra=["--grpc.max-connections", "2", "--grpc.idle-timeout", "1s"])
    a, b = H2(g.gport), H2(g.gport)
    a.pump(0.3)
    b.pump(0.3)
    c = H2(g.gport)
    c.pump(2)
    assert c.eof and not c.headers
    c.close()
    assert g.srv.metrics()["profstore_grpc_connections_refused_total"] == 1
    a.pump(4, until=lambda: a.goaway is not None)
    assert a.goaway == (0, 0)
    a.close()
    b.close()
    time.sleep(0.3)
    assert call(g.channel(), HEALTH, b"") == ("OK", SERVING)


# ---- shutdown -----------------------------------------------------------------------------------------

def test_shutdown_with_a_call_in_flight(gsrv):
    """SIGTERM while a call's body is still coming: GOAWAY NO_ERROR naming that stream, the call still
    answered (Health/Check: NOT_SERVING while stopping), then the process exits 0."""
    c = H2(gsrv.gport)
    h, d, t = c.unary(HEALTH, msg(b""))
    assert (d, status(t)) == (msg(SERVING), (0, ""))
    sid = c.start(HEALTH)
    body = msg(b"\x0a\x15grpc.health.v1.Health")
    c.send(sid, body[:3], end=False)
    c.pump(0.3)
    import signal
    gsrv.srv.proc.send_signal(signal.SIGTERM)
    frames = c.raw_frames(5, until=lambda f: f[0] == 7)
    assert frames[-1][0] == 7 and frames[-1][3][:8] == struct.pack(">II", sid, 0)  # GOAWAY last=sid NO_ERROR
    # the open stream goes on: the rest of its body, then its answer
    rest = body[3:]
    c.sock.sendall(struct.pack(">I", len(rest))[1:] + b"\x00\x01" + struct.pack(">I", sid) + rest)
    frames = c.raw_frames(5, until=lambda f: f[0] == 1 and f[1] & 1)
    got = [(t, p) for t, fl, s_, p in frames if s_ == sid]
    assert [t for t, _ in got] == [1, 0, 1]
    assert got[0][1][":status"] == "200" and got[1][1] == msg(NOT_SERVING)
    assert got[2][1] == {"grpc-status": "0"}
    c.raw_frames(5, until=lambda f: False)
    assert c.eof
    assert gsrv.srv.proc.wait(timeout=15) == 0
    # a new call finds no listener
    assert call(gsrv.channel(), HEALTH, b"", timeout=2)[0] == "UNAVAILABLE"


def test_grpcio_calls_during_shutdown(gsrv):
    """grpcio calls from 8 threads while SIGTERM arrives: each ends OK or UNAVAILABLE (never hangs
    or INTERNAL), and the process exits 0."""
    ch = gsrv.channel()
    assert call(ch, HEALTH, b"") == ("OK", SERVING)
    results, stop = [], threading.Event()

    def loop():
        while not stop.is_set():
            results.append(call(ch, HEALTH, b"", timeout=5)[0])

    ts = [threading.Thread(target=loop) for _ in range(8)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    import signal
    gsrv.srv.proc.send_signal(signal.SIGTERM)
    assert gsrv.srv.proc.wait(timeout=15) == 0
    time.sleep(0.3)
    stop.set()
    for t in ts:
        t.join(timeout=10)
    assert set(results) <= {"OK", "UNAVAILABLE"}
    assert results.count("OK") > 0 and results[-1] == "UNAVAILABLE"
