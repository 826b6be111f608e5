#!/usr/bin/env python3
"""Which unit bounds a kernel: reads `ncu --metrics breakdown:...` output (bench/profile_bound.sh)
and prints, per profiled kernel, its units' utilisation (the `pct_of_peak` metrics) highest
first, then the highest as the bound. A unit near 100% is what to cut; one far below is not
(docs/perf.md v24: the backward's L1 data pipe at 91% while issue sat at 49%).

usage: bench/bound_table.py [FILE] [--top N]   (default: standard input, 12 a kernel)"""
import argparse
import sys


def parse(lines):
    """[(kernel, [(metric, percent)...])] in the order ncu printed them."""
    kernels = []
    for line in lines:
        words = line.split()
        if not words:
            continue
        if "Context" in line and "Device" in line:  # ncu's header line of one profiled launch
            kernels.append((words[0], []))
            continue
        if "pct_of_peak" not in words[0]:
            continue
        try:
            value = float(words[-1].replace(",", ""))
        except ValueError:
            continue  # "n/a"
        if not kernels:
            kernels.append(("kernel", []))
        kernels[-1][1].append((words[0], value))
    return kernels


def unit(metric):
    """The unit a utilisation metric measures: its name before the rollup."""
    return metric.split(".avg")[0].split(".sum")[0]


def table(kernels, top):
    out = []
    for name, metrics in kernels:
        out.append(f"== {name}")
        ranked = sorted(metrics, key=lambda m: -m[1])
        for metric, value in ranked[:top]:
            out.append(f"{value:7.2f}%  {unit(metric)}")
        if ranked:
            metric, value = ranked[0]
            out.append(f"bound: {unit(metric)} at {value:.1f}% of its peak")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    lines = open(args.file).read().splitlines() if args.file else sys.stdin.read().splitlines()
    kernels = parse(lines)
    if not kernels:
        print("bound_table.py: no pct_of_peak metrics in the input", file=sys.stderr)
        return 1
    print(table(kernels, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
