#!/usr/bin/env bash
# A template candidate kept as a patch (bench/candidates/README.md), measured against the
# built-in templates in one device call (run there from the repository root; logs under
# $OUT, a summary last):
#   1. `scanforge check` (float64 reference, outputs poisoned) of the candidate with each
#      line of NAME.checks beside the patch;
#   2. bench/ab_specs.py over ROWS at the shipped launches, for the passes whose templates
#      the patch touches, by default and on block states, two rounds;
#   3. ncu's shared-memory wavefronts and bank conflicts of the 130M bf16 backward (both
#      kernels) and the 130M fp32 forward, built-in templates and candidate, both at the
#      built-in plan's launch.
# usage: bench/candidates/ab_candidate.sh bench/candidates/NAME.patch [ROWS]
#   ROWS: default NAME.rows beside the patch where there is one, else bench/rows_ab.txt;
#   output in $OUT/NAME (so that one call can measure several candidates in turn)
#   AB_NCU=0 skips step 3 (a candidate that touches none of the 130M rows' kernels)
set -u
patch_file=$1
checks=${patch_file%.patch}.checks
rows=${2:-bench/rows_ab.txt}
[ $# -lt 2 ] && [ -f "${patch_file%.patch}.rows" ] && rows=${patch_file%.patch}.rows
out=${OUT:-/tmp/ab_candidate}/$(basename "$patch_file" .patch); mkdir -p "$out"
repo=$PWD; cand=$(mktemp -d); cp -r templates "$cand/"
# patch(1), else git apply (either may be missing on a bare machine)
if command -v patch > /dev/null; then (cd "$cand" && patch -p1 -s) < "$patch_file"
else (cd "$cand" && git apply -p1 "$repo/$patch_file")
fi || { echo "the patch does not apply (patch or git needed)"; exit 2; }
C=$cand/templates
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
grep -v '^#' "$checks" | while read -r args; do
  # shellcheck disable=SC2086 # one line holds several arguments
  # the verdict line, else what the check said on stderr (stdout comes after it in a pipe)
  r=$(SCANFORGE_TEMPLATE_DIR=$C scanforge check --device gpu $args 2> "$out/check_stderr.txt" | grep -E '^(PASS|FAIL)' | tail -1)
  [ -n "$r" ] || r="ERROR: $(grep -v 'templates from SCANFORGE_TEMPLATE_DIR' "$out/check_stderr.txt" | tail -1)"
  echo "check $args: $r"
done > "$out/checks.txt" 2>&1
# the passes whose templates the patch touches (both when it touches neither's own file)
passes=()
grep -q '^+++ b/templates/scan_bwd' "$patch_file" && passes+=(bwd)
grep -q '^+++ b/templates/scan_fwd' "$patch_file" && passes+=(fwd)
[ ${#passes[@]} -eq 0 ] && passes=(bwd fwd)
for mode in default bs; do
  extra=(); [ $mode = bs ] && extra=(--block-states)
  for pass in "${passes[@]}"; do
    direction=(); [ "$pass" = fwd ] && direction=(--forward)
    python3 bench/ab_specs.py "$rows" "$out/ab_$pass" new="$C" --rounds 2 "${direction[@]}" "${extra[@]}" > "$out/ab_${pass}_$mode.log" 2>&1
  done
done
m=gpu__time_duration.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
m=$m,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
[ "${AB_NCU:-1}" = 0 ] && targets=() || targets=("sf_scan_bwd$ bf16 bwd --backward-only" \
  "sf_scan_bwd_block_states bf16 bwd --backward-only --block-states" "sf_scan_fwd$ fp32 fwd --forward-only")
echo 8,1536,2048,16,z,bf16 > "$out/ncu_bf16.txt"
echo 8,1536,2048,16,z,fp32 > "$out/ncu_fp32.txt"
# both sets at the built-in plan's launch (a candidate's template hash differs, so the
# tuning files' entries would not reach it: it would run the heuristics' launch)
for target in "${targets[@]}"; do
  read -r kernel type pass args <<< "$target"
  # shellcheck disable=SC2086 # args holds several arguments
  scanforge bench --rows "$out/ncu_$type.txt" --reps 1 --warmup 1 $args --json "$out/plan.json" > /dev/null 2>&1
  launch=$(python3 -c "import json, sys; sys.path.insert(0, 'bench'); from ab_specs import launch_of
r = json.load(open(sys.argv[1]))['rows'][0]; print(launch_of((r if sys.argv[2] == 'fwd' else r['backward'])['variant']))" \
    "$out/plan.json" "$pass")
  knob=--bwd-spec; [ "$pass" = fwd ] && knob=--spec
  for set in built-in candidate; do
    dir=(); [ $set = candidate ] && dir=(SCANFORGE_TEMPLATE_DIR="$C")
    echo "== $set $kernel $type $args $knob $launch"
    # shellcheck disable=SC2086 # args holds several arguments
    env "${dir[@]}" ncu --clock-control none -k "regex:$kernel" --launch-skip 3 -c 1 --metrics $m \
      scanforge bench --rows "$out/ncu_$type.txt" --reps 2 --warmup 2 $args "$knob" "$launch" 2>&1 | grep -E "duration|wavefronts|conflicts"
  done
done > "$out/ncu.txt" 2>&1
echo "checks: $(grep -c ': PASS' "$out/checks.txt") passed of $(wc -l < "$out/checks.txt")"
grep -v ': PASS' "$out/checks.txt" | head
for pass in "${passes[@]}"; do echo "== $pass"; python3 bench/ab_table.py "$out/ab_$pass/new" default bs; done | tee "$out/ab_table.txt"
cat "$out/ncu.txt"
