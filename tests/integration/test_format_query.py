"""GET|POST /api/v1/format_query: the canonical form of a PromQL expression, exactly as the real
Prometheus 2.42.0 answers it (its formatQuery: parser.ParseExpr, then expr.Pretty(0), so long
expressions come split over indented lines), and its parse errors as 400 bad_data with
Prometheus' message and line:column. RECORDED holds the answers of /usr/bin/prometheus 2.42.0
(Debian 2.42.0+ds), asked on a loopback port with a temporary data dir, for these queries.
When that binary is installed, test_live_prometheus asks it again and compares."""

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import form_request, free_port

RECORDED = [
    ('sum by(job)(rate(http_requests_total{code=~"5..", job="api"}[5m]))', 200, {'status': 'success', 'data': 'sum by (job) (rate(http_requests_total{code=~"5..",job="api"}[5m]))'}),
    ('sum(rate(x[5m])) without (instance) / on(job) group_left(team) max by (job, team) (team_info)', 200, {'status': 'success', 'data': 'sum without (instance) (rate(x[5m])) / on (job) group_left (team) max by (job, team) (team_info)'}),
    ('histogram_quantile(0.9, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))', 200, {'status': 'success', 'data': 'histogram_quantile(0.9, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))'}),
    ('max_over_time(deriv(rate(x[5m])[1h:1m])[1d:] @ start()) > bool 0.5e-3', 200, {'status': 'success', 'data': 'max_over_time(deriv(rate(x[5m])[1h:1m])[1d:] @ start()) > bool 0.0005'}),
    ('topk(3, count_values without (a) ("v", -x ^ 2 % 0x1f)) or vector(time()) unless on() y', 200, {'status': 'success', 'data': 'topk(3, count_values without (a) ("v", -x ^ 2 % 31)) or vector(time()) unless on () y'}),
    ('x offset -1h30m @ 1700000000.5', 200, {'status': 'success', 'data': 'x @ 1700000000.500 offset -1h30m'}),
    ('label_replace(up, \'dst\', "\\u00e9$1", `src`, \'(.*)\')', 200, {'status': 'success', 'data': 'label_replace(up, "dst", "é$1", "src", "(.*)")'}),
    ('a @ end() [5m:] offset 7d', 200, {'status': 'success', 'data': 'a @ end()[5m:] offset 1w'}),
    ('1 + 2 * 3 ^ 2 ^ 0.5', 200, {'status': 'success', 'data': '1 + 2 * 3 ^ 2 ^ 0.5'}),
    ('-(-a) - - b', 200, {'status': 'success', 'data': '-(-a) - -b'}),
    ('sum by (job, instance, mode, something_long) (rate(node_cpu_seconds_total{mode!="idle", instance=~"foo.*"}[5m] offset 1h)) / on(job) group_left(a) count(node_cpu_seconds_total)', 200, {'status': 'success', 'data': '  sum by (job, instance, mode, something_long) (\n    rate(node_cpu_seconds_total{instance=~"foo.*",mode!="idle"}[5m] offset 1h)\n  )\n/ on (job) group_left (a)\n  count(node_cpu_seconds_total)'}),
    ('histogram_quantile(0.99, sum by (le, job, instance) (rate(http_request_duration_seconds_bucket{job="api", handler="/v1/query"}[5m])))', 200, {'status': 'success', 'data': 'histogram_quantile(\n  0.99,\n  sum by (le, job, instance) (\n    rate(http_request_duration_seconds_bucket{handler="/v1/query",job="api"}[5m])\n  )\n)'}),
    ('label_replace(up{job="api-server",service="a:c"}, "foo", "$1", "service", "(.*):.*") + label_replace(up, "a", "b", "c", "d")', 200, {'status': 'success', 'data': '  label_replace(up{job="api-server",service="a:c"}, "foo", "$1", "service", "(.*):.*")\n+\n  label_replace(up, "a", "b", "c", "d")'}),
    ('max_over_time((rate(http_requests_total{job="api-server", instance="localhost:9090", method="GET"}[5m]) > 0)[1h:1m])', 200, {'status': 'success', 'data': 'max_over_time(\n(rate(http_requests_total{instance="localhost:9090",job="api-server",method="GET"}[5m]) > 0)[1h:1m]\n)'}),
    ('sum(process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="api"}) by (instance)', 200, {'status': 'success', 'data': 'sum by (instance) (process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="api"})'}),
    ('rate(x)', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:6: parse error: expected type range vector in call to function "rate", got instant vector'}),
    ('sum(1)', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:5: parse error: expected type instant vector in aggregation expression, got scalar'}),
    ('a + bool b', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:3: parse error: bool modifier can only be used on comparison operators'}),
    ('1 > 2', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:3: parse error: comparisons between scalars must use BOOL modifier'}),
    ('a and 1', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:1: parse error: set operator "and" not allowed in binary scalar expression'}),
    ('foo(a)', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:1: parse error: unknown function with name "foo"'}),
    ('a[5]', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:3: parse error: missing unit character in duration'}),
    ('a offset 1m offset 2m', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:1: parse error: offset may not be set multiple times'}),
    ('{}', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:1: parse error: vector selector must contain at least one non-empty matcher'}),
    ('rate(x[1000000d])', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:8: parse error: duration out of range'}),
    ('a{b="\\q"}', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:5: parse error: unknown escape sequence U+0071 \'q\''}),
    ('sum by (a', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:10: parse error: unclosed left parenthesis'}),
    ('a b', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:3: parse error: unexpected identifier "b"'}),
    (')', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:2: parse error: unexpected right parenthesis \')\''}),
    ('a @ 1 @ 2', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:1: parse error: @ <timestamp> may not be set multiple times'}),
    ('', 400, {'status': 'error', 'errorType': 'bad_data', 'error': 'invalid parameter "query": 1:1: parse error: no expression found in input'}),
]


@pytest.fixture(scope="module")
def srv(module_server_factory):
    return module_server_factory(name="format_query")


def answer(s, method, query):
    st, _, body = form_request(s, method, "/api/v1/format_query", {"query": query})
    return st, json.loads(body)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_recorded_answers(srv, method):
    for query, status, want in RECORDED:
        st, got = answer(srv, method, query)
        assert (st, got) == (status, want), query


def test_no_query_parameter(srv):
    st, _, body = srv.request("GET", "/api/v1/format_query")
    assert st == 400
    assert json.loads(body) == {"status": "error", "errorType": "bad_data",
                                "error": 'invalid parameter "query": 1:1: parse error: no expression found in input'}


def test_limits(srv):
    # 64 KiB of query text at most; deep nesting is refused before it can exhaust the stack
    st, got = answer(srv, "POST", "x" * 70000)
    assert st == 413
    assert got["error"] == 'invalid parameter "query": query is too long: 70000 bytes (the limit is 65536)'
    st, got = answer(srv, "POST", "(" * 5000 + "x" + ")" * 5000)
    assert st == 413
    assert got["error"] == ('invalid parameter "query": 1:129: expression is too deeply nested '
                            '(the limit is 128 levels)')
    st, got = answer(srv, "GET", "sum(x)")
    assert (st, got) == (200, {"status": "success", "data": "sum(x)"})


def test_live_prometheus(tmp_path):
    """The recorded answers are still those of the installed Prometheus (skipped without it)."""
    prom = shutil.which("prometheus")
    if prom is None:
        pytest.skip("prometheus is not installed")
    version = subprocess.run([prom, "--version"], capture_output=True, text=True).stdout
    if "version 2.42." not in version:
        pytest.skip("not Prometheus 2.42: " + version.splitlines()[0])
    (tmp_path / "prom.yml").write_text("global:\n  scrape_interval: 15s\n")
    port = free_port()
    log = open(tmp_path / "prometheus.log", "wb")
    p = subprocess.Popen([prom, "--config.file=%s" % (tmp_path / "prom.yml"),
                          "--storage.tsdb.path=%s" % (tmp_path / "data"),
                          "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=log)
    try:
        url = "http://127.0.0.1:%d/api/v1/format_query" % port
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port, timeout=2)
                break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        for query, status, want in RECORDED:
            data = urllib.parse.urlencode({"query": query}).encode()
            try:
                r = urllib.request.urlopen(url, data, timeout=10)
            except urllib.error.HTTPError as e:
                r = e
            assert (r.getcode(), json.loads(r.read())) == (status, want), query
    finally:
        p.terminate()
        p.wait(timeout=30)
        log.close()
