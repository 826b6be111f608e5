#!/usr/bin/env bash
# Which unit bounds one kernel launch (run on the device machine): ncu's breakdowns of the
# SM, L1, L2 and DRAM throughputs for the first launch matching KERNEL_REGEX after three
# skipped, summarised by bench/bound_table.py (highest utilisation first).
# usage: bench/profile_bound.sh ROW KERNEL_REGEX [BENCH_ARG...]
#   e.g. bench/profile_bound.sh 8,1536,2048,16,z,bf16 sf_scan_bwd_block_states --backward-only --block-states
set -u
row=$1; kernel=$2; shift 2
echo "$row" > /tmp/profile_bound_row.txt
m=breakdown:sm__throughput.avg.pct_of_peak_sustained_active,breakdown:l1tex__throughput.avg.pct_of_peak_sustained_active
m=$m,breakdown:lts__throughput.avg.pct_of_peak_sustained_active,breakdown:dram__throughput.avg.pct_of_peak_sustained_elapsed
ncu --clock-control none -k "regex:$kernel" --launch-skip 3 -c 1 --metrics "$m" \
  scanforge bench --rows /tmp/profile_bound_row.txt --reps 2 --warmup 2 "$@" 2>&1 |
  python3 "$(dirname "$0")/bound_table.py"
