"""The non-pprof formats of /api/v1/profiles/query and /diff (render.h, docs/protocols.md): flame graph
JSON (decoded back to absolute positions and checked node by node against a call tree built here
from the fixture files), max_nodes truncation with "other", folded stacks, top tables (against a
table computed here and against `go tool pprof -top`), the 7-value diff flame graph, and frame
naming for locations without lines."""

import json
import urllib.parse

import pytest

import pprof_decode as pd
from conftest import (CPU_TYPE, PPROF_DIR, QUERY_T0, README_TOTALS, fixture_profile, go_pprof, parse_pprof_top,
                      pprof_quantity)

T0 = QUERY_T0
CPU_FILES = ["go/cpu-0%d.pb.gz" % i for i in range(1, 6)]
SEED2 = "go/cpu-seed2-01.pb.gz"
ALL_CPU = CPU_FILES + [SEED2]
SEL = CPU_TYPE + '{job="fmt"}'
DIFF_BASE = CPU_TYPE + '{job="fdiff",side="base"}'
DIFF_CMP = CPU_TYPE + '{job="fdiff",side="compare"}'


@pytest.fixture(scope="module")
def srv(module_server_factory):
    s = module_server_factory(name="formats", retention="0")
    pushes = [(rel, '{job="fmt",instance="a:6060"}', T0 + 10 * (i + 1)) for i, rel in enumerate(CPU_FILES)]
    pushes += [(SEED2, '{job="fmt",instance="b:6060"}', T0 + 30),
               ("go/cpu-01.pb.gz", '{job="fdiff",side="base"}', T0 + 10),
               ("go/cpu-02.pb.gz", '{job="fdiff",side="compare"}', T0 + 10)]
    for rel, labels, ts in pushes:
        st, _ = s.push(rel, labels=labels, time=str(ts))
        assert st == 200, (rel, st, s.last_raw[:300])
    return s


def get(srv, endpoint="/api/v1/profiles/query", **params):
    path = endpoint + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    st, hdrs, body = srv.get(path, timeout=30)
    assert st == 200, (path, st, body[:500])
    return hdrs, body


def get_json(srv, endpoint="/api/v1/profiles/query", **params):
    hdrs, body = get(srv, endpoint, **params)
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    return json.loads(body)


# ---- reference call tree, built from the pprof files ---------------------------------------------

def frames_of(p, loc, fns, maps):
    """Frame names of a location, outermost first (render.h's naming rules)."""
    if loc.line:
        out = []
        for ln in reversed(loc.line):
            f = fns.get(ln.function_id)
            name = (p.s(f.name) or p.s(f.system_name)) if f else ""
            out.append(name or "0x%x" % loc.address)
        return out
    m = maps.get(loc.mapping_id)
    if m is not None and p.s(m.filename):
        return ["%s+0x%x" % (p.s(m.filename).rsplit("/", 1)[-1], loc.address - m.memory_start + m.file_offset)]
    return ["0x%x" % loc.address]


def stacks(p, ti):
    """[(root-first frame names, value)] of one sample type, zero values skipped."""
    locs = {l.id: l for l in p.location}
    fns = {f.id: f for f in p.function}
    maps = {m.id: m for m in p.mapping}
    cache = {}
    out = []
    for s in p.sample:
        v = s.value[ti]
        if v == 0:
            continue
        names = []
        for lid in reversed(s.location_id):
            if lid not in cache:
                cache[lid] = frames_of(p, locs[lid], fns, maps)
            names.extend(cache[lid])
        out.append((tuple(names), v))
    return out


class Node:
    __slots__ = ("name", "children", "self", "total", "depth")

    def __init__(self, name, depth, w):
        self.name, self.depth = name, depth
        self.children = {}
        self.self = [0] * w
        self.total = [0] * w


def build_tree(sides):
    """sides: one list of (stack, value) per side (1 = plain, 2 = diff left/right)."""
    w = len(sides)
    root = Node("total", 0, w)
    for k, st in enumerate(sides):
        for names, v in st:
            n = root
            n.total[k] += v
            for name in names:
                c = n.children.get(name)
                if c is None:
                    c = n.children[name] = Node(name, n.depth + 1, w)
                c.total[k] += v
                n = c
            n.self[k] += v
    return root


def fixture_stacks(rels, ti=1):
    out = []
    for r in rels:
        out += stacks(fixture_profile(r), ti)
    return out


def sorted_children(n):
    return [n.children[k] for k in sorted(n.children, key=lambda s: s.encode())]


def truncate(root, max_nodes):
    """render.h / render.c rule: keep the max_nodes nodes ranked by total (diff: max of both sides)
    desc, depth asc, name, pre-order position; a kept node under an unkept parent is dropped; the
    unkept children of a kept node become one "other" child (after its kept siblings), omitted
    when 0. Returns a tree of plain tuples (name, total, self, children)."""
    order = []

    def walk(n):
        for c in sorted_children(n):
            order.append(c)
            walk(c)

    walk(root)
    if max_nodes <= 0 or max_nodes >= len(order):
        kept = set(map(id, order))
    else:
        ranked = sorted(range(len(order)), key=lambda i: (-max(order[i].total), order[i].depth,
                                                          order[i].name.encode(), i))
        kept = set(id(order[i]) for i in ranked[:max_nodes])

    def emit(n):
        kids, other = [], [0] * len(n.total)
        for c in sorted_children(n):
            if id(c) in kept:
                kids.append(emit(c))
            else:
                other = [a + b for a, b in zip(other, c.total)]
        if any(other):
            kids.append(("other", tuple(other), tuple(other), ()))
        return (n.name, tuple(n.total), tuple(n.self), tuple(kids))

    return emit(root)


# ---- decoding the flame graph JSON ---------------------------------------------------------------

def decode_flamegraph(fg, diff=False):
    """levels -> tree of (name, totals, selfs, children), checking the encoding on the way:
    delta-encoded offsets, children inside their parent's span after its self, contiguous,
    self + children == total, per side."""
    names, levels = fg["names"], fg["levels"]
    per = 7 if diff else 4
    sides = 2 if diff else 1
    assert names[0] == "total"
    assert len(set(names)) == len(names), "names are de-duplicated"
    nodes_by_level = []
    for li, lv in enumerate(levels):
        assert len(lv) % per == 0, "level %d: %d values" % (li, len(lv))
        prev_end = [0] * sides
        nodes = []
        for j in range(0, len(lv), per):
            v = lv[j:j + per]
            starts, totals, selfs = [], [], []
            for k in range(sides):
                off, tot, slf = v[3 * k:3 * k + 3]
                assert off >= 0 and tot >= 0 and 0 <= slf <= tot, (li, v)
                starts.append(prev_end[k] + off)
                prev_end[k] = starts[-1] + tot
                totals.append(tot)
                selfs.append(slf)
            ni = v[-1]
            assert 0 <= ni < len(names), (li, v)
            nodes.append({"name": names[ni], "start": starts, "total": totals, "self": selfs, "kids": []})
        nodes_by_level.append(nodes)
    assert len(nodes_by_level[0]) == 1, "level 0 holds the root only"
    root = nodes_by_level[0][0]
    assert root["name"] == "total" and root["start"] == [0] * sides
    for li in range(1, len(nodes_by_level)):
        assert nodes_by_level[li], "empty level %d" % li
        parents = nodes_by_level[li - 1]
        pi = 0
        for c in nodes_by_level[li]:
            def fits(p):
                for k in range(sides):
                    lo, hi = p["start"][k] + p["self"][k], p["start"][k] + p["total"][k]
                    if not (lo <= c["start"][k] and c["start"][k] + c["total"][k] <= hi):
                        return False
                return True
            while pi < len(parents) and not fits(parents[pi]):
                pi += 1
            assert pi < len(parents), "level %d: node %r is inside no parent" % (li, c["name"])
            parents[pi]["kids"].append(c)
    for lvl in nodes_by_level:
        for n in lvl:
            for k in range(sides):
                pos = n["start"][k] + n["self"][k]
                for c in n["kids"]:
                    assert c["start"][k] == pos, "children are contiguous after the parent's self: %r" % c["name"]
                    pos += c["total"][k]
                assert pos == n["start"][k] + n["total"][k], "self + children totals != total at %r" % n["name"]
    max_self = max(max(n["self"]) for lvl in nodes_by_level for n in lvl)
    assert fg["max_self"] == max_self

    def tup(n):
        return (n["name"], tuple(n["total"]), tuple(n["self"]), tuple(tup(c) for c in n["kids"]))

    return tup(root)


def count_nodes(t):
    name, _, _, kids = t
    named = sum(1 for k in kids if k[0] != "other")
    others = sum(1 for k in kids if k[0] == "other")
    for k in kids:
        a, b = count_nodes(k)
        named += a
        others += b
    return named, others


def check_sibling_order(t):
    kids = t[3]
    names = [k[0] for k in kids]
    if "other" in names:
        assert names.index("other") == len(names) - 1, "'other' goes after its kept siblings: %r" % names
        names = names[:-1]
    assert names == sorted(names, key=lambda s: s.encode()), "siblings ordered by name: %r" % names
    for k in kids:
        check_sibling_order(k)


# ---- flame graph ----------------------------------------------------------------------------------

def test_flamegraph_matches_call_tree(srv):
    fg = get_json(srv, query=SEL, start=T0, end=T0 + 60, format="flamegraph")
    assert set(fg) == {"names", "levels", "total", "max_self", "aggregation"}, set(fg)
    assert fg["aggregation"] == "sum"  # a cpu type: every profile summed
    want_total = sum(README_TOTALS[r][1] for r in ALL_CPU)
    tree = decode_flamegraph(fg)
    assert fg["total"] == want_total and tree[1] == (want_total,)
    assert tree[2] == (0,), "the root has no self (every Go sample has a stack)"
    check_sibling_order(tree)
    ref = truncate(build_tree([fixture_stacks(ALL_CPU)]), 0)
    assert tree == ref
    # the sum of leaf selfs is the total
    def selfs(t):
        return t[2][0] + sum(selfs(k) for k in t[3])
    assert selfs(tree) == want_total


@pytest.mark.parametrize("max_nodes", [1, 10, 37])
def test_flamegraph_max_nodes(srv, max_nodes):
    fg = get_json(srv, query=SEL, start=T0, end=T0 + 60, format="flamegraph", max_nodes=max_nodes)
    tree = decode_flamegraph(fg)
    named, others = count_nodes(tree)
    # render.h: at most max_nodes named nodes; "other" nodes are not counted against max_nodes
    assert named <= max_nodes, (named, others)
    assert others >= 1
    assert fg["total"] == sum(README_TOTALS[r][1] for r in ALL_CPU) == tree[1][0]
    check_sibling_order(tree)
    ref_root = build_tree([fixture_stacks(ALL_CPU)])
    assert tree == truncate(ref_root, max_nodes)
    # the kept nodes are the largest ones: none dropped is bigger than the smallest kept
    full = decode_flamegraph(get_json(srv, query=SEL, start=T0, end=T0 + 60, format="flamegraph"))

    def totals(t, named_only=True):
        out = [] if t[0] == "total" else [t[1][0]]
        for k in t[3]:
            if not (named_only and k[0] == "other"):
                out += totals(k)
        return out

    kept = sorted(totals(tree), reverse=True)
    allv = sorted(totals(full), reverse=True)
    assert kept == allv[:len(kept)]


def test_flamegraph_names_and_levels_compact(srv):
    """names[] holds each name once, and every name is used."""
    fg = get_json(srv, query=SEL, start=T0, end=T0 + 60, format="flamegraph")
    used = {lv[j + 3] for lv in fg["levels"] for j in range(0, len(lv), 4)}
    assert used == set(range(len(fg["names"])))


# ---- folded -------------------------------------------------------------------------------------

def parse_folded(text):
    out = []
    for line in text.splitlines():
        stack, _, v = line.rpartition(" ")
        assert stack, "bad folded line %r" % line
        out.append((stack, int(v)))
    return out


def test_folded(srv):
    hdrs, body = get(srv, query=SEL, start=T0, end=T0 + 60, format="folded")
    assert hdrs.get("content-type", "").startswith("text/plain"), hdrs
    text = body.decode()
    assert text.endswith("\n")
    lines = parse_folded(text)
    total = sum(README_TOTALS[r][1] for r in ALL_CPU)
    assert sum(v for _, v in lines) == total
    assert all(v != 0 for _, v in lines)
    stacks_ = [s for s, _ in lines]
    assert stacks_ == sorted(stacks_, key=lambda s: s.encode()), "lines sorted by the bytes of the stack"
    assert len(set(stacks_)) == len(stacks_)
    want = {}
    for names, v in fixture_stacks(ALL_CPU):
        key = ";".join(n.replace(";", "_").replace("\n", "_").replace("\r", "_") for n in names)
        want[key] = want.get(key, 0) + v
    assert dict(lines) == {k: v for k, v in want.items() if v}
    # root first: every Go CPU stack starts in the runtime or main goroutine entry, never a leaf
    assert all(not s.startswith("runtime.asyncPreempt") for s in stacks_)


# ---- top ----------------------------------------------------------------------------------------

def reference_top(rels, ti=1):
    rows = {}
    total = 0
    for r in rels:
        p = fixture_profile(r)
        locs = {l.id: l for l in p.location}
        fns = {f.id: f for f in p.function}
        for s in p.sample:
            v = s.value[ti]
            if v == 0:
                continue
            total += abs(v)
            keys = []
            for lid in s.location_id:  # leaf first; within a location lines[0] is innermost
                for ln in locs[lid].line:
                    f = fns[ln.function_id]
                    keys.append((p.s(f.name), p.s(f.filename)))
            for k in keys:
                rows.setdefault(k, [0, 0])
            rows[keys[0]][0] += v
            for k in set(keys):
                rows[k][1] += v
    out = [{"function": k[0], "file": k[1], "flat": fc[0], "cum": fc[1]} for k, fc in rows.items()]
    out.sort(key=lambda r: (-r["flat"], -r["cum"], r["function"]))
    return total, out


def test_top(srv, tmp_path):
    js = get_json(srv, query=SEL, start=T0, end=T0 + 60, format="top")
    assert set(js) == {"total", "rows", "aggregation"} and js["aggregation"] == "sum"
    total, want = reference_top(ALL_CPU)
    assert js["total"] == total == sum(README_TOTALS[r][1] for r in ALL_CPU)
    rows = js["rows"]
    assert sum(r["flat"] for r in rows) == js["total"], "flat adds up to the total"
    # line: the function's start line, or (these Go profiles have none) the lowest line of it that a
    # location of the merged fixtures has
    starts = {}
    for rel in ALL_CPU:
        fp = fixture_profile(rel)
        fns = {f.id: f for f in fp.function}
        for loc in fp.location:
            for ln in loc.line:
                f = fns[ln.function_id]
                key = (fp.string_table[f.name], fp.string_table[f.filename])
                v = f.start_line if f.start_line > 0 else ln.line
                if v > 0:
                    starts[key] = min(starts.get(key, v), v)
    assert len(starts) > 50
    for r in rows:
        assert set(r) == {"function", "file", "line", "flat", "flat%", "cum", "cum%"}, r
        assert r["line"] == starts.get((r["function"], r["file"]), 0), r
        assert abs(r["flat%"] - 100.0 * r["flat"] / total) <= 0.0051, r
        assert abs(r["cum%"] - 100.0 * r["cum"] / total) <= 0.0051, r
    assert [(r["function"], r["file"], r["flat"], r["cum"]) for r in rows] == \
        [(r["function"], r["file"], r["flat"], r["cum"]) for r in want]

    # limit
    js5 = get_json(srv, query=SEL, start=T0, end=T0 + 60, format="top", limit=5)
    assert js5["rows"] == rows[:5] and js5["total"] == js["total"]

    # the first rows agree with go tool pprof -top on the original files
    ref = go_pprof(["-top", "-nodecount=5", "-symbolize=none"] + [str(PPROF_DIR / r) for r in ALL_CPU], tmp_path)
    _, prow = parse_pprof_top(ref.stdout)
    for mine, theirs in zip(rows[:3], prow[:3]):
        assert mine["function"] == theirs[5]
        assert mine["flat"] == round(pprof_quantity(theirs[0])) and mine["cum"] == round(pprof_quantity(theirs[3]))
        assert abs(mine["flat%"] - float(theirs[1].rstrip("%"))) <= 0.011
        assert abs(mine["cum%"] - float(theirs[4].rstrip("%"))) <= 0.011


# ---- diff ---------------------------------------------------------------------------------------

def test_diff_flamegraph(srv):
    base, cmp_ = README_TOTALS["go/cpu-01.pb.gz"][1], README_TOTALS["go/cpu-02.pb.gz"][1]
    fg = get_json(srv, "/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 60,
                  compare_time=T0 + 60, format="flamegraph")
    assert set(fg) == {"names", "levels", "total", "max_self", "left_ticks", "right_ticks", "aggregation", "normalize",
                       "base_profiled_seconds", "compare_profiled_seconds"}, set(fg)
    assert (fg["aggregation"], fg["normalize"]) == ("sum", "none")  # windows of one length: absolute
    assert fg["left_ticks"] == base and fg["right_ticks"] == cmp_
    assert fg["total"] == base + cmp_
    tree = decode_flamegraph(fg, diff=True)
    assert tree[1] == (base, cmp_)
    check_sibling_order(tree)
    ref = build_tree([fixture_stacks(["go/cpu-01.pb.gz"]), fixture_stacks(["go/cpu-02.pb.gz"])])
    assert tree == truncate(ref, 0)
    # max_nodes on a diff ranks by the larger side
    fg = get_json(srv, "/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 60,
                  compare_time=T0 + 60, format="flamegraph", max_nodes=8)
    tree = decode_flamegraph(fg, diff=True)
    assert count_nodes(tree)[0] <= 8
    assert fg["left_ticks"] == base and fg["right_ticks"] == cmp_
    assert tree == truncate(ref, 8)


def test_diff_folded_and_top(srv):
    want = {}
    for k, (rel, sign) in enumerate((("go/cpu-01.pb.gz", -1), ("go/cpu-02.pb.gz", 1))):
        for names, v in fixture_stacks([rel]):
            key = ";".join(names)
            want[key] = want.get(key, 0) + sign * v
    want = {k: v for k, v in want.items() if v}
    _, body = get(srv, "/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 60,
                  compare_time=T0 + 60, format="folded")
    lines = parse_folded(body.decode())
    assert dict(lines) == want
    assert sum(v for _, v in lines) == README_TOTALS["go/cpu-02.pb.gz"][1] - README_TOTALS["go/cpu-01.pb.gz"][1]
    js = get_json(srv, "/api/v1/profiles/diff", base=DIFF_BASE, compare=DIFF_CMP, base_time=T0 + 60,
                  compare_time=T0 + 60, format="top")
    # total = the base's total, as go tool pprof -diff_base computes it (the denominator of the
    # percentages), not the sum of |Δ| (test_query_pprof.py compares the rows with pprof's)
    assert js["total"] == README_TOTALS["go/cpu-01.pb.gz"][1]
    assert sum(r["flat"] for r in js["rows"]) == sum(want.values())
    assert any(r["flat"] < 0 for r in js["rows"])


# ---- frame naming -------------------------------------------------------------------------------

def test_frames_without_lines_and_odd_names(srv):
    """Locations without lines are named by address (mapping basename + file offset when the
    mapping has a file); a function without a name uses its system name; ';' in a name becomes '_'
    in folded output."""
    st = ["", "cpu", "nanoseconds", "main", "main.go", "/usr/lib/libfoo.so", "a;b", "sys_name", "/bin/app"]
    p = pd.Profile(string_table=st)
    p.sample_type = [pd.ValueType(1, 2)]
    p.period_type = pd.ValueType(1, 2)
    p.period = 10000000
    p.duration_nanos = 10**9
    p.mapping = [pd.Mapping(id=1, memory_start=0x400000, memory_limit=0x800000, filename=8, has_functions=True),
                 pd.Mapping(id=2, memory_start=0x7f0000, memory_limit=0x7fffff, file_offset=0x1000, filename=5)]
    p.function = [pd.Function(id=1, name=3, filename=4), pd.Function(id=2, name=6, filename=4),
                  pd.Function(id=3, name=0, system_name=7, filename=4)]
    p.location = [pd.Location(id=1, mapping_id=1, address=0x401000, line=[pd.Line(function_id=1, line=5)]),
                  pd.Location(id=2, mapping_id=1, address=0x402000, line=[pd.Line(function_id=2, line=7)]),
                  pd.Location(id=3, mapping_id=2, address=0x7f0abc),
                  pd.Location(id=4, mapping_id=0, address=0x4a5f3c),
                  pd.Location(id=5, mapping_id=1, address=0x403000, line=[pd.Line(function_id=3, line=9)])]
    p.sample = [pd.Sample(location_id=[3, 1], value=[5]),
                pd.Sample(location_id=[4, 2, 1], value=[7]),
                pd.Sample(location_id=[5, 1], value=[11])]
    st_, _ = srv.push(pd.encode(p), name="process_cpu", labels='{job="frames"}', time=str(T0 + 10))
    assert st_ == 200, srv.last_raw[:300]
    sel = CPU_TYPE + '{job="frames"}'
    _, body = get(srv, query=sel, time=T0 + 20, format="folded")
    assert parse_folded(body.decode()) == sorted(
        [("main;a_b;0x4a5f3c", 7), ("main;libfoo.so+0x1abc", 5), ("main;sys_name", 11)],
        key=lambda x: x[0].encode())
    fg = get_json(srv, query=sel, time=T0 + 20, format="flamegraph")
    tree = decode_flamegraph(fg)
    assert tree == ("total", (23,), (0,), (
        ("main", (23,), (0,), (
            ("a;b", (7,), (0,), (("0x4a5f3c", (7,), (7,), ()),)),
            ("libfoo.so+0x1abc", (5,), (5,), ()),
            ("sys_name", (11,), (11,), ()))),))
