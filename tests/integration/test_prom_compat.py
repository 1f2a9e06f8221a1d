"""Endpoints of Prometheus' HTTP API that Grafana's Prometheus data source calls and profstore has
nothing for: answered in Prometheus' shapes (empty), not 404. query_exemplars checks its query and
range as Prometheus does (a bad one is a 400 in the error envelope)."""

import json
import urllib.parse

import pytest


def get(srv, path):
    st, hdrs, body = srv.get(path)
    return st, hdrs, json.loads(body)


def test_rules_and_alerts_are_empty(server):
    st, hdrs, js = get(server, "/api/v1/rules")
    assert (st, js) == (200, {"status": "success", "data": {"groups": []}})
    assert hdrs["content-type"] == "application/json"
    st, _, js = get(server, "/api/v1/rules?type=alert")
    assert (st, js) == (200, {"status": "success", "data": {"groups": []}})
    st, _, js = get(server, "/api/v1/alerts")
    assert (st, js) == (200, {"status": "success", "data": {"alerts": []}})


def test_query_exemplars(server):
    q = urllib.parse.quote('process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job="api"}')
    st, _, js = get(server, "/api/v1/query_exemplars?query=%s&start=1&end=100" % q)
    assert (st, js) == (200, {"status": "success", "data": []})
    # POST form, as Grafana sends it
    st, _, body = server.request("POST", "/api/v1/query_exemplars", body=b"query=up&start=1&end=2",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert (st, json.loads(body)) == (200, {"status": "success", "data": []})


@pytest.mark.parametrize("qs,msg", [
    ("", 'invalid parameter "query": the query is empty'),
    ("query=up&start=10&end=1", 'invalid parameter "end": end timestamp must not be before start time'),
    ("query=" + urllib.parse.quote("up{"), '1:4: parse error: unexpected end of input inside braces'),
])
def test_query_exemplars_bad_input(server, qs, msg):
    st, _, js = get(server, "/api/v1/query_exemplars?" + qs)
    assert st == 400
    assert js == {"status": "error", "errorType": "bad_data", "error": msg}
