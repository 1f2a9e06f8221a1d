"""Prometheus 2.42's own PromQL test files (tests/promql/testdata/*.test, see its README) against
profstore with --promql.compat=2 (2.42's semantics; Prometheus 3's files are run by
tests/unit/query/test_promqltest.c): the test language of Prometheus' promql/test.go, run over HTTP.

- `load <step>`: the series are remote-written (snappy WriteRequest, `stale` as Prometheus'
  StaleNaN bits, `_` left out) with their real times from t = 0 (the unix epoch); the server runs
  with `--retention 0` (no clamp of old data) and takes them as any other sample;
- `clear`: a new server with an empty data directory;
- `eval[_fail|_ordered] instant at <d> <expr>`: `/api/v1/query` at d; the answer compared as
  test.go's compareResult does (labels as a set, values within test.go's relative 1e-6, NaN equal
  to NaN, positions for eval_ordered); eval_fail must be Prometheus' execution error (422: the
  query parses, test.go checks that first).
  Each instant eval that succeeds is then run as test.go's range-mode check does: `/api/v1/query_range`
  from d - 1m to d + 1m at step 1m, which must succeed, and (but for eval_ordered) its points at d
  must be the same answer;
- and as test.go's atModifierTestCases: the query with `@ d` on every selector and subquery
  outside subqueries (rewritten by build/tests/pq_at, tests/promql/pq_at.c, in Prometheus' String()
  form), evaluated the same two ways at -10d, 0, d/5, d and 10d (d = 0: -1s, 0, 1s), unless it
  calls a function whose answer depends on the evaluation time.

Every eval of every file must pass; an eval that cannot for a good reason is listed in EXCEPTIONS
with the reason, by file and line (none is). After them, the defects these files found, each
pinned on its own.
"""
import json
import math
import re
import struct
import subprocess
import urllib.parse
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import snappy

from conftest import PROFSTORE_BIN
from pprof_decode import put_len, varint

TESTDATA = Path(__file__).resolve().parent.parent / "promql" / "testdata"
FILES = sorted(p.name for p in TESTDATA.glob("*.test"))
# evals of each file, and queries with test.go's @ variants (566 and 3,085 in all): a file read short
# (a parser that skips commands) fails here, not by passing fewer evals
COUNTS = {"aggregators.test": (83, 490), "at_modifier.test": (33, 156), "collision.test": (2, 10),
          "functions.test": (207, 999), "histograms.test": (38, 228), "literals.test": (20, 120),
          "operators.test": (94, 562), "selectors.test": (31, 176), "staleness.test": (14, 82),
          "subquery.test": (25, 150), "trig_functions.test": (19, 112)}
PQ_AT = Path(PROFSTORE_BIN).resolve().parent / "tests" / "pq_at"
COMPAT2 = ["--promql.compat=2"]  # every server here answers like Prometheus 2.42

# (file, line of the eval) -> why profstore answers otherwise; keep it short. Empty: every eval of
# every file passes (a listed one that passes fails the test, so the list cannot go stale).
EXCEPTIONS: Dict[Tuple[str, int], str] = {}

STALE_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]
EPSILON = 0.000001
MIN_NORMAL = struct.unpack("<d", struct.pack("<Q", 0x0010000000000000))[0]

_DUR = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
_DUR_MS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000, "w": 7 * 86400000, "y": 365 * 86400000}


def duration_ms(s: str) -> int:
    """Prometheus' model.ParseDuration ("1h30m", "0m", "10s") in ms."""
    pos, total = 0, 0
    for m in _DUR.finditer(s):
        assert m.start() == pos, "bad duration %r" % s
        total += int(m.group(1)) * _DUR_MS[m.group(2)]
        pos = m.end()
    assert pos == len(s) and s, "bad duration %r" % s
    return total


# ---- the series description syntax (parser.ParseSeriesDesc) ----

_NUM = r"[+-]?(?:[iI]nf|NaN|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_DELTA = r"[+-](?:[iI]nf|NaN|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_ITEM = re.compile(r"^(?:(_)|(stale|%s))(?:(?<!_)(%s))?(?:x(\d+))?$" % (_NUM, _DELTA))


def parse_number(s: str) -> float:
    if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", s):
        return float(int(s, 16))
    return float(s)


def parse_values(items: List[str]) -> List[Optional[float]]:
    """Series values (no hexadecimal numbers: 0x10 is 0 eleven times): `_` (none), `_xN` (N times
    none), `v`, `vxN` (N+1 times v), `v+dxN` / `v-dxN`
    (N+1 values from v, d added each time, as the Go parser adds). None = omitted."""
    out: List[Optional[float]] = []
    for it in items:
        m = _ITEM.match(it)
        assert m, "bad series value %r" % it
        blank, val, delta, times = m.groups()
        if blank:
            assert delta is None
            out += [None] * (int(times) if times is not None else 1)
            continue
        v = STALE_NAN if val == "stale" else parse_number(val)
        if times is None:
            assert delta is None
            out.append(v)
            continue
        d = parse_number(delta) if delta is not None else 0.0
        for _ in range(int(times) + 1):
            out.append(v)
            v += d
    return out


def _unquote(s: str, i: int) -> Tuple[str, int]:
    q = s[i]
    j, out = i + 1, []
    esc = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b",
           "f": "\f", "v": "\v"}
    while s[j] != q:
        if s[j] == "\\" and q != "`":
            c = s[j + 1]
            if c in esc:
                out.append(esc[c])
                j += 2
            elif c in "uU":
                n = 4 if c == "u" else 8
                out.append(chr(int(s[j + 2:j + 2 + n], 16)))
                j += 2 + n
            elif c == "x":
                out.append(chr(int(s[j + 2:j + 4], 16)))
                j += 4
            else:
                raise AssertionError("bad escape in %r" % s)
        else:
            out.append(s[j])
            j += 1
    return "".join(out), j + 1


def parse_series_desc(line: str) -> Tuple[Dict[str, str], List[Optional[float]]]:
    labels: Dict[str, str] = {}
    m = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line)
    i = 0
    if m and not line.startswith("{"):
        labels["__name__"] = m.group(0)
        i = m.end()
    while i < len(line) and line[i] in " \t":
        i += 1
    if i < len(line) and line[i] == "{":
        i += 1
        while True:
            while line[i] in " \t,":
                i += 1
            if line[i] == "}":
                i += 1
                break
            n = re.match(r"[a-zA-Z_][a-zA-Z0-9_]*", line[i:])
            assert n, "bad label in %r" % line
            i += n.end()
            while line[i] in " \t":
                i += 1
            assert line[i] == "=", "bad label in %r" % line
            i += 1
            while line[i] in " \t":
                i += 1
            v, i = _unquote(line, i)
            labels[n.group(0)] = v
    return labels, parse_values(line[i:].split())


# ---- the test file (promql/test.go's parse) ----

_EVAL = re.compile(r"^eval(?:_(fail|ordered))?\s+instant\s+(?:at\s+(.+?))?\s+(.+)$")


class Eval:
    def __init__(self, line: int, mod: Optional[str], at_ms: int, expr: str):
        self.line, self.fail, self.ordered = line, mod == "fail", mod == "ordered"
        self.at_ms, self.expr = at_ms, expr
        self.scalar: Optional[float] = None
        self.expected: Dict[frozenset, Tuple[int, float]] = {}


def parse_file(text: str):
    lines = []
    for l in text.split("\n"):
        l = l.strip()
        lines.append("" if l.startswith("#") else l)
    cmds = []
    i = 0
    while i < len(lines):
        l = lines[i]
        if not l:
            i += 1
            continue
        word = re.split(r"[\t ]+", l, maxsplit=1)[0].lower()
        if word == "clear":
            cmds.append(("clear",))
        elif word == "load":
            step = duration_ms(re.match(r"^load\s+(.+?)$", l).group(1))
            series = {}  # a series given twice: the last definition (test.go keys them by hash)
            while i + 1 < len(lines) and lines[i + 1]:
                i += 1
                labels, vals = parse_series_desc(lines[i])
                series[frozenset(labels.items())] = (labels, vals)
            cmds.append(("load", step, list(series.values())))
        elif word.startswith("eval"):
            m = _EVAL.match(l)
            assert m, "line %d: bad eval %r" % (i + 1, l)
            ev = Eval(i + 1, m.group(1), duration_ms(m.group(2)), m.group(3))
            j = 1
            while i + 1 < len(lines) and lines[i + 1]:
                i += 1
                try:
                    ev.scalar = parse_number(lines[i])
                    break
                except ValueError:
                    pass
                labels, vals = parse_series_desc(lines[i])
                assert len(vals) == 1, "line %d: one value per expected series" % (i + 1)
                ev.expected[frozenset(labels.items())] = (j, vals[0])
                j += 1
            cmds.append(("eval", ev))
        else:
            raise AssertionError("line %d: unknown command %r" % (i + 1, l))
        i += 1
    return cmds


# ---- talking to profstore ----

def _field(num: int, payload: bytes) -> bytes:
    out = bytearray()
    put_len(out, num, payload)
    return bytes(out)


def load(srv, step: int, series) -> None:
    req = b""
    for labels, vals in series:
        ts = b""
        for k in sorted(labels):
            ts += _field(1, _field(1, k.encode()) + _field(2, labels[k].encode()))
        for k, v in enumerate(vals):
            if v is not None:
                ts += _field(2, b"\x09" + struct.pack("<d", v) + b"\x10" + varint(k * step))
        req += _field(1, ts)
    st, _, body = srv.request("POST", "/api/v1/write", body=snappy.compress(req),
                              headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                                       "X-Prometheus-Remote-Write-Version": "0.1.0"}, timeout=60)
    assert st == 204, body[:300]


def _secs(ms: int) -> str:
    return "%s%d.%03d" % ("-" if ms < 0 else "", abs(ms) // 1000, abs(ms) % 1000)


def query(srv, path: str, params) -> Tuple[int, dict]:
    st, _, body = srv.request("POST", path, body=urllib.parse.urlencode(params).encode(),
                              headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=60)
    return st, json.loads(body)


def almost_equal(a: float, b: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    if a == b:
        return True
    diff = abs(a - b)
    if a == 0 or b == 0 or diff < MIN_NORMAL:
        return diff < EPSILON * MIN_NORMAL
    return diff / (abs(a) + abs(b)) < EPSILON


def compare(ev: Eval, kind: str, got) -> Optional[str]:
    """test.go's compareResult: None when the answer is the expected one, else why not.
    got: ("vector", [(labels frozenset, value)]) or ("scalar", value)."""
    if kind == "matrix":
        return "received range result on instant evaluation"
    if kind == "scalar":
        if ev.scalar is None:
            return "got scalar %r, expected a vector" % got
        return None if almost_equal(ev.scalar, got) else "expected scalar %r but got %r" % (ev.scalar, got)
    if kind != "vector":
        return "unexpected result type %s" % kind
    seen = set()
    for pos, (lbls, v) in enumerate(got):
        if lbls not in ev.expected:
            return "unexpected metric %s in result" % dict(lbls)
        exp_pos, exp_v = ev.expected[lbls]
        if ev.ordered and exp_pos != pos + 1:
            return "expected metric %s at position %d but was at %d" % (dict(lbls), exp_pos, pos + 1)
        if not almost_equal(exp_v, v):
            return "expected %r for %s but got %r" % (exp_v, dict(lbls), v)
        seen.add(lbls)
    for lbls in ev.expected:
        if lbls not in seen:
            return "expected metric %s not found" % dict(lbls)
    if ev.scalar is not None and not ev.expected:
        return "expected scalar %r, got a vector" % ev.scalar
    return None


def run_eval(srv, ev: Eval, expr: str, at_ms: int) -> Optional[str]:
    """One of test.go's queries of an eval: expr at at_ms, instant and in range mode."""
    st, ans = query(srv, "/api/v1/query", {"query": expr, "time": _secs(at_ms)})
    if ev.fail:  # the query parses (test.go parses it first): an execution error, Prometheus' 422
        if ans.get("status") == "error" and st == 422 and ans.get("errorType") == "execution":
            return None
        return "expected an execution error (422), got %d %s" % (st, str(ans)[:300])
    if st != 200 or ans.get("status") != "success":
        return "error evaluating: %d %s" % (st, str(ans)[:300])
    data = ans["data"]
    kind = data["resultType"]
    if kind == "vector":
        got = [(frozenset(s["metric"].items()), float(s["value"][1])) for s in data["result"]]
        why = compare(ev, kind, got)
    elif kind == "scalar":
        why = compare(ev, kind, float(data["result"][1]))
    else:
        why = compare(ev, kind, None)
    if why:
        return why
    st, ans = query(srv, "/api/v1/query_range", {"query": expr, "start": _secs(at_ms - 60000),
                                                  "end": _secs(at_ms + 60000), "step": "60"})
    if st != 200 or ans.get("status") != "success":
        return "range mode: error evaluating: %d %s" % (st, str(ans)[:300])
    if ev.ordered:
        return None
    assert ans["data"]["resultType"] == "matrix"
    vec = []
    for s in ans["data"]["result"]:
        for t, v in s["values"]:
            if round(float(t) * 1000) == at_ms:
                vec.append((frozenset(s["metric"].items()), float(v)))
                break
    if kind == "scalar":
        if not vec:
            return "range mode: no point at the evaluation time"
        why = compare(ev, "scalar", vec[0][1])
    else:
        why = compare(ev, "vector", vec)
    return "range mode: " + why if why else None


def at_variants(evals: List[Eval]) -> Dict[int, List[Tuple[str, int]]]:
    """test.go's atModifierTestCases for each eval (by line): the query with @ <its time> on its
    selectors (tests/promql/pq_at.c) at -10t, 0, t/5, t, 10t (t = 0: -1s, 0, 1s); none when it
    calls a function whose answer depends on the evaluation time."""
    assert PQ_AT.is_file(), "%s is not built (cmake --build build)" % PQ_AT
    text = "".join("%d\t%s\n" % (ev.at_ms, ev.expr) for ev in evals)
    out = subprocess.run([str(PQ_AT)], input=text.encode(), stdout=subprocess.PIPE, check=True,
                         timeout=60).stdout.decode().split("\n")
    res = {}
    for ev, new in zip(evals, out):
        assert not new.startswith("!"), "line %d does not parse: %s" % (ev.line, new)
        ts = ev.at_ms
        times = [-1000, 0, 1000] if ts == 0 else [-10 * ts, 0, ts // 5, ts, 10 * ts]
        res[ev.line] = [(new, t) for t in times] if new else []
    return res


@pytest.mark.parametrize("name", FILES)
def test_promql_testdata(make_server, name):
    cmds = parse_file((TESTDATA / name).read_text())
    variants = at_variants([c[1] for c in cmds if c[0] == "eval"])
    failures, evals, queries = [], 0, 0
    srv, loads, starts = None, [], 0

    def start():
        nonlocal starts
        s = make_server(name="%s-%d" % (name, starts), retention="0", extra_args=COMPAT2)
        starts += 1
        for step, series in loads:
            load(s, step, series)
        return s

    for c in cmds:
        if c[0] == "clear" or srv is None:
            if srv is not None:
                srv.kill()
            loads = []
            srv = start()
            if c[0] == "clear":
                continue
        if c[0] == "load":
            loads.append((c[1], c[2]))
            load(srv, c[1], c[2])
        elif c[0] == "eval":
            ev = c[1]
            evals += 1
            whys = []
            for expr, t in [(ev.expr, ev.at_ms)] + variants[ev.line]:
                queries += 1
                try:
                    why = run_eval(srv, ev, expr, t)
                except OSError as e:
                    why = "no answer: %s" % e
                if not srv.running():
                    why = "profstore died: %s" % srv.log()[-2000:]
                    srv = start()  # the same data again, to go on with the file
                if why:
                    whys.append("%s at %s: %s" % (expr, _secs(t), why))
            key = (name, ev.line)
            if key in EXCEPTIONS:
                assert whys, "line %d passes now: remove it from EXCEPTIONS" % ev.line
            elif whys:
                failures.append("line %d: %s\n    %s" % (ev.line, ev.expr, "\n    ".join(whys)))
    assert (evals, queries) == COUNTS[name]
    assert not failures, "%d of %d evals failed:\n%s" % (len(failures), evals, "\n".join(failures))


# ---- the defects these files found (issue 20 item 7), each pinned on its own ----

def _series(*descs):
    return [parse_series_desc(d) for d in descs]


def _instant(srv, q, t):
    return query(srv, "/api/v1/query", {"query": q, "time": _secs(t)})


def _range(srv, q, start, end, step):
    return query(srv, "/api/v1/query_range", {"query": q, "start": _secs(start), "end": _secs(end),
                                              "step": _secs(step)})


def _points(ans):
    return {tuple(sorted(s["metric"].items())): [(round(float(t) * 1000), v) for t, v in s["values"]]
            for s in ans["data"]["result"]}


def test_count_values_with_a_parenthesised_label(make_server):
    """count_values(("v"), x) crashed the server (SIGSEGV): the label parameter in parentheses."""
    srv = make_server(retention="0", extra_args=COMPAT2)
    load(srv, 60000, _series('x{i="1"} 1 2', 'x{i="2"} 2 2', 'x{i="3"} 1.5 2'))
    for q in ['count_values(("v"), x)', 'count_values((("v")), x)', 'count_values by (i) (("v"), x)']:
        st, ans = _instant(srv, q, 0)
        assert st == 200, ans
        got = {tuple(sorted(s["metric"].items())): s["value"][1] for s in ans["data"]["result"]}
        if "by (i)" in q:
            assert got == {(("i", "1"), ("v", "1")): "1", (("i", "2"), ("v", "2")): "1",
                           (("i", "3"), ("v", "1.5")): "1"}
        else:
            assert got == {(("v", "1"),): "1", (("v", "2"),): "1", (("v", "1.5"),): "1"}
        st, ans = _range(srv, q, 0, 60000, 60000)
        assert st == 200, ans
    st, ans = _range(srv, 'count_values(("v"), x)', 0, 60000, 60000)
    assert _points(ans) == {(("v", "1"),): [(0, "1")], (("v", "1.5"),): [(0, "1")],
                            (("v", "2"),): [(0, "1"), (60000, "3")]}
    st, ans = _instant(srv, 'count_values(("0v"), x)', 0)
    assert (st, ans["errorType"], ans["error"]) == (422, "execution", 'invalid label name "0v"')
    assert srv.running()


RANGE_FUNCS = ["rate(%s[5m])", "irate(%s[5m])", "increase(%s[5m])", "delta(%s[5m])", "idelta(%s[5m])",
               "changes(%s[5m])", "resets(%s[5m])", "deriv(%s[5m])", "predict_linear(%s[5m], 60)",
               "avg_over_time(%s[5m])", "min_over_time(%s[5m])", "max_over_time(%s[5m])",
               "sum_over_time(%s[5m])", "count_over_time(%s[5m])", "quantile_over_time(0.5, %s[5m])",
               "stddev_over_time(%s[5m])", "stdvar_over_time(%s[5m])", "present_over_time(%s[5m])",
               "holt_winters(%s[5m], 0.5, 0.5)", "rate(%s[5m:1m])", "changes(%s[5m:1m])", "-%s"]


def test_range_functions_over_several_names_fail_on_the_same_labelset(make_server):
    """A range function drops the name: two series that only the name told apart give the same
    labels, which Prometheus refuses ("vector cannot contain metrics with the same labelset", 422)
    over the whole range of a range query, even when the two have points at different steps."""
    srv = make_server(retention="0", extra_args=COMPAT2)
    # a from 0 to 4m, b from 10m to 14m: apart in time; d always; c always, other labels
    load(srv, 60000, _series('a{x="1"} 0+1x4', 'b{x="1"} _x10 0+2x4', 'c{x="2"} 0+1x14', 'd{x="1"} 0+3x14'))
    for f in RANGE_FUNCS:
        q = f % '{__name__=~"a|b"}'
        st, ans = _instant(srv, f % '{__name__=~"a|c|d"}', 4 * 60000 if "[" in f else 0)
        assert (st, ans.get("error")) == (422, "vector cannot contain metrics with the same labelset"), (q, ans)
        st, ans = _range(srv, q, 0, 14 * 60000, 60000)
        assert (st, ans.get("error")) == (422, "vector cannot contain metrics with the same labelset"), (q, ans)
        # at one time only one of them has points: an answer
        st, ans = _instant(srv, q, 3 * 60000)
        assert st == 200 and [s["metric"] for s in ans["data"]["result"]] == [{"x": "1"}], (q, ans)
        st, ans = _range(srv, q, 0, 4 * 60000, 60000)
        assert st == 200 and [s["metric"] for s in ans["data"]["result"]] == [{"x": "1"}], (q, ans)
    # last_over_time keeps the name: both, apart
    st, ans = _range(srv, 'last_over_time({__name__=~"a|b"}[5m])', 0, 14 * 60000, 60000)
    assert st == 200 and sorted(s["metric"]["__name__"] for s in ans["data"]["result"]) == ["a", "b"]


def test_range_function_over_an_at_argument_in_a_range_query(make_server):
    """predict_linear(x[100m] @ 3000, 3600) in a range query predicted from the query's start at
    every step. Prometheus 2.42 evaluates a call that is not step invariant at each step ts, with
    the window of its @ argument moved by ts - start (and the samples of a selector ending at @):
    the values here are Prometheus 2.42's own answers to these range queries (a Prometheus 2.42
    with --web.enable-remote-write-receiver, the same samples)."""
    srv = make_server(retention="0", extra_args=COMPAT2)
    load(srv, 300000, _series("x 0+10x20"))
    cases = {
        "predict_linear(x[100m] @ 3000, 3600)": ["220", "230", "240"],
        "quantile_over_time(time() * 0, x[10m] @ 3000)": ["80", "90", "100"],
        "quantile_over_time(time() * 0 + 1, x[10m:5m] @ 3000)": ["100", "100", "100"],
        "quantile_over_time(time() * 0 + 1, x[10m:5m] @ 3000 offset 5m)": ["90", "90", "90"],
        "rate(x[10m] @ 3000) + time() * 0": ["0.03333333333333333"] * 3,
        "max_over_time(x[10m] @ 3000)": ["100", "100", "100"],
    }
    for q, want in cases.items():
        st, ans = _range(srv, q, 3000000, 3600000, 300000)
        assert st == 200, (q, ans)
        assert _points(ans) == {(): list(zip([3000000, 3300000, 3600000], want))}, q
    st, ans = _instant(srv, "predict_linear(x[100m] @ 3000, 3600)", 3300000)
    assert ans["data"]["result"][0]["value"][1] == "230"
    # inside a subquery the start is the subquery's own (the first time its inner expression runs
    # at): the window of the @ argument moves from there, and runs out of samples
    load(srv, 60000, _series("w 0+10x60"))
    cases = {
        "max_over_time(predict_linear(w[5m] @ 1800, 60)[10m:1m])": {(): [(1200000, "150"), (1320000, "150"),
                                                                         (1440000, "150")]},
        "max_over_time(predict_linear(w[5m] @ 1800, 60)[10m:1m] @ 2000)": {(): [(t, "290") for t in T4]},
        "min_over_time(predict_linear(w[5m] @ 1800, 60)[10m:1m] @ 2000 offset 1m)": {(): [(t, "240") for t in T4]},
    }
    for q, want in cases.items():
        st, ans = _range(srv, q, 1200000, 1560000, 120000)
        assert st == 200, (q, ans)
        assert _points(ans) == want, q


T4 = [1200000, 1320000, 1440000, 1560000]


def test_label_replace_and_selectors_take_prometheus_regex_dialect(make_server):
    """label_replace compiles its regex as Prometheus' RE2 does: lookaround, back-references,
    possessive and atomic groups, \\Z are refused (422, Prometheus' message); selectors take the
    POSIX brackets RE2 reads as plain classes ([[.a.]] is '[', '.' or 'a', then ']')."""
    srv = make_server(retention="0", extra_args=COMPAT2)
    load(srv, 60000, _series('y{l="a]"} 1', 'y{l="[]"} 2', 'y{l="b"} 3', 'y{l="="} 4', 'y{l="h"} 5'))
    for re_ in ["(?=a).*", "(a)\\\\1", "(?<=a).*", "(?!a)", "a++", "(?>a)", "\\\\Z", "(?P=n)"]:
        st, ans = _instant(srv, 'label_replace(y, "d", "$1", "l", "%s")' % re_, 0)
        assert (st, ans["errorType"]) == (422, "execution"), (re_, ans)
        assert ans["error"] == "invalid regular expression in label_replace(): %s" % re_.replace("\\\\", "\\")
    st, ans = _instant(srv, 'label_replace(y, "d", "<$1>", "l", "([[.a.]])")', 0)
    assert st == 200
    assert sorted((s["metric"]["l"], s["metric"].get("d")) for s in ans["data"]["result"]) == \
        [("=", None), ("[]", "<[]>"), ("a]", "<a]>"), ("b", None), ("h", None)]
    for sel, want in [('y{l=~"[[.a.]]"}', ["[]", "a]"]), ('y{l=~"[[=a=]]"}', ["[]", "a]"]),
                      ('y{l=~"[[.a.]"}', []), ('y{l=~"[:alpha:]"}', ["h"]), ('y{l=~"[=a=]"}', ["="]),
                      ('y{l!~"[[.a.]]"}', ["=", "b", "h"])]:
        st, ans = _instant(srv, sel, 0)
        assert st == 200, (sel, ans)
        assert sorted(s["metric"]["l"] for s in ans["data"]["result"]) == want, sel
    st, ans = _instant(srv, 'y{l=~"[[:foo:]]"}', 0)
    assert (st, ans["errorType"]) == (400, "bad_data")
    assert ans["error"].endswith("error parsing regexp: invalid character class range: `[:foo:]`")
