"""test_sass_loops.py: bench/sass_loops.py reads the loops of one kernel from a cuobjdump
listing (tests/bench/sass_listing.txt: two loops, one past a 5-digit address)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "sass_loops.py")
LISTING = os.path.join(HERE, "sass_listing.txt")


def run(*args):
    return subprocess.run([sys.executable, TOOL, LISTING, *args], capture_output=True, text=True)


def main():
    out = run("--kernel", "sf_scan_bwd", "--per", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "sf_scan_bwd: 12 instructions", lines
    # the loop closed at 0x70 runs from 0x10: FMUL, MUFU, FFMA, BRA, FADD, ISETP, BRA
    assert "loop     1..    7:     7" in lines[1] and "3.5 per (t, n)" in lines[1], lines
    assert "BRA:2" in lines[1] and "MUFU:1" in lines[1], lines
    assert "shared wavefronts ~0 (0.00 per (t, n))" in lines[1], lines
    # the loop closed at 0x10010 (a 5-digit address) runs from 0x80; its LDS.128 costs a
    # warp four wavefronts
    assert "loop     8..   10:     3" in lines[2], lines
    assert "shared wavefronts ~4 (2.00 per (t, n))" in lines[2], lines
    assert len(lines) == 3, lines
    first = run()  # the first function of the listing, which has no loop
    assert first.stdout.splitlines() == ["sf_other: 2 instructions"], first.stdout
    missing = run("--kernel", "sf_none")
    assert missing.returncode != 0 and "no function sf_none" in missing.stderr, missing.stderr
    sys.path.insert(0, os.path.dirname(TOOL))
    from sass_loops import shared_wavefronts
    widths = {"LDS.U16 R1, [R2]": 1, "LDS R1, [R2+0x10]": 1, "STS.64 [R1], R2": 2, "@P0 LDS.128 R4, [R1]": 4,
              "LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]": 4, "FMUL R1, R2, R3": 0, "LDG.E.128 R4, [R2]": 0}
    for text, waves in widths.items():
        assert shared_wavefronts(text) == waves, (text, shared_wavefronts(text))
    print("sass_loops.py: 4 checks passed")


if __name__ == "__main__":
    main()
