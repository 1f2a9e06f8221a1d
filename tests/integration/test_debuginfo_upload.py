"""Pyroscope's debug-info upload service (debuginfo.v1alpha1.DebuginfoService), driven by Pyroscope's
own generated connect-go client (github.com/grafana/pyroscope/api PYROSCOPE_API) in the order and
shapes Grafana Alloy's pyroscope.ebpf uploader uses (debuginfo_goclient/main.go):
ShouldInitiateUpload, then the file as the raw (chunked) body of
POST /debuginfo.v1alpha1.DebuginfoService/Upload/<build id>, then UploadFinished.

A C program compiled here with gcc -g -O2, its debug file split off (objcopy --only-keep-debug) and
the binary stripped (test_symbols.Program); an unsymbolized OTLP profile of the stripped binary
reads as module+0xoffset until the debug file is uploaded, then its frames (functions, files,
lines, columns, inline chains) equal eu-addr2line -i -f -a's, in the pprof, the flame graph and
`go tool pprof -list`. Bad uploads (not ELF, truncated, another build id, over
--debuginfo.max-file-bytes, the store full, a duplicate, out of order) get exact answers and leave
nothing behind; a restart keeps the uploads."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import pprof_decode as pd
import test_symbols as ts
from conftest import _go_cache, go_pprof, require_tool

PYROSCOPE_API = "v1.6.0"  # github.com/grafana/pyroscope/api: debuginfo.v1alpha1 over HTTP/1.1 (Apr 2026)
UPLOAD = "/debuginfo.v1alpha1.DebuginfoService/Upload/"
FIRST = "First time we see this Build ID, therefore please upload!"
EXISTS = "Debuginfo already exists and is not marked as invalid, therefore no new upload is needed."
IN_PROGRESS = "A previous upload is still in-progress and not stale yet (only stale uploads can be retried)."


def _go_client() -> Path:
    """debuginfo_goclient/main.go built against Pyroscope's api module, once, outside the repository."""
    go = require_tool("go")
    src = Path(__file__).parent / "debuginfo_goclient" / "main.go"
    key = hashlib.sha256(src.read_bytes() + PYROSCOPE_API.encode()).hexdigest()[:16]
    d = Path(tempfile.gettempdir()) / ("profstore-debuginfo-goclient-" + key)
    if (d / "client").exists():
        return d / "client"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, d / "main.go")
    (d / "go.mod").write_text("module diclient\n\ngo 1.24\n")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", CGO_ENABLED="0", **_go_cache())
    r = subprocess.run([go, "get", "github.com/grafana/pyroscope/api@" + PYROSCOPE_API], cwd=d, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([go, "build", "-o", "client.new", "."], cwd=d, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    os.replace(d / "client.new", d / "client")
    return d / "client"


@pytest.fixture(scope="module")
def client():
    return _go_client()


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    return ts.Program(tmp_path_factory.mktemp("prog"))


@pytest.fixture(scope="module")
def prog2(tmp_path_factory):
    """A second program (another build id): its own source line."""
    d = tmp_path_factory.mktemp("prog2")
    src = d / "prog.c"
    src.write_text(ts.PROG.replace("return 0;", "return 1;"))
    exe = d / "prog2"
    ts.run("gcc", "-g", "-O2", "-o", str(exe), str(src))
    dbg = d / "prog2.debug"
    ts.run("objcopy", "--only-keep-debug", str(exe), str(dbg))
    bid = re.search(r"Build ID: ([0-9a-f]+)", ts.run("readelf", "-n", str(exe))).group(1)
    return dbg, bid


def di(client, srv, op, build_id="", file=None, name="prog", *more):
    args = [str(client), "-url", srv.url("").rstrip("/"), "-op", op]
    if build_id:
        args += ["-build-id", build_id]
    if file is not None:
        args += ["-file", str(file)]
    args += ["-name", name, *more]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def kept(srv):
    """The files under <data-dir>/debuginfo (relative paths; tmp/ included)."""
    root = srv.data_dir / "debuginfo"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    return files


def frames(srv, prog):
    return ts.stacks(pd.decode(ts.query(srv)))


def unsymbolized(prog):
    return {prog.proc_addr(a): "/opt/app/prog+%#x" % (prog.proc_addr(a) - prog.m_start + prog.m_offset)
            for a in prog.addrs}


def test_upload_then_symbolized_as_eu_addr2line(make_server, client, prog, tmp_path):
    srv = make_server()
    ts.push(srv, prog)
    assert frames(srv, prog) == unsymbolized(prog)
    # Alloy with strip_text_section uploads the --only-keep-debug file as TYPE_EXECUTABLE_NO_TEXT
    out = di(client, srv, "upload", prog.build_id, prog.debug, "prog", "-no-text")
    assert out == "should true %s\npost 200 \nfinished ok\n" % FIRST
    d = prog.build_id
    assert kept(srv) == [".build-id/%s/%s.debug" % (d[:2], d[2:]), ".build-id/%s/%s.meta" % (d[:2], d[2:])]
    assert (srv.data_dir / "debuginfo" / ".build-id" / d[:2] / (d[2:] + ".debug")).read_bytes() == \
        prog.debug.read_bytes()
    time.sleep(1.1)  # a build id with no file is looked at again after a second
    want = prog.addr2line()
    assert frames(srv, prog) == {prog.proc_addr(a): want[a] for a in prog.addrs}
    fg = json.loads(ts.query(srv, "flamegraph"))
    assert sorted(fg["names"]) == sorted({"total"} | {f[0] for v in want.values() for f in v})
    # go tool pprof -list: work's lines with eu-addr2line's samples
    f = tmp_path / "native.pb.gz"
    f.write_bytes(ts.query(srv))
    r = go_pprof(["-list", "^work$", "-symbolize=none", str(f)], tmp_path)
    assert "ROUTINE ======================== work in %s" % (prog.exe.parent / "prog.c") in r.stdout, r.stdout
    unit = json.loads(ts.query(srv, "top"))["total"] // len(prog.addrs)
    flat, cum, got_flat, got_cum = {}, {}, {}, {}
    for v in want.values():
        w = [fr for fr in v if fr[0] == "work"]
        if w:
            cum[w[0][2]] = cum.get(w[0][2], 0) + unit
            if v[0][0] == "work":
                flat[v[0][2]] = flat.get(v[0][2], 0) + unit
    units = {"ms": 10**6, "s": 10**9, "ns": 1, "us": 10**3}
    for line in r.stdout.splitlines():
        m = re.match(r"\s+(?:(\d+)(ms|s|ns|us)|\.)\s+(?:(\d+)(ms|s|ns|us)|\.)\s+(\d+):", line)
        if m and m.group(1):
            got_flat[int(m.group(5))] = int(m.group(1)) * units[m.group(2)]
        if m and m.group(3):
            got_cum[int(m.group(5))] = int(m.group(3)) * units[m.group(4)]
    assert (got_flat, got_cum) == (flat, cum), r.stdout
    # a second upload of the build id is declined, as Pyroscope declines it; the file stays
    assert di(client, srv, "upload", prog.build_id, prog.debug) == "should false %s\n" % EXISTS
    size = prog.debug.stat().st_size
    listing = "list %s name=prog type=TYPE_EXECUTABLE_NO_TEXT otel=otel-%s state=STATE_UPLOADED size=%d " \
              "started=true finished=true\n" % (d, d, size)
    assert di(client, srv, "list") == listing
    meta = srv.data_dir / "debuginfo" / ".build-id" / d[:2] / (d[2:] + ".meta")
    m = srv.metrics()
    assert (m["profstore_debuginfo_bytes"], m["profstore_debuginfo_files"], m["profstore_debuginfo_uploads_pending"]) \
        == (size + meta.stat().st_size, 1, 0)
    # a crash (SIGKILL right after the answers) keeps it: listed, declined, the frames symbolized
    srv.restart(kill=True)
    m = srv.metrics()
    assert (m["profstore_debuginfo_bytes"], m["profstore_debuginfo_files"]) == (size + meta.stat().st_size, 1)
    assert di(client, srv, "list") == listing
    assert di(client, srv, "should", prog.build_id) == "should false %s\n" % EXISTS
    assert frames(srv, prog) == {prog.proc_addr(a): want[a] for a in prog.addrs}
    # the status page's list names where the build id's file came from
    st, _, body = srv.get("/api/v1/status/symbols?state=all")
    assert st == 200, body
    got = [(e["buildId"], e["symbols"], e["source"]) for e in json.loads(body)["data"]["buildIds"]]
    assert got == [(d, "available", "upload")], got


def test_json_codec_and_delete(make_server, client, prog, prog2):
    """The same calls with connect-go's JSON codec; ListDebuginfo as protojson writes it; a pending
    upload is listed as uploading; DeleteDebuginfo removes the files (then it is a first time again)."""
    srv = make_server()
    dbg2, bid2 = prog2
    assert di(client, srv, "upload", bid2, dbg2, "prog2", "-json") == "should true %s\npost 200 \nfinished ok\n" % FIRST
    assert di(client, srv, "should", prog.build_id, None, "prog", "-json") == "should true %s\n" % FIRST
    assert di(client, srv, "should", prog.build_id, None, "prog", "-json") == "should false %s\n" % IN_PROGRESS
    st, hdrs, body = srv.request("POST", "/debuginfo.v1alpha1.DebuginfoService/ListDebuginfo", b"{}",
                                 {"Content-Type": "application/json"})
    assert st == 200 and hdrs["content-type"] == "application/json"
    objs = json.loads(body)["object"]
    ids = sorted([bid2, prog.build_id])
    assert [o["file"]["gnuBuildId"] for o in objs] == ids
    by = {o["file"]["gnuBuildId"]: o for o in objs}
    up = by[bid2]
    assert set(up) == {"file", "state", "startedAt", "finishedAt", "sizeBytes"}
    assert (up["file"], up["state"], up["sizeBytes"]) == (
        {"gnuBuildId": bid2, "otelFileId": "otel-" + bid2, "name": "prog2", "type": "TYPE_EXECUTABLE_FULL"},
        "STATE_UPLOADED", str(dbg2.stat().st_size))
    assert re.fullmatch(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3}|\.\d{6}|\.\d{9})?Z", up["startedAt"]), up
    pending = by[prog.build_id]  # STATE_UPLOADING is the zero value: not written
    assert set(pending) == {"file", "startedAt"}
    assert di(client, srv, "delete", bid2, None, "prog2", "-json") == "delete ok\n"
    assert di(client, srv, "delete", bid2) == "delete ok\n"  # nothing left: no error, as Pyroscope
    assert kept(srv) == []
    assert di(client, srv, "should", bid2, None, "prog2") == "should true %s\n" % FIRST


def test_bad_uploads(make_server, client, prog, prog2, tmp_path):
    srv = make_server(extra_args=["--debuginfo.max-file-bytes", str(prog.debug.stat().st_size + 100)])
    bid = prog.build_id
    dbg2, bid2 = prog2
    # out of order: no ShouldInitiateUpload first (Pyroscope's 412), UploadFinished of nothing
    assert di(client, srv, "post", bid, prog.debug) == "post 412 no pending upload for this build ID\n"
    assert di(client, srv, "finished", bid) == "finished error not_found no upload metadata found for build ID %s\n" % bid
    assert di(client, srv, "should", bid) == "should true %s\n" % FIRST
    assert di(client, srv, "finished", bid) == \
        "finished error failed_precondition no uploaded file found for build ID %s\n" % bid
    # not ELF
    notelf = tmp_path / "notelf"
    notelf.write_bytes(b"#!/bin/sh\necho hi\n")
    assert di(client, srv, "post", bid, notelf) == "post 400 not an ELF file (it does not start with \\x7fELF)\n"
    # truncated: its section header table (readelf -h) no longer in the file
    hdr = ts.run("readelf", "-h", str(prog.debug))
    shoff = int(re.search(r"Start of section headers:\s+(\d+)", hdr).group(1))
    shnum = int(re.search(r"Number of section headers:\s+(\d+)", hdr).group(1))
    shent = int(re.search(r"Size of section headers:\s+(\d+)", hdr).group(1))
    trunc = tmp_path / "trunc.debug"
    trunc.write_bytes(prog.debug.read_bytes()[:3000])
    assert di(client, srv, "post", bid, trunc) == \
        "post 400 truncated ELF file: its section header table ends at byte %d, the file has 3000 bytes\n" % (
            shoff + shnum * shent)
    # another program's debug file under this build id
    assert di(client, srv, "post", bid, dbg2) == \
        "post 400 the file's GNU build ID is %s, not %s (the build ID it is uploaded as)\n" % (bid2, bid)
    # a bad build id in the path
    assert di(client, srv, "post", "xyz", prog.debug) == "post 400 invalid gnu_build_id: invalid gnuBuildID \"xyz\"\n"
    # over --debuginfo.max-file-bytes
    big = tmp_path / "big.debug"
    big.write_bytes(prog.debug.read_bytes() + b"\0" * 101)
    assert di(client, srv, "post", bid, big) == "post 413 the file is %d bytes, more than --debuginfo.max-file-bytes " \
        "(%d bytes)\n" % (big.stat().st_size, prog.debug.stat().st_size + 100)
    # nothing kept by any of them; the pending upload still takes the right file
    assert kept(srv) == []
    assert di(client, srv, "post", bid, prog.debug) == "post 200 \n"
    assert di(client, srv, "finished", bid) == "finished ok\n"
    assert di(client, srv, "finished", bid) == "finished error failed_precondition upload is not in uploading state\n"
    # ShouldInitiateUpload that Pyroscope calls invalid, or declines
    for body, want in (
            (b'{"file":{"gnuBuildId":"abcd"}}', (400, "invalid_argument", "invalid request: init.File.Type(0) is not valid")),
            (b'{}', (400, "invalid_argument", "invalid request: init.File == nil")),
            (b'{"file":{"gnuBuildId":"ab-cd","type":"TYPE_EXECUTABLE_FULL"}}',
             (400, "invalid_argument", 'invalid request: invalid gnuBuildID "ab-cd"'))):
        st, _, data = srv.request("POST", "/debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload", body,
                                  {"Content-Type": "application/json"})
        assert (st, json.loads(data)["code"], json.loads(data)["message"]) == want, data
    st, _, data = srv.request("POST", "/debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload",
                              b'{"file":{"gnuBuildId":"","type":1}}', {"Content-Type": "application/json"})
    assert (st, json.loads(data)) == (200, {"reason": "Empty GNU build ID, therefore no upload is needed."})
    # the raw upload is POST only
    st, hdrs, data = srv.request("GET", UPLOAD + bid)
    assert (st, hdrs["allow"]) == (405, "POST")


def test_store_full(make_server, client, prog, prog2):
    dbg2, bid2 = prog2
    size = prog.debug.stat().st_size
    limit = size + 8192 + 1000  # room for one file and its metadata (8 KiB counted while it is written)
    srv = make_server(extra_args=["--debuginfo.max-bytes", str(limit)])
    assert di(client, srv, "upload", prog.build_id, prog.debug) == "should true %s\npost 200 \nfinished ok\n" % FIRST
    meta = srv.data_dir / "debuginfo" / ".build-id" / prog.build_id[:2] / (prog.build_id[2:] + ".meta")
    used = size + meta.stat().st_size
    assert di(client, srv, "upload", bid2, dbg2) == (
        "should true %s\npost 507 debug info store full: the file's %d bytes and the %d bytes kept are more than "
        "--debuginfo.max-bytes (%d bytes)\n" % (FIRST, dbg2.stat().st_size, used, limit))
    assert len(kept(srv)) == 2
    # once the kept files fill it, ShouldInitiateUpload answers resource_exhausted (Alloy retries later)
    srv.stop()
    s2 = make_server(name="full", data_dir=srv.data_dir, extra_args=["--debuginfo.max-bytes", str(used)])
    assert di(client, s2, "should", bid2) == \
        "should error resource_exhausted debug info store full: %d bytes kept, --debuginfo.max-bytes is %d bytes\n" % (
            used, used)
    assert di(client, s2, "should", prog.build_id) == "should false %s\n" % EXISTS


def test_write_scope(make_server, client, prog, tmp_path):
    """The service needs the write scope (ListDebuginfo: read), as the other write APIs."""
    tok = lambda t: hashlib.sha256(t.encode()).hexdigest()
    web = tmp_path / "web.yml"
    web.write_text("bearer_tokens:\n  - sha256: %s\n    scopes: [read]\n  - sha256: %s\n    scopes: [write]\n"
                   % (tok("tok-read"), tok("tok-write")))
    srv = make_server(web_config_file=str(web))
    assert di(client, srv, "should", prog.build_id, None, "prog", "-token", "tok-read") == (
        "should error permission_denied forbidden: this credential lacks the write scope that "
        "/debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload needs\n")
    assert di(client, srv, "should", prog.build_id, None, "prog", "-token", "tok-write") == "should true %s\n" % FIRST
    st, _, data = srv.request("POST", UPLOAD + prog.build_id, prog.debug.read_bytes(), {"Authorization": "Bearer tok-read"})
    assert (st, json.loads(data)["error"]) == (
        403, "forbidden: this credential lacks the write scope that %s%s needs" % (UPLOAD, prog.build_id))
    assert di(client, srv, "post", prog.build_id, prog.debug, "prog", "-token", "tok-write") == "post 200 \n"
    assert di(client, srv, "list", "", None, "prog", "-token", "tok-read").startswith("list %s " % prog.build_id)


def test_body_limits(make_server, client, prog, tmp_path):
    """A debug file larger than --max-body-size is taken up to --debuginfo.max-file-bytes; every
    other route still refuses a body over --max-body-size (413, before authentication)."""
    junk = tmp_path / "junk"
    junk.write_bytes(os.urandom(200_000))
    big = tmp_path / "big.debug"
    ts.run("objcopy", "--add-section", ".debug_pad=%s" % junk, str(prog.debug), str(big))
    size = big.stat().st_size
    srv = make_server(extra_args=["--max-body-size", "64KiB"])
    assert di(client, srv, "upload", prog.build_id, big) == "should true %s\npost 200 \nfinished ok\n" % FIRST
    d = prog.build_id
    assert (srv.data_dir / "debuginfo" / ".build-id" / d[:2] / (d[2:] + ".debug")).read_bytes() == big.read_bytes()
    for path in ("/api/v1/profiles/write", "/push.v1.PusherService/Push"):
        st, _, data = srv.request("POST", path, big.read_bytes())
        assert (st, json.loads(data)["error"]) == (
            413, "request body of %d bytes is larger than --max-body-size (65536 bytes)" % size), path


def test_upload_over_default_max_body(make_server, client, prog, tmp_path):
    """The defaults (--max-body-size 32MiB, --debuginfo.max-file-bytes 256MiB): a 40 MiB debug file
    is taken whole, while the same bytes to another route are refused at their Content-Length,
    before they are read (web/connguard.c)."""
    junk = tmp_path / "junk"
    junk.write_bytes(os.urandom(40 << 20))
    big = tmp_path / "big.debug"
    ts.run("objcopy", "--add-section", ".debug_pad=%s" % junk, str(prog.debug), str(big))
    size = big.stat().st_size
    assert size > 40 << 20
    srv = make_server()
    assert di(client, srv, "upload", prog.build_id, big) == "should true %s\npost 200 \nfinished ok\n" % FIRST
    d = prog.build_id
    assert (srv.data_dir / "debuginfo" / ".build-id" / d[:2] / (d[2:] + ".debug")).read_bytes() == big.read_bytes()
    st, _, data = srv.request("POST", "/api/v1/profiles/write", big.read_bytes())
    assert (st, json.loads(data)["error"]) == (
        413, "request body of %d bytes is larger than --max-body-size (33554432 bytes)" % size)
    assert srv.metrics()["profstore_http_body_too_large_total"] == 1


def test_agent_mode_refuses(make_server, client, prog, tmp_path):
    """--agent keeps no data: an upload is refused (the engine it forwards to symbolizes)."""
    cfg = tmp_path / "a.yml"
    cfg.write_text("forward:\n  - name: x\n    url: http://127.0.0.1:9\n    protocol: pyroscope_push\n")
    srv = make_server(config=str(cfg), extra_args=["--agent"])
    msg = ("agent mode: debug files are not kept (native frames are symbolized where profiles are read: upload "
           "them to the engine this profstore forwards to)")
    assert di(client, srv, "upload", prog.build_id, prog.debug) == "should error invalid_argument %s\n" % msg
    assert di(client, srv, "post", prog.build_id, prog.debug) == "post 400 %s\n" % msg
    assert kept(srv) == []
