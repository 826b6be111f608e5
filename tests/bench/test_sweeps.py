"""test_sweeps.py: every sweep file in bench/sweeps/ still names launches the templates
accept, through the command its header gives (bench/sweeps/full_specs.sh with its keys
and types), so that a device call spent on it is not lost to a launch the generator
refuses; and full_specs.sh makes one spec per launch, type and words setting.

usage: test_sweeps.py SCANFORGE_CLI"""
import glob
import os
import re
import shlex
import subprocess
import sys

from script_checks import missing_file_named, report

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FULL_SPECS = os.path.join(ROOT, "bench", "sweeps", "full_specs.sh")


def launches(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]


def header_call(path):
    """The KEYS and TYPES the file's header passes to full_specs.sh."""
    with open(path) as f:
        for line in f:
            found = re.search(r"full_specs\.sh (\S+) (\S+) (\S+)", line)
            if found and line.startswith("#"):
                return found.group(2), found.group(3)
    raise AssertionError(f"{path}: its header names no full_specs.sh call")


def main(cli):
    failures = []
    sweeps = sorted(glob.glob(os.path.join(ROOT, "bench", "sweeps", "*.txt")))
    assert sweeps, "bench/sweeps/ holds no sweep file"
    for path in sweeps:
        keys, types = header_call(path)
        out = subprocess.run([FULL_SPECS, path, keys, types], capture_output=True, text=True, check=True).stdout
        specs = out.split()
        expected = len(launches(path)) * len(types.split(",")) * 2
        if len(specs) != expected:
            failures.append(f"{path}: {len(specs)} specs, expected {expected}")
        for spec in specs:
            gen = subprocess.run([cli, "gen", spec], capture_output=True, text=True)
            if gen.returncode != 0:
                failures.append(f"{os.path.basename(path)}: `scanforge gen {shlex.quote(spec)}` failed: "
                                f"{gen.stderr.strip()[:300]}")
    missing_file_named([FULL_SPECS, "/nonexistent/sweep.txt", "op=bwd", "fp32"], "/nonexistent/sweep.txt",
                       "full_specs.sh on a missing file", failures)
    return report(failures, f"{len(sweeps)} sweep files checked, {len(failures)} failures")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
