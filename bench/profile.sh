#!/usr/bin/env bash
# Stall reasons and instruction mix of one forward launch (run on the device machine).
# usage: bench/profile.sh ROW SPEC   e.g. bench/profile.sh 8,1536,2048,16,z,fp32 split=state,threads=4
set -u
row=$1; spec=$2
echo "$row" > /tmp/profile_row.txt
m=smsp__inst_executed.sum,smsp__inst_executed_pipe_xu.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
for r in long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected selected no_instruction barrier dispatch_stall tex_throttle branch_resolving; do
  m=$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
ncu --clock-control none -k regex:sf_scan --launch-skip 3 -c 1 --metrics "$m" \
  scanforge bench --rows /tmp/profile_row.txt --reps 2 --warmup 2 --spec "$spec" 2>&1 | grep -E "smsp__|sm__" | sed 's/^ *//'
