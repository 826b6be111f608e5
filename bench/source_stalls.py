#!/usr/bin/env python3
"""Summarise bench/profile_source.sh's CSV: stall samples by reason, by opcode, and the
instructions with the most samples (with their neighbours, to see what they wait on).

usage: bench/source_stalls.py FILE.sass.csv [--top N] [--context K]"""
import argparse
import csv
import collections

REASONS = ["short_sb", "long_sb", "wait", "barrier", "math", "mio", "lg", "not_selected",
           "selected", "branch_resolving", "dispatch", "no_inst", "drain", "membar", "misc", "tex"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--context", type=int, default=0, help="lines printed before each top instruction")
    a = ap.parse_args()
    with open(a.csv) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
    rows = list(csv.DictReader(lines[start:]))
    total = sum(int(r["Warp Stall Sampling (All Samples)"] or 0) for r in rows)
    executed = sum(int(r["Instructions Executed"] or 0) for r in rows)
    print(f"{len(rows)} SASS lines, {total} samples, {executed} warp instructions executed")
    by_reason = collections.Counter()
    by_op = collections.Counter()
    op_exec = collections.Counter()
    for r in rows:
        op = r["Source"].split()[0] if r["Source"].split() else "?"
        if op.startswith("@"):
            op = r["Source"].split()[1]
        op = op.split(".")[0]
        by_op[op] += int(r["Warp Stall Sampling (All Samples)"] or 0)
        op_exec[op] += int(r["Instructions Executed"] or 0)
        for k in REASONS:
            by_reason[k] += int(r.get("stall_" + k, 0) or 0)
    print("\nsamples by reason:")
    for k, v in by_reason.most_common():
        if v:
            print(f"  {k:18s} {v:8d} {100 * v / total:5.1f}%")
    print("\nby opcode (samples where the warp sat at that instruction; executed share):")
    for k, v in by_op.most_common(20):
        print(f"  {k:10s} {v:8d} {100 * v / total:5.1f}%   exec {100 * op_exec[k] / executed:5.1f}%")
    order = sorted(range(len(rows)), key=lambda i: -int(rows[i]["Warp Stall Sampling (All Samples)"] or 0))
    print(f"\ntop {a.top} instructions:")
    for i in order[:a.top]:
        r = rows[i]
        s = int(r["Warp Stall Sampling (All Samples)"] or 0)
        why = sorted(((int(r.get("stall_" + k, 0) or 0), k) for k in REASONS), reverse=True)[:3]
        why = " ".join(f"{k}={v}" for v, k in why if v)
        if a.context:
            for j in range(max(0, i - a.context), i):
                print(f"      {rows[j]['Source'].strip()}")
        print(f"  [{i:5d}] {s:6d} {100 * s / total:4.1f}%  {r['Source'].strip():60s} {why}")


if __name__ == "__main__":
    main()
