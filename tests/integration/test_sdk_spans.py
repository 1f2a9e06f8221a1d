"""Span profiles from the real Pyroscope SDKs: CPU samples labelled with the OpenTelemetry span that
was running (span_id, span_name, trace_id), as Grafana's "traces to profiles" needs them.

- the Go SDK: tests/spanapp (pyroscope-go v1.5.0 + otel-profiling-go v0.7.0 + the OpenTelemetry
  Go SDK v1.47.0, pinned by its go.mod/go.sum), built once per run into a temporary folder against
  the Go module proxy, pushes to `/ingest` (multipart pprof);
- the Python SDK: sdk_spans_workload.py in the venv of scripts/install-pysdk.sh (pyroscope-io
  1.4.0 + pyroscope-otel 1.1.0, pinned; `$PS_PYSDK_DIR`, default <tmp>/profstore-pysdk; the test
  installs it when missing), pushes to Connect `push.v1.PusherService/Push` (gzip'd protobuf).

Each program works 1.5 s of CPU inside each of two root spans and prints their ids. Checked: the
series arrive under the SDK's series labels; the pprof that profstore's own profile API serves
(`/api/v1/profiles/query?format=pprof`, read by `go tool pprof -raw`/`-tags` and by
pprof_decode.py) has, on every sample, the span_id, span_name and trace_id of the span that ran it,
exactly the ids the program printed, and each span's samples are in its own work function. The
captured uploads of tests/testdata/pyroscope/{go-1.5.0-otel,python-1.4.0-otel} (README there)
replayed byte for byte give the exact per-span totals of the README. The tests are skipped only when
the Go module proxy or PyPI cannot be reached.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import pprof_decode as pd
from conftest import REPO, TESTDATA, _go_cache, go_pprof, require_tool
from pyro_util import connect_call
from scrape_util import wait_for

SPANAPP_SRC = REPO / "tests" / "spanapp"
WORKLOAD = Path(__file__).resolve().parent / "sdk_spans_workload.py"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
SAMPLES = "process_cpu:samples:count:cpu:nanoseconds:delta"
NET_ERRORS = ("dial tcp", "no such host", "connection refused", "i/o timeout", "Temporary failure in name resolution",
              "Failed to establish a new connection", "Network is unreachable", "ConnectTimeoutError")
# the work function of each span (Go, Python)
WORK_FN = {"hash-span": ("main.hashWork", "hash_work"), "sort-span": ("main.sortWork", "sort_work")}
SPAN_LINE = re.compile(r"^span (\S+) ([0-9a-f]{16}) ([0-9a-f]{32})$")

_cache: Dict[str, str] = {}


def spanapp_binary() -> str:
    """tests/spanapp built once per process into a temporary folder (go.sum pins every module)."""
    if "bin" in _cache:
        return _cache["bin"]
    go = require_tool("go")
    d = tempfile.mkdtemp(prefix="spanapp-")
    out = os.path.join(d, "spanapp")
    env = dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly", **_go_cache())
    r = subprocess.run([go, "build", "-trimpath", "-o", out, "."], cwd=SPANAPP_SRC, env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        if any(e in r.stderr for e in NET_ERRORS):
            pytest.skip("Go module proxy unreachable, tests/spanapp's modules not downloaded: " + r.stderr[-300:])
        raise AssertionError("go build of tests/spanapp failed:\n" + r.stdout + r.stderr)
    _cache["bin"] = out
    return out


def pysdk_python() -> str:
    """The venv's python with the pinned Python SDK (scripts/install-pysdk.sh, run when needed)."""
    if "py" in _cache:
        return _cache["py"]
    d = os.environ.get("PS_PYSDK_DIR") or os.path.join(tempfile.gettempdir(), "profstore-pysdk")
    r = subprocess.run([str(REPO / "scripts" / "install-pysdk.sh"), d], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if any(e in r.stdout + r.stderr for e in NET_ERRORS):
            pytest.skip("PyPI unreachable, the Python SDK not installed: " + (r.stdout + r.stderr)[-300:])
        raise AssertionError("scripts/install-pysdk.sh failed:\n" + r.stdout + r.stderr)
    _cache["py"] = os.path.join(d, "bin", "python")
    return _cache["py"]


def parse_spans(out: str) -> Dict[str, Tuple[str, str]]:
    """{span name: (span id, trace id)} from the program's output, which must end with "pushed"."""
    lines = out.strip().splitlines()
    assert lines and lines[-1] == "pushed", out
    spans = {}
    for ln in lines[:-1]:
        m = SPAN_LINE.match(ln)
        assert m, ln
        spans[m.group(1)] = (m.group(2), m.group(3))
    assert sorted(spans) == ["hash-span", "sort-span"], out
    return spans


def download(srv, query: str, start: int, end: int, path: Path) -> pd.Profile:
    """profstore's merged pprof of query over [start, end] (seconds), saved at path and decoded."""
    q = urllib.parse.urlencode({"query": query, "start": str(start), "end": str(end), "format": "pprof"})
    st, hdrs, body = srv.get("/api/v1/profiles/query?" + q, timeout=30)
    assert st == 200, body[:300]
    path.write_bytes(body)
    return pd.decode(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)


def per_span(p: pd.Profile) -> Dict[str, dict]:
    """span id -> {"name", "trace", "value" (sum of the last sample type), "samples", "funcs"
    (every function name of its samples' stacks)}. A sample without span_id (the runtime's own work,
    outside any span: GC, the scheduler) must not be in a span's work function."""
    st = p.string_table
    fname = {f.id: st[f.name] for f in p.function}
    loc_funcs = {loc.id: [fname[ln.function_id] for ln in loc.line] for loc in p.location}
    out: Dict[str, dict] = {}
    for s in p.sample:
        lab = {st[lb.key]: st[lb.str] for lb in s.label}
        if "span_id" not in lab:
            funcs = {f for lid in s.location_id for f in loc_funcs[lid]}
            work = {fn for fns in WORK_FN.values() for fn in fns}
            assert not funcs & work, ("a span's work without span_id", lab, sorted(funcs))
            continue
        d = out.setdefault(lab["span_id"], {"name": lab.get("span_name"), "trace": lab.get("trace_id"), "value": 0,
                                            "samples": 0, "funcs": set()})
        assert (d["name"], d["trace"]) == (lab.get("span_name"), lab.get("trace_id")), lab
        d["value"] += s.value[-1]
        d["samples"] += 1
        for lid in s.location_id:
            d["funcs"].update(loc_funcs[lid])
    return out


def check_spans(got: Dict[str, dict], spans: Dict[str, Tuple[str, str]], lang: int) -> None:
    """Every span's samples: its own name and trace id, its own work function and not the other's."""
    assert sorted(got) == sorted(sid for sid, _ in spans.values()), (got.keys(), spans)
    for name, (sid, trace) in spans.items():
        g = got[sid]
        assert (g["name"], g["trace"]) == (name, trace), (name, g)
        other = [fns[lang] for n, fns in WORK_FN.items() if n != name][0]
        assert WORK_FN[name][lang] in g["funcs"] and other not in g["funcs"], (name, sorted(g["funcs"]))
        assert g["value"] > 0, g


def pprof_tags(path: Path, tmp_path: Path) -> Dict[str, List[str]]:
    """`go tool pprof -tags`: tag name -> its values, in pprof's order."""
    out = go_pprof(["-tags", str(path)], tmp_path).stdout
    tags: Dict[str, List[str]] = {}
    cur = None
    for ln in out.splitlines():
        m = re.match(r"^ (\S+): Total ", ln)
        if m:
            cur = tags.setdefault(m.group(1), [])
            continue
        m = re.match(r"^\s+\S+ \(\s*[\d.]+%\): (\S+)$", ln)
        if m and cur is not None:
            cur.append(m.group(1))
    return tags


def raw_labels(path: Path, tmp_path: Path) -> Counter:
    """`go tool pprof -raw`: how many samples carry each label line."""
    out = go_pprof(["-raw", str(path)], tmp_path).stdout
    return Counter(ln.strip() for ln in out.splitlines() if ln.strip().startswith("span_id:"))


def check_pprof_tools(path: Path, tmp_path: Path, got: Dict[str, dict]) -> None:
    tags = pprof_tags(path, tmp_path)
    by_value = sorted(got, key=lambda s: (-got[s]["value"], s))
    assert sorted(tags["span_id"]) == sorted(got), tags
    assert sorted(tags["span_name"]) == sorted(g["name"] for g in got.values()), tags
    assert sorted(tags["trace_id"]) == sorted(g["trace"] for g in got.values()), tags
    assert tags["span_id"][0] == by_value[0] or got[by_value[0]]["value"] == got[by_value[1]]["value"], (tags, got)
    raw = raw_labels(path, tmp_path)
    assert raw == Counter({"span_id:[%s] span_name:[%s] trace_id:[%s]" % (sid, g["name"], g["trace"]): g["samples"]
                           for sid, g in got.items()}), raw


def sdk_series(srv, service: str) -> Dict[str, dict]:
    return {s["labels"]["__name__"]: s["labels"] for s in srv.series() if s["labels"].get("service_name") == service}


def test_go_sdk_span_profiles(make_server, tmp_path):
    binary = spanapp_binary()
    srv = make_server(retention="0")
    t0 = int(time.time())
    env = dict(os.environ)
    env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)  # it would override ServerAddress
    r = subprocess.run([binary, "-server", srv.url("").rstrip("/"), "-app", "spanapp"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    spans = parse_spans(r.stdout)
    series = wait_for(lambda: (lambda t: t if set(t) == {CPU, SAMPLES} else None)(sdk_series(srv, "spanapp")), 20,
                      "spanapp's two types")
    labels = dict(series[CPU])
    assert re.fullmatch(r"[0-9a-f]{16}", labels.pop("__session_id__")), series
    assert labels == {"__name__": CPU, "env": "test", "otel_scope_name": "com.grafana.pyroscope/go",
                      "otel_scope_version": "v1.5.0", "process_runtime_name": "go",
                      "process_runtime_version": labels["process_runtime_version"], "pyroscope_spy": "gospy",
                      "service_name": "spanapp"}, labels
    assert labels["process_runtime_version"].startswith("go1."), labels
    path = tmp_path / "go-spans.pb.gz"
    p = download(srv, '%s{service_name="spanapp"}' % CPU, t0 - 60, int(time.time()) + 60, path)
    got = per_span(p)
    check_spans(got, spans, 0)
    check_pprof_tools(path, tmp_path, got)
    # the samples:count type has the same samples: 1 per 10 ms of cpu
    pc = per_span(download(srv, '%s{service_name="spanapp"}' % SAMPLES, t0 - 60, int(time.time()) + 60,
                           tmp_path / "go-count.pb.gz"))
    assert {s: g["value"] * 10000000 for s, g in pc.items()} == {s: g["value"] for s, g in got.items()}


def test_python_sdk_span_profiles(make_server, tmp_path):
    python = pysdk_python()
    srv = make_server(retention="0")
    t0 = int(time.time())
    app = tmp_path / "sdkapp"
    app.mkdir()
    shutil.copy(WORKLOAD, app / WORKLOAD.name)
    env = dict(os.environ, SERVER_URL=srv.url("").rstrip("/"), APP_NAME="pyspanapp", WORK_S="1.5")
    env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)
    r = subprocess.run([python, WORKLOAD.name], cwd=app, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    spans = parse_spans(r.stdout)
    series = wait_for(lambda: (lambda t: t if set(t) == {CPU} else None)(sdk_series(srv, "pyspanapp")), 20,
                      "pyspanapp's type")
    labels = series[CPU]
    assert labels == {"__name__": CPU, "env": "test", "otel_scope_name": "com.grafana.pyroscope/python",
                      "otel_scope_version": "1.4.0", "process_runtime_name": "cpython",
                      "process_runtime_version": "%d.%d.%d" % tuple(map(int, subprocess.run(
                          [python, "-c", "import sys; print(*sys.version_info[:3])"], capture_output=True,
                          text=True).stdout.split())),
                      "service_name": "pyspanapp"}, labels
    path = tmp_path / "py-spans.pb.gz"
    got = per_span(download(srv, '%s{service_name="pyspanapp"}' % CPU, t0 - 60, int(time.time()) + 60, path))
    check_spans(got, spans, 1)
    check_pprof_tools(path, tmp_path, got)


def fixture_bytes(rel: str) -> bytes:
    return (TESTDATA / rel).read_bytes()


def fixture_spans(rel: str) -> Dict[str, Tuple[str, str]]:
    return parse_spans(fixture_bytes(rel).decode())


def test_captured_uploads_replayed(make_server, tmp_path):
    """The captured uploads (tests/testdata/pyroscope/*-otel) sent again byte for byte: the README's
    exact per-span totals come back from profstore's pprof."""
    srv = make_server(retention="0")
    # Go: POST /ingest with the captured query string and multipart body
    for n in ("01", "02"):
        head = fixture_bytes("pyroscope/go-1.5.0-otel/ingest-%s.txt" % n).decode()
        target = head.split(" ")[1]
        ctype = re.search(r"^Content-Type: (.+)$", head, re.M).group(1)
        st, _, body = srv.request("POST", target, body=fixture_bytes("pyroscope/go-1.5.0-otel/ingest-%s.bin" % n),
                                  headers={"Content-Type": ctype})
        assert st == 200, body
    # Python: the Connect push, gzip'd as sent
    r = connect_call(srv.port, "push.v1.PusherService/Push", None, body=fixture_bytes(
        "pyroscope/python-1.4.0-otel/push-01.bin"), headers={"Content-Encoding": "gzip"})
    assert r.status == 200, r
    start, end = 1796447600, 1796447800  # the captures' times (README)
    go = per_span(download(srv, '%s{service_name="spanapp"}' % CPU, start, end, tmp_path / "go.pb.gz"))
    spans = fixture_spans("pyroscope/go-1.5.0-otel/spans.txt")
    check_spans(go, spans, 0)
    assert {g["name"]: g["value"] for g in go.values()} == {"hash-span": 1260000000, "sort-span": 1180000000}
    assert spans["hash-span"][0] == "9745267709bcb68e" and spans["sort-span"][0] == "41eb6c031de36281"
    py = per_span(download(srv, '%s{service_name="pyspanapp"}' % CPU, start, end, tmp_path / "py.pb.gz"))
    spans = fixture_spans("pyroscope/python-1.4.0-otel/spans.txt")
    check_spans(py, spans, 1)
    assert {g["name"]: (g["value"], g["samples"]) for g in py.values()} == {
        "hash-span": (1430000000, 2), "sort-span": (1470000000, 2)}
    assert spans["hash-span"][0] == "97a4b09891e03361" and spans["sort-span"][0] == "56a9473155d6282a"
    check_pprof_tools(tmp_path / "py.pb.gz", tmp_path, py)
