"""The OpenTelemetry Collector as a client of profstore (tests/otelcol: the Collector v0.165.0's own
otlp receiver, otlp_grpc and otlp_http exporters and contrib's bearertokenauth extension, built by
scripts/install-otelcol.sh into $PS_OTELCOL_DIR or <tmp>/profstore-otelcol; the test builds it when
missing and fails when it cannot), run with --feature-gates=service.profilesSupport: OTLP profiles
built by our Python classes go into the Collector's otlp receiver (gRPC and OTLP/HTTP), the Collector
exports them to profstore over gRPC (h2c with an Authorization header, TLS with a bearer token from
bearertokenauth) and over OTLP/HTTP, with its default gzip; each profstore stores exactly what a
direct push of the same requests stores (series, totals, stacks per service), acknowledged before
the Collector's receiver answers; partial_success and refusals reach the Collector and its client."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import pprof_decode as pd
from conftest import fixture_bytes, free_port, require_tool
from otlp_util import Builder, from_pprof, otlp_pb, post
from proc_util import ChildProcess
from test_grpc import _certs, _web_yml
from test_otlp_http import CPU, SPAN, T0, TRACE, cpu_request, frames, labels, sample_labels, stored

REPO = Path(__file__).resolve().parents[2]
GATE = "service.profilesSupport"  # an alpha gate at v0.165.0: a profiles pipeline needs it
EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"


def otelcol_bin():
    """DIR/otelcol of scripts/install-otelcol.sh (run here: it does nothing when DIR holds this build)."""
    require_tool("go")
    d = os.environ.get("PS_OTELCOL_DIR") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "profstore-otelcol")
    r = subprocess.run([str(REPO / "scripts" / "install-otelcol.sh"), d], capture_output=True, text=True,
                       timeout=1200)
    if r.returncode != 0:
        raise AssertionError("scripts/install-otelcol.sh failed:\n" + r.stdout + r.stderr)
    return os.path.join(d, "otelcol")


class Collector(ChildProcess):
    """The Collector with a config written from a dict (JSON is YAML), its log in workdir."""

    def __init__(self, workdir: Path, exporters: dict, extensions: dict = None, gate: bool = True):
        self.workdir = workdir
        self.grpc_port, self.http_port = free_port(), free_port()
        cfg = {
            "receivers": {"otlp": {"protocols": {
                "grpc": {"endpoint": "127.0.0.1:%d" % self.grpc_port},
                "http": {"endpoint": "127.0.0.1:%d" % self.http_port}}}},
            "exporters": exporters,
            "extensions": extensions or {},
            "service": {
                "extensions": sorted(extensions or {}),
                # no :8888 listener; every log line (zap samples repeats: past 10 a message in 10 s)
                "telemetry": {"metrics": {"level": "none"}, "logs": {"sampling": {"enabled": False}}},
                "pipelines": {"profiles": {"receivers": ["otlp"], "exporters": sorted(exporters)}}},
        }
        self.config = workdir / "collector.yaml"
        self.config.write_text(json.dumps(cfg, indent=1))
        self.log_path = workdir / "collector.log"
        args = [otelcol_bin(), "--config=" + str(self.config)]
        if gate:
            args.append("--feature-gates=" + GATE)
        self._logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.track()

    def log(self):
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout=None):
        super().stop(timeout)
        self._logf.close()

    def wait_ready(self, timeout=120):
        deadline = time.monotonic() + timeout
        while "Everything is ready" not in self.log():
            assert self.proc.poll() is None, "the Collector exited %s:\n%s" % (self.proc.returncode, self.log())
            assert time.monotonic() < deadline, "the Collector not ready:\n" + self.log()
            time.sleep(0.05)
        return self

    def export_grpc(self, req):
        """ExportProfilesServiceResponse of the Collector's gRPC receiver (grpcio)."""
        import grpc
        ch = grpc.insecure_channel("127.0.0.1:%d" % self.grpc_port)
        try:
            raw = ch.unary_unary(EXPORT)(req.SerializeToString(), timeout=30)
        finally:
            ch.close()
        return otlp_pb().svc.ExportProfilesServiceResponse.FromString(raw)


def _exporter(endpoint, **kw):
    """An exporter that answers the receiver only once profstore answered it: no queue, no retries."""
    e = {"endpoint": endpoint, "sending_queue": {"enabled": False}, "retry_on_failure": {"enabled": False},
         "timeout": "20s"}
    e.update(kw)
    return e


def _fixture_request():
    """go/heap-01.pb.gz as four OTLP profiles (one per sample type) of service 'fixture'."""
    b = Builder()
    sc = b.resource({"service.name": "fixture", "host.name": "node-2"})
    from_pprof(b, sc, pd.decode(fixture_bytes("go/heap-01.pb.gz")), T0 + 10**9)
    return b


def _shape(profs):
    return [(p.type_names(), p.period_type_names(), p.period, p.time_nanos, p.duration_nanos,
             sorted((frames(p, s), s.value, sample_labels(p, s)) for s in p.sample),
             pd.canonical(p, 0)) for p in profs]


def test_collector_exports_what_the_direct_push_stores(make_server, tmp_path):
    """One Collector, four exporters to four profstores: otlp_grpc over h2c (the token in
    `headers`), otlp_grpc over TLS (bearertokenauth; the CA in tls.ca_file), otlp_http (bearertokenauth
    over plain HTTP), gzip on these three (the exporters' default); otlp_http with the Collector's
    OTLP JSON, uncompressed. The CPU request goes into the
    Collector's gRPC receiver, the heap fixture into its OTLP/HTTP receiver as JSON; every profstore
    then holds exactly what a fourth one holds after the direct push of both requests."""
    from test_grpc import GrpcServer
    _certs(tmp_path)
    tok = {"authorization": "Bearer tok-write"}
    for d in ("h2c", "tls", "http"):
        (tmp_path / d).mkdir()
    h2c = GrpcServer(make_server, web_config_file=_web_yml(tmp_path / "h2c", tls=False))
    for f in ("srv.crt", "srv.key"):
        (tmp_path / "tls" / f).write_bytes((tmp_path / f).read_bytes())
    tls = GrpcServer(make_server, tls=True, web_config_file=_web_yml(tmp_path / "tls", tls=True))
    http = make_server(web_config_file=_web_yml(tmp_path / "http", tls=False))
    http_json = make_server()
    direct = make_server()
    col = Collector(tmp_path, {
        "otlp_grpc/h2c": _exporter("127.0.0.1:%d" % h2c.gport, tls={"insecure": True}, headers=tok),
        "otlp_grpc/tls": _exporter("127.0.0.1:%d" % tls.gport, tls={"ca_file": str(tmp_path / "ca.crt")},
                                   auth={"authenticator": "bearertokenauth"}),
        "otlp_http": _exporter("http://127.0.0.1:%d" % http.port, auth={"authenticator": "bearertokenauth"}),
        # the Collector's own OTLP JSON (pdata's marshaller), not gzipped
        "otlp_http/json": _exporter("http://127.0.0.1:%d" % http_json.port, encoding="json", compression="none"),
    }, {"bearertokenauth": {"token": "tok-write"}}).wait_ready()

    cpu, heap = cpu_request().req, _fixture_request().req
    resp = col.export_grpc(cpu)
    assert resp.partial_success.rejected_profiles == 0 and resp.partial_success.error_message == ""
    r = post(col.http_port, heap, codec="json")
    assert (r.status, r.body) == (200, b'{"partialSuccess":{}}'), r  # the Collector's own answer
    for req in (cpu, heap):
        assert post(direct.port, req).status == 200
    want = stored(direct)
    common = {"host_name": "node-1", "k8s_pod_name": "api-7f9", "process_pid": "4242", "profiler_version": "0.9"}
    heap_ids = ["space:inuse_space:bytes:space:bytes", "space:inuse_objects:count:space:bytes",
                "space:alloc_space:bytes:space:bytes:delta", "space:alloc_objects:count:space:bytes:delta"]
    assert sorted(want) == sorted([labels(CPU, service_name="api", **common),
                                   labels(CPU, service_name="worker", **common)]
                                  + [labels(t, service_name="fixture", host_name="node-2") for t in heap_ids])
    # no export warned or failed (a warning would name a partial success or a refusal)
    col.stop()
    assert [line for line in col.log().splitlines() if "\twarn\t" in line or "\terror\t" in line] == [], col.log()
    # the Collector's stores, read back after a restart without TLS and tokens (acknowledged = durable)
    for srv in (h2c.srv, tls.srv, http, http_json):
        srv.stop()
        srv.start(web_config_file=None)
        got = stored(srv)
        assert sorted(got) == sorted(want), srv.log()
        for k in want:
            assert _shape(got[k]) == _shape(want[k]), k
    # the totals and stacks per service, as sent
    api = want[labels(CPU, service_name="api", **common)]
    worker = want[labels(CPU, service_name="worker", **common)]
    assert sorted((frames(api[0], s), s.value, sample_labels(api[0], s)) for s in api[0].sample) == sorted([
        (["work", "main"], [150_000_000], []),
        (["/usr/lib/libc.so.6+0x7f0000012345[4e3f1a2b9c]", "work", "main"], [100_000_000],
         [("span_id", SPAN.hex()), ("thread.name", "gc-1"), ("trace_id", TRACE.hex())])])
    assert [(frames(worker[0], s), s.value) for s in worker[0].sample] == [(["work", "main"], [250_000_000])]
    orig = pd.decode(fixture_bytes("go/heap-01.pb.gz"))
    for ti, (t, _) in enumerate(orig.type_names()):
        sid = [x for x in heap_ids if (":%s:" % t) in x][0]
        (prof,) = want[labels(sid, service_name="fixture", host_name="node-2")]
        assert pd.totals(prof) == [sum(s.value[ti] for s in orig.sample)], sid


def test_partial_success_and_refusals_reach_the_collector(make_server, tmp_path):
    """profstore's partial_success (a profile with two values for one sample type) comes back to the
    Collector, which logs its count and message (otlp_grpc and otlp_http alike) and answers its
    own client with success; a token without the write scope is PERMISSION_DENIED on gRPC and 403 on
    OTLP/HTTP, which the Collector's receiver hands back to its client as PERMISSION_DENIED with
    profstore's message; only the accepted profile is stored."""
    import grpc
    from test_grpc import GrpcServer
    g = GrpcServer(make_server, web_config_file=_web_yml(tmp_path, tls=False))
    col = Collector(tmp_path, {
        "otlp_grpc": _exporter("127.0.0.1:%d" % g.gport, tls={"insecure": True},
                               headers={"authorization": "Bearer tok-write"}),
        "otlp_http": _exporter("http://127.0.0.1:%d" % g.srv.port, headers={"authorization": "Bearer tok-write"}),
    }).wait_ready()
    b = Builder()
    sc = b.resource({"service.name": "s"})
    f = b.frame("f")
    good = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0)
    b.sample(good, [f], 1)
    bad = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, T0 + 10**9)
    b.sample(bad, [f], values=[1, 2])
    resp = col.export_grpc(b.req)
    assert (resp.partial_success.rejected_profiles, resp.partial_success.error_message) == (0, "")
    msg = ("resource_profiles[0].scope_profiles[0].profiles[1]: samples[0].values: 2 values, expected 1 "
           "(the profile has one sample type)")
    logged = [json.loads(line[line.index("{"):]) for line in col.log().splitlines()
              if "Partial success response" in line]
    # (otlp_http v0.165.0 names the count dropped_samples, otlp_grpc dropped_profiles)
    assert sorted((e["otelcol.component.id"], e["message"], e.get("dropped_profiles"), e.get("dropped_samples"))
                  for e in logged) == [("otlp_grpc", msg, 1, None), ("otlp_http", msg, None, 1)], col.log()
    col.stop()
    # a read token: PERMISSION_DENIED / 403, a permanent error that the Collector's receiver hands
    # back to its own client as PERMISSION_DENIED with profstore's message inside
    for name, exp in (("otlp_grpc", _exporter("127.0.0.1:%d" % g.gport, tls={"insecure": True},
                                              headers={"authorization": "Bearer tok-read"})),
                      ("otlp_http", _exporter("http://127.0.0.1:%d" % g.srv.port,
                                              headers={"authorization": "Bearer tok-read"}))):
        d = tmp_path / name
        d.mkdir()
        c = Collector(d, {name: exp}).wait_ready()
        with pytest.raises(grpc.RpcError) as e:
            c.export_grpc(cpu_request().req)
        c.stop()
        forbidden = "forbidden: this credential lacks the write scope that %s needs" % (
            EXPORT if name == "otlp_grpc" else "/v1development/profiles")
        desc = forbidden if name == "otlp_grpc" else (
            "error exporting items, request to http://127.0.0.1:%d/v1development/profiles responded with HTTP "
            "Status Code 403, Message=%s, Details=[]" % (g.srv.port, forbidden))
        assert (e.value.code(), e.value.details()) == (
            grpc.StatusCode.PERMISSION_DENIED, "Permanent error: rpc error: code = PermissionDenied desc = " + desc)
        assert forbidden in c.log(), c.log()
    # only the accepted profile is stored (read back after a restart without tokens)
    g.srv.stop()
    g.srv.start(web_config_file=None)
    got = stored(g.srv)
    assert list(got) == [labels(CPU, service_name="s")]
    assert [(p.time_nanos, pd.totals(p)) for p in got[labels(CPU, service_name="s")]] == [(T0, [10])]


def test_profiles_pipeline_needs_the_gate(tmp_path):
    """Without --feature-gates=service.profilesSupport the Collector v0.165.0 refuses a profiles
    pipeline at start, naming the gate (why every test here passes it)."""
    col = Collector(tmp_path, {"otlp_grpc": _exporter("127.0.0.1:1", tls={"insecure": True})}, gate=False)
    assert col.proc.wait(timeout=60) != 0
    assert ('pipeline "profiles": profiling signal support is at alpha level, gated under the '
            '"service.profilesSupport" feature gate') in col.log(), col.log()


def test_compression_profstore_does_not_take(make_server, tmp_path):
    """An exporter set to zstd (the Collector offers gzip, zstd, snappy...; profstore takes gzip):
    gRPC UNIMPLEMENTED in grpc-go's words, OTLP/HTTP 415 naming what to send (the Collector maps a
    415 to UNKNOWN); both reach the Collector's client as permanent errors, nothing stored."""
    import grpc
    from test_grpc import GrpcServer
    g = GrpcServer(make_server)
    want = {
        "otlp_grpc": (grpc.StatusCode.UNIMPLEMENTED, "Permanent error: rpc error: code = Unimplemented desc = "
                      'grpc: Decompressor is not installed for grpc-encoding "zstd"'),
        "otlp_http": (grpc.StatusCode.UNKNOWN, "Permanent error: rpc error: code = Unknown desc = "
                      "error exporting items, request to http://127.0.0.1:%d/v1development/profiles responded with "
                      'HTTP Status Code 415, Message=Content-Encoding "zstd" is not supported: send gzip or none, '
                      "Details=[]" % g.srv.port),
    }
    for name, exp in (("otlp_grpc", _exporter("127.0.0.1:%d" % g.gport, tls={"insecure": True}, compression="zstd")),
                      ("otlp_http", _exporter("http://127.0.0.1:%d" % g.srv.port, compression="zstd"))):
        d = tmp_path / name
        d.mkdir()
        c = Collector(d, {name: exp}).wait_ready()
        with pytest.raises(grpc.RpcError) as e:
            c.export_grpc(cpu_request().req)
        c.stop()
        assert (e.value.code(), e.value.details()) == want[name]
    assert stored(g.srv) == {}


@pytest.mark.parametrize("exporter", ["otlp_grpc", "otlp_http"])
def test_collector_retries_a_full_write_queue(make_server, tmp_path, exporter):
    """profstore's overload answer (a full write queue: gRPC UNAVAILABLE, OTLP/HTTP 429 with
    Retry-After: 1, which the Collector honours) is one the Collector retries: the export refused
    while the queue is full is stored once the queue has room, exactly once, and the Collector's
    client sees success."""
    import threading
    from test_grpc import GrpcServer
    from test_overload import wait_queued
    g = GrpcServer(make_server, retention="0", storage_commit_delay="5s", storage_write_queue_max_items="1")
    endpoint = "127.0.0.1:%d" % g.gport if exporter == "otlp_grpc" else "http://127.0.0.1:%d" % g.srv.port
    col = Collector(tmp_path, {exporter: _exporter(
        endpoint, tls={"insecure": True} if exporter == "otlp_grpc" else {},
        retry_on_failure={"enabled": True, "initial_interval": "200ms", "max_interval": "500ms",
                          "max_elapsed_time": "60s"})}).wait_ready()

    def request(service, t):
        b = Builder()
        sc = b.resource({"service.name": service})
        b.sample(b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10, t), [b.frame("f")], 3)
        return b.req
    assert post(g.srv.port, request("a", T0)).status == 200  # committed at once
    held = {}
    t = threading.Thread(target=lambda: held.update(r=post(g.srv.port, request("b", T0))))
    t.start()
    wait_queued(g.srv, 1)  # b waits 5 s for the group commit: the queue is full
    resp = col.export_grpc(request("c", T0))
    assert (resp.partial_success.rejected_profiles, resp.partial_success.error_message) == (0, "")
    t.join()
    assert held["r"].status == 200
    full = ("write queue is full (1 requests, 0 MiB waiting for the writer; limits --storage.write-queue-max-items=1, "
            "--storage.write-queue-max-bytes=256 MiB): retry later")
    retries = [json.loads(line[line.index("{"):]) for line in col.log().splitlines()
               if "Exporting failed. Will retry the request after interval" in line]
    if exporter == "otlp_grpc":
        want = "rpc error: code = Unavailable desc = " + full
    else:
        want = ("Throttle (1s), error: rpc error: code = ResourceExhausted desc = error exporting items, request to "
                "http://127.0.0.1:%d/v1development/profiles responded with HTTP Status Code 429, Message=%s, "
                "Details=[]" % (g.srv.port, full))
    assert retries and all(r["error"] == want for r in retries), col.log()
    if exporter == "otlp_http":  # Retry-After: 1 is the interval
        assert {r["interval"] for r in retries} == {"1s"}
    col.stop()
    got = stored(g.srv)
    assert sorted(got) == [labels(CPU, service_name=s) for s in ("a", "b", "c")]
    assert all([(p.time_nanos, pd.totals(p)) for p in v] == [(T0, [30])] for v in got.values())
    assert g.srv.metrics()['profstore_writes_refused_total{reason="queue_full"}'] == len(retries)
