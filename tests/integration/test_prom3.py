"""Prometheus 3 (3.16.0, scripts/install-prometheus3.sh) as a live peer: it scrapes real targets and
remote-writes 2.0 (io.prometheus.write.v2.Request) to profstore; a second Prometheus 3 reads
profstore back through remote_read. Every stored value is compared with what the writing Prometheus
answers for the same query, the metadata and the UTF-8 names exactly, and the partial answer for
what profstore does not store (native histograms, exemplars) with Prometheus' own failure counters.
Queries with the anchored and smoothed modifiers answer as the writing Prometheus 3 does.

Runs in `make test` only when Prometheus 3 is cached (an allowed skip otherwise), always in
`make test-peers`.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from prom_util import PromConfig, api_get, diff_answers, prometheus, prometheus3_binary  # noqa: F401
from scrape_util import PyTarget, send_body, wait_for

OM_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Targets:
    """Two scrape targets: "om" speaks OpenMetrics (a counter with an exemplar per scrape, a gauge
    with a unit, a classic histogram that Prometheus converts to a native one), "utf8" the text
    format with a UTF-8 metric and label name. stop() makes both answer 503 (Prometheus then writes
    only up=0 and its scrape series: no more histograms or exemplars)."""

    def __init__(self):
        self.n = 0
        self.stopped = False
        self.lock = threading.Lock()
        self.om = PyTarget(self._om)
        self.utf8 = PyTarget(self._utf8)

    def _om(self, path, h):
        if self.stopped:
            return send_body(h, 503, b"stopped\n", "text/plain")
        with self.lock:
            self.n += 1
            n = self.n
        body = ("# HELP http_requests Requests served.\n"
                "# TYPE http_requests counter\n"
                'http_requests_total{code="200"} %d # {trace_id="t%04d"} 1.5\n'
                "# HELP temperature_celsius Room temperature.\n"
                "# TYPE temperature_celsius gauge\n"
                "# UNIT temperature_celsius celsius\n"
                'temperature_celsius{room="a"} %s\n'
                "# HELP req_duration_seconds Request durations.\n"
                "# TYPE req_duration_seconds histogram\n"
                'req_duration_seconds_bucket{le="0.1"} %d\n'
                'req_duration_seconds_bucket{le="1.0"} %d\n'
                'req_duration_seconds_bucket{le="+Inf"} %d\n'
                "req_duration_seconds_sum %s\n"
                "req_duration_seconds_count %d\n"
                "# EOF\n") % (10 * n, n, repr(20.0 + n / 8.0), n, 2 * n, 3 * n, repr(n * 0.7), 3 * n)
        send_body(h, 200, body.encode(), OM_TYPE)

    def _utf8(self, path, h):
        if self.stopped:
            return send_body(h, 503, b"stopped\n", "text/plain")
        body = ('# HELP "http.server.duration" Server duration.\n'
                '# TYPE "http.server.duration" gauge\n'
                '{"http.server.duration","service.name"="checkout","k8s.pod"="p-1"} 0.25\n'
                '{"http.server.duration","service.name"="cart","k8s.pod"="p-2"} 0.125\n'
                # classic buckets that are not monotonic
                '# TYPE lat_seconds histogram\n'
                'lat_seconds_bucket{le="0.1"} 5\n'
                'lat_seconds_bucket{le="1"} 3\n'
                'lat_seconds_bucket{le="10"} 7\n'
                'lat_seconds_bucket{le="+Inf"} 6\n'
                'lat_seconds_sum 9\n'
                'lat_seconds_count 6\n')
        send_body(h, 200, body.encode(), TEXT_TYPE)

    def stop(self):
        self.stopped = True

    def close(self):
        self.om.close()
        self.utf8.close()


@pytest.fixture
def targets():
    t = Targets()
    yield t
    t.close()


def metric(m, name, **labels):
    key = name + ("{" + ",".join('%s="%s"' % kv for kv in sorted(labels.items())) + "}" if labels else "")
    return m.get(key, 0.0)


def writer_config(srv, t: Targets) -> PromConfig:
    return PromConfig(
        jobs={"om": [t.om.address], "utf8": [t.utf8.address]},
        remote_write="http://127.0.0.1:%d/api/v1/write" % srv.port,
        remote_write_extra=["protobuf_message: io.prometheus.write.v2.Request",
                            "send_exemplars: true", "send_native_histograms: true"],
        job_extra={"om": ["convert_classic_histograms_to_nhcb: true"]})


WRITER_ARGS = ["--enable-feature=metadata-wal-records,exemplar-storage"]
FLOATS = '{job=~"om|utf8", __name__!="req_duration_seconds"}'


def run_writer(srv, targets, prometheus):
    """Starts the writing Prometheus 3, lets it scrape about 8 times, stops the targets and waits
    until everything it holds is sent and the counts of both sides are still. Returns (prom, T,
    live): T after the last sample, live a time when the targets' series were not yet stale."""
    prom = prometheus(writer_config(srv, targets), name="writer", binary=prometheus3_binary(), extra_args=WRITER_ARGS)
    wait_for(lambda: targets.n >= 8, 60, "8 scrapes of the OpenMetrics target")
    live = round(time.time() - 0.5, 3)
    targets.stop()
    time.sleep(2.5)  # the scrapes now fail: no more histograms or exemplars
    T = float(int(time.time()))
    prom.wait_sent(T + 1, timeout=60)

    def still():
        ph = prom.self_metric("prometheus_remote_storage_histograms_failed_total")
        pe = prom.self_metric("prometheus_remote_storage_exemplars_failed_total")
        m = srv.metrics()
        return ph and pe and ph[0] == metric(m, "profstore_remote_write_dropped_total", kind="histogram") and \
            pe[0] == metric(m, "profstore_remote_write_dropped_total", kind="exemplar")
    wait_for(still, 30, "the histograms and exemplars Prometheus counts as failed equal to those profstore dropped")
    return prom, T, live


def test_remote_write_v2_exact_values_metadata_partial_answer(make_server, targets, prometheus):
    srv = make_server()
    prom, T, live = run_writer(srv, targets, prometheus)

    # every float sample stored is the one Prometheus 3 holds, bit for bit (raw samples of 30 s)
    want = prom.query(FLOATS + "[30s]", T)
    got = api_get(srv.port, "/api/v1/query", {"query": FLOATS + "[30s]", "time": T})
    names = {s["metric"]["__name__"] for s in want["data"]["result"]}
    assert {"http_requests_total", "temperature_celsius", "http.server.duration", "up"} <= names, want
    assert diff_answers(want, got, rel=0.0) is None, diff_answers(want, got, rel=0.0)
    counts = {s["metric"]["__name__"]: len(s["values"]) for s in got["data"]["result"]}
    assert counts["http_requests_total"] >= 7, counts

    # the written values are the target's: http_requests_total is 10 per scrape
    vals = [float(v) for _, v in next(s for s in got["data"]["result"]
                                      if s["metric"]["__name__"] == "http_requests_total")["values"]]
    assert vals == [10.0 * k for k in range(int(vals[0] / 10), int(vals[0] / 10) + len(vals))], vals

    # UTF-8 names stored as sent and selected with the quoted syntax
    q = '{"http.server.duration", "service.name"="checkout"}'
    want, got = prom.query(q, live), api_get(srv.port, "/api/v1/query", {"query": q, "time": live})
    assert [s["metric"] for s in got["data"]["result"]] == [
        {"__name__": "http.server.duration", "service.name": "checkout", "k8s.pod": "p-1", "job": "utf8",
         "instance": targets.utf8.address}]
    assert diff_answers(want, got, rel=0.0) is None
    q = 'sum by ("k8s.pod") ({"http.server.duration"})'
    want, got = prom.query(q, live), api_get(srv.port, "/api/v1/query", {"query": q, "time": live})
    assert len(got["data"]["result"]) == 2 and diff_answers(want, got, rel=0.0) is None, (want, got)
    for path in ("/api/v1/label/U__service_2e_name/values", "/api/v1/label/U__k8s_2e_pod/values"):
        want = api_get(prom.port, path, {"start": T - 30, "end": T}, method="GET")
        got = api_get(srv.port, path, {"start": T - 30, "end": T}, method="GET")
        assert got["data"] == want["data"] and len(got["data"]) == 2, (path, want, got)

    # metadata: 2.0 carries it per series (the family is the series name)
    md = api_get(srv.port, "/api/v1/metadata", {}, method="GET")["data"]
    assert md["http_requests_total"] == [{"type": "counter", "help": "Requests served.", "unit": ""}]
    assert md["temperature_celsius"] == [{"type": "gauge", "help": "Room temperature.", "unit": "celsius"}]
    assert md["http.server.duration"] == [{"type": "gauge", "help": "Server duration.", "unit": ""}]
    pm = api_get(prom.port, "/api/v1/metadata", {}, method="GET")["data"]
    assert pm["temperature_celsius"] == md["temperature_celsius"]
    assert pm["http_requests"] == md["http_requests_total"]

    # what is not stored: native histograms and exemplars are counted and answered as not written
    # (X-Prometheus-Remote-Write-*-Written); Prometheus counts exactly those as failed, no float
    m = srv.metrics()
    hist_sent = prom.self_metric("prometheus_remote_storage_histograms_total")
    ex_sent = prom.self_metric("prometheus_remote_storage_exemplars_total")
    assert hist_sent[0] >= 8 and ex_sent[0] >= 8, (hist_sent, ex_sent)
    assert prom.self_metric("prometheus_remote_storage_histograms_failed_total") == hist_sent
    assert prom.self_metric("prometheus_remote_storage_exemplars_failed_total") == ex_sent
    assert metric(m, "profstore_remote_write_dropped_total", kind="histogram") == hist_sent[0]
    assert metric(m, "profstore_remote_write_dropped_total", kind="exemplar") == ex_sent[0]
    assert prom.self_metric("prometheus_remote_storage_samples_failed_total") == [0.0]
    assert prom.self_metric("prometheus_remote_storage_samples_retried_total") == [0.0]
    assert metric(m, "profstore_remote_write_samples_written_total") == \
        prom.self_metric("prometheus_remote_storage_samples_total")[0]
    assert metric(m, "profstore_remote_write_bad_requests_total") == 0
    assert metric(m, "profstore_remote_write_failed_requests_total") == 0


def test_anchored_smoothed_as_prometheus3(make_server, targets, prometheus):
    """Prometheus 3.16's anchored and smoothed modifiers over the same written samples: profstore's
    answers are the writing Prometheus 3's to the bit, instant and range, and so is format_query.
    Only the targets' series (complete on both sides once everything is sent; up and the scrape
    series go on after T)."""
    srv = make_server()
    prom, T, live = run_writer(srv, targets, prometheus)
    c, g = 'http_requests_total{job="om"}', 'temperature_celsius{job="om"}'
    queries = ["increase(%s[3s] anchored)" % c, "rate(%s[5s] anchored offset 1s)" % c,
               "delta(%s[4s] anchored)" % g, "changes(%s[3s] anchored)" % g, "resets(%s[6s] anchored)" % c,
               "rate(%s[3s] smoothed)" % c, "increase(%s[2500ms] smoothed)" % c, "delta(%s[3s] smoothed)" % g,
               "%s smoothed" % g, "%s @ %s smoothed offset 700ms" % (c, live), "sum(%s[3s] anchored)" % c]
    for q in queries[:-1]:
        for t in (live, live - 2.3, T):
            want, got = prom.query(q, t), api_get(srv.port, "/api/v1/query", {"query": q, "time": t})
            assert want["status"] == "success" and diff_answers(want, got, rel=0.0) is None, \
                (q, t, diff_answers(want, got, rel=0.0))
        assert any(prom.query(q, t)["data"]["result"] for t in (live, live - 2.3)), q
        want = prom.query_range(q, live - 6, T, 0.5)
        got = api_get(srv.port, "/api/v1/query_range", {"query": q, "start": live - 6, "end": T, "step": 0.5})
        assert want["data"]["result"] and diff_answers(want, got, rel=0.0) is None, (q, diff_answers(want, got, rel=0.0))
        want = api_get(prom.port, "/api/v1/format_query", {"query": q}, method="GET")
        got = api_get(srv.port, "/api/v1/format_query", {"query": q}, method="GET")
        assert got == want, (got, want)
    # the bare range selector (extendFloats), and the errors: a function that may not take them
    q = "%s[3s] anchored" % c
    want, got = prom.query(q, live), api_get(srv.port, "/api/v1/query", {"query": q, "time": live})
    assert diff_answers(want, got, rel=0.0) is None and want["data"]["result"], (want, got)
    for q, status in (("max_over_time(%s[3s] smoothed)" % c, 422), (queries[-1], 400), ("%s[3s:1s] anchored" % c, 400)):
        want = prom.query(q, live)
        got = api_get(srv.port, "/api/v1/query", {"query": q, "time": live})
        assert got["_http_status"] == want["_http_status"] == status, (want, got)
        assert (got["errorType"], got["error"]) == (want["errorType"], want["error"]), (want, got)
    # histogram_quantile's info on buckets forced monotonic: one merged over every step and call
    # (its text names the buckets, the largest fix, how many and the first and last step's time)
    for q in ("histogram_quantile(0.5, lat_seconds_bucket)",
              "histogram_quantile(0.9, sum by (le) (max_over_time(lat_seconds_bucket[3s])))"
              " + histogram_quantile(0.2, sum by (le) (lat_seconds_bucket * 3))"):
        want, got = prom.query(q, live), api_get(srv.port, "/api/v1/query", {"query": q, "time": live})
        assert want["data"]["result"] and diff_answers(want, got, rel=0.0) is None, (q, diff_answers(want, got, rel=0.0))
        assert (got.get("warnings"), got.get("infos")) == (want.get("warnings"), want.get("infos")), (q, want, got)
        want = prom.query_range(q, live - 6, live, 0.5)
        got = api_get(srv.port, "/api/v1/query_range", {"query": q, "start": live - 6, "end": live, "step": 0.5})
        assert diff_answers(want, got, rel=0.0) is None, (q, diff_answers(want, got, rel=0.0))
        # over a range Prometheus 3.16 merges the info into itself as it goes up the tree, so its
        # count compounds (12,286 for 13 steps of one call); profstore counts each fix once
        steps = [float(v[0]) for v in got["data"]["result"][0]["values"]]  # the steps with buckets
        first, last = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(round(t * 1000) // 1000))
                       for t in (steps[0], steps[-1]))
        n = len(steps) * q.count("histogram_quantile")  # a fix each step of each call
        assert got["infos"][0].endswith(", over %d samples from %s to %s (1:25)" % (n, first, last)), got
        assert [re.sub(r"over \d+ samples", "", i) for i in got["infos"]] == \
            [re.sub(r"over \d+ samples", "", i) for i in want["infos"]] and got.get("warnings") is None, (want, got)
        assert len(want["infos"]) == 1 and want["infos"][0].startswith(
            "PromQL info: input to histogram_quantile needed to be fixed for monotonicity"), want


def test_remote_read_by_prometheus3_exact(make_server, targets, prometheus):
    srv = make_server()
    writer, T, live = run_writer(srv, targets, prometheus)
    reader = prometheus(PromConfig(remote_read="http://127.0.0.1:%d/api/v1/read" % srv.port), name="reader",
                        binary=prometheus3_binary())
    # raw samples over a range, through remote_read, are the writer's own
    for q in (FLOATS + "[30s]", '{"http.server.duration"}[30s]', 'http_requests_total[15s]'):
        want, got = writer.query(q, T), reader.query(q, T)
        assert want["status"] == "success" and want["data"]["result"], (q, want)
        assert diff_answers(want, got, rel=0.0) is None, (q, diff_answers(want, got, rel=0.0))
    # and PromQL on top of them, over a range
    for q in ('rate(http_requests_total[4s])', 'sum by ("service.name") ({"http.server.duration"})',
              'avg_over_time(temperature_celsius[3s])'):
        want, got = writer.query_range(q, live - 6, T, 1), reader.query_range(q, live - 6, T, 1)
        assert want["status"] == "success" and want["data"]["result"], (q, want)
        assert diff_answers(want, got) is None, (q, diff_answers(want, got))
