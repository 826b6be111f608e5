#!/usr/bin/env bash
# Every GPU suite and the GPU main job, on the device machine (see docs/device.md).
# Logs go to $OUT; a summary is printed last.
set -u
out=${OUT:-/tmp}
summary=""
for t in test_driver_gpu test_fwd_gpu test_bwd_gpu test_tune_gpu; do
  $t --jobs 8 > "$out/$t.log" 2>&1
  summary+="$t: $(grep Synthesis "$out/$t.log" | tail -1)"$'\n'
done
scanforge demo > "$out/demo1.log" 2>&1; d1=$?
scanforge demo > "$out/demo2.log" 2>&1; d2=$?
scanforge check --shape 8,256,2048,16 --z --D --delta-bias --softplus --backward --d-last-state --h0 --dtype bf16 > "$out/check_bwd.log" 2>&1; cb=$?
scanforge check --shape 2,64,300,16 --backward --deterministic --spec threads=64,items=8 > "$out/check_det.log" 2>&1; cd=$?
summary+="demo: exit $d1 then $d2 ($(grep -h kernels: "$out/demo2.log" | head -1))"$'\n'
summary+="check --backward bf16: exit $cb; deterministic: exit $cd"$'\n'
grep -h -E "Assert|FAIL" "$out"/test_*.log | head -20
echo "$summary"
