"""Compressed answers (web/http.c): a client that sends Accept-Encoding: gzip gets JSON and text
answers of 1 KiB and more gzipped (Content-Encoding: gzip, Vary: Accept-Encoding), byte for byte
the identity answer once gunzipped; small answers, pprof (gzipped already) and clients that do not
accept gzip get the identity answer."""

import gzip
import json
import urllib.parse

import pytest

from conftest import CPU_TYPE, QUERY_T0

T0 = QUERY_T0
SEL = CPU_TYPE + '{job="gz"}'


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="gzip", retention="0")
    for i in range(1, 6):
        st, _ = s.push("go/cpu-0%d.pb.gz" % i, labels='{job="gz",instance="a:6060"}', time=str(T0 + 10 * i))
        assert st == 200, s.last_raw[:300]
    return s


def both(srv, path, accept="gzip"):
    st0, h0, plain = srv.request("GET", path, timeout=30)
    st1, h1, body = srv.request("GET", path, headers={"Accept-Encoding": accept}, timeout=30)
    assert st0 == st1 == 200, (st0, st1, plain[:300])
    return h0, plain, h1, body


def q(**params):
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


@pytest.mark.parametrize("path", [
    "/api/v1/profiles/query?" + q(query=SEL, start=T0, end=T0 + 60, format="flamegraph"),
    "/api/v1/profiles/query?" + q(query=SEL, start=T0, end=T0 + 60, format="top"),
    "/api/v1/profiles/query?" + q(query=SEL, start=T0, end=T0 + 60, format="folded"),
    "/api/v1/query_range?" + q(query="sum_over_time(%s[10s])" % SEL, start=T0, end=T0 + 60, step="0.1"),
    "/metrics",
])
def test_large_text_answers_are_gzipped(srv, path):
    h0, plain, h1, body = both(srv, path)
    assert "content-encoding" not in h0
    assert h0["vary"] == h1["vary"] == "Accept-Encoding"
    assert h1["content-encoding"] == "gzip"
    assert int(h1["content-length"]) == len(body)
    if path != "/metrics":  # /metrics counts requests: its text changes between the two
        assert gzip.decompress(body) == plain
    else:
        assert gzip.decompress(body).startswith(b"# HELP ")
    assert h1["content-type"] == h0["content-type"]


def test_shrinks(srv):
    """query_range's JSON shrinks ~12x, a flame graph's (names and 4 integers a node) ~4.7x
    (zlib level 6 on these answers: 14,924 -> 1,194 and 25,752 -> 5,442 bytes)."""
    path = "/api/v1/query_range?" + q(query="sum_over_time(%s[10s])" % SEL, start=T0, end=T0 + 60, step="0.1")
    _, plain, _, body = both(srv, path)
    assert len(plain) > 10 * len(body), (len(plain), len(body))
    path = "/api/v1/profiles/query?" + q(query=SEL, start=T0, end=T0 + 60, format="flamegraph")
    _, plain, _, body = both(srv, path)
    assert len(plain) > 4 * len(body), (len(plain), len(body))


def test_not_gzipped(srv):
    # a small answer
    h0, plain, h1, body = both(srv, "/api/v1/status/buildinfo")
    assert len(plain) < 1024 and body == plain and "content-encoding" not in h1 and "vary" not in h1
    # pprof is gzipped pprof already, never wrapped again
    path = "/api/v1/profiles/query?" + q(query=SEL, start=T0, end=T0 + 60)
    h0, plain, h1, body = both(srv, path)
    assert body == plain and body[:2] == b"\x1f\x8b" and "content-encoding" not in h1
    # a client that refuses gzip, or names only other codings
    path = "/api/v1/profiles/query?" + q(query=SEL, start=T0, end=T0 + 60, format="flamegraph")
    for accept in ("gzip;q=0", "br", "identity"):
        _, plain, h1, body = both(srv, path, accept=accept)
        assert body == plain and "content-encoding" not in h1, accept
    # errors are JSON too, and small
    st, h, body = srv.request("GET", "/api/v1/query?query=sum(", headers={"Accept-Encoding": "gzip"})
    assert st == 400 and "content-encoding" not in h and json.loads(body)["errorType"] == "bad_data"
