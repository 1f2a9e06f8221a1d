"""Pyroscope's Connect API from an encoder that is not ours: Python classes generated at test time by
protoc (Debian protobuf-compiler) from the repo's proto/pyroscope_*.proto (push.v1, querier.v1,
types.v1, google.v1), and a Connect unary client over http.client.

    from pyro_util import pyro_pb, connect_call
    pb = pyro_pb()                       # generated once per session: pb.push, pb.types, pb.querier, ...
    req = pb.push.PushRequest()
    r = connect_call(srv.port, "push.v1.PusherService/Push", req, codec="json", gzip=True,
                     resp_type=pb.push.PushResponse)
    assert r.status == 200, r.error      # r.msg: the decoded answer; r.error: the Connect error JSON
"""

import gzip as gzip_mod
import http.client
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Dict, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
PROTO_DIR = REPO / "proto"

_pb = None


def pyro_pb():
    """The generated modules, once per session: .types (types.v1), .push (push.v1), and .querier,
    .google when their .proto files exist; also by file stem (pb.mods["pyroscope_push"])."""
    global _pb
    if _pb is not None:
        return _pb
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.skip("protoc not installed (apt-get install protobuf-compiler python3-protobuf)")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        pytest.skip("python3-protobuf not installed")
    files = sorted(PROTO_DIR.glob("pyroscope_*.proto"))
    out = Path(tempfile.mkdtemp(prefix="pyro_pb_"))
    subprocess.run([protoc, "-I", str(PROTO_DIR), "--python_out", str(out)] + [str(f) for f in files],
                   check=True, capture_output=True)
    sys.path.insert(0, str(out))
    mods = {f.stem: importlib.import_module(f.stem + "_pb2") for f in files}
    ns = types.SimpleNamespace(mods=mods, dir=out)
    for stem, m in mods.items():
        setattr(ns, stem[len("pyroscope_"):], m)
    _pb = ns
    return ns


@pytest.fixture(scope="session")
def pyro():
    return pyro_pb()


class ConnectResult:
    def __init__(self, status: int, headers: Dict[str, str], body: bytes, msg=None, error=None):
        self.status = status
        self.headers = headers
        self.body = body      # as received (inflated if the answer was gzipped)
        self.msg = msg        # the decoded answer (resp_type given, status 200)
        self.error = error    # the Connect error JSON (non-200), as a dict

    def __repr__(self):
        return "ConnectResult(%d, %r)" % (self.status, self.error if self.error is not None else self.body[:200])


def cpu_push_request(raw: bytes, service: str = "p"):
    """A push.v1.PushRequest of one series {__name__="process_cpu", service_name=service} with
    one sample, raw (a pprof profile)."""
    req = pyro_pb().push.PushRequest()
    s = req.series.add()
    for k, v in (("__name__", "process_cpu"), ("service_name", service)):
        lp = s.labels.add()
        lp.name, lp.value = k, v
    s.samples.add().raw_profile = raw
    return req


def encode(msg, codec: str) -> bytes:
    if codec == "json":
        from google.protobuf import json_format
        return json_format.MessageToJson(msg, indent=None).encode()
    return msg.SerializeToString()


def connect_call(port: int, service_method: str, msg, codec: str = "proto", gzip: bool = False,
                 resp_type=None, headers: Optional[Dict[str, str]] = None, body: Optional[bytes] = None,
                 accept_gzip: bool = False, method: str = "POST", timeout: float = 30.0) -> ConnectResult:
    """One Connect unary call: POST /<service_method> with msg encoded by codec ('proto' or 'json'),
    gzipped when gzip, Connect-Protocol-Version: 1. body replaces the encoded msg (raw bytes, still
    gzipped when gzip). headers are added last (and may override)."""
    data = body if body is not None else encode(msg, codec)
    hdrs = {"Content-Type": "application/json" if codec == "json" else "application/proto",
            "Connect-Protocol-Version": "1", "Connection": "close"}
    if gzip:
        data = gzip_mod.compress(data)
        hdrs["Content-Encoding"] = "gzip"
    if accept_gzip:
        hdrs["Accept-Encoding"] = "gzip"
    hdrs.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        try:
            conn.request(method, "/" + service_method.lstrip("/"), body=data, headers=hdrs)
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = conn.getresponse()
        raw = resp.read()
        rh = {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()
    if rh.get("content-encoding") == "gzip":
        raw = gzip_mod.decompress(raw)
    if resp.status != 200:
        try:
            err = json.loads(raw)
        except ValueError:
            err = {"code": None, "message": raw.decode(errors="replace")}
        return ConnectResult(resp.status, rh, raw, error=err)
    out = None
    if resp_type is not None:
        if codec == "json":
            from google.protobuf import json_format
            out = json_format.Parse(raw, resp_type())
        else:
            out = resp_type()
            out.ParseFromString(raw)
    return ConnectResult(resp.status, rh, raw, msg=out)
