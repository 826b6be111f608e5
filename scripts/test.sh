#!/usr/bin/env bash
# Builds scanforge and runs every test suite. GPU suites skip (and say so) without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure --no-tests=error -j"$(nproc)"
# The TensorFlow op, package and layers (pip, pytest); SCANFORGE_SKIP_TF=1 leaves them out.
if [ "${SCANFORGE_SKIP_TF:-0}" != 1 ]; then bash scripts/test-tf.sh; fi
