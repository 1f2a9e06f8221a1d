"""Grafana Profiles Drilldown's calls (Explore -> Profiles) over Connect, as Grafana's proxy sends
them: protojson bodies written by hand as the Drilldown writes them (proto field names such as
profile_typeID beside lowerCamel ones such as labelSelector and maxNodes in one body, int64 as
JSON numbers or strings) and binary protobuf built with protoc-generated classes (pyro_util.py).

test_drilldown_load replays the load of the Drilldown in its order: GetProfileStats (the
"onboarding" check), settings.v1 Get, Series with label names service_name and __profile_type__
(the service list), then a flame graph with mixed field names, equal to the same call in binary.
The other tests: GetProfileStats on an empty store; span_selector served (no span stored here:
empty), a malformed span id named; selector fields profstore does not implement yet
(trace_id_selector, exemplar_type INDIVIDUAL/SPAN) refused with invalid_argument naming them, in
both codecs; settings Set/Get/Delete with Pyroscope's rules
(modifiedAt set by the server when absent, an older update refused with already_exists, deleting
a missing setting is no error), persisted across a restart; bad settings input (no setting, no
name, a value over 64 KiB, garbage) with exact messages.
"""

import json

import pytest

from conftest import CPU_TYPE, QUERY_T0
from pyro_util import connect_call, pyro_pb

T0 = QUERY_T0
MS = 1000
Q = "querier.v1.QuerierService/"
S = "settings.v1.SettingsService/"
PUSHES = [
    ("go/cpu-01.pb.gz", '{service_name="api",instance="a"}', 7),
    ("go/cpu-03.pb.gz", '{service_name="api",instance="b"}', 22),
    ("go/cpu-05.pb.gz", '{service_name="batch",instance="c"}', 37),
    ("go/cpu-seed2-01.pb.gz", '{service_name="api",instance="c"}', 3599),
]
INT64_MAX = 2 ** 63 - 1


@pytest.fixture(scope="module")
def pb():
    return pyro_pb()


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="drilldown", retention="0")
    for rel, labels, dt in PUSHES:
        st, _ = s.push(rel, labels=labels, time=str(T0 + dt))
        assert st == 200, (rel, st)
    return s


def raw(srv, method, body, codec="json", status=200):
    """One call with a hand-written body (bytes or a JSON string); returns the parsed answer (JSON)
    or the raw bytes (proto), after checking the status."""
    if isinstance(body, str):
        body = body.encode()
    r = connect_call(srv.port, method, None, codec=codec, body=body)
    assert r.status == status, r
    if status != 200:
        return r.error
    return json.loads(r.body) if codec == "json" else r.body


def refused(srv, method, body, codec="json"):
    e = raw(srv, method, body, codec=codec, status=400)
    assert e["code"] == "invalid_argument", e
    return e["message"]


def test_drilldown_load(srv, pb):
    # 1. the onboarding check: data ingested, the oldest and newest profile (ms)
    assert raw(srv, Q + "GetProfileStats", "{}") == {
        "dataIngested": True, "oldestProfileTime": str((T0 + 7) * MS), "newestProfileTime": str((T0 + 3599) * MS)}
    b = raw(srv, Q + "GetProfileStats", b"", codec="proto")
    m = pb.types.GetProfileStatsResponse.FromString(b)
    assert (m.data_ingested, m.oldest_profile_time, m.newest_profile_time) == (True, (T0 + 7) * MS, (T0 + 3599) * MS)
    # 2. the flame graph's settings: nothing stored is an empty list
    assert raw(srv, S + "Get", "{}") == {}
    # 3. the service list: Series with labelNames, start/end as JSON numbers
    body = '{"matchers":["{}"],"labelNames":["service_name","__profile_type__"],"start":%d,"end":%d}' % (
        T0 * MS, (T0 + 3600) * MS)
    got = raw(srv, Q + "Series", body)
    assert got == {"labelsSet": [
        {"labels": [{"name": "__profile_type__", "value": CPU_TYPE}, {"name": "service_name", "value": "api"}]},
        {"labels": [{"name": "__profile_type__", "value": CPU_TYPE}, {"name": "service_name", "value": "batch"}]},
        {"labels": [{"name": "__profile_type__", "value": "process_cpu:samples:count:cpu:nanoseconds:delta"},
                    {"name": "service_name", "value": "api"}]},
        {"labels": [{"name": "__profile_type__", "value": "process_cpu:samples:count:cpu:nanoseconds:delta"},
                    {"name": "service_name", "value": "batch"}]}]}
    # LabelValues of __profile_type__: the type ids
    body3 = '{"name":"__profile_type__","matchers":["{service_name=\\"batch\\"}"],"start":%d,"end":%d}' % (
        T0 * MS, (T0 + 3600) * MS)
    assert raw(srv, Q + "LabelValues", body3) == {"names": [CPU_TYPE, "process_cpu:samples:count:cpu:nanoseconds:delta"]}
    # proto names in the same call answer the same
    body2 = '{"matchers":["{}"],"label_names":["service_name","__profile_type__"],"start":"%d","end":%d}' % (
        T0 * MS, (T0 + 3600) * MS)
    assert raw(srv, Q + "Series", body2) == got
    # 4. the flame graph: proto and JSON names mixed, int64 as number and as string
    body = ('{"profile_typeID":"%s","labelSelector":"{service_name=\\"api\\"}","start":%d,"end":"%d",'
            '"maxNodes":16384,"format":"PROFILE_FORMAT_FLAMEGRAPH"}' % (CPU_TYPE, T0 * MS, (T0 + 3600) * MS))
    fg = raw(srv, Q + "SelectMergeStacktraces", body)["flamegraph"]
    # README: cpu-01 2980000000 + cpu-03 2890000000 + cpu-seed2-01 2340000000
    assert fg["total"] == str(2980000000 + 2890000000 + 2340000000)
    req = pb.querier.SelectMergeStacktracesRequest(profile_typeID=CPU_TYPE, label_selector='{service_name="api"}',
                                                   start=T0 * MS, end=(T0 + 3600) * MS, max_nodes=16384)
    r = connect_call(srv.port, Q + "SelectMergeStacktraces", req, resp_type=pb.querier.SelectMergeStacktracesResponse)
    assert r.status == 200, r
    g = r.msg.flamegraph
    assert fg["names"] == list(g.names) and fg["total"] == str(g.total) and fg["maxSelf"] == str(g.max_self)
    assert [[int(v) for v in lv.get("values", [])] for lv in fg["levels"]] == [list(lv.values) for lv in g.levels]
    # a field name protojson does not know is ignored, as connect-go's JSON codec does
    body = '{"profile_typeID":"%s","labelSelector":"{}","start":%d,"end":%d,"someFutureField":[1]}' % (
        CPU_TYPE, T0 * MS, (T0 + 3600) * MS)
    assert raw(srv, Q + "SelectMergeStacktraces", body)["flamegraph"]["total"] == str(
        2980000000 + 2890000000 + 2860000000 + 2340000000)


def test_profile_stats_empty(make_server, pb):
    s = make_server(retention="0")
    # Pyroscope's answer for no data: false (not written), int64 max and min
    assert raw(s, Q + "GetProfileStats", "{}") == {"oldestProfileTime": str(INT64_MAX),
                                                   "newestProfileTime": str(-INT64_MAX - 1)}
    m = pb.types.GetProfileStatsResponse.FromString(raw(s, Q + "GetProfileStats", b"", codec="proto"))
    assert (m.data_ingested, m.oldest_profile_time, m.newest_profile_time) == (False, INT64_MAX, -INT64_MAX - 1)
    # a body that is not a GetProfileStatsRequest
    m = refused(s, Q + "GetProfileStats", "[1]")
    assert m.startswith("types.v1.GetProfileStatsRequest: json: "), m


def test_unimplemented_selectors_refused(srv, pb):
    rng = '"profile_typeID":"%s","label_selector":"{}","start":%d,"end":%d' % (CPU_TYPE, T0 * MS, (T0 + 3600) * MS)
    # traces to profiles: span ids are served (test_pyroscope_spans.py), under both JSON names; a
    # malformed one is named; trace ids are refused
    for name in ("spanSelector", "span_selector"):
        assert raw(srv, Q + "SelectMergeStacktraces", '{%s,"%s":["9a517183f26a089d","5a4fe264a9c987fe"]}' % (
            rng, name))["flamegraph"] == {"names": ["total"], "levels": [{"values": ["0", "0", "0", "0"]}]}
        assert refused(srv, Q + "SelectMergeStacktraces", '{%s,"%s":["9a517183f26a089d","5a4fe264"]}' % (
            rng, name)) == 'span_selector[1]: "5a4fe264" is not a span id (16 hex digits, not all zero)'
    assert refused(srv, Q + "SelectMergeStacktraces", '{%s,"traceIdSelector":["7c9e66797425440de944be07fc1f90ae"]}' % rng) \
        == "trace_id_selector is not supported by profstore (1 trace ids)"
    # function details and exemplar clicks (JSON names as the Drilldown writes them)
    # (a call site is served: test_pyroscope_callsite.py; its go_pgo part is not)
    assert refused(srv, Q + "SelectMergeStacktraces", '{%s,"stackTraceSelector":{"callSite":[{"name":"main.main"}],'
                   '"goPgo":{"keepLocations":1}}}' % rng) == "stack_trace_selector.go_pgo is not supported by profstore"
    # (exemplar clicks are served: test_pyroscope_exemplars.py; an id no profile has is refused)
    assert refused(srv, Q + "SelectMergeStacktraces", '{%s,"profileIdSelector":["7c9e6679-7425-40de-944b-e07fc1f90ae7"]}'
                   % rng) == ('profile_id_selector[0]: unknown profile id "7c9e6679-7425-40de-944b-e07fc1f90ae7" '
                              '(no stored profile has it)')
    # binary: the same fields by number (11)
    req = pb.querier.SelectMergeStacktracesRequest(profile_typeID=CPU_TYPE, start=T0 * MS, end=(T0 + 3600) * MS,
                                                   span_selector=["9a517183f26a089x"])
    assert refused(srv, Q + "SelectMergeStacktraces", req.SerializeToString(), codec="proto") == \
        'span_selector[0]: "9a517183f26a089x" is not a span id (16 hex digits, not all zero)'
    # a Diff side may not select spans
    req.span_selector[0] = "9a517183f26a089d"
    d = pb.querier.DiffRequest(left=req, right=req)
    assert refused(srv, Q + "Diff", d.SerializeToString(), codec="proto") == \
        "left.span_selector is not supported in a Diff (1 span ids)"
    # exemplars of SelectSeries: NONE and INDIVIDUAL are served (test_pyroscope_exemplars.py), SPAN is
    # Pyroscope's unimplemented
    ser = '"profileTypeID":"%s","labelSelector":"{}","start":%d,"end":%d,"step":60' % (
        CPU_TYPE, T0 * MS, (T0 + 3600) * MS)
    ok = raw(srv, Q + "SelectSeries", '{%s,"exemplarType":"EXEMPLAR_TYPE_NONE"}' % ser)
    assert ok == raw(srv, Q + "SelectSeries", '{%s}' % ser) and len(ok["series"]) == 1
    ind = raw(srv, Q + "SelectSeries", '{%s,"exemplar_type":"EXEMPLAR_TYPE_INDIVIDUAL"}' % ser)
    assert [p["value"] for p in ind["series"][0]["points"]] == [p["value"] for p in ok["series"][0]["points"]]
    assert all(len(p["exemplars"]) == 1 for p in ind["series"][0]["points"])
    req = pb.querier.SelectSeriesRequest(profile_typeID=CPU_TYPE, start=T0 * MS, end=(T0 + 3600) * MS, step=60,
                                         exemplar_type=pb.types.EXEMPLAR_TYPE_SPAN)
    e = raw(srv, Q + "SelectSeries", req.SerializeToString(), codec="proto", status=501)
    assert e == {"code": "unimplemented", "message": "exemplar_type: EXEMPLAR_TYPE_SPAN: exemplar type span is not "
                                                     "implemented (ask for EXEMPLAR_TYPE_INDIVIDUAL)"}
    assert refused(srv, Q + "SelectSeries", '{%s,"exemplarType":7}' % ser) == \
        "exemplar_type: 7 is not an ExemplarType (0 to 3)"


def test_settings(srv, pb):
    # Set with modifiedAt as a JSON number, answered with the setting (int64 as a string)
    body = '{"setting":{"name":"pluginSettings","value":"{\\"collapsedFlamegraphs\\":true}","modifiedAt":1000}}'
    assert raw(srv, S + "Set", body) == {"setting": {"name": "pluginSettings",
                                                     "value": '{"collapsedFlamegraphs":true}', "modifiedAt": "1000"}}
    # binary, modifiedAt absent: the server's clock
    m = pb.settings.SetSettingsRequest(setting=pb.settings.Setting(name="a.first", value="x" * 10000))
    got = pb.settings.SetSettingsResponse.FromString(raw(srv, S + "Set", m.SerializeToString(), codec="proto"))
    assert got.setting.name == "a.first" and got.setting.value == "x" * 10000
    now_ms = got.setting.modifiedAt
    assert abs(now_ms - __import__("time").time() * 1000) < 60000, now_ms
    # Get: by name
    want = {"settings": [{"name": "a.first", "value": "x" * 10000, "modifiedAt": str(now_ms)},
                         {"name": "pluginSettings", "value": '{"collapsedFlamegraphs":true}', "modifiedAt": "1000"}]}
    assert raw(srv, S + "Get", "{}") == want
    # an update older than the stored one: already_exists (409), nothing changed
    e = raw(srv, S + "Set", '{"setting":{"name":"pluginSettings","value":"old","modifiedAt":"999"}}', status=409)
    assert e == {"code": "already_exists", "message": "failed to update pluginSettings: a newer update is already "
                 "written (modified at 1000 ms, this one 999)"}
    assert raw(srv, S + "Get", "{}") == want
    # a newer one replaces it
    assert raw(srv, S + "Set", '{"setting":{"name":"pluginSettings","value":"new","modifiedAt":"2000"}}') == \
        {"setting": {"name": "pluginSettings", "value": "new", "modifiedAt": "2000"}}
    # kept across a restart
    srv.restart()
    want["settings"][1] = {"name": "pluginSettings", "value": "new", "modifiedAt": "2000"}
    assert raw(srv, S + "Get", "{}") == want
    # Delete (a missing name is no error), in both codecs
    assert raw(srv, S + "Delete", '{"name":"pluginSettings"}') == {}
    assert raw(srv, S + "Delete", '{"name":"never-set"}') == {}
    assert raw(srv, S + "Delete", pb.settings.DeleteSettingsRequest(name="a.first").SerializeToString(),
               codec="proto") == b""
    assert raw(srv, S + "Get", "{}") == {}


def test_settings_bad_input(srv):
    assert refused(srv, S + "Set", "{}") == "no setting values provided"
    assert refused(srv, S + "Set", '{"setting":{"value":"v"}}') == "setting.name: missing"
    assert refused(srv, S + "Set", '{"setting":{"name":"%s"}}' % ("n" * 257)) == "setting.name: 257 bytes, more than 256"
    assert refused(srv, S + "Set", '{"setting":{"name":"big","value":"%s"}}' % ("v" * 70000)) == \
        "setting.value: 70000 bytes, more than 65536"
    assert refused(srv, S + "Delete", "{}") == "no setting name provided"
    m = refused(srv, S + "Set", '{"setting":{"name":"x","modifiedAt":"soon"}}')
    assert m.startswith("settings.v1.SetSettingsRequest: json: setting.modifiedAt: "), m
    # a body of 1 MB: the value's length, not a crash or a stored megabyte
    assert refused(srv, S + "Set", '{"setting":{"name":"big","value":"%s"}}' % ("v" * 1000000)) == \
        "setting.value: 1000000 bytes, more than 65536"
    m = refused(srv, S + "Set", b"\xff\xff\xff", codec="proto")
    assert m.startswith("settings.v1.SetSettingsRequest: protobuf: "), m
    # nothing was stored
    assert raw(srv, S + "Get", "{}") == {}
