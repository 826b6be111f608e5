"""test_training_steps.py: bench/training_steps.py adds each row's forward and backward,
divides the established pair's sum by it, and prints the deterministic backward's cost
where the file has it; rows the anchor did not time show '-'."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "training_steps.py")

OURS = {"rows": [
    {"batch": 8, "dim": 1536, "seqlen": 2048, "dstate": 16, "z": True, "dtype": "bf16", "ok": True,
     "median_us": 250.0, "backward": {"ok": True, "median_us": 750.0},
     "backward_deterministic": {"ok": True, "median_us": 900.0,
                                "variant": "op=bwd,split=state,threads=4,items=8,channels=16,pairs=0"}},
    {"batch": 8, "dim": 1536, "seqlen": 2048, "dstate": 16, "z": True, "dtype": "fp16", "ok": True,
     "median_us": 300.0, "backward": {"ok": True, "median_us": 700.0}},
    {"batch": 1, "dim": 4, "seqlen": 16, "dstate": 4, "dtype": "fp32", "ok": False},
]}
THEIRS = {"rows": [
    {"batch": 8, "dim": 1536, "seqlen": 2048, "dstate": 16, "z": True, "dtype": "bf16", "ok": True,
     "fwd_us": 500.0, "bwd_us": 1500.0},
]}


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = os.path.join(tmp, "sf.json"), os.path.join(tmp, "anchor.json")
        json.dump(OURS, open(ours, "w"))
        json.dump(THEIRS, open(theirs, "w"))
        out = subprocess.run([sys.executable, TOOL, ours, theirs], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 4, lines
    bf16 = lines[1].split()
    assert bf16[:2] == ["8,1536,2048,16,z", "bf16"], lines[1]
    assert bf16[2:5] == ["1000.0", "2000.0", "2.00x"], lines[1]  # (500 + 1500) / (250 + 750)
    assert bf16[6:] == ["900.0", "1.20x", "4/8/16"], lines[1]  # 900 / 750
    fp16 = lines[2].split()
    assert fp16[2:5] == ["1000.0", "-", "-"] and "|" not in lines[2], lines[2]
    assert lines[3].endswith("(not timed)"), lines[3]
    usage = subprocess.run([sys.executable, TOOL], capture_output=True, text=True)
    assert usage.returncode != 0 and "usage:" in usage.stderr, usage.stderr


if __name__ == "__main__":
    main()
    print("ok")
