#!/usr/bin/env python3
"""Compares the CUDA sources two template sets generate, variant by variant.

A shipped tuning file names the template set it was measured with (its hash). When a
template change leaves the generated code of every earlier variant as it was, the file's
measurements still hold and its hash may be re-stamped (tuning/defaults/README.md). This
script is that check: it generates each variant with the templates in BASE (for example
`git archive HEAD templates | tar -x -C /tmp/base`) and with the working tree's, and
reports every variant whose sources differ. `#line` directives are left out of the
comparison (they only name template lines for compiler messages), and so are the
variants both sets reject.

The variants: `scanforge variants` (the default grid), the winners of the shipped tuning
files, and sweeps of the split=state forward and backward over d_state, lanes, steps,
channels, dtypes, the gate and fixed B/C.

usage: scripts/compare_generated.py BASE_TEMPLATE_DIR [--scanforge build/scanforge]
exit status: 0 when every variant generates the same code, 1 otherwise.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tuned_specs():
    for path in sorted(glob.glob(os.path.join(ROOT, "tuning", "defaults", "*.json"))):
        with open(path) as f:
            data = json.load(f)
        for section in data["sections"]:
            for e in section["entries"]:
                w = e["winner"]
                yield (f"op={e['op']},split={w.get('split', 'time')},dstate={e['dstate']},dtype={e['dtype']},"
                       f"threads={w['threads']},items={w['items']},channels={w['channels']},"
                       f"states={w.get('states', 4)},minblocks={w.get('minblocks', 0)},{e['flags']}")


def swept_specs():
    for op in ("fwd", "bwd"):
        for n in (1, 4, 16, 64, 128, 256):
            for lanes in (1, 2, 4, 8, 16, 32):
                if n % lanes:
                    continue
                for items in (4, 8, 16, 32):
                    for channels in (1, 2, 4, 8, 16, 32):
                        if (lanes * channels) % 32:
                            continue
                        for dtype in ("fp32", "bf16"):
                            for flags in ("z=1,D=1,delta_bias=1,softplus=1", "z=0,D=1,B=fixed,C=var"):
                                yield (f"op={op},split=state,dstate={n},dtype={dtype},threads={lanes},items={items},"
                                       f"channels={channels},states=1,minblocks=0,{flags}")


def generate(scanforge, spec, template_dir):
    env = dict(os.environ)
    if template_dir:
        env["SCANFORGE_TEMPLATE_DIR"] = template_dir
    r = subprocess.run([scanforge, "gen", spec], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None
    return [line for line in r.stdout.splitlines() if not line.startswith("#line ")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", help="folder holding the earlier template set")
    ap.add_argument("--scanforge", default=os.path.join(ROOT, "build", "scanforge"))
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.base, "scan_bwd_states.tpl")):
        sys.exit(f"compare_generated: {args.base} holds no templates (scan_bwd_states.tpl missing)")
    grid = subprocess.run([args.scanforge, "variants"], capture_output=True, text=True, check=True).stdout.split()
    specs = list(dict.fromkeys(grid + list(tuned_specs()) + list(swept_specs())))
    work = os.path.join(ROOT, "templates")
    compared = differ = rejected = 0
    for i, spec in enumerate(specs):
        before, after = generate(args.scanforge, spec, args.base), generate(args.scanforge, spec, work)
        if before is None and after is None:
            rejected += 1
            continue
        compared += 1
        if before != after:
            differ += 1
            print(f"differs: {spec}")
        if (i + 1) % 500 == 0:
            print(f"... {i + 1} of {len(specs)}", file=sys.stderr)
    print(f"{compared} variants compared, {differ} differ; {rejected} rejected by both template sets")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
