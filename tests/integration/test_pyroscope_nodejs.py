"""The real @pyroscope/nodejs SDK, versions 0.6.4 (raw pprof bodies) and 0.4.13 (multipart), profiling
a Node workload (pyroscope_workload.js) and pushing to profstore's /ingest for ~12 s, both at once.
The SDKs are installed with npm into a scratch directory outside the repo (kept between runs in
$PS_NPM_DIR, default <tmp>/profstore-npm); the test is skipped, saying why, only when npm or the
registry cannot be reached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SDKS = {"0.6.4": "nodeapp064", "0.4.13": "nodeapp0413"}
WALL_TYPES = {"wall:samples:count:wall:nanoseconds:delta", "wall:wall:nanoseconds:wall:nanoseconds:delta"}
HEAP_TYPES = {"memory:inuse_objects:count:inuse_space:bytes", "memory:inuse_space:bytes:inuse_space:bytes"}
WALL_CPU_TYPE = "wall:cpu:nanoseconds:wall:nanoseconds:delta"
NET_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "ENETUNREACH", "network")


def install_sdk(version: str) -> Path:
    """node_modules dir with @pyroscope/nodejs@version (installed once per scratch dir)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not installed: cannot install @pyroscope/nodejs")
    base = Path(os.environ.get("PS_NPM_DIR") or (Path(tempfile.gettempdir()) / "profstore-npm"))
    d = base / ("pyroscope-nodejs-" + version)
    pkg = d / "node_modules" / "@pyroscope" / "nodejs" / "package.json"
    if pkg.exists() and json.loads(pkg.read_text()).get("version") == version:
        return d / "node_modules"
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "init", "-y"], cwd=d, capture_output=True, timeout=60)
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "@pyroscope/nodejs@" + version], cwd=d,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        out = r.stdout + r.stderr
        if any(e in out for e in NET_ERRORS):
            pytest.skip("npm registry unreachable, @pyroscope/nodejs@%s not installed: %s" % (version, out[-300:]))
        raise AssertionError("npm install @pyroscope/nodejs@%s failed:\n%s" % (version, out[-2000:]))
    return d / "node_modules"


def flame_names(srv, sel: str) -> list:
    now = int(time.time())
    q = urllib.parse.urlencode({"query": sel, "start": str(now - 600), "end": str(now + 60), "format": "flamegraph"})
    js = srv.get_json("/api/v1/profiles/query?" + q)
    fg = js["data"] if "data" in js else js
    assert fg["total"] > 0, fg
    return fg["names"]


def test_nodejs_sdks_push_to_ingest(make_server, tmp_path):
    mods = {v: install_sdk(v) for v in SDKS}
    srv = make_server(retention="0")
    procs = {}
    for v, app in SDKS.items():
        env = dict(os.environ, NODE_PATH=str(mods[v]), SERVER_URL=srv.url(""), APP_NAME=app, DURATION_MS="12000",
                   FLUSH_MS="5000", COLLECT_CPU="1" if v == "0.6.4" else "0")
        env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)  # it would override SERVER_URL
        procs[v] = subprocess.Popen(["node", str(HERE / "pyroscope_workload.js")], cwd=tmp_path, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    outs = {}
    for v, p in procs.items():
        out, _ = p.communicate(timeout=90)
        outs[v] = out
        assert p.returncode == 0, (v, out[-2000:])
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip().lstrip("v")
    series = srv.series()
    for v, app in SDKS.items():
        last = outs[v].strip().splitlines()[-1]
        ok = int(last.split("ok=")[1].split()[0])
        mine = {s["labels"]["__name__"]: s for s in series if s["labels"].get("service_name") == app}
        want = WALL_TYPES | HEAP_TYPES | ({WALL_CPU_TYPE} if v == "0.6.4" else set())
        assert set(mine) == want, (v, sorted(mine))
        labels = {"service_name": app, "env": "test", "pyroscope_spy": "nodespy"}
        if v == "0.6.4":
            labels.update(otel_scope_name="com.grafana.pyroscope/nodejs", otel_scope_version="0.6.4",
                          process_runtime_name="nodejs", process_runtime_version=node_version)
        for t, s in mine.items():
            assert s["labels"] == dict(labels, __name__=t), (v, s["labels"])
        walls = len(mine["wall:wall:nanoseconds:wall:nanoseconds:delta"]["profiles"])
        heaps = len(mine["memory:inuse_space:bytes:inuse_space:bytes"]["profiles"])
        assert walls + heaps == ok, (v, walls, heaps, last)  # every upload acknowledged is stored
        for t in want:
            assert len(mine[t]["profiles"]) == (heaps if t in HEAP_TYPES else walls)
        names = flame_names(srv, 'wall:wall:nanoseconds:wall:nanoseconds:delta{service_name="%s"}' % app)
        assert any("psWorkloadSort" in n for n in names), (v, names[:80])
        assert any("psWorkloadHash" in n for n in names), (v, names[:80])
        names = flame_names(srv, 'memory:inuse_space:bytes:inuse_space:bytes{service_name="%s"}' % app)
        assert any("psWorkloadAlloc" in n for n in names), (v, names[:80])


def test_nodejs_sdk_with_credentials(make_server, tmp_path):
    """The SDK (0.6.4) against a profstore with a web config (--web.config.file): its authToken
    (a bearer token with the write scope) and its basicAuthUser/basicAuthPassword push; a wrong token
    gets 401 on every upload and stores nothing."""
    import base64
    import hashlib
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated (3.11), but Debian's, and libxcrypt's bcrypt
        import crypt
    mods = install_sdk("0.6.4")
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users:\n  sdk: %s\nbearer_tokens:\n  - sha256: %s\n    scopes: [write]\n" % (
        crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4)),
        hashlib.sha256(b"push-token").hexdigest()))
    srv = make_server(retention="0", web_config_file=web)
    runs = {"nodetoken": {"AUTH_TOKEN": "push-token"}, "nodebasic": {"BASIC_USER": "sdk", "BASIC_PASSWORD": "s3cret"},
            "nodewrong": {"AUTH_TOKEN": "not-the-token"}}
    procs = {}
    for app, creds in runs.items():
        env = dict(os.environ, NODE_PATH=str(mods), SERVER_URL=srv.url(""), APP_NAME=app, DURATION_MS="5000",
                   FLUSH_MS="2000", **creds)
        env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)
        procs[app] = subprocess.Popen(["node", str(HERE / "pyroscope_workload.js")], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    last = {}
    for app, p in procs.items():
        out, _ = p.communicate(timeout=90)
        last[app] = out.strip().splitlines()[-1]
        assert p.returncode == (2 if app == "nodewrong" else 0), (app, out[-2000:])
    statuses = json.loads(last["nodewrong"].split("statuses=")[1])
    assert statuses and set(statuses) == {401}, last["nodewrong"]
    # what was stored, asked as the user (the token has only the write scope)
    st, _, body = srv.request("GET", "/api/v1/series?" + urllib.parse.urlencode({"match[]": '{service_name=~"node.*"}'}),
                              headers={"Authorization": "Basic " + base64.b64encode(b"sdk:s3cret").decode()})
    assert st == 200, body
    stored = {}
    for s in json.loads(body)["data"]:
        stored.setdefault(s["service_name"], set()).add(s["__name__"])
    assert stored == {"nodetoken": WALL_TYPES | HEAP_TYPES, "nodebasic": WALL_TYPES | HEAP_TYPES}, stored
