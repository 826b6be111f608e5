#!/usr/bin/env bash
# Stall reasons, memory traffic and instruction counts of one forward launch (run on the
# device machine). usage: bench/profile_fwd.sh ROW KERNEL_REGEX [BENCH_ARG...]
# (KERNEL_REGEX: sf_scan_fwd$ for the plain forward, sf_scan_fwd_inner_saves with
# --block-states; the first matching launch after three skipped is profiled)
set -u
row=$1; kernel=$2; shift 2
echo "$row" > /tmp/profile_fwd_row.txt
m=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,smsp__inst_executed_op_global_st.sum
for r in long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected barrier drain; do
  m=$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
ncu --clock-control none -k "regex:$kernel" --launch-skip 3 -c 1 --metrics "$m" \
  scanforge bench --rows /tmp/profile_fwd_row.txt --reps 2 --warmup 2 "$@" 2>&1 |
  grep -E "gpu__|smsp__|sm__|dram|lts" | sed 's/^ *//'
