"""Timestamps past --storage.future-grace (default 10m) are refused with a 400 that says so, on every
write path (native push, Pyroscope /ingest, Connect push, remote write: there only those samples,
the others are stored), so a push at 2100 cannot poison a series: the pushes of now that follow are
stored, also after a restart. --storage.future-grace=0 takes any time."""

import calendar
import gzip
import json
import time
import urllib.parse

from conftest import fixture_bytes
import pprof_decode as pd
from pyro_util import connect_call, cpu_push_request, pyro_pb
from test_remote_write import floats, key, pb, post, v1_body  # noqa: F401 (pb: the fixture)

T2100 = calendar.timegm((2100, 1, 1, 0, 0, 0))
YEAR = 365 * 24 * 3600


def future_msg(t_s, grace="10m"):
    years = (t_s - time.time()) // YEAR
    return "timestamp %s is %d years in the future (more than --storage.future-grace=%s)" % (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_s)), years, grace)


def raw_at(t_ns):
    """go/cpu-01 (raw pprof) with time_nanos = t_ns (a second field 9: the last one wins)."""
    out = bytearray(gzip.decompress(fixture_bytes("go/cpu-01.pb.gz")))
    pd.put_tag(out, 9, pd.WT_VARINT)
    pd.put_varint(out, t_ns)
    return bytes(out)


def test_native_push_in_2100_refused_and_the_series_goes_on(make_server):
    srv = make_server(retention="0")
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}', time="2100-01-01T00:00:00Z")
    assert st == 400
    assert js == {"status": "error", "errorType": "bad_data", "error": future_msg(T2100)}
    # an hour ahead is refused too, 5 minutes ahead (within the grace) and now are stored
    now = int(time.time())
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}', time=str(now + 3600))
    assert st == 400 and "in the future (more than --storage.future-grace=10m)" in js["error"], js
    assert js["error"].startswith("timestamp %s is 59m5" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 3600)))
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}', time=str(now - 10))
    assert st == 200, js
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}', time=str(now + 300))
    assert st == 200, js
    srv.restart()
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}', time=str(now + 301))
    assert st == 200, js
    assert [len(s["profiles"]) for s in srv.series()] == [3, 3]


def test_pyroscope_ingest_and_connect_push(make_server):
    srv = make_server(retention="0")
    q = urllib.parse.urlencode({"name": "app.cpu{env=x}", "from": T2100, "until": T2100 + 10})
    st, _, body = srv.request("POST", "/ingest?" + q, body=b"a;b;c 10\n")
    assert (st, json.loads(body)) == (400, {"status": "error", "errorType": "bad_data", "error": future_msg(T2100)})
    req = cpu_push_request(raw_at(T2100 * 10**9))
    r = connect_call(srv.port, "push.v1.PusherService/Push", req, resp_type=pyro_pb().push.PushResponse)
    assert (r.status, r.error) == (400, {"code": "invalid_argument", "message": future_msg(T2100)})
    # nothing of either was stored; today's /ingest is
    assert srv.series() == []
    q = urllib.parse.urlencode({"name": "app.cpu{env=x}", "from": int(time.time()) - 10})
    st, _, body = srv.request("POST", "/ingest?" + q, body=b"a;b;c 10\n")
    assert st == 200, body


def test_remote_write_refuses_only_the_future_samples(make_server, pb):
    srv = make_server()
    now_ms = int(time.time()) * 1000
    a = {"__name__": "up", "job": "x"}
    st, _, data = post(srv, v1_body(pb, [(a, [(now_ms - 2000, 1), (now_ms - 1000, 2), (T2100 * 1000, 3)])]))
    assert st == 400
    assert data.decode() == (
        "1 of 3 samples rejected (0 out of order sample, 0 duplicate sample for timestamp, 0 out of bounds, "
        "1 too far in the future); the 2 others are stored. First rejected: series {__name__=\"up\", job=\"x\"}: "
        "1 sample(s) too far in the future (more than --storage.future-grace after now), the first at %d "
        "(2100-01-01T00:00:00Z)\n" % (T2100 * 1000))
    assert [x[:2] for x in floats(srv)[key(**a)]] == [(now_ms - 2000, "1"), (now_ms - 1000, "2")]
    # the series goes on
    st, _, _ = post(srv, v1_body(pb, [(a, [(now_ms, 4)])]))
    assert st == 204
    assert srv.metrics()['profstore_remote_write_samples_rejected_total{reason="too_far_in_future"}'] == 1


def test_grace_zero_takes_any_time(make_server):
    srv = make_server(retention="0", storage_future_grace="0")
    st, js = srv.push("go/cpu-01.pb.gz", labels='{job="a"}', time="2100-01-01T00:00:00Z")
    assert st == 200, js
    flags = srv.get_json("/api/v1/status/flags")["data"]
    assert flags["storage.future-grace"] == "0s"
