"""static_waves.py: for each entry of a shipped tuning file, its winner's blocks an SM holds
(`scanforge compile`'s occupancy line for the main kernel: an estimate, no GPU needed) and how many waves the entry's own shape
fills without segments: blocks = ceil(dim / channels) x batch over blocks an SM x SMs.

    python3 bench/static_waves.py [tuning/defaults/nvidia_h100.json] [--arch sm_90] [--sms 132]

A winner at 0.9-1.0 waves fills one wave; a shape of the same bucket with a few more
channels spills into a second, nearly empty wave (docs/perf.md, v10). For a backward
winner that can take pairs=1 (docs/design-pairs.md), the last column gives the twin's
blocks an SM and from how many blocks the launch plan would choose it (one more than one
wave of the winner's, when the twin holds more blocks an SM).
"""
import argparse
import json
import math
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def occupancy(scanforge, spec, arch):
    """(blocks an SM, what limits them) from `scanforge compile`, or (None, why not)."""
    out = subprocess.run([scanforge, "compile", spec, "--arch", arch], capture_output=True, text=True)
    m = re.search(r"occupancy\s+\S+: (\d+) blocks of \d+ threads an SM, limited by ([A-Za-z ]+?) \(", out.stdout)
    if not m:
        return None, out.stderr.strip() or out.stdout.strip()[-200:]
    return int(m.group(1)), m.group(2)


def can_pair(e, w):
    return (e["op"] == "bwd" and w["split"] == "state" and "B=var" in e["flags"] and "C=var" in e["flags"]
            and w["channels"] % 2 == 0 and w["threads"] < 32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("defaults", nargs="?", default=os.path.join(HERE, "..", "tuning", "defaults", "nvidia_h100.json"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--sms", type=int, default=132)
    parser.add_argument("--scanforge", default=os.path.join(HERE, "..", "build", "scanforge"))
    args = parser.parse_args()
    with open(args.defaults) as f:
        sections = json.load(f)["sections"]
    print(f"{'op':3s} {'type':4s} {'N':>3s} {'shape B,D,L':16s} {'winner':22s} {'blocks/SM':>9s} {'limited by':14s} "
          f"{'blocks':>6s} {'waves':>5s} {'us':>8s}  pairs=1")
    for section in sections:
        for e in section["entries"]:
            w, shape = e["winner"], e["shape"]
            spec = (f"op={e['op']},split={w['split']},dstate={e['dstate']},dtype={e['dtype']},threads={w['threads']},"
                    f"items={w['items']},channels={w['channels']},states={w['states']},minblocks={w['minblocks']},{e['flags']}")
            per_sm, limit = occupancy(args.scanforge, spec, args.arch)
            if per_sm is None:
                print(f"{spec}: no occupancy line ({limit})")
                continue
            pairs = "-"
            if can_pair(e, w):
                twin, _ = occupancy(args.scanforge, spec + ",pairs=1", args.arch)
                if twin and twin > per_sm:
                    pairs = f"{twin}/SM from {per_sm * args.sms + 1} blocks"
            blocks = math.ceil(shape["dim"] / w["channels"]) * shape["batch"]
            winner = f"{w['split']} {w['threads']}/{w['items']}/{w['channels']}" + (f" b{w['minblocks']}" if w["minblocks"] else "")
            row = f"{shape['batch']},{shape['dim']},{shape['seqlen']}"
            print(f"{e['op']:3s} {e['dtype']:4s} {e['dstate']:3d} {row:16s} {winner:22s} {per_sm:9d} {limit:14s} "
                  f"{blocks:6d} {blocks / (per_sm * args.sms):5.2f} {w['median_us']:8.1f}  {pairs}")


if __name__ == "__main__":
    main()
