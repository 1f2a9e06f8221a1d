"""C++ frames: a program compiled here with g++ -g -O2 (namespaces, an anonymous namespace, class
and function templates, an operator, a lambda, inlined std::vector code, .cold parts), stripped,
its split debug file in --symbols.dir, an unsymbolized profile of every byte address of its
functions. profstore's pprof carries, per frame, the linkage name as the function's system_name
with the file, line, column and inline chain of eu-addr2line -i -f -a, and as its name what
`go tool pprof` itself shows for that linkage name by default (its demangler, simplified: no
parameters, template arguments, return type or clone suffix; Parca stores the same): the oracle
is `go tool pprof -proto` of the same profile with every name set back to the linkage name. pprof
keeps profstore's names as they are (they read as already demangled), the flame graph and the top
table show them, and the linkage names of the functions holding the addresses are those binutils'
addr2line -C -i -f demangles to (but for internal linkage: DWARF has no linkage name there)."""

import json
import re
from pathlib import Path

import pytest

import pprof_decode as pd
from conftest import go_pprof
from otlp_util import Builder, post
from test_symbols import CPU, T0, Program, query, run

PROG = r"""
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace geo {
template <typename T> struct Vec {
    T x, y;
    __attribute__((always_inline)) inline T dot(const Vec &o) const { return x * o.x + y * o.y; }
    __attribute__((noinline)) bool operator<(const Vec &o) const { return dot(*this) < o.dot(o); }
};
template <typename T> __attribute__((noinline)) T norm2(const std::vector<Vec<T>> &v)
{
    T s = 0;
    for (const auto &e : v)
        s += e.dot(e);
    return s;
}
} // namespace geo
namespace {
__attribute__((noinline)) long helper(long n)
{
    std::vector<geo::Vec<long>> v;
    for (long i = 0; i < n; i++)
        v.push_back({i, i + 1});
    auto twice = [&v](int k) __attribute__((noinline)) { return geo::norm2(v) * k; };
    return twice(2) + (v[0] < v[1]);
}
} // namespace
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10;
    std::printf("%ld %f\n", helper(n), geo::norm2(std::vector<geo::Vec<double>>{{1.0, 2.0}}));
    return 0;
}
"""


class CxxProgram(Program):
    """The C++ program, built, stripped and split as test_symbols' C one."""

    def __init__(self, d: Path):
        super().__init__(d, PROG, compiler="g++", src_name="prog.cc")

    @staticmethod
    def wanted(kind: str, name: str) -> bool:
        # the program's own functions (and their .cold parts, the lambda, the operator), every byte
        return kind in "tTW" and re.search(r"helper|norm2|main|geo3Vec", name) is not None

    def addr2line(self, tool):
        """{vaddr: [(function, file, line), ...] innermost first}: eu-addr2line -i -f -a (linkage
        names) or binutils' addr2line -C -i -f -a (demangled)."""
        args = ["eu-addr2line", "-i", "-f", "-a"] if tool == "eu" else ["addr2line", "-C", "-i", "-f", "-a"]
        out = run(*args, "-e", str(self.debug), *["%#x" % a for a in self.addrs])
        res, cur, lines = {}, None, out.splitlines()
        i = 0
        while i < len(lines):
            if re.fullmatch(r"0x[0-9a-f]+", lines[i]):
                cur = int(lines[i], 16)
                res[cur] = []
                i += 1
                continue
            fn, loc = re.sub(r" inlined at .* in \S+$", "", lines[i]), lines[i + 1]
            i += 2
            m = re.fullmatch(r"(.*?):(\d+|\?)(?::(\d+))?(?: \(discriminator \d+\))?", loc)
            res[cur].append((fn, m.group(1), int(m.group(2)) if m.group(2) != "?" else 0,
                             int(m.group(3) or 0)))
        return res


@pytest.fixture(scope="module")
def cxx(tmp_path_factory):
    return CxxProgram(tmp_path_factory.mktemp("cxx"))


def pprof_proto(src: Path, tmp_path: Path):
    """The profile `go tool pprof -proto` writes of src (after its default symbolization step, which
    demangles names that are not demangled yet), decoded."""
    out = tmp_path / (src.stem + ".out.pb")
    go_pprof(["-proto", "-output", str(out), str(src)], tmp_path)
    return pd.decode(out.read_bytes())


def frames(prof):
    """{address: [(name, system_name, file, line, column), ...]} of a pprof."""
    locs = {l.id: l for l in prof.location}
    fns = {f.id: f for f in prof.function}
    out = {}
    for s in prof.sample:
        l = locs[s.location_id[0]]
        out[l.address] = [(prof.s(fns[x.function_id].name), prof.s(fns[x.function_id].system_name),
                           prof.s(fns[x.function_id].filename), x.line, x.column) for x in l.line]
    return out


def test_cxx_names_as_pprof_shows_them(make_server, cxx, tmp_path):
    symdir = tmp_path / "debug"
    cxx.place(symdir)
    srv = make_server(extra_args=["--symbols.dir", str(symdir)])
    b = Builder()
    sc = b.resource({"service.name": "native"})
    p = b.profile(sc, ("samples", "count"), ("cpu", "nanoseconds"), 10_000_000, T0, 10**10)
    m = b.mapping("/opt/app/prog", cxx.m_start, cxx.m_limit, cxx.m_offset, cxx.build_id)
    for a in cxx.addrs:
        b.sample(p, [b.location(cxx.proc_addr(a), m)], 1)
    assert post(srv.port, b.req).status == 200
    raw = query(srv)
    prof = pd.decode(raw)
    got = frames(prof)
    # system names, files, lines, columns and inline chains: eu-addr2line's
    eu = cxx.addr2line("eu")
    assert {a: [(f[1], f[2], f[3], f[4]) for f in v] for a, v in got.items()} == \
        {cxx.proc_addr(a): v for a, v in eu.items()}
    # every frame's name is go tool pprof's demangling of its linkage name: the oracle is pprof's
    # -proto output of the same profile with each name set back to the linkage name
    mangled = pd.decode(raw)
    for f in mangled.function:
        f.name = f.system_name
    mf = tmp_path / "mangled.pb"
    mf.write_bytes(pd.encode(mangled))
    oracle = pprof_proto(mf, tmp_path)
    ours = {(n, s) for v in got.values() for n, s, *_ in v}
    assert ours == {(oracle.s(f.name), oracle.s(f.system_name)) for f in oracle.function}
    # the program's own functions among them, as pprof names them; those of internal linkage (the
    # anonymous namespace's helper, its lambda) have no linkage name in g++'s DWARF: their DWARF
    # name, as eu-addr2line prints it
    names = {n for n, _ in ours}
    assert {("geo::norm2", "_ZN3geo5norm2IlEET_RKSt6vectorINS_3VecIS1_EESaIS4_EE"),
            ("geo::Vec::operator<", "_ZNK3geo3VecIlEltERKS1_"), ("geo::Vec::dot", "_ZNK3geo3VecIlE3dotERKS1_"),
            ("std::vector::push_back", "_ZNSt6vectorIN3geo3VecIlEESaIS2_EE9push_backEOS2_"),
            ("helper", "helper"), ("operator()", "operator()"), ("main", "main")} <= ours, sorted(ours)
    # pprof keeps profstore's names (they read as already demangled)
    (tmp_path / "ours.pb").write_bytes(raw)
    kept = pprof_proto(tmp_path / "ours.pb", tmp_path)
    assert {(kept.s(f.name), kept.s(f.system_name)) for f in kept.function} == ours
    # binutils' addr2line -C: the function it names for each address is one of profstore's frames
    # there, demangled (its inline chains and line rows differ from elfutils' at places: eu-addr2line
    # is the reference above), but for internal linkage, where DWARF has no linkage name and it
    # takes the ELF symbol's (go tool pprof symbolizing the binary itself shows
    # "(anonymous namespace)::helper")
    binu = cxx.addr2line("binutils")
    filt = dict(zip(sorted({s for _, s in ours}),
                    run("c++filt", *sorted({s for _, s in ours})).splitlines()))
    assert sorted(got) == sorted(cxx.proc_addr(a) for a in binu)
    pairs = set()
    for a, v in binu.items():
        chain = got[cxx.proc_addr(a)]
        if v[-1][0] not in {filt[f[1]] for f in chain}:
            pairs.add((chain[-1][1], v[-1][0]))
    # and one address where eu-addr2line's chain (that of the address's line table row) stops at
    # the inlined _M_allocate while binutils names the function holding it (Debian 12's g++ 12.2)
    assert pairs == {("helper", "(anonymous namespace)::helper(long)"),
                     ("_ZNSt12_Vector_baseIN3geo3VecIlEESaIS2_EE11_M_allocateEm",
                      "void std::vector<geo::Vec<long>, std::allocator<geo::Vec<long> > >::_M_realloc_insert<geo::Vec"
                      "<long> >(__gnu_cxx::__normal_iterator<geo::Vec<long>*, std::vector<geo::Vec<long>, "
                      "std::allocator<geo::Vec<long> > > >, geo::Vec<long>&&)"),
                     ("operator()", "(anonymous namespace)::helper(long)::{lambda(int)#1}::operator()(int) const "
                                    "[clone .constprop.0] [clone .isra.0]")}
    # the flame graph and the top table show the names
    fg = json.loads(query(srv, "flamegraph"))
    assert sorted(fg["names"]) == sorted({"total"} | names)
    top = json.loads(query(srv, "top"))
    assert {r["function"] for r in top["rows"]} == names
