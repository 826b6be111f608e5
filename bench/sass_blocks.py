#!/usr/bin/env python3
"""sass_blocks.py: where a profiled kernel's instructions and stalls go, region by region.

Reads the SASS page of an ncu source-counter report (bench/profile_source.sh writes it as
OUT.sass.csv) and groups consecutive lines executed equally often: each group is a basic
block, or a run of them that always execute together. Prints the groups that hold more
than a share of the executed instructions or of the stall samples, with their line range,
executions per line, both shares and their instruction mix: which part of the kernel
(staging, the reverse pass, the sums) costs what.

usage: sass_blocks.py FILE.sass.csv [--min-share F]   (F: default 0.01)"""
import argparse
import collections
import csv


def groups(rows, executed, samples):
    out, current = [], None
    for k, row in enumerate(rows):
        count = int(row[executed])
        words = row[1].split()
        op = (words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else ""))
        if current is None or count != current["count"]:
            current = {"first": k, "count": count, "instructions": 0, "samples": 0, "ops": collections.Counter()}
            out.append(current)
        current["last"] = k
        current["instructions"] += count
        current["samples"] += int(row[samples])
        current["ops"][op.split(".")[0]] += 1
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--min-share", type=float, default=0.01)
    args = parser.parse_args()
    table = list(csv.reader(open(args.csv)))
    header, rows = table[1], table[2:]
    executed = header.index("Instructions Executed")
    samples = header.index("Warp Stall Sampling (All Samples)")
    found = groups(rows, executed, samples)
    total_i = sum(g["instructions"] for g in found) or 1
    total_s = sum(g["samples"] for g in found) or 1
    print("lines        executions/line  instr %  stall %  mix")
    for g in found:
        share_i, share_s = g["instructions"] / total_i, g["samples"] / total_s
        if share_i > args.min_share or share_s > args.min_share:
            mix = " ".join(f"{op}:{n}" for op, n in g["ops"].most_common(8))
            print(f"{g['first']:5d}-{g['last']:5d}  {g['count']:15d}  {100 * share_i:6.1f}  {100 * share_s:7.1f}  {mix}")


if __name__ == "__main__":
    main()
