"""OTLP profiles from an encoder that is not ours: Python classes generated at test time by protoc
(Debian protobuf-compiler) from the repo's proto/otlp_*.proto (opentelemetry-proto v1.10.0's
wire), a small builder of ExportProfilesServiceRequests (dictionary tables with entry 0 the zero
value, as the OTel SDKs write them), a converter of a decoded pprof (pprof_decode.Profile) into
one OTLP profile per sample type (as the Collector's pprof translator does), and an OTLP/HTTP
client (protobuf or OTLP JSON: hex ids, lowerCamelCase, int64 as strings; gzip).

    pb = otlp_pb()
    b = Builder()
    b.sample(b.profile(...), stack=[b.loc(...)], value=3)
    r = post(srv.port, b.request(), codec="json", gzip=True)
    assert r.status == 200 and r.msg.partial_success.rejected_profiles == 0
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
from typing import Dict, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
PROTO_DIR = REPO / "proto"
PATH = "/v1development/profiles"

_pb = None


def otlp_pb():
    """The generated modules, once per session: .svc (collector service), .profiles, .common,
    .resource, .status (google.rpc.Status)."""
    global _pb
    if _pb is not None:
        return _pb
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.fail("protoc not installed (apt-get install protobuf-compiler python3-protobuf)")
    files = sorted(PROTO_DIR.glob("otlp_*.proto"))
    out = Path(tempfile.mkdtemp(prefix="otlp_pb_"))
    subprocess.run([protoc, "-I", str(PROTO_DIR), "--python_out", str(out)] + [str(f) for f in files],
                   check=True, capture_output=True)
    sys.path.insert(0, str(out))
    mods = {f.stem: importlib.import_module(f.stem + "_pb2") for f in files}
    _pb = types.SimpleNamespace(svc=mods["otlp_profiles_service"], profiles=mods["otlp_profiles"],
                                common=mods["otlp_common"], resource=mods["otlp_resource"],
                                status=mods["otlp_status"])
    return _pb


class Builder:
    """An ExportProfilesServiceRequest built table by table; every table starts with its zero
    entry. Strings, functions, mappings, locations, stacks, attributes and links are interned."""

    def __init__(self):
        pb = otlp_pb()
        self.pb = pb
        self.req = pb.svc.ExportProfilesServiceRequest()
        d = self.req.dictionary
        self.d = d
        d.string_table.append("")
        d.mapping_table.add()
        d.location_table.add()
        d.function_table.add()
        d.link_table.add()
        d.attribute_table.add()
        d.stack_table.add()
        self._str: Dict[str, int] = {"": 0}
        self._fn: Dict[tuple, int] = {}
        self._map: Dict[tuple, int] = {}
        self._loc: Dict[tuple, int] = {}
        self._stack: Dict[tuple, int] = {}
        self._attr: Dict[tuple, int] = {}
        self._link: Dict[tuple, int] = {}

    def s(self, v: str) -> int:
        if v not in self._str:
            self._str[v] = len(self.d.string_table)
            self.d.string_table.append(v)
        return self._str[v]

    def attr(self, key: str, value) -> int:
        k = (key, type(value).__name__, value)
        if k not in self._attr:
            a = self.d.attribute_table.add()
            a.key_strindex = self.s(key)
            if isinstance(value, bool):
                a.value.bool_value = value
            elif isinstance(value, int):
                a.value.int_value = value
            elif isinstance(value, float):
                a.value.double_value = value
            else:
                a.value.string_value = value
            self._attr[k] = len(self.d.attribute_table) - 1
        return self._attr[k]

    def function(self, name: str, filename: str = "", system_name: str = "", start_line: int = 0) -> int:
        k = (name, filename, system_name, start_line)
        if k not in self._fn:
            f = self.d.function_table.add()
            f.name_strindex = self.s(name)
            f.system_name_strindex = self.s(system_name)
            f.filename_strindex = self.s(filename)
            f.start_line = start_line
            self._fn[k] = len(self.d.function_table) - 1
        return self._fn[k]

    def mapping(self, filename: str, start: int = 0, limit: int = 0, offset: int = 0,
                build_id: Optional[str] = None) -> int:
        k = (filename, start, limit, offset, build_id)
        if k not in self._map:
            m = self.d.mapping_table.add()
            m.memory_start, m.memory_limit, m.file_offset = start, limit, offset
            m.filename_strindex = self.s(filename)
            if build_id is not None:
                m.attribute_indices.append(self.attr("process.executable.build_id.gnu", build_id))
            self._map[k] = len(self.d.mapping_table) - 1
        return self._map[k]

    def location(self, address: int = 0, mapping: int = 0, lines: Tuple = ()) -> int:
        """lines: ((function index, line, column), ...), innermost first."""
        k = (address, mapping, tuple(lines))
        if k not in self._loc:
            l = self.d.location_table.add()
            l.address = address
            l.mapping_index = mapping
            for fi, ln, col in lines:
                x = l.lines.add()
                x.function_index, x.line, x.column = fi, ln, col
            self._loc[k] = len(self.d.location_table) - 1
        return self._loc[k]

    def frame(self, name: str, filename: str = "", line: int = 0) -> int:
        """A symbolized location of one function."""
        return self.location(lines=((self.function(name, filename), line, 0),))

    def stack(self, locs: List[int]) -> int:
        k = tuple(locs)
        if k not in self._stack:
            self.d.stack_table.add().location_indices.extend(locs)
            self._stack[k] = len(self.d.stack_table) - 1
        return self._stack[k]

    def link(self, trace_id: bytes, span_id: bytes) -> int:
        k = (trace_id, span_id)
        if k not in self._link:
            l = self.d.link_table.add()
            l.trace_id, l.span_id = trace_id, span_id
            self._link[k] = len(self.d.link_table) - 1
        return self._link[k]

    def resource(self, attrs: Optional[Dict[str, object]] = None, scope_attrs: Optional[Dict[str, object]] = None):
        """A new ResourceProfiles with one scope; returns the scope (add profiles to it)."""
        rp = self.req.resource_profiles.add()
        for k, v in (attrs or {}).items():
            kv = rp.resource.attributes.add()
            kv.key = k
            _any(kv.value, v)
        sp = rp.scope_profiles.add()
        sp.scope.name = "profstore-tests"
        for k, v in (scope_attrs or {}).items():
            kv = sp.scope.attributes.add()
            kv.key = k
            _any(kv.value, v)
        return sp

    def profile(self, scope, sample_type: Tuple[str, str], period_type: Optional[Tuple[str, str]] = None,
                period: int = 0, time_ns: int = 0, duration_ns: int = 0):
        p = scope.profiles.add()
        p.sample_type.type_strindex = self.s(sample_type[0])
        p.sample_type.unit_strindex = self.s(sample_type[1])
        if period_type is not None:
            p.period_type.type_strindex = self.s(period_type[0])
            p.period_type.unit_strindex = self.s(period_type[1])
        p.period = period
        p.time_unix_nano = time_ns
        p.duration_nano = duration_ns
        return p

    def sample(self, profile, locs: List[int], value: Optional[int] = None, values: Optional[List[int]] = None,
               attrs: Optional[Dict[str, object]] = None, link: int = 0, timestamps: int = 0):
        s = profile.samples.add()
        s.stack_index = self.stack(locs)
        if values is not None:
            s.values.extend(values)
        elif value is not None:
            s.values.append(value)
        for k, v in (attrs or {}).items():
            s.attribute_indices.append(self.attr(k, v))
        s.link_index = link
        s.timestamps_unix_nano.extend(range(1, timestamps + 1))
        return s


def _any(av, v):
    if isinstance(v, bool):
        av.bool_value = v
    elif isinstance(v, int):
        av.int_value = v
    elif isinstance(v, float):
        av.double_value = v
    elif isinstance(v, list):
        for x in v:
            _any(av.array_value.values.add(), x)
    else:
        av.string_value = v


def from_pprof(b: Builder, scope, p, time_ns: int) -> None:
    """One OTLP profile per sample type of the decoded pprof p (pprof_decode.Profile), with its
    stacks, functions, mappings (build ids) and labels (string labels become sample attributes),
    as the Collector's pprof translator maps them."""
    fns = {f.id: f for f in p.function}
    maps = {m.id: m for m in p.mapping}
    locs = {l.id: l for l in p.location}
    loc_idx: Dict[int, int] = {}

    def mapping_of(mid):
        if mid == 0:
            return 0
        m = maps[mid]
        return b.mapping(p.s(m.filename), m.memory_start, m.memory_limit, m.file_offset,
                         p.s(m.build_id) if m.build_id else None)

    def loc_of(lid):
        if lid not in loc_idx:
            l = locs[lid]
            lines = tuple((b.function(p.s(fns[x.function_id].name), p.s(fns[x.function_id].filename),
                                      p.s(fns[x.function_id].system_name), fns[x.function_id].start_line)
                           if x.function_id else 0, x.line, x.column) for x in l.line)
            loc_idx[lid] = b.location(l.address, mapping_of(l.mapping_id), lines)
        return loc_idx[lid]

    pt = p.period_type_names()
    for ti, (t, u) in enumerate(p.type_names()):
        prof = b.profile(scope, (t, u), pt, p.period, time_ns, p.duration_nanos)
        for s in p.sample:
            attrs = {p.s(l.key): p.s(l.str) for l in s.label if l.str}
            b.sample(prof, [loc_of(x) for x in s.location_id], value=s.value[ti], attrs=attrs)


def to_json(msg) -> bytes:
    """OTLP JSON: protojson with lowerCamelCase names, then trace/span ids as hex."""
    from google.protobuf import json_format
    import base64
    d = json_format.MessageToDict(msg)

    def fix(o):
        if isinstance(o, dict):
            for k in list(o):
                if k in ("traceId", "spanId", "profileId") and isinstance(o[k], str):
                    o[k] = base64.b64decode(o[k]).hex()
                else:
                    fix(o[k])
        elif isinstance(o, list):
            for x in o:
                fix(x)
    fix(d)
    return json.dumps(d).encode()


class Result:
    def __init__(self, status, headers, body, msg=None, error=None):
        self.status, self.headers, self.body, self.msg, self.error = status, headers, body, msg, error

    def __repr__(self):
        return "Result(%d, msg=%r, error=%r)" % (self.status, self.msg, self.error)


def post_raw(port: int, body: bytes, content_type: str = "application/x-protobuf", gzip: bool = False,
             headers: Optional[Dict[str, str]] = None, timeout: float = 60.0) -> Result:
    """POSTs body to /v1development/profiles; decodes the answer by its Content-Type
    (ExportProfilesServiceResponse on 200, google.rpc.Status otherwise)."""
    pb = otlp_pb()
    h = {"Content-Type": content_type}
    if gzip:
        body = gzip_mod.compress(body)
        h["Content-Encoding"] = "gzip"
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", PATH, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
    finally:
        c.close()
    from google.protobuf import json_format
    ct = hdrs.get("content-type", "")
    msg_type = pb.svc.ExportProfilesServiceResponse if r.status == 200 else pb.status.Status
    m = msg_type()
    if ct == "application/json":
        json_format.Parse(data.decode(), m, ignore_unknown_fields=False)
    elif ct == "application/x-protobuf":
        m.ParseFromString(data)
    else:
        m = None
    return Result(r.status, hdrs, data, m if r.status == 200 else None, m if r.status != 200 else None)


def post(port: int, req, codec: str = "proto", gzip: bool = False, **kw) -> Result:
    if codec == "json":
        return post_raw(port, to_json(req), "application/json", gzip, **kw)
    return post_raw(port, req.SerializeToString(), "application/x-protobuf", gzip, **kw)
