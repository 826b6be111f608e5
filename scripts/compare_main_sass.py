#!/usr/bin/env python3
"""Compares the machine code of each shipped tuning winner's main kernel under two template sets.

scripts/compare_generated.py compares generated sources. When a change adds code that the
main kernels never reach (a new entry point of a module, for example), the sources differ,
but the measured kernels may not. This script compiles every winner of the shipped tuning
files with the templates in BASE and with the working tree's (`scanforge compile`, NVRTC,
sm_90) and compares the SASS of its main entry point (sf_scan_fwd or sf_scan_bwd) as
`cuobjdump -sass -fun` prints it. Identical machine code means the winner's measurements
still hold, and the file's template hash may be re-stamped (tuning/defaults/README.md).

usage: scripts/compare_main_sass.py BASE_TEMPLATE_DIR [--scanforge build/scanforge] [--arch sm_90]
exit status: 0 when every winner's main kernel is the same, 1 otherwise.
Needs cuobjdump: the CUDA toolkit's, or `pip install nvidia-cuda-cuobjdump`.
"""
import argparse
import glob
import os
import shutil
import site
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_generated import ROOT, tuned_specs  # noqa: E402


def find_cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    dirs = site.getsitepackages() + [site.getusersitepackages()]
    for d in dirs:
        for candidate in glob.glob(os.path.join(d, "nvidia", "cu*", "bin", "cuobjdump")):
            return candidate
    sys.exit("compare_main_sass.py: no cuobjdump (install the CUDA toolkit's or nvidia-cuda-cuobjdump)")


def main_sass(scanforge, cuobjdump, spec, templates, arch, work):
    """The SASS text of spec's main kernel with `templates`, or None when it does not compile."""
    cubin = os.path.join(work, "k.cubin")
    env = dict(os.environ, SCANFORGE_TEMPLATE_DIR=templates, SCANFORGE_CACHE_DIR=os.path.join(work, "cache"))
    compiled = subprocess.run([scanforge, "compile", spec, "--arch", arch, "-o", cubin], env=env,
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        return None
    kernel = "sf_scan_bwd" if "op=bwd" in spec else "sf_scan_fwd"
    return subprocess.run([cuobjdump, "-sass", "-fun", kernel, cubin], capture_output=True, text=True,
                          check=True).stdout


def instructions(sass):
    """Instructions in a SASS listing (lines with an address comment), or '-' for none."""
    if sass is None:
        return "-"
    return sum(1 for line in sass.splitlines() if line.strip().startswith("/*") and "*/" in line
               and line.strip()[2:6].strip("0123456789abcdef") == "" and ";" in line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("--scanforge", default=os.path.join(ROOT, "build", "scanforge"))
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    cuobjdump = find_cuobjdump()
    current = os.path.join(ROOT, "templates")
    specs = sorted(set(tuned_specs()))
    differ = []
    with tempfile.TemporaryDirectory() as work:
        for i, spec in enumerate(specs, 1):
            old = main_sass(args.scanforge, cuobjdump, spec, args.base, args.arch, work)
            new = main_sass(args.scanforge, cuobjdump, spec, current, args.arch, work)
            same = old == new
            counts = "" if same else f" ({instructions(old)} -> {instructions(new)} instructions)"
            print(f"[{i}/{len(specs)}] {'same' if same else 'DIFFERENT'}{counts}  {spec}", flush=True)
            if not same:
                differ.append(spec)
    print(f"{len(specs) - len(differ)} of {len(specs)} winners' main kernels are the same machine code")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
