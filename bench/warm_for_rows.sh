#!/usr/bin/env bash
# Compiles here, without a GPU, the kernels that `scanforge bench` (and bench/side_by_side.sh)
# will load on the device for ROWS files, into CACHE_DIR: carry it in the bundle and point
# SCANFORGE_CACHE_PATH at it there, so that the device call compiles nothing.
#
# How: `scanforge plan` on the pretend driver (tests/fake_cuda/, built with the tests) chooses
# each row's launches as bench would (the tuning file of the GPU it pretends to be, the launch
# plan's twins, the driver's occupancy with registers read from the cubins) and compiles them.
# It pretends to be each GPU of tuning/defaults/ in turn (its name and memory), so the binary's
# own shipped files apply: run it again with an older binary (SCANFORGE=...) to warm the other
# side of an A/B. Modes: default, --block-states, and the deterministic backward of both.
#
# usage: bench/warm_for_rows.sh CACHE_DIR ROWS_FILE...
#   SCANFORGE   the scanforge to plan with (default: build/scanforge)
#   FAKE_CUDA   the pretend driver (default: build/tests/libscanforge_fake_cuda.so)
#   GPU_FILES   tuning files whose GPUs to pretend to be (default: tuning/defaults/*.json)
# Example (docs/device.md): bench/warm_for_rows.sh .device-bundle/kcache bench/rows_*.txt
set -u
[ $# -ge 2 ] || { echo "usage: $0 CACHE_DIR ROWS_FILE..." >&2; exit 2; }
cache=$1; shift
here=$(cd "$(dirname "$0")/.." && pwd)
scanforge=${SCANFORGE:-$here/build/scanforge}
fake=${FAKE_CUDA:-$here/build/tests/libscanforge_fake_cuda.so}
gpu_files=${GPU_FILES:-$(ls "$here"/tuning/defaults/*.json)}
[ -x "$scanforge" ] || { echo "$0: no scanforge at '$scanforge' (build first, or set SCANFORGE)" >&2; exit 2; }
[ -r "$fake" ] || { echo "$0: no pretend driver at '$fake' (build the tests, or set FAKE_CUDA)" >&2; exit 2; }
for rows in "$@"; do
  [ -r "$rows" ] || { echo "$0: cannot read the rows file '$rows'" >&2; exit 2; }
done
mkdir -p "$cache" || exit 1
plan_out=$(mktemp) || exit 1
trap 'rm -f "$plan_out"' EXIT
# A field of a tuning file's (first) GPU: gpu FILE KEY
gpu() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sections"][0]["gpu"][sys.argv[2]])' "$1" "$2"; }
status=0
for gpu_file in $gpu_files; do
  name=$(gpu "$gpu_file" name) && memory=$(gpu "$gpu_file" memory_bytes) ||
    { echo "$0: cannot read the GPU of '$gpu_file'" >&2; exit 2; }
  echo "pretending to be: $name ($gpu_file)"
  shown=""
  for rows in "$@"; do
    for mode in "" "--block-states" "--deterministic --backward-only" "--deterministic --backward-only --block-states"; do
      # shellcheck disable=SC2086 # the mode's words are separate options
      if ! SCANFORGE_CUDA_LIBRARY=$fake FAKE_CUDA_REGISTERS=1 FAKE_CUDA_NAME=$name FAKE_CUDA_MEMORY_BYTES=$memory \
           SCANFORGE_CACHE_DIR=$cache SCANFORGE_CACHE_MAX_BYTES=${SCANFORGE_CACHE_MAX_BYTES:-8G} \
           "$scanforge" plan --rows "$rows" $mode > "$plan_out"; then
        echo "$0: scanforge plan --rows $rows $mode failed (above)" >&2
        status=1
      fi
      [ -n "$shown" ] || { shown=1; head -1 "$plan_out"; } # the driver's GPU, as plan saw it
    done
    echo "  $rows: planned, kernels in $cache"
  done
done
exit $status
