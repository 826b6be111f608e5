#!/usr/bin/env python3
"""The deterministic backward's cost over the default one, from `scanforge bench --backward-only
--deterministic --json` files of two builds (or settings) and their rounds: per row and mode,
each build's median default time, median deterministic time and their ratio.

usage: bench/det_table.py DIR A B [MODE...]   (files DIR/{A,B}_MODE_ROUND.json; default
modes: default bs)"""
import glob
import json
import os
import statistics
import sys


def times(directory, build, mode):
    """{row label: {"bwd": [us...], "det": [us...]}} over the rounds of one build and mode."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, f"{build}_{mode}_*.json"))):
        for r in json.load(open(path))["rows"]:
            label = f"{r['batch']},{r['dim']},{r['seqlen']},{r['dstate']}" + (",z" if r.get("z") else "") + f" {r['dtype']}"
            entry = out.setdefault(label, {"bwd": [], "det": []})
            for key, field in (("bwd", "backward"), ("det", "backward_deterministic")):
                run = r.get(field) or {}
                if run.get("ok") and "median_us" in run:
                    entry[key].append(run["median_us"])
    return out


def cells(entry):
    if not entry or not entry["bwd"] or not entry["det"]:
        return f"{'-':>9s} {'-':>9s} {'-':>6s}"
    bwd, det = statistics.median(entry["bwd"]), statistics.median(entry["det"])
    return f"{bwd:9.1f} {det:9.1f} {det / bwd:5.2f}x"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    directory, a, b = sys.argv[1:4]
    for mode in sys.argv[4:] or ["default", "bs"]:
        ta, tb = times(directory, a, mode), times(directory, b, mode)
        print(f"== {mode}: {a} (bwd us, det us, det/bwd) | {b} (the same)")
        for label in ta:
            print(f"{label:26s} {cells(ta[label])} | {cells(tb.get(label))}")


if __name__ == "__main__":
    main()
