"""docker/: the image, the compose stack and its configuration files, checked without Docker (none
runs on the test machines; docker build and compose up are not run here, README "Try the whole
stack" says so).

What is checked instead, each against the real thing where one exists here:
- compose.yml parses (PyYAML, and Debian's docker-compose 1.29 `config`: its compose schema, the
  paths resolved), names exactly its five services, every depends_on, build context,
  bind-mount source and named volume exists, every image tag is pinned;
- every host:port a file points at (Prometheus' targets and remote URLs, profstore's scrape
  targets, Grafana's data sources, the Node app's server, published ports, the HEALTHCHECK) is a
  compose service and a port that service listens on, by its own flags;
- every profstore flag in compose.yml and the Dockerfile is in the real `profstore --help`, and
  the real binary starts with compose's flags (paths moved to a temporary directory) and reports
  them in /api/v1/status/flags; every Prometheus flag is in the real `prometheus --help` (2.42);
- the Dockerfile's build stage runs scripts/install-deps.sh and the Makefile's cmake commands; its
  run stage installs a Debian package for every library the real binary links (readelf + dpkg);
- prometheus.yml passes the real `promtool check config`;
- Grafana's provisioning files parse, the dashboard refers to the provisioned data sources' uids
  and its queries are answered by a real profstore that scraped the real demo;
- the demo builds with the local Go offline (standard library only), and a real profstore with
  docker/profstore/profstore.yml (hosts moved to loopback) scrapes it; a real Prometheus with
  docker/prometheus/prometheus.yml (hosts moved to loopback, 1 s interval) scrapes its /metrics,
  remote-writes to profstore and reads profstore's profile totals back through remote_read;
- the Node app passes `node --check` and, with the real @pyroscope/nodejs 0.6.4 (npm, as
  test_pyroscope_nodejs.py installs it), pushes profiles that profstore stores, each one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest
import yaml

from conftest import PROFSTORE_BIN, REPO, form_request, free_port
from prom_util import Prometheus, prometheus_binary, promtool_binary
from pyro_util import connect_call, pyro_pb
from scrape_util import wait_for

DOCKER = REPO / "docker"
COMPOSE = DOCKER / "compose.yml"
SERVICES = {"profstore", "demo", "demo-node", "prometheus", "grafana"}
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
WALL = "wall:wall:nanoseconds:wall:nanoseconds:delta"
# what a scrape of the demo stores (block and mutex are off in docker/profstore/profstore.yml)
DEMO_TYPES = {"goroutine:goroutine:count:goroutine:count", "memory:alloc_objects:count:space:bytes:delta",
              "memory:alloc_space:bytes:space:bytes:delta", "memory:inuse_objects:count:space:bytes",
              "memory:inuse_space:bytes:space:bytes", CPU, "process_cpu:samples:count:cpu:nanoseconds:delta"}
NODE_TYPES = {"memory:inuse_objects:count:inuse_space:bytes", "memory:inuse_space:bytes:inuse_space:bytes",
              "wall:samples:count:wall:nanoseconds:delta", WALL}


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def flag_value(args: List[str], flag: str) -> str:
    """The value of --flag in an argument list, as `--flag v` or `--flag=v`."""
    for i, a in enumerate(args):
        if a == flag:
            return args[i + 1]
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    raise AssertionError("%s not in %r" % (flag, args))


def port_of(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


# ---- the Dockerfile, parsed ----------------------------------------------------------------------

def dockerfile_stages(path: Path) -> List[List[Tuple[str, str]]]:
    """Stages of a Dockerfile, each a list of (INSTRUCTION, argument), continuation lines joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    stages: List[List[Tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        ins, _, arg = line.partition(" ")
        ins = ins.upper()
        if ins == "FROM":
            stages.append([])
        stages[-1].append((ins, " ".join(arg.split())))
    return stages


def instr(stage, name: str) -> List[str]:
    return [a for i, a in stage if i == name]


def help_flags() -> Set[str]:
    out = subprocess.run([PROFSTORE_BIN, "--help"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    flags = set(re.findall(r"^\s+(--[a-z0-9.-]+)", out.stdout, re.M))
    assert "--listen" in flags and "--data-dir" in flags and "--web.enable-lifecycle" in flags
    return flags


# ---- compose -------------------------------------------------------------------------------------

def test_compose_services_and_references():
    c = compose()
    assert set(c["services"]) == SERVICES
    assert c["name"] == "profstore-demo"
    for name, s in c["services"].items():
        for dep in s.get("depends_on", {}):
            assert dep in SERVICES, (name, dep)
        assert "links" not in s
        if "build" in s:
            b = s["build"] if isinstance(s["build"], dict) else {"context": s["build"]}
            ctx = (DOCKER / b["context"]).resolve()
            assert ctx.is_dir(), (name, ctx)
            assert (ctx / b.get("dockerfile", "Dockerfile")).is_file(), (name, b)
        else:
            # a pinned release tag, never latest
            assert re.fullmatch(r"[a-z/]+:v?\d+\.\d+\.\d+", s["image"]), (name, s["image"])
        for v in s.get("volumes", []):
            src = v.split(":")[0]
            if src.startswith("."):
                assert (DOCKER / src).exists(), (name, src)
            else:
                assert src in c["volumes"], (name, src)
    assert {n: s.get("image") for n, s in c["services"].items() if "build" not in s} == {
        "prometheus": "prom/prometheus:v2.42.0", "grafana": "grafana/grafana:10.4.2"}
    assert {n: sorted(s.get("depends_on", {})) for n, s in c["services"].items()} == {
        "profstore": [], "demo": [], "demo-node": ["profstore"], "prometheus": ["demo", "profstore"],
        "grafana": ["profstore"]}
    # waiting for profstore means waiting for the image's HEALTHCHECK (/-/ready)
    for n in ("demo-node", "prometheus", "grafana"):
        assert c["services"][n]["depends_on"]["profstore"] == {"condition": "service_healthy"}
    assert set(c["volumes"]) == {"profstore-data", "prometheus-data"}
    # the Node image's Node satisfies the SDK's "engines" (the lockfile's record of it)
    lock = json.loads((DOCKER / "node" / "package-lock.json").read_text())
    sdk = lock["packages"]["node_modules/@pyroscope/nodejs"]
    assert sdk["version"] == json.loads((DOCKER / "node" / "package.json").read_text())["dependencies"][
        "@pyroscope/nodejs"] == "0.6.4"
    assert sdk["engines"]["node"] == ">=20.20.2"
    node_from = instr(dockerfile_stages(DOCKER / "node" / "Dockerfile")[0], "FROM")
    assert node_from == ["node:20.20.2-bookworm-slim"]


def test_compose_config_by_docker_compose(tmp_path):
    """Debian's docker-compose (1.29) validates the file against its compose schema and resolves
    the paths, with no Docker daemon. Its schema predates the top-level `name` (Compose v2 reads
    it), so that line is left out of what it is given."""
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    text = COMPOSE.read_text()
    assert text.count("\nname: profstore-demo\n") == 1
    r = subprocess.run(["docker-compose", "--project-directory", ".", "-f", "-", "config"], cwd=DOCKER,
                       input=text.replace("\nname: profstore-demo\n", "\n"), capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, DOCKER_HOST="unix://%s/no-docker.sock" % tmp_path))
    assert r.returncode == 0, r.stderr
    got = yaml.safe_load(r.stdout)
    svc = got["services"]
    assert set(svc) == SERVICES
    assert {n: s.get("build") for n, s in svc.items()} == {
        "profstore": {"context": str(REPO), "dockerfile": "docker/Dockerfile"},
        "demo": {"context": str(DOCKER / "demo")}, "demo-node": {"context": str(DOCKER / "node")},
        "prometheus": None, "grafana": None}
    assert {n: [(p["published"], p["target"]) for p in s.get("ports", [])] for n, s in svc.items()} == {
        "profstore": [(7070, 7070)], "demo": [(6060, 6060)], "demo-node": [], "prometheus": [(9090, 9090)],
        "grafana": [(3000, 3000)]}
    assert svc["profstore"]["volumes"] == [
        "profstore-data:/data:rw", "%s:/etc/profstore/profstore.yml:ro" % (DOCKER / "profstore" / "profstore.yml")]
    assert svc["grafana"]["volumes"] == [
        "%s:/etc/grafana/provisioning:ro" % (DOCKER / "grafana" / "provisioning"),
        "%s:/var/lib/grafana/dashboards:ro" % (DOCKER / "grafana" / "dashboards")]


def listening_ports(c: dict) -> Dict[str, Set[int]]:
    """The ports each service listens on, by its own flags (defaults where compose sets none)."""
    s = c["services"]
    grafana_env = s["grafana"]["environment"]
    assert "GF_SERVER_HTTP_PORT" not in grafana_env  # Grafana's default, 3000
    demo_default = re.search(r'flag\.String\("addr", "(:\d+)"', (DOCKER / "demo" / "main.go").read_text()).group(1)
    return {
        "profstore": {port_of(flag_value(s["profstore"]["command"], "--listen"))},
        "demo": {port_of(flag_value(s["demo"]["command"], "-addr")), port_of(demo_default)},
        "prometheus": {port_of(flag_value(s["prometheus"]["command"], "--web.listen-address"))},
        "grafana": {3000},
        "demo-node": set(),
    }


def references(c: dict) -> List[Tuple[str, str, int]]:
    """Every (where, host, port) the stack's files point at."""
    refs: List[Tuple[str, str, int]] = []

    def url(where: str, u: str):
        p = urllib.parse.urlsplit(u)
        refs.append((where, p.hostname, p.port))

    prom = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    for job in prom["scrape_configs"]:
        for sc in job["static_configs"]:
            for t in sc["targets"]:
                refs.append(("prometheus.yml job " + job["job_name"], t.split(":")[0], port_of(t)))
    for kind in ("remote_write", "remote_read"):
        for r in prom[kind]:
            url("prometheus.yml " + kind, r["url"])
    ps = yaml.safe_load((DOCKER / "profstore" / "profstore.yml").read_text())
    for job in ps["scrape_configs"]:
        for sc in job["static_configs"]:
            for t in sc["targets"]:
                refs.append(("profstore.yml job " + job["job_name"], t.split(":")[0], port_of(t)))
    ds = yaml.safe_load((DOCKER / "grafana" / "provisioning" / "datasources" / "profstore.yml").read_text())
    for d in ds["datasources"]:
        url("datasource " + d["uid"], d["url"])
    url("demo-node env", c["services"]["demo-node"]["environment"]["PYROSCOPE_SERVER_ADDRESS"])
    default = re.search(r"PYROSCOPE_SERVER_ADDRESS \|\| '([^']+)'", (DOCKER / "node" / "index.js").read_text())
    url("index.js default", default.group(1))
    for name, s in c["services"].items():
        for p in s.get("ports", []):
            host, _, container = p.rpartition(":")
            assert host == container, (name, p)  # published as itself: the README's URLs
            refs.append(("ports of " + name, name, int(container)))
    run = dockerfile_stages(DOCKER / "Dockerfile")[-1]
    hc = instr(run, "HEALTHCHECK")[0]
    url("HEALTHCHECK", re.search(r"(http://\S+)", hc).group(1).replace("127.0.0.1", "profstore"))
    for e in instr(run, "EXPOSE"):
        refs.append(("EXPOSE", "profstore", int(e)))
    for e in instr(dockerfile_stages(DOCKER / "demo" / "Dockerfile")[-1], "EXPOSE"):
        refs.append(("demo EXPOSE", "demo", int(e)))
    return refs


def test_every_reference_is_a_service_port():
    c = compose()
    ports = listening_ports(c)
    assert ports == {"profstore": {7070}, "demo": {6060}, "prometheus": {9090}, "grafana": {3000},
                     "demo-node": set()}
    refs = references(c)
    for where, host, port in refs:
        assert host in SERVICES, (where, host)
        assert port in ports[host], (where, host, port, ports[host])
    assert sorted(refs) == sorted([
        ("prometheus.yml job demo", "demo", 6060), ("prometheus.yml job profstore", "profstore", 7070),
        ("prometheus.yml remote_write", "profstore", 7070), ("prometheus.yml remote_read", "profstore", 7070),
        ("profstore.yml job demo", "demo", 6060),
        ("datasource profstore-prometheus", "profstore", 7070),
        ("datasource profstore-pyroscope", "profstore", 7070),
        ("demo-node env", "profstore", 7070), ("index.js default", "profstore", 7070),
        ("ports of profstore", "profstore", 7070), ("ports of demo", "demo", 6060),
        ("ports of prometheus", "prometheus", 9090), ("ports of grafana", "grafana", 3000),
        ("HEALTHCHECK", "profstore", 7070), ("EXPOSE", "profstore", 7070), ("demo EXPOSE", "demo", 6060),
    ])


# ---- flags ---------------------------------------------------------------------------------------

def test_profstore_flags_exist_and_start_the_real_binary(make_server, tmp_path):
    flags = help_flags()
    cmd = compose()["services"]["profstore"]["command"]
    run = dockerfile_stages(DOCKER / "Dockerfile")[-1]
    cmd_default = json.loads(instr(run, "CMD")[0])
    used = [a.split("=")[0] for a in cmd + cmd_default if a.startswith("--")]
    assert sorted(set(used)) == ["--config", "--data-dir", "--listen", "--retention", "--web.enable-lifecycle"]
    for f in used:
        assert f in flags, f
    assert json.loads(instr(run, "ENTRYPOINT")[0]) == ["/usr/local/bin/profstore"]
    assert cmd_default == ["--listen", "0.0.0.0:7070", "--data-dir", "/data"]
    assert flag_value(cmd, "--data-dir") == "/data"
    assert flag_value(cmd, "--listen") == "0.0.0.0:7070"
    # compose's profstore.yml mount is what --config names
    mounts = dict(v.split(":")[:2] for v in compose()["services"]["profstore"]["volumes"])
    assert mounts["./profstore/profstore.yml"] == flag_value(cmd, "--config")
    assert mounts["profstore-data"] == "/data"

    # the real binary with compose's flags; listen, data dir and config moved here
    conf = tmp_path / "profstore.yml"
    conf.write_text((DOCKER / "profstore" / "profstore.yml").read_text())
    rest, i = [], 0
    while i < len(cmd):
        if cmd[i] in ("--listen", "--data-dir"):
            i += 2
            continue
        if cmd[i] == "--config":
            rest += ["--config", str(conf)]
            i += 2
            continue
        rest.append(cmd[i])
        i += 1
    srv = make_server(admin=False, extra_args=rest)
    got = srv.get_json("/api/v1/status/flags")["data"]
    assert (got["retention"], got["config"], got["web.enable-lifecycle"]) == ("1w", str(conf), "true")  # Prometheus writes 7d as 1w
    st, _, body = srv.get("/-/ready")
    assert st == 200
    # the target is there (it is down: no demo here, and `demo` does not resolve)
    t = srv.get_json("/api/v1/targets")["data"]["activeTargets"]
    assert sorted(x["profileName"] for x in t) == ["goroutine", "memory", "process_cpu"]
    assert {x["labels"]["instance"] for x in t} == {"demo:6060"}


def test_prometheus_flags_and_promtool_check_config():
    binary = prometheus_binary()
    promtool = promtool_binary()
    h = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    known = set(re.findall(r"^\s+(--[a-z0-9.-]+)", h.stdout + h.stderr, re.M))
    cmd = compose()["services"]["prometheus"]["command"]
    used = [a.split("=")[0] for a in cmd]
    assert used == ["--config.file", "--storage.tsdb.path", "--web.listen-address"]
    for f in used:
        assert f in known, f
    v = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    assert re.search(r"prometheus, version 2\.42\.0", v.stdout + v.stderr)
    mounts = dict(m.split(":")[:2] for m in compose()["services"]["prometheus"]["volumes"])
    assert mounts["./prometheus/prometheus.yml"] == flag_value(cmd, "--config.file")
    assert mounts["prometheus-data"] == flag_value(cmd, "--storage.tsdb.path")
    r = subprocess.run([promtool, "check", "config", str(DOCKER / "prometheus" / "prometheus.yml")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " SUCCESS: %s is valid prometheus config file syntax" % (DOCKER / "prometheus" / "prometheus.yml") \
        in r.stdout.splitlines()


# ---- the Dockerfile ------------------------------------------------------------------------------

def makefile_commands() -> List[str]:
    """The Makefile's cmake commands for $(BUILD), its variables put in as a shell would see them."""
    text = (REPO / "Makefile").read_text()
    var = {k: v.strip() for k, v in re.findall(r"^([A-Z_]+)\s*\?=\s*(.*)$", text, re.M)}
    assert var["BUILD"] == "build" and var["JOBS"] == "$(shell nproc)"
    out = []
    for line in re.findall(r"^\t(cmake .*)$", text, re.M):
        if "$(BUILD)" not in line:
            continue
        out.append(line.replace("$(BUILD)", var["BUILD"]).replace("$(JOBS)", '"$(nproc)"'))
    return out


def shell_words(s: str) -> List[List[str]]:
    """A RUN line split into its commands (at &&), each as words."""
    return [shlex.split(part) for part in s.split("&&")]


def test_dockerfile_builds_as_make_does():
    stages = dockerfile_stages(DOCKER / "Dockerfile")
    assert len(stages) == 2
    build, run = stages
    assert instr(build, "FROM") == ["debian:12-slim AS build"]
    assert instr(run, "FROM") == ["debian:12-slim"]
    cmds = [w for r in instr(build, "RUN") for w in shell_words(r)]
    # make's `deps` target is scripts/install-deps.sh; the image leaves out the test packages
    assert re.search(r"^deps:\n\t@scripts/install-deps\.sh$", (REPO / "Makefile").read_text(), re.M)
    assert cmds[0] == ["scripts/install-deps.sh", "--build"]
    assert cmds[1:] == [shlex.split(c) for c in makefile_commands()] == [
        ["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
        ["cmake", "--build", "build", "-j", "$(nproc)"]]
    # CI runs `make test`, whose build is that of `make build`
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("exec make test")
    # --build installs a part of what make installs: the same packages, fewer of them
    script = (REPO / "scripts" / "install-deps.sh").read_text()
    lists = {k: set(v.split()) for k, v in re.findall(r'^([A-Z_]+_PKGS)="([^"]*)"', script, re.M)}
    assert set(lists) == {"BUILD_PKGS", "TEST_PKGS"}
    assert {"build-essential", "cmake", "re2c", "protobuf-c-compiler", "libcmocka-dev", "python3"} <= lists["BUILD_PKGS"]
    assert not lists["BUILD_PKGS"] & lists["TEST_PKGS"]
    assert 'PKGS="$BUILD_PKGS $TEST_PKGS"' in script and 'PKGS="$BUILD_PKGS"' in script
    # the script and what it reads (the UI's lockfile, for fetch-ui-deps.sh) before the rest
    assert instr(build, "COPY") == ["scripts/ scripts/", "web/ui/package.json web/ui/package-lock.json web/ui/", ". ."]
    assert [i for i, _ in build].index("RUN") > [i for i, _ in build].index("COPY")
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    for p in ("build", "build-*", "data", "web/ui/node_modules"):
        assert p in ignore  # a host's build tree or data must not enter the image


def test_dockerfile_run_stage():
    run = dockerfile_stages(DOCKER / "Dockerfile")[-1]
    apt = [w for r in instr(run, "RUN") for w in shell_words(r) if w[:1] == ["DEBIAN_FRONTEND=noninteractive"]]
    assert len(apt) == 1 and apt[0][1:5] == ["apt-get", "install", "-y", "--no-install-recommends"]
    pkgs = apt[0][5:]
    assert pkgs == ["libh2o-evloop0.13", "libprotobuf-c1", "libsnappy1v5", "zlib1g", "libdeflate0", "liblmdb0", "libzstd1",
                    "libpcre2-8-0", "libyaml-0-2", "libcurl4", "libjansson4", "libcrypt1", "libssl3", "libnghttp2-14", "libdw1", "libelf1",
                    "libdebuginfod1", "libstdc++6", "ca-certificates", "curl"]
    # each is a Debian 12 package (this machine is Debian 12 and has them all, through the -dev ones)
    for p in pkgs:
        st = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        assert st.stdout == "install ok installed", p
    # every library the real binary links comes from one of them, or libc6 (in the base image)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        subprocess.run(["readelf", "-d", PROFSTORE_BIN], capture_output=True, text=True).stdout)
    assert "libh2o-evloop.so.0.13" in needed and "liblmdb.so.0" in needed
    # the package of each, in this machine's multiarch directory (libc6-i386 has a /lib32/libc.so.6)
    arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    owners = {}
    for lib in needed:
        out = subprocess.run(["dpkg", "-S", "*/%s/%s" % (arch, lib)], capture_output=True, text=True).stdout
        owners[lib] = {line.split(":")[0] for line in out.splitlines() if line.endswith("/%s/%s" % (arch, lib))}
    assert owners == {
        "libcrypt.so.1": {"libcrypt1"}, "libcurl.so.4": {"libcurl4"}, "libyaml-0.so.2": {"libyaml-0-2"},
        "liblmdb.so.0": {"liblmdb0"}, "libzstd.so.1": {"libzstd1"}, "libdeflate.so.0": {"libdeflate0"}, "libjansson.so.4": {"libjansson4"}, "libprotobuf-c.so.1": {"libprotobuf-c1"},
        "libz.so.1": {"zlib1g"}, "libsnappy.so.1": {"libsnappy1v5"}, "libpcre2-8.so.0": {"libpcre2-8-0"},
        "libm.so.6": {"libc6"}, "libh2o-evloop.so.0.13": {"libh2o-evloop0.13"}, "libssl.so.3": {"libssl3"},
        "libcrypto.so.3": {"libssl3"}, "libc.so.6": {"libc6"}, "libnghttp2.so.14": {"libnghttp2-14"},
        "libdw.so.1": {"libdw1"}, "libelf.so.1": {"libelf1"}, "libdebuginfod.so.1": {"libdebuginfod1"},
        "libstdc++.so.6": {"libstdc++6"}}
    assert set().union(*owners.values()) - {"libc6"} <= set(pkgs)
    assert instr(run, "USER") == ["profstore"]
    assert any("useradd --system --uid 10001" in r for r in instr(run, "RUN"))
    assert any("chown profstore:profstore /data" in r for r in instr(run, "RUN"))
    assert instr(run, "VOLUME") == ["/data"]
    assert instr(run, "EXPOSE") == ["7070"]
    assert instr(run, "COPY") == ["--from=build /src/build/profstore /usr/local/bin/profstore"]
    hc = instr(run, "HEALTHCHECK")
    assert len(hc) == 1 and hc[0].endswith("CMD curl -fsS -o /dev/null http://127.0.0.1:7070/-/ready || exit 1")


# ---- Grafana -------------------------------------------------------------------------------------

def grafana_files():
    ds = yaml.safe_load((DOCKER / "grafana" / "provisioning" / "datasources" / "profstore.yml").read_text())
    prov = yaml.safe_load((DOCKER / "grafana" / "provisioning" / "dashboards" / "profstore.yml").read_text())
    dash = json.loads((DOCKER / "grafana" / "dashboards" / "profstore.json").read_text())
    return ds, prov, dash


def dashboard_queries(dash) -> Dict[str, dict]:
    return {p["title"]: p["targets"][0] for p in dash["panels"]}


def panel_range(srv, target: dict, start: float, end: float) -> List[dict]:
    """A time series panel's query as Grafana's Prometheus data source sends it (httpMethod POST:
    a form body)."""
    st, _, body = form_request(srv, "POST", "/api/v1/query_range",
                               {"query": target["expr"], "start": start, "end": end, "step": 5})
    assert st == 200, body[:300]
    return json.loads(body)["data"]["result"]


def panel_flamegraph(srv, target: dict, start: float, end: float) -> dict:
    """A flame graph panel's query as Grafana's Pyroscope data source sends it: the type listed by
    ProfileTypes, then SelectMergeStacktraces (binary protobuf over Connect, max_nodes 16384)."""
    pb = pyro_pb()
    q = "querier.v1.QuerierService/"
    ms = lambda t: int(t * 1000)
    r = connect_call(srv.port, q + "ProfileTypes", pb.querier.ProfileTypesRequest(start=ms(start), end=ms(end)),
                     resp_type=pb.querier.ProfileTypesResponse)
    assert r.status == 200, r.error
    assert target["profileTypeId"] in [t.ID for t in r.msg.profile_types]
    req = pb.querier.SelectMergeStacktracesRequest(profile_typeID=target["profileTypeId"],
                                                   label_selector=target["labelSelector"], start=ms(start),
                                                   end=ms(end), max_nodes=16384)
    r = connect_call(srv.port, q + "SelectMergeStacktraces", req, resp_type=pb.querier.SelectMergeStacktracesResponse)
    assert r.status == 200, r.error
    fg = r.msg.flamegraph
    assert fg.names[0] == "total" and fg.total > 0
    return {"names": list(fg.names), "total": fg.total}


def test_grafana_provisioning():
    ds, prov, dash = grafana_files()
    assert ds["apiVersion"] == 1 and prov["apiVersion"] == 1
    uids = {d["uid"]: d["type"] for d in ds["datasources"]}
    assert uids == {"profstore-prometheus": "prometheus", "profstore-pyroscope": "grafana-pyroscope-datasource"}
    assert [d["uid"] for d in ds["datasources"] if d.get("isDefault")] == ["profstore-prometheus"]
    # the provider's path is where compose mounts docker/grafana/dashboards, and so is the home dashboard
    g = compose()["services"]["grafana"]
    mounts = dict(m.split(":")[:2] for m in g["volumes"])
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    assert [p["options"]["path"] for p in prov["providers"]] == [mounts["./grafana/dashboards"]]
    home = g["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home.startswith(mounts["./grafana/dashboards"] + "/")
    assert (DOCKER / "grafana" / "dashboards" / home.rsplit("/", 1)[1]).is_file()
    # every panel and query names a provisioned data source by uid, with its type
    assert [p["type"] for p in dash["panels"]] == ["timeseries", "flamegraph", "flamegraph"]
    for p in dash["panels"]:
        for d in [p["datasource"]] + [t["datasource"] for t in p["targets"]]:
            assert uids[d["uid"]] == d["type"], p["title"]
    assert len({p["id"] for p in dash["panels"]}) == 3
    q = list(dashboard_queries(dash).values())
    assert q[0]["expr"] == "sum by (instance) (sum_over_time(%s[1m])) / 60e9" % CPU
    assert [(t["queryType"], t["profileTypeId"], t["labelSelector"]) for t in q[1:]] == [
        ("profile", CPU, '{service_name="demo-go"}'), ("profile", WALL, '{service_name="demo-node"}')]


# ---- the demo, scraped by profstore and Prometheus -----------------------------------------------

@pytest.fixture(scope="module")
def demo_binary(tmp_path_factory) -> Path:
    if shutil.which("go") is None:
        pytest.skip("go is not installed (apt-get install golang-go)")
    out = tmp_path_factory.mktemp("demo") / "demo"
    gocache = Path(tempfile.gettempdir()) / "profstore-gocache"
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", CGO_ENABLED="0", GOCACHE=str(gocache))
    r = subprocess.run(["go", "build", "-trimpath", "-o", str(out), "."], cwd=DOCKER / "demo", env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    fmt = subprocess.run(["gofmt", "-l", "."], cwd=DOCKER / "demo", capture_output=True, text=True)
    assert fmt.stdout == "", fmt.stdout
    vet = subprocess.run(["go", "vet", "."], cwd=DOCKER / "demo", env=env, capture_output=True, text=True,
                         timeout=300)
    assert vet.returncode == 0, vet.stderr
    return out


def get(url: str) -> Tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read()


def test_demo_scraped_by_profstore_and_prometheus(demo_binary, make_server, tmp_path):
    port = free_port()
    log = open(tmp_path / "demo.log", "wb")
    demo = subprocess.Popen([str(demo_binary), "-addr", "127.0.0.1:%d" % port], stdout=log, stderr=log)
    prom = None
    try:
        addr = "127.0.0.1:%d" % port
        wait_for(lambda: _ok(addr), 10, "the demo's /healthz")
        st, body = get("http://%s/metrics" % addr)
        names = [ln.split()[0] for ln in body.decode().splitlines() if not ln.startswith("#")]
        assert names == ["demo_hashed_blocks_total", "demo_sorts_total", "demo_allocated_bytes_total"]
        # -busy outside (0, 10ms] is refused
        bad = subprocess.run([str(demo_binary), "-busy", "11ms"], capture_output=True, text=True, timeout=10)
        assert bad.returncode == 1 and "-busy 11ms: must be in (0, 10ms]" in bad.stderr

        conf = tmp_path / "profstore.yml"
        conf.write_text((DOCKER / "profstore" / "profstore.yml").read_text().replace("demo:6060", addr))
        srv = make_server(config=str(conf), retention="0")
        cpu_up = lambda: [t for t in srv.get_json("/api/v1/targets")["data"]["activeTargets"]
                          if t["profileName"] == "process_cpu" and t["health"] == "up"]
        wait_for(cpu_up, 40, "the demo's first CPU profile")  # a 10 s profile, then stored
        wait_for(lambda: CPU in _types(srv), 10, "the CPU profile stored")
        wait_for(lambda: _types(srv) == DEMO_TYPES, 20, "every profile type of the demo")
        series = [s for s in srv.series() if s["labels"]["__name__"] == CPU]
        assert len(series) == 1
        assert series[0]["labels"] == {"__name__": CPU, "instance": addr, "job": "demo",
                                       "service_name": "demo-go", "stack": "docker-demo"}

        # the dashboard's queries, as Grafana sends them, against what was scraped
        _, _, dash = grafana_files()
        q = list(dashboard_queries(dash).values())
        now = time.time()
        r = panel_range(srv, q[0], now - 120, now + 5)
        assert [s["metric"] for s in r] == [{"instance": addr}]
        cores = max(float(v) for _, v in r[0]["values"])
        assert 0 < cores < 1.5  # -busy 3ms of each 10 ms: about a third of a core
        fg = panel_flamegraph(srv, q[1], now - 600, now + 5)
        assert "main.hashBlocks" in fg["names"] and "main.sortInts" in fg["names"]
        # the same total as profstore's own API for the same selection (= go tool pprof's)
        ours = srv.get_json("/api/v1/profiles/query?" + urllib.parse.urlencode(
            {"query": q[1]["profileTypeId"] + q[1]["labelSelector"], "start": now - 600, "end": now + 5,
             "format": "flamegraph"}))
        assert ours.get("data", ours)["total"] == fg["total"]

        # Prometheus with the stack's prometheus.yml: hosts on loopback, 1 s so the test is short
        text = (DOCKER / "prometheus" / "prometheus.yml").read_text()
        text = text.replace("demo:6060", addr).replace("profstore:7070", "127.0.0.1:%d" % srv.port)
        text = text.replace("scrape_interval: 15s", "scrape_interval: 1s")
        assert "demo:" not in text and "profstore:" not in text
        prom = Prometheus(tmp_path / "prom", _Text(text)).start()
        wait_for(lambda: _float_value(srv, 'demo_sorts_total{job="demo"}') > 0, 40,
                 "demo_sorts_total remote-written to profstore")
        # up{job="demo"}: Prometheus' (remote-written, no profile label) beside profstore's own per
        # profile scraped (README "Scrape series")
        m = srv.get_json("/api/v1/series?" + urllib.parse.urlencode({"match[]": 'up{job="demo"}'}))["data"]
        ours = {"instance": addr, "job": "demo", "service_name": "demo-go", "stack": "docker-demo"}
        assert sorted(m, key=lambda x: x.get("profile", "")) == [{"__name__": "up", "instance": addr, "job": "demo"}] + [
            dict(ours, __name__="up", profile=p) for p in ("goroutine", "memory", "process_cpu")]
        # remote_read: profstore's profile totals, which only profstore has, through Prometheus' PromQL.
        # A CPU profile started before `now` may be stored meanwhile (it takes 10 s): compared when
        # profstore's own answer did not change around Prometheus' (make test failed on it once)
        totals = lambda: [(s["metric"], s["value"]) for s in srv.get_json("/api/v1/query?" + urllib.parse.urlencode(
            {"query": "sum_over_time(%s[10m])" % CPU, "time": now}))["data"]["result"]]
        for _ in range(5):
            want = totals()
            got = prom.query("sum_over_time(%s[10m])" % CPU, now)["data"]["result"]
            if totals() == want:
                break
            time.sleep(2)
        assert [(s["metric"], s["value"]) for s in got] == want
        assert len(got) == 1 and got[0]["metric"]["job"] == "demo"
    finally:
        if prom is not None:
            prom.stop()
        demo.terminate()
        demo.wait(10)
        log.close()


class _Text:
    """A prometheus.yml given as text, for prom_util.Prometheus."""

    def __init__(self, text: str):
        self._text = text

    def text(self, own_address: str) -> str:
        return self._text


def _ok(addr: str) -> bool:
    try:
        return get("http://%s/healthz" % addr) == (200, b"ok\n")
    except OSError:
        return False


def _types(srv) -> Set[str]:
    return {t["id"] for t in srv.get_json("/api/v1/profiles/types")["data"]}


def _float_value(srv, expr: str) -> float:
    r = srv.get_json("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["data"]["result"]
    return float(r[0]["value"][1]) if r else 0.0


# ---- the Node app --------------------------------------------------------------------------------

def test_node_app_pushes_to_profstore(make_server, tmp_path):
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    r = subprocess.run(["node", "--check", str(DOCKER / "node" / "index.js")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    from test_pyroscope_nodejs import install_sdk  # the SDK in its scratch dir, outside the repo
    mods = install_sdk("0.6.4")
    srv = make_server(retention="0")
    env = dict(os.environ, NODE_PATH=str(mods), PYROSCOPE_SERVER_ADDRESS=srv.url("").rstrip("/"),
               DURATION_MS="11000", FLUSH_MS="5000")
    env.pop("PYROSCOPE_ADHOC_SERVER_ADDRESS", None)  # it would override the configured server
    p = subprocess.run(["node", str(DOCKER / "node" / "index.js")], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=90)
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 0, p.stdout + p.stderr
    assert lines[0] == "demo-node: pushing to %s/ingest every 5000 ms as demo-node" % srv.url("").rstrip("/")
    m = re.fullmatch(r"demo-node: uploads ok=(\d+) failed=0", lines[-1])
    assert m, lines[-1]
    ok = int(m.group(1))
    assert lines.count("demo-node: upload 200") == ok
    mine = {s["labels"]["__name__"]: s for s in srv.series() if s["labels"].get("service_name") == "demo-node"}
    assert set(mine) == NODE_TYPES
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip().lstrip("v")
    for t, s in mine.items():
        assert s["labels"] == {"__name__": t, "service_name": "demo-node", "env": "demo", "pyroscope_spy": "nodespy",
                               "otel_scope_name": "com.grafana.pyroscope/nodejs", "otel_scope_version": "0.6.4",
                               "process_runtime_name": "nodejs", "process_runtime_version": node_version}
    walls = len(mine[WALL]["profiles"])
    heaps = len(mine["memory:inuse_space:bytes:inuse_space:bytes"]["profiles"])
    assert walls + heaps == ok  # every upload acknowledged is stored, once
    # the dashboard's wall-clock flame graph panel
    _, _, dash = grafana_files()
    q = list(dashboard_queries(dash).values())[2]
    now = time.time()
    fg = panel_flamegraph(srv, q, now - 600, now + 5)
    assert any("demoParse" in n for n in fg["names"]) and any("demoHash" in n for n in fg["names"])
