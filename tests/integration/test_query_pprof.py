"""/api/v1/profiles/query and /api/v1/profiles/diff as pprof, read by a real client (`go tool
pprof`) and decoded with pprof_decode.py: a merged range equals pprof's own merge of the original
files (same -top table, same total), the merged profile is a valid pprof message that carries the
sample and period types, an instant query takes only each series' newest profile, heap types, and
the diff (compare - base) against `go tool pprof -diff_base`."""

import subprocess
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import (CPU_SAMPLES_TYPE, CPU_TYPE, PPROF_DIR, QUERY_T0, README_TOTALS, fixture_profile, go_pprof,
                      parse_pprof_top, pprof_quantity, require_tool, tool_env)

T0 = QUERY_T0
CPU_FILES = ["go/cpu-0%d.pb.gz" % i for i in range(1, 6)]
SEED2 = "go/cpu-seed2-01.pb.gz"
# job="merge": a = cpu-01..05 at T0+10..T0+50, b = cpu-seed2-01 at T0+30
MERGE_PUSHES = [("a:6060", rel, T0 + 10 * (i + 1)) for i, rel in enumerate(CPU_FILES)] + [("b:6060", SEED2, T0 + 30)]
HEAP_FILES = ["go/heap-01.pb.gz", "go/heap-gc-01.pb.gz"]
ALLOC_SPACE = "memory:alloc_space:bytes:space:bytes"
INUSE_SPACE = "memory:inuse_space:bytes:space:bytes"
MERGE_SEL = CPU_TYPE + '{job="merge"}'


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="pprofq", retention="0")
    pushes = [(rel, '{job="merge",instance="%s"}' % inst, ts) for inst, rel, ts in MERGE_PUSHES]
    pushes += [(rel, '{job="heap",instance="a:6060"}', T0 + 10 * (i + 1)) for i, rel in enumerate(HEAP_FILES)]
    pushes += [("go/cpu-01.pb.gz", '{job="diff",side="base"}', T0 + 10),
               ("go/cpu-02.pb.gz", '{job="diff",side="compare"}', T0 + 10)]
    for rel, labels, ts in pushes:
        st, _ = s.push(rel, labels=labels, time=str(ts))
        assert st == 200, (rel, labels, st, s.last_raw[:300])
    return s


@pytest.fixture(scope="module")
def go():
    return require_tool("go")


def query_path(endpoint="/api/v1/profiles/query", **params):
    return endpoint + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def fetch(srv, path):
    st, hdrs, body = srv.get(path, timeout=30)
    assert st == 200, (path, st, body[:500])
    return hdrs, body


def canon_sum(rels, type_index, sign=None):
    """Sum of the canonical sample multisets of fixture files (sign: per-file factors)."""
    acc = {}
    for k, rel in enumerate(rels):
        f = 1 if sign is None else sign[k]
        for key, v in pd.canonical(fixture_profile(rel), type_index).items():
            acc[key] = acc.get(key, 0) + f * v
    return {k: v for k, v in acc.items() if v != 0}


def half_away(v2):
    """v2 / 2 rounded half away from zero (the mean of two profiles, node by node)."""
    q = abs(v2) // 2 + abs(v2) % 2
    return q if v2 >= 0 else -q


def canon_avg(rels, type_index):
    """The per-node mean of the canonical samples of fixture files pushed to one series."""
    assert len(rels) == 2
    return {k: half_away(v) for k, v in canon_sum(rels, type_index).items() if half_away(v) != 0}


def comparable_header(header):
    """pprof's header lines that must agree between the server's merge and pprof's own: all but
    Time (the server reports the earliest stored timestamp; the pushes used time=)."""
    return [l for l in header if not l.startswith("Time:")]


def assert_valid_pprof(p, want_type, want_period_type=("cpu", "nanoseconds")):
    st = p.string_table
    assert st and st[0] == "", "string_table[0] must be the empty string"

    def s_ok(i):
        return 0 <= i < len(st)

    for kind, items in (("mapping", p.mapping), ("location", p.location), ("function", p.function)):
        ids = [x.id for x in items]
        assert all(i != 0 for i in ids), "%s id 0" % kind
        assert len(ids) == len(set(ids)), "duplicate %s ids" % kind
    mids, lids, fids = {m.id for m in p.mapping}, {l.id for l in p.location}, {f.id for f in p.function}
    for m in p.mapping:
        assert s_ok(m.filename) and s_ok(m.build_id)
    for f in p.function:
        assert s_ok(f.name) and s_ok(f.system_name) and s_ok(f.filename)
    for l in p.location:
        assert l.mapping_id == 0 or l.mapping_id in mids, "location %d: mapping %d undefined" % (l.id, l.mapping_id)
        for ln in l.line:
            assert ln.function_id == 0 or ln.function_id in fids, "location %d: function %d undefined" % (
                l.id, ln.function_id)
    for i, smp in enumerate(p.sample):
        assert len(smp.value) == len(p.sample_type), "sample %d: %d values" % (i, len(smp.value))
        assert smp.location_id, "sample %d has no stack" % i
        for lid in smp.location_id:
            assert lid in lids, "sample %d: location %d undefined" % (i, lid)
        for lb in smp.label:
            assert s_ok(lb.key) and s_ok(lb.str) and s_ok(lb.num_unit)
    assert p.type_names() == [want_type]
    assert p.period_type_names() == want_period_type


# ---- merged range ------------------------------------------------------------------------------

def test_range_merge_matches_pprof_merge(srv, go, tmp_path):
    rels = CPU_FILES + [SEED2]
    want_total = sum(README_TOTALS[r][1] for r in rels)
    path = query_path(query=MERGE_SEL, start=T0, end=T0 + 60)
    ref = go_pprof(["-top", "-nodecount=15", "-symbolize=none"] + [str(PPROF_DIR / r) for r in rels], tmp_path)
    ref_h, ref_rows = parse_pprof_top(ref.stdout)
    assert len(ref_rows) == 15

    via_url = go_pprof(["-top", "-nodecount=15", "-symbolize=none", srv.url(path)], tmp_path)
    _, body = fetch(srv, path)
    f = tmp_path / "merged.pb.gz"
    f.write_bytes(body)
    via_file = go_pprof(["-top", "-nodecount=15", "-symbolize=none", str(f)], tmp_path)
    for how, r in (("url", via_url), ("file", via_file)):
        h, rows = parse_pprof_top(r.stdout)
        total_line = [l for l in h if "Total samples = " in l]
        assert total_line, r.stdout
        total = pprof_quantity(total_line[0].split("Total samples = ")[1].split()[0])
        assert round(total) == want_total, (how, total_line)
        assert comparable_header(h) == comparable_header(ref_h), (how, r.stdout, ref.stdout)
        assert [(x[0], x[3], x[5]) for x in rows] == [(x[0], x[3], x[5]) for x in ref_rows], \
            "%s:\n%s\n--- pprof's own merge:\n%s" % (how, r.stdout, ref.stdout)
        assert rows == ref_rows


def test_range_merge_is_valid_pprof(srv):
    rels = CPU_FILES + [SEED2]
    hdrs, body = fetch(srv, query_path(query=MERGE_SEL, start=T0, end=T0 + 60))
    assert hdrs.get("content-type") == "application/octet-stream"
    assert body[:2] == b"\x1f\x8b", "format=pprof (the default) is gzipped"
    _, body2 = fetch(srv, query_path(query=MERGE_SEL, start=T0, end=T0 + 60, format="pprof"))
    p = pd.decode(body)
    assert pd.canonical(pd.decode(body2), 0) == pd.canonical(p, 0)
    assert_valid_pprof(p, ("cpu", "nanoseconds"))
    assert p.period == 10000000
    assert pd.totals(p) == [sum(README_TOTALS[r][1] for r in rels)]
    # every stack with its labels, summed over the six originals (cpu is sample type 1 there)
    assert pd.canonical(p, 0) == canon_sum(rels, 1)
    assert p.duration_nanos == sum(fixture_profile(r).duration_nanos for r in rels)
    assert p.time_nanos == (T0 + 10) * 10**9, "time = the earliest profile merged"
    # the samples:count series of the same pushes
    _, body = fetch(srv, query_path(query=CPU_SAMPLES_TYPE + '{job="merge"}', start=T0, end=T0 + 60))
    q = pd.decode(body)
    assert_valid_pprof(q, ("samples", "count"))
    assert pd.totals(q) == [sum(README_TOTALS[r][0] for r in rels)]
    assert pd.canonical(q, 0) == canon_sum(rels, 0)


def test_range_bounds_are_inclusive(srv):
    # [T0+20, T0+30]: cpu-02, cpu-03 of a and seed2 of b (both ends included)
    _, body = fetch(srv, query_path(query=MERGE_SEL, start=T0 + 20, end=T0 + 30))
    p = pd.decode(body)
    rels = ["go/cpu-02.pb.gz", "go/cpu-03.pb.gz", SEED2]
    assert pd.totals(p) == [sum(README_TOTALS[r][1] for r in rels)]
    assert pd.canonical(p, 0) == canon_sum(rels, 1)
    # one instance only
    _, body = fetch(srv, query_path(query=CPU_TYPE + '{job="merge",instance="b:6060"}', start=T0, end=T0 + 60))
    assert pd.canonical(pd.decode(body), 0) == canon_sum([SEED2], 1)


# ---- instant -----------------------------------------------------------------------------------

@pytest.mark.parametrize("t,lookback,rels", [
    (T0 + 60, None, ["go/cpu-05.pb.gz", SEED2]),           # newest of each series
    (T0 + 35, None, ["go/cpu-03.pb.gz", SEED2]),
    (T0 + 60, "20s", ["go/cpu-05.pb.gz"]),                 # (T0+40, T0+60]: b's T0+30 is out
    (T0 + 30 + 300, None, ["go/cpu-05.pb.gz"]),            # (T0+30, T0+330]: default lookback 5m
])
def test_instant_takes_newest_profile_per_series(srv, t, lookback, rels):
    params = {"query": MERGE_SEL, "time": t}
    if lookback:
        params["lookback"] = lookback
    _, body = fetch(srv, query_path(**params))
    p = pd.decode(body)
    assert_valid_pprof(p, ("cpu", "nanoseconds"))
    assert pd.totals(p) == [sum(README_TOTALS[r][1] for r in rels)]
    assert pd.canonical(p, 0) == canon_sum(rels, 1)


def test_instant_via_go_pprof(srv, go, tmp_path):
    r = go_pprof(["-top", "-nodecount=5", "-symbolize=none", srv.url(query_path(query=MERGE_SEL, time=T0 + 60))],
                 tmp_path)
    h, _ = parse_pprof_top(r.stdout)
    line = [l for l in h if "Total samples = " in l][0]
    assert round(pprof_quantity(line.split("Total samples = ")[1].split()[0])) == \
        README_TOTALS["go/cpu-05.pb.gz"][1] + README_TOTALS[SEED2][1], r.stdout


def test_instant_outside_any_profile_is_empty(srv):
    _, body = fetch(srv, query_path(query=MERGE_SEL, time=T0 + 5))
    p = pd.decode(body)
    assert p.sample == [] and p.type_names() == [("cpu", "nanoseconds")]


# ---- heap --------------------------------------------------------------------------------------

@pytest.mark.parametrize("type_id,index_name,ti", [(ALLOC_SPACE, "alloc_space", 1), (INUSE_SPACE, "inuse_space", 3)])
def test_heap_merge_matches_pprof_merge(srv, go, tmp_path, type_id, index_name, ti):
    """Summed (aggregation=sum for inuse_space, which averages over time by default), the merge
    is pprof's own merge of the files; averaged, each node is the mean of the two."""
    if index_name == "inuse_space":
        _, body = fetch(srv, query_path(query=type_id + '{job="heap"}', start=T0, end=T0 + 60))
        p = pd.decode(body)
        assert pd.canonical(p, 0) == canon_avg(HEAP_FILES, ti)
        assert p.comment and p.s(p.comment[0]).startswith("profstore: inuse_space: aggregation=avg")
    path = query_path(query=type_id + '{job="heap"}', start=T0, end=T0 + 60, aggregation="sum")
    _, body = fetch(srv, path)
    p = pd.decode(body)
    assert_valid_pprof(p, (index_name, "bytes"), ("space", "bytes"))
    assert p.period == 524288
    assert pd.totals(p) == [sum(README_TOTALS[r][ti] for r in HEAP_FILES)]
    assert pd.canonical(p, 0) == canon_sum(HEAP_FILES, ti)

    got = go_pprof(["-top", "-nodecount=15", "-symbolize=none", "-sample_index=" + index_name, srv.url(path)], tmp_path)
    ref = go_pprof(["-top", "-nodecount=15", "-symbolize=none", "-sample_index=" + index_name] +
                   [str(PPROF_DIR / r) for r in HEAP_FILES], tmp_path)
    gh, grows = parse_pprof_top(got.stdout)
    rh, rrows = parse_pprof_top(ref.stdout)
    assert comparable_header(gh) == comparable_header(rh), (got.stdout, ref.stdout)
    assert grows == rrows, (got.stdout, ref.stdout)


def test_heap_type_query_has_one_sample_type(srv, go, tmp_path):
    """A query for one profile type carries that type only: pprof cannot pick inuse_space from
    alloc_space (test_heap_family_* below ask for every sample type)."""
    path = query_path(query=ALLOC_SPACE + '{job="heap"}', start=T0, end=T0 + 60)
    r = subprocess.run([go, "tool", "pprof", "-top", "-symbolize=none", "-sample_index=inuse_space", srv.url(path)],
                       capture_output=True, text=True, env=tool_env(tmp_path), timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and "alloc_space" in r.stderr, (r.returncode, r.stdout, r.stderr)


HEAP_SAMPLE_TYPES = [("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"),
                     ("inuse_space", "bytes")]


@pytest.mark.parametrize("params", [
    {"query": 'memory{job="heap"}'},                                     # the profile name alone
    {"query": '{__name__="memory",job="heap"}'},
    {"query": INUSE_SPACE + '{job="heap"}', "sample_types": "all"},      # a type of the family
    {"query": '{job="heap"}', "sample_types": "all"},                    # the family of what is selected
])
def test_heap_family_has_every_sample_type(srv, params):
    # by default each type by its own rule: alloc_* summed, inuse_* averaged over time
    _, body = fetch(srv, query_path(start=T0, end=T0 + 60, **params))
    p = pd.decode(body)
    assert p.type_names() == HEAP_SAMPLE_TYPES
    for i in range(4):
        want = canon_sum(HEAP_FILES, i) if i < 2 else canon_avg(HEAP_FILES, i)
        assert pd.canonical(p, i) == want, HEAP_SAMPLE_TYPES[i]
    assert [p.s(c).split(":")[1].strip() for c in p.comment] == [t for t, _ in HEAP_SAMPLE_TYPES]
    _, body = fetch(srv, query_path(start=T0, end=T0 + 60, aggregation="sum", **params))
    p = pd.decode(body)
    assert p.type_names() == HEAP_SAMPLE_TYPES
    assert p.period_type_names() == ("space", "bytes") and p.period == 524288
    assert pd.totals(p) == [sum(README_TOTALS[r][i] for r in HEAP_FILES) for i in range(4)]
    for i in range(4):
        assert pd.canonical(p, i) == canon_sum(HEAP_FILES, i), HEAP_SAMPLE_TYPES[i]
    # pprof's merge rules, counted once (not once per sample type)
    assert p.duration_nanos == sum(fixture_profile(r).duration_nanos for r in HEAP_FILES)
    assert p.time_nanos == (T0 + 10) * 10**9
    # at a time: the newest profile, every type
    _, body = fetch(srv, query_path(time=T0 + 60, **params))
    p = pd.decode(body)
    assert pd.totals(p) == [README_TOTALS[HEAP_FILES[1]][i] for i in range(4)]


@pytest.mark.parametrize("index_name", ["inuse_space", "alloc_objects"])
def test_heap_family_through_go_pprof_sample_index(srv, go, tmp_path, index_name):
    """go tool pprof -sample_index=... on the family answer = on pprof's own merge of the originals."""
    for params in ({"query": 'memory{job="heap"}'}, {"query": ALLOC_SPACE + '{job="heap"}', "sample_types": "all"}):
        path = query_path(start=T0, end=T0 + 60, aggregation="sum", **params)  # pprof's merge sums
        args = ["-top", "-nodecount=15", "-symbolize=none", "-sample_index=" + index_name]
        got = go_pprof(args + [srv.url(path)], tmp_path)
        ref = go_pprof(args + [str(PPROF_DIR / r) for r in HEAP_FILES], tmp_path)
        gh, grows = parse_pprof_top(got.stdout)
        rh, rrows = parse_pprof_top(ref.stdout)
        assert len(rrows) == {"inuse_space": 5, "alloc_objects": 15}[index_name], ref.stdout
        assert comparable_header(gh) == comparable_header(rh), (got.stdout, ref.stdout)
        assert grows == rrows, (got.stdout, ref.stdout)


def test_heap_family_diff(srv):
    """A diff of two families: compare - base for every sample type."""
    _, body = fetch(srv, query_path("/api/v1/profiles/diff", base='memory{job="heap"}', compare='memory{job="heap"}',
                                    base_time=T0 + 10, compare_time=T0 + 20))
    p = pd.decode(body)
    assert p.type_names() == HEAP_SAMPLE_TYPES
    assert pd.totals(p) == [README_TOTALS[HEAP_FILES[1]][i] - README_TOTALS[HEAP_FILES[0]][i] for i in range(4)]
    for i in range(4):
        assert pd.canonical(p, i) == canon_sum(HEAP_FILES, i, sign=[-1, 1]), HEAP_SAMPLE_TYPES[i]
    # one family against one type: different types
    st, _, body = srv.get(query_path("/api/v1/profiles/diff", base='memory{job="heap"}', compare=INUSE_SPACE,
                                     base_time=T0 + 10, compare_time=T0 + 20))
    assert st == 400 and b"base and compare select different profile types" in body, body[:300]


def test_heap_family_errors(srv):
    # flame graph, folded and top show one sample type
    for fmt in ("flamegraph", "folded", "top"):
        st, _, body = srv.get(query_path(query='memory{job="heap"}', start=T0, end=T0 + 60, format=fmt))
        assert st == 400 and b"format=%s shows one sample type" % fmt.encode() in body, (fmt, st, body[:300])
    st, _, body = srv.get(query_path(query='memory{job="heap"}', start=T0, end=T0 + 60, sample_types="some"))
    # a pprof request's error is text, as go tool pprof prints it (test_query_times.py)
    assert st == 400 and body == b'invalid parameter "sample_types": "some" is neither "all" nor "one"\n', body[:300]
    # a name nothing is stored under
    st, _, body = srv.get(query_path(query='nosuch{job="heap"}', start=T0, end=T0 + 60))
    assert st == 400 and b'"nosuch" is not a profile type' in body, body[:300]
    # sample_types=all over series of two profile names
    st, _, body = srv.get(query_path(query='{job=~"heap|merge"}', start=T0, end=T0 + 60, sample_types="all"))
    assert st == 400 and b"memory" in body and b"process_cpu" in body, body[:300]


# ---- diff --------------------------------------------------------------------------------------

DIFF_BASE = CPU_TYPE + '{job="diff",side="base"}'
DIFF_CMP = CPU_TYPE + '{job="diff",side="compare"}'


def test_diff_pprof_is_compare_minus_base(srv):
    want = canon_sum(["go/cpu-01.pb.gz", "go/cpu-02.pb.gz"], 1, sign=[-1, 1])
    want_total = README_TOTALS["go/cpu-02.pb.gz"][1] - README_TOTALS["go/cpu-01.pb.gz"][1]
    for params in ({"base_time": T0 + 60, "compare_time": T0 + 60},
                   {"base_start": T0, "base_end": T0 + 60, "compare_start": T0, "compare_end": T0 + 60},
                   # an instant side (its window: lookback) against a range: normalize=none for
                   # absolute values, which windows of different lengths do not compare by default
                   {"base_time": T0 + 10, "compare_start": T0 + 10, "compare_end": T0 + 10, "normalize": "none"}):
        hdrs, body = fetch(srv, query_path("/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, **params))
        assert hdrs.get("content-type") == "application/octet-stream"
        assert hdrs.get("x-profstore-normalize") == "none"
        p = pd.decode(body)
        assert_valid_pprof(p, ("cpu", "nanoseconds"))
        assert pd.totals(p) == [want_total], params
        assert pd.canonical(p, 0) == want, params
        assert any(v < 0 for v in want.values()) and any(s.value[0] < 0 for s in p.sample)
    # a side that selects nothing counts as empty: compare - nothing = compare
    _, body = fetch(srv, query_path("/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 5,
                                    compare_time=T0 + 60))
    assert pd.canonical(pd.decode(body), 0) == canon_sum(["go/cpu-02.pb.gz"], 1)
    # the same profile on both sides: nothing left
    _, body = fetch(srv, query_path("/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_BASE, base_time=T0 + 60,
                                    compare_time=T0 + 60))
    assert pd.decode(body).sample == []


def _ns_rows(rows):
    return [(round(pprof_quantity(r[0])), round(pprof_quantity(r[3])), r[5]) for r in rows]


def test_diff_through_go_pprof(srv, go, tmp_path):
    path = query_path("/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 60,
                      compare_time=T0 + 60)
    got = go_pprof(["-top", "-nodecount=15", "-symbolize=none", srv.url(path)], tmp_path)
    ref = go_pprof(["-top", "-nodecount=15", "-symbolize=none", "-diff_base=" + str(PPROF_DIR / "go/cpu-01.pb.gz"),
                    str(PPROF_DIR / "go/cpu-02.pb.gz")], tmp_path)
    _, grows = parse_pprof_top(got.stdout)
    _, rrows = parse_pprof_top(ref.stdout)
    g, r = _ns_rows(grows), _ns_rows(rrows)
    assert len(g) == 15
    assert any(flat < 0 for flat, _, _ in g) and any(flat > 0 for flat, _, _ in g), got.stdout
    # same functions with the same flat and cum differences as pprof's own -diff_base
    assert g == r, "server diff:\n%s\n--- go tool pprof -diff_base:\n%s" % (got.stdout, ref.stdout)


def test_diff_top_matches_go_pprof_diff_base(srv, go, tmp_path):
    """format=top of a diff = go tool pprof -top -diff_base: total and percentages are of the
    base's total (pprof prints |percentage|; the JSON keeps the sign of flat and cum), rows by
    |flat| (then |cum|, then name), so limit keeps the largest drops as well as the largest rises."""
    import json
    base_total = README_TOTALS["go/cpu-01.pb.gz"][1]
    ref = go_pprof(["-top", "-nodecount=10000", "-nodefraction=0", "-symbolize=none", "-diff_base=" + str(PPROF_DIR / "go/cpu-01.pb.gz"),
                    str(PPROF_DIR / "go/cpu-02.pb.gz")], tmp_path)
    rh, rrows = parse_pprof_top(ref.stdout)
    line = [l for l in rh if " total" in l and "Showing nodes" in l][0]
    assert round(pprof_quantity(line.split(" of ")[1].split()[0])) == base_total, line
    rrows = [r[:5] + (r[5].replace(" (partial-inline)", ""),) for r in rrows]
    want = sorted(_ns_rows(rrows), key=lambda r: (-abs(r[0]), -abs(r[1]), r[2]))
    pct = {r[5]: (r[1], r[4]) for r in rrows}
    params = dict(base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 60, compare_time=T0 + 60, format="top")
    _, body = fetch(srv, query_path("/api/v1/profiles/diff", **params))
    top = json.loads(body)
    assert top["total"] == base_total
    assert [(r["flat"], r["cum"], r["function"]) for r in top["rows"]] == want
    for r in top["rows"]:
        assert r["flat%"] == round(100.0 * r["flat"] / base_total, 2), r
        assert r["cum%"] == round(100.0 * r["cum"] / base_total, 2), r
        for ours, theirs in ((r["flat%"], pct[r["function"]][0]), (r["cum%"], pct[r["function"]][1])):
            if 1.0 <= abs(ours) < 99.95:
                assert "%.2f%%" % abs(ours) == theirs, (r, theirs)
    # the largest drop is among the first rows, where its |flat| ranks
    drop = min(want, key=lambda r: r[0])
    k = want.index(drop) + 1
    assert drop[0] < 0 and k <= 5, want[:5]
    _, body = fetch(srv, query_path("/api/v1/profiles/diff", limit=k, **params))
    rows = json.loads(body)["rows"]
    assert [(r["flat"], r["cum"], r["function"]) for r in rows] == want[:k]
