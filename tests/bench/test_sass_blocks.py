"""test_sass_blocks.py: bench/sass_blocks.py groups a kernel's SASS lines executed equally
often and prints the groups above the share asked for, with their shares and mix."""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "sass_blocks.py")

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)",
          "# Samples", "Instructions Executed"]
# (source, samples, executions): a prologue run once, a loop body run 100 times, an epilogue
LINES = [("LDC R1, c[0x0][0x28]", 1, 1), ("S2R R0, SR_TID.X", 1, 1),
         ("LDS.128 R4, [R0]", 30, 100), ("FFMA.FTZ R8, R4, R5, R8", 50, 100), ("@P0 BRA 0x10", 9, 100),
         ("STG.E [R2.64], R8", 9, 1), ("EXIT", 0, 1)]


def run(path, *extra):
    return subprocess.run([sys.executable, TOOL, path, *extra], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.sass.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["Kernel Name", "k"])
            w.writerow(HEADER)
            for k, (src, samples, count) in enumerate(LINES):
                w.writerow([hex(16 * k), "      " + src, samples, samples, samples, count])
        out = run(path)
        assert out.returncode == 0, out.stderr
        rows = out.stdout.splitlines()[1:]
        assert len(rows) == 3, rows  # prologue, loop, epilogue
        loop = rows[1].split()
        # lines 2-4, 100 executions each: 300 of 304 instructions, 89 of 100 samples
        assert loop[:5] == ["2-", "4", "100", "98.7", "89.0"], rows[1]
        assert "LDS:1" in rows[1] and "FFMA:1" in rows[1] and "BRA:1" in rows[1], rows[1]  # the predicate skipped
        only = run(path, "--min-share", "0.5").stdout.splitlines()[1:]
        assert len(only) == 1 and only[0].split()[2] == "100", only
    print("ok")


if __name__ == "__main__":
    main()
