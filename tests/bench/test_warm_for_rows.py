"""test_warm_for_rows.py: bench/warm_for_rows.sh compiles, on the pretend driver, the kernels a
bench run of a rows file loads: the tiny row's forward, backward and deterministic backward
modules land in the cache folder, planned as the shipped H100 file chooses them (the driver
pretends to be that GPU), a second run compiles nothing more, and a missing rows file is a
usage error that names it.

usage: test_warm_for_rows.py SCANFORGE_CLI FAKE_CUDA_LIBRARY"""
import os
import subprocess
import sys
import tempfile

from script_checks import missing_file_named, report

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "bench", "warm_for_rows.sh")
ROWS = os.path.join(ROOT, "bench", "rows_tiny.txt")


def entry_count(cli, cache):
    """`scanforge cache stat` of the folder, and its count of entries."""
    stat = subprocess.run([cli, "cache", "stat", "--dir", cache], capture_output=True, text=True).stdout
    return stat, next((int(line.split()[1]) for line in stat.splitlines() if line.startswith("entries")), 0)


def main(cli, fake):
    failures = []
    env = dict(os.environ, SCANFORGE=cli, FAKE_CUDA=fake,
               GPU_FILES=os.path.join(ROOT, "tuning", "defaults", "nvidia_h100.json"))
    env.pop("SCANFORGE_TUNING_DB", None)
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "kcache")
        first = subprocess.run(["bash", SCRIPT, cache, ROWS], env=env, capture_output=True, text=True)
        if first.returncode != 0:
            failures.append(f"first run: exit {first.returncode}: {first.stderr.strip()[:400]}")
        if "GPU          NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs" not in first.stdout:
            failures.append(f"the driver did not pretend to be the H100: {first.stdout.strip()[:300]}")
        stat, count = entry_count(cli, cache)
        if count < 3:
            failures.append(f"{count} cache entries after warming, expected the forward, backward and "
                            f"deterministic backward modules at least:\n{stat}")
        second = subprocess.run(["bash", SCRIPT, cache, ROWS], env=env, capture_output=True, text=True)
        _, count2 = entry_count(cli, cache)
        if second.returncode != 0 or count2 != count:
            failures.append(f"second run: exit {second.returncode}, {count2} entries (first: {count})")
        missing_file_named(["bash", SCRIPT, cache, "/nonexistent/rows.txt"], "/nonexistent/rows.txt",
                           "a missing rows file", failures, env)
    return report(failures, f"warm_for_rows.sh: {len(failures)} failures")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
