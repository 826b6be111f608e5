#!/usr/bin/env bash
# Where a kernel's warps stall, instruction by instruction (run on the device machine):
# ncu's source counters (stall sampling per SASS line) for one launch, written as CSV.
# usage: bench/profile_source.sh OUT_PREFIX ROW KERNEL_REGEX [BENCH_ARG...]
# (the first launch matching KERNEL_REGEX after three skipped is profiled; summarise the
# CSV with bench/source_stalls.py)
set -u
out=$1; row=$2; kernel=$3; shift 3
echo "$row" > /tmp/profile_source_row.txt
ncu --clock-control none -k "regex:$kernel" --launch-skip 3 -c 1 \
  --section SourceCounters --section WarpStateStats --section SchedulerStats \
  --import-source no -f -o "$out" \
  scanforge bench --rows /tmp/profile_source_row.txt --reps 2 --warmup 2 "$@" > "$out.bench.txt" 2>&1
ncu -i "$out.ncu-rep" --page source --csv --print-source sass > "$out.sass.csv" 2> "$out.err"
ncu -i "$out.ncu-rep" --page details > "$out.details.txt" 2>> "$out.err"
