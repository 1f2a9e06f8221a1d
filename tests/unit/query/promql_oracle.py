#!/usr/bin/python3
"""Fills in the expected answers of promql_cases.test from a real Prometheus 2.42 (promtool).

    tests/unit/query/promql_oracle.py tests/unit/query/promql_cases.test [--check]

Every `load` section (load ... up to the next clear) becomes one `promtool test rules` group with
the same series and sample values; every `eval instant at T expr` of the section becomes a
promql_expr_test with an empty expectation, so that promtool prints what Prometheus got (evaluation_interval 1s: promtool loads the
samples up to the last eval time on that grid), with
every value in Go's shortest exact form. Those lines replace the case's expected lines
(`eval_ordered` cases keep the order written in the file; promtool sorts by labels, so only the
set is checked). `eval_fail` cases are run too and Prometheus' error is printed for comparison.
With --check nothing is written: any difference is reported and the exit status is 1.
The answers are facts about Prometheus; test_promql_eval.c checks profstore against them.
"""
import os
import re
import subprocess
import sys
import tempfile

PROMTOOL = os.environ.get("PROMTOOL", "/usr/bin/promtool")


def parse(path):
    """Sections of (load interval, [series lines], [cases]); a case is a dict."""
    sections, cur, case = [], None, None
    lines = open(path).read().split("\n")
    out_lines = []
    for ln in lines:
        s = ln.strip()
        if s.startswith("load "):
            cur = {"interval": s.split()[1], "series": [], "cases": []}
            sections.append(cur)
            case = None
            mode = "load"
        elif s == "clear":
            cur, case = None, None
            mode = None
        elif re.match(r"^(eval|eval_ordered|eval_approx|eval_fail) instant at ", s):
            m = re.match(r"^(\S+) instant at (\S+) (.*)$", s)
            case = {"kind": m.group(1), "time": m.group(2), "expr": m.group(3), "expected": [], "line": len(out_lines)}
            cur["cases"].append(case)
            mode = "eval"
        elif s and not s.startswith("#") and ln.startswith((" ", "\t")):
            if mode == "load":
                cur["series"].append(s)
            elif mode == "eval" and case is not None:
                case["expected"].append(s)
        out_lines.append(ln)
    return sections, lines


def yaml_str(s):
    return "'" + s.replace("'", "''") + "'"


def split_series(s):
    """`x{a="1"} 0+1x3` -> (`x{a="1"}`, `0+1x3`)"""
    depth, q, i = 0, None, 0
    while i < len(s):
        ch = s[i]
        if q:
            if ch == "\\":
                i += 1
            elif ch == q:
                q = None
        elif ch in "\"'`":
            q = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch.isspace() and depth == 0:
            return s[:i], s[i:].strip()
        i += 1
    return s, ""


def parse_got(text):
    """`{a="1"} 1E+00, {} 2E+00` -> ['{a="1"} 1E+00', '{} 2E+00']"""
    out, i = [], 0
    text = text.strip()
    if text in ("nil", ""):
        return out
    while i < len(text):
        assert text[i] == "{", text[i:]
        j, q = i + 1, False
        while True:
            ch = text[j]
            if q:
                if ch == "\\":
                    j += 1
                elif ch == '"':
                    q = False
            elif ch == '"':
                q = True
            elif ch == "}":
                break
            j += 1
        labels = text[i:j + 1]
        k = text.find(", {", j)
        val = text[j + 1:k if k >= 0 else len(text)].strip()
        out.append(labels + " " + val)
        i = k + 2 if k >= 0 else len(text)
    return out


def run_section(sec):
    y = ["rule_files: []", "evaluation_interval: 1s", "tests:", "  - interval: " + sec["interval"], "    input_series:"]
    for s in sec["series"]:
        name, vals = split_series(s)
        y += ["      - series: " + yaml_str(name), "        values: " + yaml_str(vals)]
    y.append("    promql_expr_test:")
    for c in sec["cases"]:
        y += ["      - expr: " + yaml_str(c["expr"]), "        eval_time: " + c["time"], "        exp_samples: []"]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("\n".join(y) + "\n")
        path = f.name
    p = subprocess.run([PROMTOOL, "test", "rules", path], capture_output=True, text=True)
    os.unlink(path)
    out = p.stdout + p.stderr
    got = {}
    blocks = re.split(r"\n    expr: ", "\n" + out)
    for b in blocks[1:]:
        m = re.match(r'^("(?:[^"\\]|\\.)*"), time: ([^,\n]+),?(.*)', b, re.S)
        if not m:
            continue
        expr = eval(m.group(1))  # a Go %q string: Python reads the same escapes
        key = (expr, m.group(2).strip())
        rest = m.group(3)
        em = re.search(r"^\s*err: (.*)", rest, re.M)
        if em:
            got[key] = ("error", em.group(1).strip())
            continue
        gm = re.search(r"^\s*got: (.*)", rest, re.M)
        got[key] = ("ok", parse_got(gm.group(1)) if gm else [])
    return got


def main():
    path = sys.argv[1]
    check = "--check" in sys.argv
    sections, lines = parse(path)
    replace = {}
    bad = 0
    for sec in sections:
        got = run_section(sec)
        for c in sec["cases"]:
            kind, res = got.get((c["expr"], c["time"]), ("ok", []))
            if c["kind"] == "eval_fail":
                print("eval_fail %s: Prometheus says: %s" % (c["expr"], res if kind == "error" else "no error: %s" % res))
                continue
            if kind == "error":
                print("ERROR %s at %s: %s" % (c["expr"], c["time"], res))
                bad += 1
                continue
            exp = c["expected"]
            if c["kind"] == "eval_ordered" and exp:
                if sorted(exp) != sorted(res):
                    print("MISMATCH (ordered) %s at %s:\n  file: %s\n  prom: %s" % (c["expr"], c["time"], exp, res))
                    bad += 1
                continue
            if exp != res:
                if check:
                    print("MISMATCH %s at %s:\n  file: %s\n  prom: %s" % (c["expr"], c["time"], exp, res))
                bad += 1
                replace[c["line"]] = res
    if check:
        sys.exit(1 if bad else 0)
    # rewrite: each replaced case's expected lines follow its eval line
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        if i in replace:
            j = i + 1
            while j < len(lines) and lines[j].startswith((" ", "\t")) and lines[j].strip():
                j += 1
            out += ["  " + r for r in replace[i]]
            i = j
            continue
        i += 1
    open(path, "w").write("\n".join(out))
    print("%d cases filled in" % len(replace))


if __name__ == "__main__":
    main()
