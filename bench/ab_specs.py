#!/usr/bin/env python3
"""A/B of template sets at the same launches, without a rebuild (run on the device machine).

The launches are those the built-in templates' plan gives each row (a first `scanforge
bench` run, tuned); each row is then timed at that launch (--spec for the forward,
--bwd-spec for the backward) with the built-in templates ("old") and with each candidate
set (SCANFORGE_TEMPLATE_DIR=DIR), in turn, ROUNDS times. A candidate holds only the
template files it changes (the others come from the built-in set).

usage: bench/ab_specs.py ROWS OUTDIR NAME=DIR [NAME=DIR...] [--forward] [--block-states] [--rounds N]
writes OUTDIR/NAME/{old,new}_MODE_ROUND.json per candidate: bench/ab_table.py OUTDIR/NAME MODE"""
import argparse
import json
import os
import shutil
import subprocess

KNOBS = ("split", "threads", "items", "channels", "states", "minblocks", "pairs")


def launch_of(variant):
    """The launch knobs of a canonical spec, as --spec / --bwd-spec take them."""
    keys = dict(kv.split("=", 1) for kv in variant.split(","))
    return ",".join(f"{k}={keys[k]}" for k in KNOBS if k in keys)


def row_line(r):
    return f"{r['batch']},{r['dim']},{r['seqlen']},{r['dstate']}" + (",z" if r.get("z") else "") + f",{r['dtype']}"


def bench(rows, json_path, extra, env=None):
    cmd = ["scanforge", "bench", "--rows", rows, "--reps", "20", "--warmup", "3", "--no-overheads", "--json", json_path] + extra
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    try:
        return json.load(open(json_path))["rows"]
    except (OSError, ValueError, KeyError):
        return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows")
    parser.add_argument("out")
    parser.add_argument("candidates", nargs="+", metavar="NAME=DIR")
    parser.add_argument("--forward", action="store_true")
    parser.add_argument("--block-states", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rows, out, rounds = args.rows, args.out, args.rounds
    candidates = [c.split("=", 1) for c in args.candidates]
    forward = args.forward
    mode = "bs" if args.block_states else "default"
    extra = (["--forward-only"] if forward else ["--backward-only"]) + (["--block-states"] if args.block_states else [])
    os.makedirs(out, exist_ok=True)
    groups = {}
    for r in bench(rows, os.path.join(out, f"plan_{mode}.json"), extra):
        p = r if forward else (r.get("backward") or {})
        if "variant" in p:
            groups.setdefault(launch_of(p["variant"]), []).append(row_line(r))
    builds = [("old", None)] + [(name, dict(os.environ, SCANFORGE_TEMPLATE_DIR=d)) for name, d in candidates]
    knob = "--spec" if forward else "--bwd-spec"
    for rnd in range(1, rounds + 1):
        for build, env in builds:
            merged = []
            for i, (spec, lines) in enumerate(sorted(groups.items())):
                path = os.path.join(out, f"rows_{mode}_{i}.txt")
                open(path, "w").write("\n".join(lines) + "\n")
                merged += bench(path, os.path.join(out, f"part_{build}_{mode}_{i}.json"), extra + [knob, spec], env)
            json.dump({"rows": merged}, open(os.path.join(out, f"{build}_{mode}_{rnd}.json"), "w"))
    for name, _ in candidates:
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for rnd in range(1, rounds + 1):
            shutil.copy(os.path.join(out, f"old_{mode}_{rnd}.json"), os.path.join(out, name, f"old_{mode}_{rnd}.json"))
            shutil.copy(os.path.join(out, f"{name}_{mode}_{rnd}.json"), os.path.join(out, name, f"new_{mode}_{rnd}.json"))
    for spec, lines in sorted(groups.items()):
        print(spec, " ".join(lines))


if __name__ == "__main__":
    main()
