#!/usr/bin/env bash
# A backward template candidate kept as a patch, measured against the built-in templates
# in one device call (run there; logs under $OUT, a summary last):
#   1. scanforge check (float64 reference, outputs poisoned) of the candidate on launches
#      of 2 to 8 lanes and 8 to 16 steps, N = 8 to 64, fp32/bf16/fp16, both state modes,
#      and the deterministic, h0, d_last_state and fixed-B paths;
#   2. bench/ab_specs.py over ROWS (default bench/rows_ab.txt) at the shipped launches,
#      both modes, two rounds;
#   3. ncu's shared-memory wavefronts and bank conflicts of the 130M bf16 backward, both
#      kernels, built-in templates and candidate.
# usage: bench/candidates/ab_backward.sh PATCH [ROWS]
set -u
patch_file=$1; rows=${2:-bench/rows_ab.txt}
out=${OUT:-/tmp/ab_backward}; mkdir -p "$out"
cand=$(mktemp -d); cp -r templates "$cand/" && (cd "$cand" && patch -p1 -s) < "$patch_file" || { echo "the patch does not apply"; exit 2; }
C=$cand/templates
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
for dt in bf16 fp32 fp16; do
  for launch in 16:threads=4,items=8,channels=16,minblocks=6 16:threads=8,items=16,channels=4 \
                8:threads=4,items=8,channels=16 32:threads=8,items=16,channels=8 64:threads=4,items=8,channels=8; do
    n=${launch%%:*}; spec=split=state,${launch#*:}
    for mode in block default; do
      extra=(); [ $mode = block ] && extra=(--state-interval block)
      r=$(SCANFORGE_TEMPLATE_DIR=$C scanforge check --shape 2,100,300,$n --dtype $dt --z --D --delta-bias --softplus \
            --backward --spec $spec "${extra[@]}" 2>&1 | tail -1)
      echo "check $dt N=$n $spec $mode: $r"
    done
  done
  r=$(SCANFORGE_TEMPLATE_DIR=$C scanforge check --shape 2,64,1000,16 --dtype $dt --z --backward --deterministic --h0 \
        --d-last-state --spec split=state,threads=4,items=8,channels=16 2>&1 | tail -1); echo "check $dt det h0: $r"
  r=$(SCANFORGE_TEMPLATE_DIR=$C scanforge check --shape 2,64,1000,16 --dtype $dt --fixed-B --backward \
        --spec split=state,threads=4,items=8,channels=16 2>&1 | tail -1); echo "check $dt fixed-B: $r"
done > "$out/checks.txt" 2>&1
python3 bench/ab_specs.py "$rows" "$out/ab" new="$C" --rounds 2 > "$out/ab_default.log" 2>&1
python3 bench/ab_specs.py "$rows" "$out/ab" new="$C" --rounds 2 --block-states > "$out/ab_bs.log" 2>&1
echo 8,1536,2048,16,z,bf16 > "$out/ncu_row.txt"
m=gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
m=$m,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
for set in built-in candidate; do
  for kernel in "sf_scan_bwd$" sf_scan_bwd_block_states; do
    extra=(); [ $kernel = sf_scan_bwd_block_states ] && extra=(--block-states)
    dir=(); [ $set = candidate ] && dir=(SCANFORGE_TEMPLATE_DIR=$C)
    echo "== $set $kernel"
    env "${dir[@]}" ncu --clock-control none -k "regex:$kernel" --launch-skip 3 -c 1 --metrics $m \
      scanforge bench --rows "$out/ncu_row.txt" --reps 2 --warmup 2 --backward-only "${extra[@]}" 2>&1 |
      grep -E "duration|wavefronts|conflicts"
  done
done > "$out/ncu.txt" 2>&1
echo "checks: $(grep -c PASS "$out/checks.txt") passed of $(wc -l < "$out/checks.txt")"; grep -v PASS "$out/checks.txt" | head
python3 bench/ab_table.py "$out/ab/new" default bs | tee "$out/ab_table.txt"
cat "$out/ncu.txt"
