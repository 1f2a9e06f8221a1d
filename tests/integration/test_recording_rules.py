"""Metrics from profiles: settings.v1.RecordingRulesService (Grafana Profiles Drilldown's "create
a recording rule") and the recorded float series, evaluated as each profile is written.

test_drilldown_flow replays the Drilldown: ListRecordingRules (empty), UpsertRecordingRule with
the JSON body its RecordingRulesApiClient writes ("$typeName" fields of @bufbuild/protobuf
included, metricType as a number), List and Get; then profiles are pushed and the metric is read
with PromQL: a counter per group_by group whose value is the sum of the profiles' totals. The
other tests: binary codec with a function filter (exact sums of the samples under the function),
generation conflicts and deletes, invalid rules with Pyroscope's messages, interleaved members of
one group, a provisioned rule from the configuration file (read-only), rules across a restart, a
real Prometheus reading the recorded series through remote_read, and the samples forwarded by a
remote_write endpoint.
"""

import json
import time
from urllib.parse import urlencode

import pytest

from conftest import CPU_TYPE, QUERY_T0, fixture_bytes
from pyro_util import connect_call, pyro_pb

T0 = QUERY_T0
MS = 1000
R = "settings.v1.RecordingRulesService/"
TOTAL = {"go/cpu-01.pb.gz": 2980000000, "go/cpu-02.pb.gz": 2930000000, "go/cpu-03.pb.gz": 2890000000,
         "go/cpu-05.pb.gz": 2860000000}
# the samples of each profile whose stack holds main.kernelCompress (hand-summed with pprof_decode)
KERNEL = {"go/cpu-01.pb.gz": 1140000000, "go/cpu-02.pb.gz": 1060000000}


@pytest.fixture(scope="module")
def pb():
    return pyro_pb()


def call(srv, method, body, codec="json", status=200):
    if isinstance(body, str):
        body = body.encode()
    r = connect_call(srv.port, R + method, None, codec=codec, body=body)
    assert r.status == status, r
    if status != 200:
        return r.error
    return json.loads(r.body) if codec == "json" else r.body


def promql(srv, q, t):
    js = srv.get_json("/api/v1/query?query=%s&time=%s" % (q.replace(" ", "%20").replace("{", "%7B").replace(
        "}", "%7D").replace('"', "%22").replace("=", "%3D").replace("[", "%5B").replace("]", "%5D"), t))
    assert js["status"] == "success", js
    return sorted(((tuple(sorted(r["metric"].items())), r["value"][1]) for r in js["data"]["result"]))


def drilldown_create(service, profile_type, metric, group_by, function=None):
    """The body RecordingRulesApiClient.create sends (JSON.stringify of a @bufbuild/protobuf v2
    message: its "$typeName" fields come along)."""
    body = {"metricName": metric,
            "matchers": ['{ service_name="%s" }' % service, '{ __profile_type__="%s"}' % profile_type],
            "groupBy": group_by}
    if function:
        body["stacktraceFilter"] = {"$typeName": "settings.v1.StacktraceFilter", "functionName": {
            "$typeName": "settings.v1.StacktraceFilterFunctionName", "functionName": function, "metricType": 0}}
    return json.dumps(body)


def test_drilldown_flow(make_server):
    srv = make_server(name="rules", retention="0")
    assert call(srv, "ListRecordingRules", "{}") == {}
    got = call(srv, "UpsertRecordingRule", drilldown_create("api", CPU_TYPE, "profiles_recorded_cpu_api",
                                                            ["instance"]))
    rule = got["rule"]
    rid = rule["id"]
    assert len(rid) == 10 and rid.isalpha(), rid
    assert rule == {"id": rid, "metricName": "profiles_recorded_cpu_api", "profileType": CPU_TYPE,
                    "matchers": ['{ service_name="api" }', '{ __profile_type__="%s"}' % CPU_TYPE],
                    "groupBy": ["instance"], "generation": "1"}
    assert call(srv, "ListRecordingRules", "{}") == {"rules": [rule]}
    assert call(srv, "GetRecordingRule", '{"id":"%s"}' % rid) == {"rule": rule}
    # profiles: two members of the group instance="a", one of "b", one of another service
    for rel, labels, dt in [("go/cpu-01.pb.gz", '{service_name="api",instance="a"}', 7),
                            ("go/cpu-03.pb.gz", '{service_name="api",instance="b"}', 22),
                            ("go/cpu-05.pb.gz", '{service_name="batch",instance="a"}', 30),
                            ("go/cpu-02.pb.gz", '{service_name="api",instance="a"}', 67)]:
        st, _ = srv.push(rel, labels=labels, time=str(T0 + dt))
        assert st == 200, rel
    a = (("__name__", "profiles_recorded_cpu_api"), ("instance", "a"), ("pyroscope_rule_id", rid))
    b = (("__name__", "profiles_recorded_cpu_api"), ("instance", "b"), ("pyroscope_rule_id", rid))
    # a counter per group: the sum of its profiles' totals up to the time asked
    assert promql(srv, "profiles_recorded_cpu_api", T0 + 10) == [(a, "2980000000")]
    assert promql(srv, "profiles_recorded_cpu_api", T0 + 100) == [
        (a, str(TOTAL["go/cpu-01.pb.gz"] + TOTAL["go/cpu-02.pb.gz"])), (b, str(TOTAL["go/cpu-03.pb.gz"]))]
    assert promql(srv, "sum(profiles_recorded_cpu_api)", T0 + 100) == [((), "8800000000")]
    m = srv.metrics()
    assert (m["profstore_recording_rules"], m["profstore_recording_rule_evaluations_total"],
            m["profstore_recording_rule_samples_total"], m["profstore_recording_rule_samples_dropped_total"]) == (
        1, 3, 3, 0)
    # increase over the minute after the first profile of "a": the second profile's total
    assert promql(srv, 'profiles_recorded_cpu_api{instance="a"} - profiles_recorded_cpu_api{instance="a"} offset 60s',
                  T0 + 67) == [((("instance", "a"), ("pyroscope_rule_id", rid)), "2930000000")]


def test_binary_function_filter_and_generations(make_server, pb):
    srv = make_server(name="rulesbin", retention="0")
    m = pb.recording.UpsertRecordingRuleRequest(
        metric_name="profiles_recorded_kernel", matchers=['{__profile_type__="%s"}' % CPU_TYPE],
        group_by=["service_name"], external_labels=[pb.types.LabelPair(name="team", value="storage")],
        stacktrace_filter=pb.recording.StacktraceFilter(function_name=pb.recording.StacktraceFilterFunctionName(
            function_name="main.kernelCompress")))
    m.id = "kernel"
    got = pb.recording.UpsertRecordingRuleResponse.FromString(
        call(srv, "UpsertRecordingRule", m.SerializeToString(), codec="proto")).rule
    assert (got.id, got.generation, got.profile_type, got.provisioned) == ("kernel", 1, CPU_TYPE, False)
    assert got.stacktrace_filter.function_name.function_name == "main.kernelCompress"
    for rel, dt in [("go/cpu-01.pb.gz", 5), ("go/cpu-02.pb.gz", 20)]:
        st, _ = srv.push(rel, labels='{service_name="api"}', time=str(T0 + dt))
        assert st == 200
    s = (("__name__", "profiles_recorded_kernel"), ("pyroscope_rule_id", "kernel"), ("service_name", "api"),
         ("team", "storage"))
    assert promql(srv, "profiles_recorded_kernel", T0 + 5) == [(s, str(KERNEL["go/cpu-01.pb.gz"]))]
    assert promql(srv, "profiles_recorded_kernel", T0 + 30) == [(s, "2200000000")]
    # generations: a stale one is refused, the current one replaces the rule (generation 2)
    m.generation = 0
    e = call(srv, "UpsertRecordingRule", m.SerializeToString(), codec="proto", status=409)
    assert e == {"code": "already_exists",
                 "message": "conflicting update, please try again: observed_generation=0, store_generation=1"}
    m.generation = 1
    m.metric_name = "profiles_recorded_kernel_v2"
    got = pb.recording.UpsertRecordingRuleResponse.FromString(
        call(srv, "UpsertRecordingRule", m.SerializeToString(), codec="proto")).rule
    assert (got.generation, got.metric_name) == (2, "profiles_recorded_kernel_v2")
    lst = pb.recording.ListRecordingRulesResponse.FromString(call(srv, "ListRecordingRules", b"", codec="proto"))
    assert [(r.id, r.generation, r.metric_name) for r in lst.rules] == [("kernel", 2, "profiles_recorded_kernel_v2")]
    # survives a restart, and keeps counting on from the stored value
    srv.restart()
    st, _ = srv.push("go/cpu-02.pb.gz", labels='{service_name="api"}', time=str(T0 + 40))
    assert st == 200
    s2 = (("__name__", "profiles_recorded_kernel_v2"),) + s[1:]
    assert promql(srv, "profiles_recorded_kernel_v2", T0 + 50) == [(s2, "1060000000")]
    assert promql(srv, "profiles_recorded_kernel", T0 + 50) == [(s, "2200000000")]
    # delete, then again: not found
    assert call(srv, "DeleteRecordingRule", '{"id":"kernel"}') == {}
    assert call(srv, "DeleteRecordingRule", '{"id":"kernel"}', status=404) == {
        "code": "not_found", "message": "no rule with ID='kernel' found"}
    assert call(srv, "GetRecordingRule", '{"id":"kernel"}', status=404) == {
        "code": "not_found", "message": "no rule with id='kernel' found"}
    assert call(srv, "ListRecordingRules", "{}") == {}


def test_invalid_rules(make_server):
    srv = make_server(name="rulesbad", retention="0")

    def refused(body):
        e = call(srv, "UpsertRecordingRule", json.dumps(body), status=400)
        assert e["code"] == "invalid_argument", e
        return e["message"]

    ok = '{__profile_type__="%s"}' % CPU_TYPE
    assert refused({"metricName": "cpu_total", "matchers": [ok]}) == \
        'invalid request: metric_name "cpu_total" is invalid: metric name must start with profiles_recorded_'
    assert refused({"metricName": "profiles_recorded.x", "matchers": [ok]}) == \
        'invalid request: metric_name "profiles_recorded.x" is invalid: invalid metric name: profiles_recorded.x'
    assert refused({"matchers": [ok]}) == "invalid request: metric_name is required"
    assert refused({"metricName": "profiles_recorded_x", "matchers": [ok, '{__profile_type__="b"}']}) == \
        'invalid request: matchers must contain a "__profile_type__" matcher'
    assert refused({"metricName": "profiles_recorded_x", "matchers": ['{service_name="a"}']}) == \
        'invalid request: matchers must contain a "__profile_type__" matcher'
    assert refused({"metricName": "profiles_recorded_x", "matchers": ['{__profile_type__=~"a.*"}']}) == \
        'invalid request: matcher "__profile_type__" must have type "="'
    assert refused({"metricName": "profiles_recorded_x", "matchers": [ok], "groupBy": ["service.name", "ok"]}) == \
        'invalid request: group_by label "service.name" must match ^[a-zA-Z_][a-zA-Z0-9_]*$'
    assert refused({"id": "a1", "metricName": "x", "matchers": ["{"], "generation": -1}) == (
        'invalid request: id "a1" must match ^[a-zA-Z]+$\n'
        'metric_name "x" is invalid: metric name must start with profiles_recorded_\n'
        'matcher "{" is invalid: 1:2: parse error: unexpected end of input inside braces\n'
        'matchers must contain a "__profile_type__" matcher\n'
        'generation must be positive')
    assert refused({"metricName": "profiles_recorded_x", "matchers": [ok] * 17}) == \
        "invalid request: matchers: 17, more than 16"
    e = call(srv, "UpsertRecordingRule", '{"metricName":1}', status=400)
    assert e["message"].startswith("settings.v1.UpsertRecordingRuleRequest: json: metric_name"), e
    assert call(srv, "GetRecordingRule", "{}", status=400) == {"code": "invalid_argument", "message": "id is required"}
    assert call(srv, "DeleteRecordingRule", '{"id":" "}', status=400) == {
        "code": "invalid_argument", "message": "invalid request: id is required"}
    assert call(srv, "ListRecordingRules", "{}") == {}


def test_interleaved_members_and_everything_rule(make_server):
    """A rule matching every profile (no group_by): the members of its one group arrive out of
    time order across writes; each is added, a late one 1 ms after the newest sample."""
    srv = make_server(name="rulesall", retention="0")
    call(srv, "UpsertRecordingRule", json.dumps(
        {"id": "all", "metricName": "profiles_recorded_all", "matchers": ['{__profile_type__="%s"}' % CPU_TYPE]}))
    for rel, inst, dt in [("go/cpu-01.pb.gz", "a", 20), ("go/cpu-02.pb.gz", "b", 10), ("go/cpu-03.pb.gz", "c", 20)]:
        st, _ = srv.push(rel, labels='{service_name="x",instance="%s"}' % inst, time=str(T0 + dt))
        assert st == 200
    js = srv.get_json("/api/v1/query?query=profiles_recorded_all%5B1m%5D&time=" + str(T0 + 30))
    vals = js["data"]["result"][0]["values"]
    assert vals == [[T0 + 20, "2980000000"], [T0 + 20.001, "5910000000"], [T0 + 20.002, "8800000000"]]


def test_provisioned_rule(make_server, tmp_path):
    cfg = tmp_path / "profstore.yml"
    cfg.write_text("""
recording_rules:
  - id: provisioned
    metric_name: profiles_recorded_cpu_by_service
    matchers: ['{__profile_type__="%s"}']
    group_by: [service_name]
    external_labels: {source: config}
""" % CPU_TYPE)
    srv = make_server(name="rulesprov", retention="0", config=str(cfg))
    lst = call(srv, "ListRecordingRules", "{}")
    assert lst == {"rules": [{"id": "provisioned", "metricName": "profiles_recorded_cpu_by_service",
                              "profileType": CPU_TYPE, "matchers": ['{__profile_type__="%s"}' % CPU_TYPE],
                              "groupBy": ["service_name"], "externalLabels": [{"name": "source", "value": "config"}],
                              "provisioned": True}]}
    # /api/v1/status/config shows them as loaded
    y = srv.get_json("/api/v1/status/config")["data"]["yaml"]
    assert y.endswith("recording_rules:\n- id: provisioned\n  metric_name: profiles_recorded_cpu_by_service\n"
                      "  matchers:\n  - '{__profile_type__=\"%s\"}'\n  group_by:\n  - service_name\n"
                      "  external_labels:\n    source: config\n" % CPU_TYPE), y
    e = call(srv, "DeleteRecordingRule", '{"id":"provisioned"}', status=400)
    assert e == {"code": "failed_precondition", "message": "rule with id='provisioned' is provisioned by the "
                 "configuration file: it cannot be changed or deleted here"}
    st, _ = srv.push("go/cpu-01.pb.gz", labels='{service_name="api"}', time=str(T0 + 1))
    assert st == 200
    assert promql(srv, "profiles_recorded_cpu_by_service", T0 + 2) == [(
        (("__name__", "profiles_recorded_cpu_by_service"), ("pyroscope_rule_id", "provisioned"),
         ("service_name", "api"), ("source", "config")), "2980000000")]


def test_bad_provisioned_rule(make_server, tmp_path):
    cfg = tmp_path / "bad.yml"
    cfg.write_text("recording_rules:\n  - metric_name: profiles_recorded_x\n    matchers: ['{a=\"b\"}']\n")
    srv = make_server(name="rulesprovbad", retention="0", config=str(cfg), start=False)
    srv.start(wait_ready=False)
    assert srv.proc.wait(timeout=10) == 2
    assert 'recording_rules[0]: matchers must contain a "__profile_type__" matcher' in srv.log()


def test_remote_read_by_prometheus(make_server, tmp_path):
    """A real Prometheus 2.42 reads the recorded series through remote_read: the same answer."""
    from prom_util import PromConfig, Prometheus, diff_answers
    srv = make_server(name="rulesread", retention="0")
    call(srv, "UpsertRecordingRule", json.dumps({"id": "read", "metricName": "profiles_recorded_read",
                                                 "matchers": ['{__profile_type__="%s"}' % CPU_TYPE],
                                                 "groupBy": ["service_name"]}))
    for rel, svc, dt in [("go/cpu-01.pb.gz", "api", 5), ("go/cpu-02.pb.gz", "api", 20), ("go/cpu-03.pb.gz", "db", 20)]:
        st, _ = srv.push(rel, labels='{service_name="%s"}' % svc, time=str(T0 + dt))
        assert st == 200
    p = Prometheus(tmp_path / "reader", PromConfig(remote_read=srv.url("/api/v1/read")))
    p.start()
    try:
        for expr in ["profiles_recorded_read", "sum(profiles_recorded_read)",
                     "profiles_recorded_read - profiles_recorded_read offset 10s"]:
            want = srv.get_json("/api/v1/query?" + urlencode({"query": expr, "time": T0 + 25}))
            got = p.query(expr, T0 + 25)
            assert diff_answers(want, got) is None, (expr, want, got)
        got = p.query("sum(profiles_recorded_read)", T0 + 25)
        assert got["data"]["result"][0]["value"][1] == "8800000000", got
    finally:
        p.stop()


def test_forwarded_by_remote_write(make_server, tmp_path):
    """The recorded samples are float samples like any: a remote_write forward endpoint gets them,
    with the counter's values."""
    b = make_server(name="rulesfwdb", retention="0")
    cfg = tmp_path / "a.yml"
    cfg.write_text("forward:\n  - name: b\n    url: http://127.0.0.1:%d/api/v1/write\n    protocol: remote_write\n"
                   "    queue_config: {batch_send_deadline: 100ms, min_backoff: 50ms, max_backoff: 500ms}\n" % b.port)
    a = make_server(name="rulesfwda", retention="0", config=str(cfg))
    call(a, "UpsertRecordingRule", json.dumps({"id": "fwd", "metricName": "profiles_recorded_fwd",
                                               "matchers": ['{__profile_type__="%s"}' % CPU_TYPE]}))
    for rel, dt in [("go/cpu-01.pb.gz", 5), ("go/cpu-02.pb.gz", 20)]:
        st, _ = a.push(rel, labels='{service_name="api"}', time=str(T0 + dt))
        assert st == 200
    want = [((("__name__", "profiles_recorded_fwd"), ("pyroscope_rule_id", "fwd")), "5910000000")]
    assert promql(a, "profiles_recorded_fwd", T0 + 30) == want
    deadline = time.monotonic() + 30
    while promql(b, "profiles_recorded_fwd", T0 + 30) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    assert promql(b, "profiles_recorded_fwd", T0 + 30) == want
    assert promql(b, "profiles_recorded_fwd", T0 + 10) == [(want[0][0], "2980000000")]


def test_provisioned_reload(make_server, tmp_path):
    """A reload replaces the provisioned rules; an invalid one keeps those in force."""
    cfg = tmp_path / "reload.yml"
    rule = "recording_rules:\n  - id: %s\n    metric_name: profiles_recorded_%s\n    matchers: ['%s']\n"
    cfg.write_text(rule % ("first", "first", '{__profile_type__="%s"}' % CPU_TYPE))
    srv = make_server(name="rulesreload", retention="0", config=str(cfg))
    assert [r["id"] for r in call(srv, "ListRecordingRules", "{}")["rules"]] == ["first"]
    cfg.write_text(rule % ("second", "second", '{__profile_type__="%s"}' % CPU_TYPE))
    st, _, body = srv.request("POST", "/-/reload")
    assert st == 200, body
    assert [r["id"] for r in call(srv, "ListRecordingRules", "{}")["rules"]] == ["second"]
    cfg.write_text(rule % ("third", "third", '{job="x"}'))
    st, _, body = srv.request("POST", "/-/reload")
    assert st == 400 and json.loads(body)["error"] == \
        '%s: recording_rules[0]: matchers must contain a "__profile_type__" matcher' % cfg, (st, body)
    assert [r["id"] for r in call(srv, "ListRecordingRules", "{}")["rules"]] == ["second"]
    st, _ = srv.push("go/cpu-01.pb.gz", labels='{service_name="api"}', time=str(T0 + 1))
    assert st == 200
    assert promql(srv, "profiles_recorded_second", T0 + 2) == [(
        (("__name__", "profiles_recorded_second"), ("pyroscope_rule_id", "second")), "2980000000")]
