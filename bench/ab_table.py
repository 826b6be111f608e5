#!/usr/bin/env python3
"""Old/new table from `scanforge bench --json` files of an A/B (bench/ab.sh): per row and
pass, the median of each build over its rounds, and new / old.

usage: bench/ab_table.py DIR [MODE...]   (files DIR/{old,new}_MODE_ROUND.json; default
modes: default bs)"""
import glob
import json
import os
import statistics
import sys


def medians(directory, build, mode):
    """{(row, type): {"fwd": [us...], "bwd": [us...]}} over the rounds of one build and mode."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, f"{build}_{mode}_*.json"))):
        for r in json.load(open(path))["rows"]:
            key = (f"{r['batch']},{r['dim']},{r['seqlen']},{r['dstate']}" + (",z" if r.get("z") else ""), r["dtype"])
            entry = out.setdefault(key, {"fwd": [], "bwd": []})
            if r.get("ok") and "median_us" in r:
                entry["fwd"].append(r["median_us"])
            b = r.get("backward")
            if b and b.get("ok") and "median_us" in b:
                entry["bwd"].append(b["median_us"])
    return out


def main():
    directory = sys.argv[1]
    modes = sys.argv[2:] or ["default", "bs"]
    for mode in modes:
        old, new = medians(directory, "old", mode), medians(directory, "new", mode)
        print(f"== {mode}")
        print(f"{'row':22s} {'type':5s} {'fwd old':>9s} {'fwd new':>9s} {'new/old':>7s} | {'bwd old':>9s} {'bwd new':>9s} {'new/old':>7s}")
        for key in old:
            cells = []
            for p in ("fwd", "bwd"):
                o, n = old[key][p], new.get(key, {}).get(p, [])
                if o and n:
                    mo, mn = statistics.median(o), statistics.median(n)
                    cells.append(f"{mo:9.1f} {mn:9.1f} {mn / mo:7.3f}")
                else:
                    cells.append(f"{'-':>9s} {'-':>9s} {'-':>7s}")
            print(f"{key[0]:22s} {key[1]:5s} {cells[0]} | {cells[1]}")


if __name__ == "__main__":
    main()
