#!/usr/bin/python3
"""Rewrites the tables of tests/onnx_node_tests.md from the TSV that
`WICK_ONNX_NODE_REPORT=FILE tests/check_onnx` writes (suite, case, result,
reason). The prose above the first table and between the tables is kept:
    python3 tests/onnx_node_report.py report.tsv tests/onnx_node_tests.md"""
import collections
import re
import sys


def short(reason):
    """The reason as the every-case table shows it: no file path."""
    return re.sub(r"^onnx load: '[^']*': ", "onnx load: ", reason).replace("|", "\\|")


def kind(reason):
    """The reason with names abstracted, for the most-common table."""
    r = short(reason)
    r = re.sub(r"^onnx load: ", "", r)
    r = re.sub(r"node '[^']*' \(", "node (", r)
    r = re.sub(r"^input '[^']*'", "input X", r)
    return r


def main(tsv, md):
    rows = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
    rows = [r + [""] * (4 - len(r)) for r in rows]
    text = open(md).read()
    head, rest = text.split("| suite | cases |", 1)
    mid = rest.split("\n\n", 1)[1]  # the prose after the counts table
    mid = mid.split("| cases | reason |", 1)[0]
    suites = []
    for r in rows:
        if r[0] not in suites:
            suites.append(r[0])
    out = [head.rstrip("\n") + "\n", "| suite | cases | passed | failed | unsupported |", "|---|---|---|---|---|"]
    tot = [0, 0, 0, 0]
    for s in suites:
        c = [r for r in rows if r[0] == s]
        p = sum(r[2] == "pass" for r in c)
        f = sum(r[2] == "FAIL" for r in c)
        u = sum(r[2] == "unsupported" for r in c)
        out.append("| %s | %d | %d | %d | %d |" % (s, len(c), p, f, u))
        tot = [tot[0] + len(c), tot[1] + p, tot[2] + f, tot[3] + u]
    out.append("| all | %d | %d | %d | %d |" % tuple(tot))
    out.append("")
    out.append(mid.rstrip("\n"))
    out.append("")
    out.append("| cases | reason |")
    out.append("|---|---|")
    cnt = collections.Counter(kind(r[3]) for r in rows if r[2] == "unsupported")
    for k, n in sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[:40]:
        if n >= 3:
            out.append("| %d | %s |" % (n, k))
    out.append("")
    out.append("## Every case")
    out.append("")
    out.append("| suite | case | result | reason |")
    out.append("|---|---|---|---|")
    for r in rows:
        out.append("| %s | %s | %s | %s |" % (r[0], r[1], r[2], short(r[3]) if r[2] != "pass" else ""))
    open(md, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
