#!/usr/bin/env bash
# Stall reasons and instruction mix of one backward launch (run on the device machine).
# usage: bench/profile_bwd.sh ROW BWD_SPEC [BENCH_ARG...] (e.g. --block-states; the kernel
# profiled is the first backward entry point the bench launches after three skipped)
set -u
row=$1; spec=$2; shift 2
echo "$row" > /tmp/profile_row.txt
m=smsp__inst_executed.sum,smsp__inst_executed_pipe_xu.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_bytes.sum,lts__t_bytes.sum,dram__bytes.sum
for r in long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected barrier; do
  m=$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
ncu --clock-control none -k regex:sf_scan_bwd --launch-skip 3 -c 1 --metrics "$m" \
  scanforge bench --rows /tmp/profile_row.txt --reps 2 --warmup 2 --backward-only --bwd-spec "$spec" "$@" 2>&1 | grep -E "smsp__|sm__|l1tex|lts|dram" | sed 's/^ *//'
