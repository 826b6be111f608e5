#!/usr/bin/env bash
# compute-sanitizer over the GPU suites' smaller cases (run on the device machine, see
# docs/device.md): memcheck over the forward and backward suites' d_state 1 and 16
# matrices (every dtype, L 1 to 4096, every flag set), their launch-configuration and
# segment-length walks and the deterministic mode; racecheck over one call of each
# template family. The runs go side by side (the GPU and 16 cores have room; each is
# capped at SECONDS_PER_RUN). Logs go to $OUT (or /tmp); a summary is printed last.
# usage: bench/sanitize_suite.sh [SECONDS_PER_RUN]
set -u
out=${OUT:-/tmp}
limit=${1:-240}

# "errors" of a sanitizer log: its ERROR SUMMARY lines, or why there are none
errors_of() {
  local log=$1 rc=$2
  local found
  found=$(grep -h -E "(ERROR|RACECHECK) SUMMARY" "$log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  [ "$rc" = 124 ] && found="$found timed out after ${limit}s;"
  echo "exit $rc; ${found:-no summary}"
}

memcheck_suite() { # binary, Criterion filter
  local bin=$1 filter=$2 log="$out/memcheck_$1_$(echo "$2" | tr -c 'A-Za-z0-9_\n' '_').log"
  timeout "$limit" compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 \
    "$bin" --jobs 2 --filter "$filter" > "$log" 2>&1
  echo "memcheck $bin $filter: $(errors_of "$log" $?); $(grep -h Synthesis "$log" | tail -1)" > "$log.summary"
}

memcheck_suite test_fwd_gpu 'fwd_gpu/*_dstate_1' &
memcheck_suite test_fwd_gpu 'fwd_gpu/*_dstate_16' &
memcheck_suite test_fwd_gpu 'fwd_gpu/launch_configurations' &
memcheck_suite test_fwd_gpu 'fwd_gpu/split_state_segment_lengths' &
memcheck_suite test_fwd_gpu 'fwd_gpu/rows_off_alignment' &
memcheck_suite test_bwd_gpu 'bwd_gpu/*_dstate_16' &
memcheck_suite test_bwd_gpu 'bwd_gpu/launch_configurations' &
memcheck_suite test_bwd_gpu 'bwd_gpu/split_state_segment_lengths' &
memcheck_suite test_bwd_gpu 'bwd_gpu/deterministic_mode_is_bitwise_reproducible' &
memcheck_suite test_bwd_gpu 'bwd_gpu/split_state_pairs' &
memcheck_suite test_bwd_gpu 'bwd_gpu/rows_off_alignment' &

# racecheck: one call of each template family (shared memory is where races would be)
racecheck() { # name, check arguments...
  local name=$1; shift
  local log="$out/racecheck_$name.log"
  SCANFORGE_MIN_SEGMENT=64 timeout "$limit" compute-sanitizer --tool racecheck --error-exitcode 9 \
    scanforge check "$@" > "$log" 2>&1
  echo "racecheck $name: $(errors_of "$log" $?)" > "$log.summary"
}
flags=(--z --D --delta-bias --softplus --h0)
racecheck fwd_time --shape 2,64,700,16 "${flags[@]}" --dtype bf16 --spec split=time,threads=32,items=4 &
racecheck fwd_state --shape 2,64,1100,16 "${flags[@]}" --dtype bf16 --spec split=state,threads=4,items=8,channels=8 &
racecheck bwd_time --shape 2,64,700,16 "${flags[@]}" --backward --d-last-state --dtype fp32 --spec split=time,threads=128,items=4 &
racecheck bwd_state --shape 2,64,1100,16 "${flags[@]}" --backward --d-last-state --dtype bf16 --spec split=state,threads=8,items=8,channels=8 &
racecheck bwd_state_det --shape 2,64,700,16 "${flags[@]}" --backward --deterministic --dtype fp32 --spec split=state,threads=4,items=4,channels=16 &
racecheck bwd_state_pairs --shape 2,64,1100,16 "${flags[@]}" --backward --d-last-state --dtype bf16 --spec split=state,threads=2,items=8,channels=16,pairs=1 &
racecheck bwd_state_block_states --shape 2,64,1100,16 "${flags[@]}" --backward --d-last-state --state-interval block --dtype bf16 --spec split=state,threads=4,items=8,channels=16 &
racecheck bwd_state_large_n --shape 1,32,600,128 "${flags[@]}" --backward --dtype fp16 --spec split=state,threads=16,items=4,channels=4 &

wait
cat "$out"/*.log.summary
