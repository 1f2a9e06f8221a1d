"""Forwarding (docs/configuration.md "Forwarding", src/forward): profstore A forwards to profstore B over
Pyroscope's Connect push and float samples to a real Prometheus 2.42 over remote write.

Exact checks: B's series, profile times, durations, periods and totals equal A's (with
service_name = job added), and B's merged profile (folded) equals A's byte for byte; after B was
down 30 s A catches up to the same; after kill -9 of A mid-forwarding nothing is missing on B
(duplicates are absorbed); a receiver answering 400 gets its batch dropped with a counter and a log
line naming the endpoint, the status and the answer; Prometheus answers exactly the samples A
stored (and not the one A refused as out of order).
"""
import http.server
import json
import threading
import time
import urllib.parse

import pytest

import conftest
from conftest import fixture_bytes


def series_snapshot(srv):
    """conftest's series_snapshot of the profile series only (A also holds up / scrape_*)."""
    return {tuple(sorted(s["labels"].items())): [(p["ts"], p["duration"], p["period"], p["total"])
                                                 for p in s["profiles"]]
            for s in srv.series() if "profiles" in s}
from prom_util import PromConfig, prometheus  # noqa: F401 (fixture)
from pyro_util import connect_call, cpu_push_request
from test_remote_write import pb, post as rw_post, v1_body  # noqa: F401 (fixture)

NOW_S = int(time.time()) - 600
FIXTURES = ["go/cpu-01.pb.gz", "go/heap-01.pb.gz", "go/cpu-02.pb.gz"]


def config(tmp_path, endpoints):
    """A's config file: endpoints is a list of YAML blocks (one per endpoint)."""
    p = tmp_path / "a.yml"
    p.write_text("forward:\n" + "".join(endpoints))
    return p


def endpoint(name, url, protocol="pyroscope_push", extra="", shards=1):
    return ("  - name: %s\n    url: %s\n    protocol: %s\n%s"
            "    queue_config: {batch_send_deadline: 100ms, min_backoff: 50ms, max_backoff: 500ms,"
            " max_samples_per_send: 5, max_shards: %d}\n" % (name, url, protocol, extra, shards))


def status(srv):
    js = srv.get_json("/api/v1/status/forward")
    assert js["status"] == "success", js
    return {e["name"]: e for e in js["data"]}


def wait_for(fn, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def wait_sent(a, name, sent, timeout=30):
    return wait_for(lambda: (lambda e: e if e["pending"] == 0 and e["sent"] >= sent else None)(status(a)[name]),
                    timeout, "%s sent %d, nothing pending" % (name, sent))


def push_all(a, n_rounds, t0=NOW_S, job="api"):
    """n_rounds x FIXTURES, each round 10 s later; returns how many profiles."""
    n = 0
    for r in range(n_rounds):
        for i, rel in enumerate(FIXTURES):
            st, js = a.push(fixture_bytes(rel), time=str(t0 + 10 * r), labels='{job="%s",fixture="%d"}' % (job, i))
            assert st == 200, js
            n += 1
    return n


def with_service_name(snap):
    """A's snapshot as B holds it: service_name = job added to every series."""
    out = {}
    for k, v in snap.items():
        d = dict(k)
        if "job" in d:
            d.setdefault("service_name", d["job"])
        out[tuple(sorted(d.items()))] = v
    return out


def folded(srv, sel, start, end):
    q = urllib.parse.urlencode({"query": sel, "start": start, "end": end, "format": "folded"})
    st, _, body = srv.get("/api/v1/profiles/query?" + q)
    assert st == 200, body[:300]
    return body


def check_same(a, b, start, end):
    sa, sb = with_service_name(series_snapshot(a)), series_snapshot(b)
    assert sb == sa
    for sel in ('process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="api"}',
                'memory:inuse_space:bytes:space:bytes{job="api"}'):
        fa, fb = folded(a, sel, start, end), folded(b, sel, start, end)
        assert fb == fa and fa.count(b"\n") >= 2  # stacks, not an empty answer


@pytest.mark.parametrize("shards", [1, 3])
def test_push_forwarded_to_profstore(make_server, tmp_path, shards):
    b = make_server(name="b", retention="0")
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % b.port, shards=shards)])
    a = make_server(name="a", retention="0", config=str(cfg))
    n = push_all(a, 2)
    # Pyroscope's Connect push to A is forwarded as well
    raw = fixture_bytes("go/cpu-01.pb.gz")
    r = connect_call(a.port, "push.v1.PusherService/Push", cpu_push_request(raw, service="conn"))
    assert r.status == 200, r
    e = wait_sent(a, "b", n + 1)
    assert (e["sent"], e["failed"], e["retried"], e["dropped"], e["pending"]) == (n + 1, 0, 0, 0, 0)
    assert e["requests"] >= 2 and e["url"] == "http://127.0.0.1:%d/push.v1.PusherService/Push" % b.port
    check_same(a, b, NOW_S - 10, NOW_S + 30)
    m = a.metrics()
    assert m['profstore_forward_sent_total{endpoint="b",protocol="pyroscope_push"}'] == n + 1
    assert m['profstore_forward_pending{endpoint="b",protocol="pyroscope_push"}'] == 0
    assert m['profstore_forward_lag_seconds{endpoint="b",protocol="pyroscope_push"}'] == 0
    # an identical push again is a duplicate on A: not forwarded a second time
    st, js = a.push(fixture_bytes(FIXTURES[0]), time=str(NOW_S + 10), labels='{job="api",fixture="0"}')
    assert st == 200 and js["data"]["duplicate"] is True
    time.sleep(0.5)
    assert status(a)["b"]["sent"] == n + 1
    # the log is trimmed once B has everything: A's status shows the cursor at the log's end
    assert status(a)["b"]["cursor"] == n + 1


def test_outage_catch_up(make_server, tmp_path, monkeypatch):
    b = make_server(name="b", retention="0")
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % b.port)])
    a = make_server(name="a", retention="0", config=str(cfg))
    n1 = push_all(a, 1)
    wait_sent(a, "b", n1)
    b.kill()
    t_down = time.monotonic()
    n2 = push_all(a, 4, t0=NOW_S + 100)
    while time.monotonic() - t_down < 30:
        time.sleep(1)
    e = status(a)["b"]
    assert e["sent"] == n1 and e["pending"] == n2 and e["dropped"] == 0
    assert e["retried"] >= 5 and e["failed"] >= 5 and "onnect" in e["lastError"], e
    assert e["lagSeconds"] >= 29
    port = b.port
    monkeypatch.setattr(conftest, "free_port", lambda: port)
    b.start()
    e = wait_sent(a, "b", n1 + n2, timeout=30)
    assert e["sent"] == n1 + n2 and e["dropped"] == 0
    check_same(a, b, NOW_S - 10, NOW_S + 200)


def test_kill_a_mid_forwarding(make_server, tmp_path):
    b = make_server(name="b", retention="0")
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % b.port, shards=4)])
    a = make_server(name="a", retention="0", config=str(cfg))
    n = push_all(a, 20)
    before = status(a)["b"]["sent"]
    a.kill()  # SIGKILL, most of the log not yet forwarded
    assert before < n
    a.start()
    wait_sent(a, "b", 0)
    wait_for(lambda: status(a)["b"]["pending"] == 0, 30, "A caught up after kill -9")
    check_same(a, b, NOW_S - 10, NOW_S + 400)


class Refuser(http.server.BaseHTTPRequestHandler):
    """Answers every POST with 400 and a two-line body."""
    calls = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).calls += 1
        body = b"bad batch: series_name is wrong\nsecond line\n"
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_refused_batch_dropped(make_server, tmp_path):
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Refuser)
    th = threading.Thread(target=httpd.serve_forever, daemon=True)
    th.start()
    try:
        cfg = config(tmp_path, [endpoint("bad", "http://127.0.0.1:%d" % httpd.server_address[1])])
        a = make_server(name="a", retention="0", config=str(cfg))
        for i in range(2):
            st, js = a.push(fixture_bytes("go/cpu-01.pb.gz"), time=str(NOW_S + i), labels='{job="x"}')
            assert st == 200, js
        e = wait_for(lambda: (lambda e: e if e["dropped"] == 2 else None)(status(a)["bad"]), 20, "dropped 2")
        assert (e["sent"], e["failed"], e["retried"], e["pending"]) == (0, 1, 0, 0)
        assert e["lastError"] == "HTTP 400: bad batch: series_name is wrong"
        assert Refuser.calls == 1
        m = a.metrics()
        assert m['profstore_forward_dropped_total{endpoint="bad",protocol="pyroscope_push"}'] == 2
        assert m['profstore_forward_failed_total{endpoint="bad",protocol="pyroscope_push"}'] == 1
        log = a.log()
        assert ('msg="forwarding: the endpoint refused a batch; dropped" endpoint=bad status=400 units=2 '
                'answer="bad batch: series_name is wrong"') in log, log[-2000:]
    finally:
        httpd.shutdown()


def test_remote_write_to_prometheus(make_server, tmp_path, prometheus, pb):  # noqa: F811
    prom = prometheus(PromConfig(), receiver=True)
    cfg = config(tmp_path, [endpoint("prom", prom.url("/api/v1/write"), protocol="remote_write")])
    a = make_server(name="a", config=str(cfg))
    t0 = int(time.time() * 1000) // 1000 * 1000 - 60000
    series = [({"__name__": "fwd_test", "job": "j", "i": str(i)}, [(t0 + 1000 * k, float(i * 100 + k)) for k in range(4)])
              for i in range(3)]
    st, _, body = rw_post(a, v1_body(pb, series))
    assert st == 204, body
    # one sample out of order (refused by A: not forwarded), one new
    st, _, body = rw_post(a, v1_body(pb, [({"__name__": "fwd_test", "job": "j", "i": "0"}, [(t0 + 500, 7.0)]),
                                          ({"__name__": "fwd_test", "job": "j", "i": "1"}, [(t0 + 9000, 9.5)])]))
    assert st == 400, body
    e = wait_sent(a, "prom", 13)
    assert (e["sent"], e["dropped"], e["protocol"]) == (13, 0, "remote_write")

    def prom_has():
        js = prom.query_range('fwd_test{job="j"}', (t0 - 1000) / 1000, (t0 + 10000) / 1000, 0.5)
        return js if js["status"] == "success" and len(js["data"]["result"]) == 3 else None
    js = wait_for(prom_has, 20, "Prometheus has the series")
    js = prom.api("/api/v1/query", query='fwd_test{job="j"}[1m]', time=(t0 + 10000) / 1000)
    got = {r["metric"]["i"]: [(int(round(float(t) * 1000)), float(v)) for t, v in r["values"]]
           for r in js["data"]["result"]}
    want = {str(i): [(t0 + 1000 * k, float(i * 100 + k)) for k in range(4)] for i in range(3)}
    want["1"].append((t0 + 9000, 9.5))
    assert got == want
    for r in js["data"]["result"]:
        assert r["metric"] == {"__name__": "fwd_test", "job": "j", "i": r["metric"]["i"]}


def test_reload_endpoints(make_server, tmp_path):
    """A new endpoint starts at the log's end, a kept one at its cursor, a removed one's cursor goes."""
    b = make_server(name="b", retention="0")
    c = make_server(name="c", retention="0")
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % b.port)])
    a = make_server(name="a", retention="0", config=str(cfg))
    n1 = push_all(a, 1)
    wait_sent(a, "b", n1)
    b.kill()
    n2 = push_all(a, 1, t0=NOW_S + 10)  # held for b, which is down
    wait_for(lambda: status(a)["b"]["retried"] >= 1, 10, "b retried")
    config(tmp_path, [endpoint("c", "http://127.0.0.1:%d" % c.port)])
    a.post_json("/-/reload")
    st = status(a)
    assert list(st) == ["c"] and st["c"]["cursor"] == n1 + n2 and st["c"]["sent"] == 0
    n3 = push_all(a, 1, t0=NOW_S + 20)
    wait_sent(a, "c", n3)
    times = sorted({p[0] for v in series_snapshot(c).values() for p in v})
    assert times == [(NOW_S + 20) * 10**9]  # only what came after it was added
    # b again: its cursor was dropped with it, so it starts at the end, not at n1
    config(tmp_path, [endpoint("c", "http://127.0.0.1:%d" % c.port), endpoint("b", "http://127.0.0.1:%d" % b.port)])
    a.post_json("/-/reload")
    st = status(a)
    assert st["b"]["cursor"] == n1 + n2 + n3 and st["c"]["cursor"] == n1 + n2 + n3 and st["c"]["sent"] == n3
    y = a.get_json("/api/v1/status/config")["data"]["yaml"]
    assert "forward:\n- name: c\n" in y and "- name: b\n" in y


def test_docs_forward_example_loads(make_server, tmp_path):
    """The forward: example of docs/configuration.md, taken from the file, loads as it stands."""
    import re
    doc = (conftest.REPO / "docs" / "configuration.md").read_text()
    sec = doc[doc.index("\n## Forwarding\n"):]
    sec = sec[:sec.index("\n## ", 1)]
    yml = re.findall(r"```yaml\n(.*?)```", sec, re.S)[0]
    cfg = tmp_path / "docs.yml"
    cfg.write_text(yml.replace("/etc/pw", str(tmp_path / "pw")))
    a = make_server(name="a", config=str(cfg))
    assert [e["name"] for e in a.get_json("/api/v1/status/forward")["data"]] == ["pyroscope", "prometheus"]
    y = a.get_json("/api/v1/status/config")["data"]["yaml"]
    assert "X-Scope-OrgID: <secret>\n" in y and "tenant1" not in y


def test_scraped_profiles_forwarded(make_server, tmp_path):
    """Scraped profiles are forwarded as stored (encoded again, time_nanos = the scrape's time)."""
    import pprof_decode as pd
    from scrape_util import PyTarget, send_body
    heap = pd.decode(fixture_bytes("go/heap-01.pb.gz"))

    def serve(path, h):  # the heap profile, taken now
        heap.time_nanos = time.time_ns()
        send_body(h, 200, pd.encode(heap, gzip_level=1))
    t = PyTarget(serve)
    try:
        b = make_server(name="b", retention="0")
        fwd = endpoint("b", "http://127.0.0.1:%d" % b.port)
        jobs = ("scrape_configs:\n- job_name: app\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "  static_configs: [{targets: ['%s']}]\n"
                "  profiling_config:\n    pprof_config: {block: {enabled: false}, mutex: {enabled: false},"
                " goroutine: {enabled: false}, process_cpu: {enabled: false}}\n" % t.address)
        cfg = tmp_path / "a.yml"
        cfg.write_text("forward:\n" + fwd + jobs)
        a = make_server(name="a", config=str(cfg))
        wait_for(lambda: any(dict(k)["__name__"] == "memory:inuse_space:bytes:space:bytes" and len(v) >= 3
                             for k, v in series_snapshot(a).items()), 20, "3 scrapes")
        cfg.write_text("forward:\n" + fwd)  # no more scrapes
        a.post_json("/-/reload")
        time.sleep(0.5)
        wait_for(lambda: status(a)["b"]["pending"] == 0, 20, "forwarded")
        sa, sb = with_service_name(series_snapshot(a)), series_snapshot(b)
        inuse = {k: v for k, v in sa.items() if dict(k)["__name__"].startswith("memory:inuse_")}
        assert len(inuse) == 2 and all(len(v) >= 3 for v in inuse.values())
        assert {k: sb.get(k) for k in inuse} == inuse
        # the per-scrape float series (up, scrape_*) are logged too but are not this endpoint's
        assert status(a)["b"]["dropped"] == 0
    finally:
        t.close()


def test_agent_mode(make_server, tmp_path, pb):  # noqa: F811
    b = make_server(name="b", retention="0")
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % b.port),
                            endpoint("bw", "http://127.0.0.1:%d/api/v1/write" % b.port, protocol="remote_write")])
    a = make_server(name="a", retention="0", config=str(cfg), extra_args=["--agent"])
    n = push_all(a, 2)
    t0 = int(time.time() * 1000) // 1000 * 1000 - 60000
    st, _, body = rw_post(a, v1_body(pb, [({"__name__": "agent_m", "job": "j"}, [(t0, 1.0), (t0 + 1000, 2.0)])]))
    assert st == 204, body
    wait_sent(a, "b", n)
    wait_sent(a, "bw", 2)
    # B got everything; A kept nothing but the log (trimmed once sent)
    sb = series_snapshot(b)
    # 2 + 4 + 2 sample types (cpu-01, heap-01, cpu-02), each series with its 2 rounds
    assert len(sb) == 8 and all(len(v) == 2 for v in sb.values()), sb
    m = a.metrics()
    assert m["profstore_storage_series"] == 0 and m["profstore_storage_float_heads"] == 0
    for path in ("/api/v1/query?query=up", "/api/v1/series?match[]=up", "/api/v1/labels",
                 "/api/v1/profiles/types", "/pyroscope/labels", "/api/v1/status/tsdb"):
        st, _, body = a.get(path)
        assert st == 400, (path, body)
        js = json.loads(body)
        assert js == {"status": "error", "errorType": "bad_data",
                      "error": "agent mode: queries go to the engine this profstore forwards to (forward: in the config)"}
    r = connect_call(a.port, "querier.v1.QuerierService/ProfileTypes", None, body=b"")
    assert r.status == 400 and r.error["code"] == "invalid_argument" and r.error["message"].startswith("agent mode")
    assert a.get_json("/api/v1/status/flags")["data"]["agent"] == "true"


def test_max_lag_drops_the_oldest(make_server, tmp_path, monkeypatch):
    """Entries older than max_lag are dropped (counted, logged) even while their request is being
    retried; newer ones are still sent."""
    port = conftest.free_port()  # nothing listens there yet
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % port, extra="    max_lag: 3s\n")])
    a = make_server(name="a", retention="0", config=str(cfg))
    for i in range(3):
        st, js = a.push(fixture_bytes("go/cpu-01.pb.gz"), time=str(NOW_S + i), labels='{job="x"}')
        assert st == 200, js
    wait_for(lambda: status(a)["b"]["retried"] >= 1, 10, "retrying")
    time.sleep(3.5)
    st, js = a.push(fixture_bytes("go/cpu-01.pb.gz"), time=str(NOW_S + 10), labels='{job="x"}')
    assert st == 200, js
    monkeypatch.setattr(conftest, "free_port", lambda: port)
    b = make_server(name="b", retention="0")
    e = wait_for(lambda: (lambda e: e if e["sent"] == 1 and e["pending"] == 0 else None)(status(a)["b"]), 20,
                 "the fresh profile sent")
    assert e["dropped"] == 3
    times = sorted({p[0] for v in series_snapshot(b).values() for p in v})
    assert times == [(NOW_S + 10) * 10**9]
    assert 'msg="forwarding: entries older than max_lag dropped" endpoint=b units=3 up_to_seq=3' in a.log()


def test_backlog_sent_in_full_windows(make_server, tmp_path, monkeypatch):
    """A backlog of N profiles reaches B in exactly ceil(N / max_samples_per_send) requests, in
    order (the next window is read from the log while one is in flight: src/forward/forward.c)."""
    port = conftest.free_port()
    cfg = config(tmp_path, ["  - name: b\n    url: http://127.0.0.1:%d\n    protocol: pyroscope_push\n"
                            "    queue_config: {batch_send_deadline: 30s, min_backoff: 50ms, max_backoff: 200ms,"
                            " max_samples_per_send: 5, max_shards: 1}\n" % port])
    a = make_server(name="a", retention="0", config=str(cfg))
    n = push_all(a, 8)  # 24 profiles: 5 full windows of 5 and the last one of 4 ...
    st, js = a.push(fixture_bytes(FIXTURES[0]), time=str(NOW_S + 200), labels='{job="api",fixture="0"}')
    assert st == 200, js  # ... made full by a 25th
    n += 1
    monkeypatch.setattr(conftest, "free_port", lambda: port)
    b = make_server(name="b", retention="0")
    e = wait_sent(a, "b", n)
    assert (e["sent"], e["dropped"], e["pending"], e["requests"] - e["failed"]) == (25, 0, 0, 5)
    m = b.metrics()
    pushes = {k: v for k, v in m.items() if k.startswith("profstore_http_requests_total") and "Push" in k}
    assert pushes == {'profstore_http_requests_total{handler="/push.v1.PusherService/Push",code="200"}': 5}
    check_same(a, b, NOW_S - 10, NOW_S + 300)


def test_client_profile_id_forwarded(make_server, tmp_path):
    """A Connect push's RawSample.ID travels with its profile: B stores it as A did, and
    profile_id_selector with the id merges exactly that profile on B (cpu-01, 2,980,000,000 ns), as on
    A; the profile pushed beside it without an id is forwarded without one (B knows no other id)."""
    from pyro_util import pyro_pb
    pb = pyro_pb()
    uid = "4f1c3e27-9b55-4a61-8e02-7731d0aa1005"
    b = make_server(name="b", retention="0")
    cfg = config(tmp_path, [endpoint("b", "http://127.0.0.1:%d" % b.port)])
    a = make_server(name="a", retention="0", config=str(cfg))
    req = pb.push.PushRequest()
    for svc, rel, id_ in (("withid", "go/cpu-01.pb.gz", uid), ("noid", "go/cpu-02.pb.gz", "")):
        s = req.series.add()
        for k, v in (("__name__", "process_cpu"), ("service_name", svc)):
            lp = s.labels.add()
            lp.name, lp.value = k, v
        s.samples.add(raw_profile=fixture_bytes(rel), ID=id_)
    r = connect_call(a.port, "push.v1.PusherService/Push", req)
    assert r.status == 200, r
    e = wait_sent(a, "b", 2)
    assert (e["sent"], e["failed"], e["dropped"]) == (2, 0, 0)

    def merge(srv, ids):
        q = pb.querier.SelectMergeStacktracesRequest(
            profile_typeID="process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", label_selector="{}",
            start=1796000000 * 1000, end=1797000000 * 1000, profile_id_selector=ids)
        return connect_call(srv.port, "querier.v1.QuerierService/SelectMergeStacktraces", q,
                            resp_type=pb.querier.SelectMergeStacktracesResponse)

    for srv in (a, b):
        r = merge(srv, [uid])
        assert r.status == 200, r
        assert r.msg.flamegraph.total == 2980000000
    assert merge(b, [uid.upper().replace("-", "")]).msg.flamegraph.total == 2980000000
    fa, fb = merge(a, [uid]).msg.flamegraph, merge(b, [uid]).msg.flamegraph
    assert list(fa.names) == list(fb.names) and [list(l.values) for l in fa.levels] == \
        [list(l.values) for l in fb.levels]
    other = "4f1c3e27-9b55-4a61-8e02-7731d0aa1006"
    r = merge(b, [other])
    assert (r.status, r.error["message"]) == (400, 'profile_id_selector[0]: unknown profile id "%s" (no stored '
                                              'profile has it)' % other)
