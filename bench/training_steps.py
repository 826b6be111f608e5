#!/usr/bin/env python3
"""The training step (forward + backward) of each row against the established pair, and the
deterministic backward's cost, from one side-by-side call's JSON files (bench/side_by_side.sh):
scanforge's `bench --json` file and the anchor's file of the same rows.

usage: bench/training_steps.py SCANFORGE_JSON ANCHOR_JSON

Per row: scanforge's forward + backward, the established forward + backward, their ratio;
where the file has the deterministic backward (`bench --deterministic`), its time, its
cost over the default backward and its launch. Rows the anchor did not time (fp16) show
'-' for the step."""
import json
import sys


def key(row):
    return (row["batch"], row["dim"], row["seqlen"], row["dstate"], bool(row.get("z")), row["dtype"])


def label(k):
    batch, dim, seqlen, dstate, z, dtype = k
    return f"{batch},{dim},{seqlen},{dstate}" + (",z" if z else "") + f" {dtype}"


def launch(variant):
    """threads/items/channels of a variant spec, as bench prints them."""
    kv = dict(part.split("=", 1) for part in variant.split(","))
    return f"{kv.get('threads')}/{kv.get('items')}/{kv.get('channels')}" + ("p" if kv.get("pairs") == "1" else "")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ours = json.load(open(sys.argv[1]))["rows"]
    theirs = {key(r): r for r in json.load(open(sys.argv[2]))["rows"]}
    print(f"{'row':26s} {'sf step us':>10s} {'est. step us':>12s} {'x':>6s} | {'det us':>9s} {'det cost':>8s} launch")
    for row in ours:
        bwd = row.get("backward") or {}
        if not row.get("ok") or "median_us" not in row or "median_us" not in bwd:
            print(f"{label(key(row)):26s} (not timed)")
            continue
        step = row["median_us"] + bwd["median_us"]
        est = theirs.get(key(row)) or {}
        if est.get("ok") and est.get("fwd_us") and est.get("bwd_us"):
            est_step = est["fwd_us"] + est["bwd_us"]
            cells = f"{step:10.1f} {est_step:12.1f} {est_step / step:5.2f}x"
        else:
            cells = f"{step:10.1f} {'-':>12s} {'-':>6s}"
        det = row.get("backward_deterministic") or {}
        if det.get("ok") and "median_us" in det:
            cells += f" | {det['median_us']:9.1f} {det['median_us'] / bwd['median_us']:7.2f}x {launch(det['variant'])}"
        print(f"{label(key(row)):26s} {cells}")


if __name__ == "__main__":
    main()
