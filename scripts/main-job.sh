#!/usr/bin/env bash
# The main job: builds scanforge, then compiles (or finds in the cache) the kernels for a
# MambaVision-shaped and a Mamba-shaped call, runs them and checks them against the
# float64 reference, on the GPU when there is one, else on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/scanforge demo "$@"
