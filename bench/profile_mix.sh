#!/usr/bin/env bash
# Instruction mix (executed SASS instructions per opcode) of one backward or forward launch
# (run on the device machine). usage: bench/profile_mix.sh ROW SPEC [fwd|bwd]
set -u
row=$1; spec=$2; pass=${3:-bwd}
echo "$row" > /tmp/profile_mix_row.txt
if [ "$pass" = bwd ]; then args=(--backward-only --bwd-spec "$spec"); kernel=sf_scan_bwd
else args=(--forward-only --spec "$spec"); kernel=sf_scan_fwd; fi
ncu --clock-control none -k regex:$kernel --launch-skip 3 -c 1 \
  --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum --print-metric-instances details \
  scanforge bench --rows /tmp/profile_mix_row.txt --reps 2 --warmup 2 "${args[@]}" 2>&1 |
  sed -n "/sass__inst/,\$p" | tr ";" "\\n" | sed "s/^ *//"
