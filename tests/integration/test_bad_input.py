"""Bad pushes: each one gets a 4xx JSON error whose message names the problem, stores nothing
(debug/series unchanged) and leaves the server serving."""

import json
import random
import re
import zlib

import pytest

import pprof_decode as pd
from conftest import TESTDATA, fixture_bytes, series_snapshot

CPU_GZ = "go/cpu-01.pb.gz"


def _mutated(edit, packed=True):
    def make():
        p = pd.minimal_profile()
        edit(p)
        return pd.encode(p, packed=packed)
    return make


def _set(obj, **kw):
    for k, v in kw.items():
        setattr(obj, k, v)


def _garbage():
    rnd = random.Random(20261130)
    b = bytearray(rnd.getrandbits(8) for _ in range(4096))
    b[0] = 0x0A if b[0] == 0x1F else b[0]  # not the gzip magic
    return bytes(b)


def _truncated_gzip():
    b = fixture_bytes(CPU_GZ)
    return b[: len(b) // 2]


def _labels(s):
    return {"labels": s}


def _many_labels(n):
    return "{" + ",".join('l%02d="v"' % i for i in range(n)) + "}"


# id: (body factory, params, expected status, regex the error message must match)
CASES = {
    "not_pprof_text": (lambda: b"this is not a profile, just some text\n", {}, 400, r"pprof|protobuf"),
    "truncated_gzip": (_truncated_gzip, {}, 400, r"gzip.*(truncat|unexpected end)"),
    "protobuf_garbage": (_garbage, {}, 400, r"pprof|protobuf"),
    "gzip_garbage": (lambda: b"\x1f\x8b\x08\x00" + _garbage()[:200], {}, 400, r"gzip"),
    "gzip_trailing_garbage": (lambda: fixture_bytes(CPU_GZ) + b"junk", {}, 400, r"gzip.*trailing"),
    "string_index_out_of_range": (_mutated(lambda p: _set(p.function[0], name=99)), {}, 400,
                                  r"function\[0\]\.name.*string index 99.*out of range"),
    "negative_string_index": (_mutated(lambda p: _set(p.sample[0].label[0], str=-1)), {}, 400,
                              r"string index -1.*out of range"),
    "sample_type_string_out_of_range": (_mutated(lambda p: _set(p.sample_type[1], unit=11)), {}, 400,
                                        r"sample_type\[1\].*string index 11"),
    "undefined_location_id": (_mutated(lambda p: _set(p.sample[1], location_id=[7])), {}, 400,
                              r"location_id 7.*(not defined|undefined|unknown)"),
    "undefined_function_id": (_mutated(lambda p: _set(p.location[1].line[0], function_id=9)), {}, 400,
                              r"function_id 9.*(not defined|undefined|unknown)"),
    "undefined_mapping_id": (_mutated(lambda p: _set(p.location[0], mapping_id=5)), {}, 400,
                             r"mapping_id 5.*(not defined|undefined|unknown)"),
    "duplicate_location_id": (_mutated(lambda p: _set(p.location[1], id=1)), {}, 400,
                              r"location.*id 1.*(already used|duplicate)"),
    "zero_function_id": (_mutated(lambda p: _set(p.function[1], id=0)), {}, 400, r"function.*id 0"),
    "too_few_values": (_mutated(lambda p: _set(p.sample[2], value=[1])), {}, 400,
                       r"sample\[2\].*1 values?.*2 sample types"),
    "too_many_values": (_mutated(lambda p: _set(p.sample[0], value=[1, 2, 3])), {}, 400,
                        r"sample\[0\].*3 values?.*2 sample types"),
    "too_many_values_unpacked": (_mutated(lambda p: _set(p.sample[0], value=[1, 2, 3]), packed=False), {}, 400,
                                 r"sample\[0\].*3 values?.*2 sample types"),
    "zero_sample_types": (_mutated(lambda p: [_set(p, sample_type=[]), [_set(s, value=[]) for s in p.sample]]),
                          {}, 400, r"no sample types"),
    "string_table_0_not_empty": (_mutated(lambda p: p.string_table.__setitem__(0, "x")), {}, 400,
                                 r"string_table\[0\]"),
    "no_string_table": (_mutated(lambda p: [_set(p, string_table=[], period_type=None, sample=[], location=[],
                                                  function=[], mapping=[]),
                                             _set(p.sample_type[0], type=0, unit=0),
                                             _set(p.sample_type[1], type=0, unit=0)]),
                        {}, 400, r"string_table"),
    "empty_body": (lambda: b"", {}, 400, r"empty body"),
    # labels (valid body)
    "labels_unclosed_brace": (lambda: fixture_bytes(CPU_GZ), _labels('{job="a"'), 400, r'labels.*"\}"'),
    "labels_unterminated_string": (lambda: fixture_bytes(CPU_GZ), _labels('{job="a}'), 400,
                                   r"labels.*unterminated"),
    "labels_bad_name_digit": (lambda: fixture_bytes(CPU_GZ), _labels('{1job="a"}'), 400, r"labels.*label name"),
    "labels_bad_name_dash": (lambda: fixture_bytes(CPU_GZ), _labels('{job-x="a"}'), 400, r'labels.*"="'),
    "labels_regex_operator": (lambda: fixture_bytes(CPU_GZ), _labels('{job=~"a.*"}'), 400,
                              r'labels: 1:5: .*only =.*got "=~"'),
    "labels_not_equal_operator": (lambda: fixture_bytes(CPU_GZ), _labels('{job!="a"}'), 400,
                                  r'labels: 1:5: .*only =.*got "!="'),
    "labels_unquoted_value": (lambda: fixture_bytes(CPU_GZ), _labels("{job=api}"), 400, r"labels.*string"),
    "labels_invalid_utf8": (lambda: fixture_bytes(CPU_GZ), _labels(b'{job="\xff\xfe"}'), 400, r"labels.*UTF-8"),
    "labels_invalid_utf8_escape": (lambda: fixture_bytes(CPU_GZ), _labels(r'{job="\xff"}'), 400,
                                   r"labels.*UTF-8"),
    "labels_duplicate_name": (lambda: fixture_bytes(CPU_GZ), _labels('{a="1",a="2"}'), 400, r"labels.*duplicate"),
    "labels_65": (lambda: fixture_bytes(CPU_GZ), _labels(_many_labels(65)), 400, r"labels.*too many labels"),
    "labels_value_400_bytes": (lambda: fixture_bytes(CPU_GZ), _labels('{job="%s"}' % ("x" * 400)), 400,
                               r"labels.*(360|too long|bytes long)"),
    "labels_dunder_name": (lambda: fixture_bytes(CPU_GZ), _labels('{__name__="foo"}'), 400, r"labels.*__name__"),
    "labels_dunder_other": (lambda: fixture_bytes(CPU_GZ), _labels('{__meta="foo"}'), 400,
                            r"labels.*(reserved|__meta)"),
    # other parameters
    "bad_time_word": (lambda: fixture_bytes(CPU_GZ), {"time": "yesterday"}, 400, r"time"),
    "bad_time_month": (lambda: fixture_bytes(CPU_GZ), {"time": "2026-13-01T00:00:00Z"}, 400, r"time"),
    "bad_time_no_zone": (lambda: fixture_bytes(CPU_GZ), {"time": "2026-11-30T06:00:00"}, 400, r"time"),
    "bad_delta": (lambda: fixture_bytes(CPU_GZ), {"delta": "maybe"}, 400, r"delta"),
    "bad_name": (lambda: fixture_bytes(CPU_GZ), {"name": "1cpu"}, 400, r"name"),
    "bad_name_dash": (lambda: fixture_bytes(CPU_GZ), {"name": "my-cpu"}, 400, r"name"),
    "bad_url_escape": (lambda: fixture_bytes(CPU_GZ), "labels=%zz", 400, r"escape|labels"),
}


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="bad", retention="0")
    st, js = s.push(CPU_GZ, labels='{job="baseline"}')
    assert st == 200, s.last_raw
    return s


def check_refused(s, st, js, want_status, pattern, before):
    assert st == want_status, "status %d, want %d: %r" % (st, want_status, s.last_raw[:300])
    assert js is not None, "error body is not JSON: %r" % s.last_raw[:300]
    assert js.get("status") == "error" and js.get("errorType"), js
    assert re.search(pattern, js["error"], re.IGNORECASE | re.DOTALL), \
        "error %r does not match %r" % (js["error"], pattern)
    assert series_snapshot(s) == before, "a refused push changed what is stored"
    st2, _, body = s.get("/-/healthy")
    assert st2 == 200 and s.running()


@pytest.mark.parametrize("case", list(CASES))
def test_bad_push(srv, case):
    make, params, want, pattern = CASES[case]
    body = make()
    before = series_snapshot(srv)
    if isinstance(params, str):
        st, js = srv.push(body, query=params)
    else:
        params = dict(params)
        params.setdefault("labels", '{job="bad"}')
        st, js = srv.push(body, **params)
    check_refused(srv, st, js, want, pattern, before)


MULTIPART_MSG = ("body is multipart/form-data: this endpoint takes a raw pprof body (gzipped or not); "
                 "send Pyroscope SDK uploads to /ingest")


def _multipart(boundary="----formdata-undici-012345678901"):
    return (("--%s\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile\"\r\n"
             "Content-Type: application/octet-stream\r\n\r\n" % boundary).encode() + fixture_bytes(CPU_GZ)
            + ("\r\n--%s--\r\n" % boundary).encode())


@pytest.mark.parametrize("how", ["pyroscope_sdk_body", "content_type_and_body", "content_type_only", "body_only"])
def test_multipart_body_refused(srv, how):
    """A Pyroscope SDK upload (multipart/form-data) is recognised by its Content-Type or by its
    shape (a body starting with "--"), not reported as a protobuf wire-type error."""
    before = series_snapshot(srv)
    ct = {"Content-Type": "multipart/form-data; boundary=----formdata-undici-012345678901"}
    if how == "pyroscope_sdk_body":  # a real upload of @pyroscope/nodejs 0.4.13, sent as octet-stream
        body, headers = (TESTDATA / "pyroscope" / "nodejs-0.4.13" / "ingest-01.bin").read_bytes(), None
        assert body[:2] == b"--"
    elif how == "content_type_and_body":
        body, headers = _multipart(), ct
    elif how == "content_type_only":  # whatever the body is
        body, headers = fixture_bytes(CPU_GZ), ct
    else:
        body, headers = _multipart(), None
    st, js = srv.push(body, headers=headers, labels='{job="multipart"}')
    check_refused(srv, st, js, 400, ".", before)
    assert js["error"] == MULTIPART_MSG


@pytest.mark.parametrize("body,quoted", [
    (b"main;work;compress 120\nmain;sort 30\n", r'main;work;compress 1"...'),
    (b'{"status":"success","data":[]}', r'{\"status\":\"success\","...'),
    (b"<!DOCTYPE html>\n<html><body>404</body></html>", r'<!DOCTYPE html>\n<htm"...'),
    (b"caf\xc3\xa9 main;f 1", 'caf\u00e9 main;f 1"'),
    (("\u00e9" * 15).encode(), "\u00e9" * 10 + '"...'),  # UTF-8 is not cut inside a character
    (b"short", r'short"'),
])
def test_text_body_refused(srv, body, quoted):
    """A text body (folded stacks, JSON, HTML) is named as such, with its first 20 bytes quoted."""
    before = series_snapshot(srv)
    st, js = srv.push(body, labels='{job="text"}')
    check_refused(srv, st, js, 400, ".", before)
    assert js["error"] == 'body looks like text ("%s): expected a pprof profile (gzipped or not)' % quoted


def test_minimal_profile_is_valid(srv):
    """The base of the mutated profiles above is accepted (so their refusals are due to the edits)."""
    for packed in (True, False):
        st, js = srv.push(pd.encode(pd.minimal_profile(), packed=packed), labels='{job="minimal%d"}' % packed)
        assert st == 200, srv.last_raw
    st, js = srv.push(CPU_GZ, labels=_many_labels(63))
    assert st == 200, srv.last_raw


def test_label_limit_boundaries(srv):
    """Values up to 360 bytes (UTF-8 bytes, not characters) and 63 labels (+ __name__) are accepted;
    one byte more is refused."""
    before = series_snapshot(srv)
    for labels in ('{job="%s"}' % ("x" * 361), '{job="%s"}' % ("\u00e9" * 180 + "x")):
        st, js = srv.push(CPU_GZ, labels=labels)
        assert 400 <= st < 500 and js and js["status"] == "error", (st, srv.last_raw[:200])
        assert series_snapshot(srv) == before
    for i, labels in enumerate(('{job="%s"}' % ("x" * 360), '{job="%s"}' % ("\u00e9" * 180))):
        st, js = srv.push(CPU_GZ, labels=labels[:-1] + ',n="%d"}' % i)
        assert st == 200, srv.last_raw[:200]
        assert js["data"]["series"][0]["labels"]["job"] == ("x" * 360 if i == 0 else "\u00e9" * 180)


def test_wrong_method_on_write(srv):
    before = series_snapshot(srv)
    for method in ("GET", "PUT", "DELETE"):
        st, hdrs, body = srv.request(method, "/api/v1/profiles/write?labels=%7Bjob%3D%22x%22%7D")
        assert st == 405, (method, st, body)
        assert "POST" in hdrs.get("allow", ""), hdrs
        js = json.loads(body)
        assert js["status"] == "error" and re.search("method|not allowed", js["error"], re.I)
    assert series_snapshot(srv) == before
    assert srv.get("/-/healthy")[0] == 200


def test_unknown_path(srv):
    # "/" is the web UI now (test_ui_serve.py); an unknown path beside it, and one under /ui/
    for method, path in (("GET", "/api/v1/nope"), ("POST", "/api/v1/profiles/writes"), ("GET", "/nope"),
                         ("GET", "/ui/nope.js")):
        st, hdrs, body = srv.request(method, path, body=b"x" if method == "POST" else None)
        assert st == 404, (path, st, body)
        js = json.loads(body)
        assert js["status"] == "error" and js["errorType"] == "not_found"
    assert srv.get("/-/healthy")[0] == 200


def test_debug_endpoint_errors(srv):
    sid = srv.series()[0]["id"]
    ts = srv.series()[0]["profiles"][0]["ts"]
    for path, want in (("/api/v1/debug/profile", 400), ("/api/v1/debug/profile?id=%d" % sid, 400),
                       ("/api/v1/debug/profile?id=abc&time=%d" % ts, 400),
                       ("/api/v1/debug/profile?id=999999&time=%d" % ts, 404),
                       ("/api/v1/debug/profile?id=%d&time=%d" % (sid, ts + 1), 404),
                       ("/api/v1/debug/profile?id=%d&time=never" % sid, 400),
                       ("/api/v1/debug/series?id=x", 400)):
        st, hdrs, body = srv.get(path)
        assert st == want, (path, st, body)
        js = json.loads(body)
        assert js["status"] == "error" and js["error"], js
    assert srv.get("/api/v1/debug/profile?id=%d&time=%d" % (sid, ts))[0] == 200


def test_still_serving_after_bad_input(srv):
    """Runs last in this module: the same server still takes a good push."""
    st, js = srv.push("go/cpu-02.pb.gz", labels='{job="after"}')
    assert st == 200, srv.last_raw
    assert len(js["data"]["series"]) == 2


def _gzip_zeros(total, chunk=1 << 20):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(chunk)
    out = []
    for _ in range(total // chunk):
        out.append(c.compress(zeros))
    out.append(c.flush())
    return b"".join(out)


def test_gzip_bomb(make_server):
    s = make_server(retention="0", max_inflated_size="16MiB")
    st, _ = s.push(CPU_GZ, labels='{job="baseline"}')
    assert st == 200
    bomb = _gzip_zeros(300 * 1000 * 1000)
    assert len(bomb) < 1 << 20
    before = series_snapshot(s)
    st, js = s.push(bomb, labels='{job="bomb"}')
    assert st == 413, (st, s.last_raw[:300])  # too large after inflating (README: 413)
    assert js is not None and js["status"] == "error" and js["errorType"] == "bad_data", s.last_raw[:300]
    assert js["error"] == "decompressed body exceeds 16777216 bytes", js
    assert series_snapshot(s) == before
    assert s.get("/-/healthy")[0] == 200
    # a profile that inflates to less than the limit is fine
    st, _ = s.push("go/cpu-02.pb.gz", labels='{job="after"}')
    assert st == 200


def test_oversized_body(make_server):
    s = make_server(retention="0", max_body_size="64KiB")
    st, _ = s.push(CPU_GZ, labels='{job="baseline"}')
    assert st == 200, s.last_raw
    before = series_snapshot(s)
    rnd = random.Random(7)
    big = bytes([0x0A]) + bytes(rnd.getrandbits(8) for _ in range(70 * 1024))
    st, js = s.push(big, labels='{job="big"}')
    assert st == 413, (st, s.last_raw[:300])
    if js is not None:  # h2o may answer by itself with a plain-text body
        assert js["status"] == "error"
    assert series_snapshot(s) == before
    # exactly at the limit: not refused for its size (it is garbage, so 400)
    st, js = s.push(big[:64 * 1024], labels='{job="big"}')
    assert st == 400, (st, s.last_raw[:300])
    assert s.get("/-/healthy")[0] == 200
    st, _ = s.push("go/cpu-02.pb.gz", labels='{job="after"}')
    assert st == 200
