#!/usr/bin/env bash
# The library, the CLI and every Criterion suite built with AddressSanitizer and
# UndefinedBehaviorSanitizer (any report fails the suite); GPU suites skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build-asan -DSCANFORGE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-asan -j"$(nproc)"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$(nproc)" -LE gpu
