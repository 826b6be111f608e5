#!/usr/bin/env bash
# The side-by-side table of docs/perf.md, on the device machine: builds the established
# kernel from ANCHOR_DIR (a copy of the anchor folder carried with the bundle: its
# anchor_bench.py, compare.py and sources), then times it and `scanforge bench` on each
# row file by the same method, and prints one comparison table per file (for the
# language-model rows also the training steps and the deterministic backward's cost:
# bench/training_steps.py).
# usage: bench/side_by_side.sh ANCHOR_DIR LOG_DIR [ROWS_FILE...]
#        (default rows: every regime's file under bench/)
# With SIDE_BY_SIDE_UNTUNED=1 scanforge also runs each file with --untuned (the heuristics
# alone, no tuning database) and a second table compares that run with the same anchor times.
# With SIDE_BY_SIDE_BLOCK_STATES=1 the same again with --block-states (the forward saves
# every backward block's starting state: docs/design-block-states.md).
set -u
anchor=$1; logs=$2; shift 2
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(bench/rows_reference.txt bench/rows_lm.txt bench/rows_vision.txt
                               bench/rows_large_n.txt bench/rows_long_l.txt bench/rows_mid.txt
                               bench/rows_few_channels_large_n.txt bench/rows_small_n.txt
                               bench/rows_lm_small_batch.txt bench/rows_small_n_few_channels.txt
                               bench/rows_time_split.txt bench/rows_small_n_long.txt)
mkdir -p "$logs"
[ -d /tmp/anchor ] || python3 "$anchor/anchor_bench.py" build "$anchor/mamba_selective_scan" /tmp/anchor \
  > "$logs/anchor_build.log" 2>&1 &
build=$!
for r in "${rows[@]}"; do
  name=$(basename "$r" .txt)
  extra=""; [ "$name" = rows_lm ] && extra=--deterministic
  timeout 150 scanforge bench --rows "$r" --json "$logs/sf_$name.json" $extra > "$logs/sf_$name.log" 2>&1
  [ "${SIDE_BY_SIDE_UNTUNED:-0}" = 1 ] &&
    timeout 150 scanforge bench --untuned --rows "$r" --json "$logs/sf_untuned_$name.json" $extra \
      > "$logs/sf_untuned_$name.log" 2>&1
  [ "${SIDE_BY_SIDE_BLOCK_STATES:-0}" = 1 ] &&
    timeout 150 scanforge bench --block-states --rows "$r" --json "$logs/sf_block_$name.json" $extra \
      > "$logs/sf_block_$name.log" 2>&1
done
wait $build
for r in "${rows[@]}"; do
  name=$(basename "$r" .txt)
  timeout 150 python3 "$anchor/anchor_bench.py" bench /tmp/anchor "$r" --json "$logs/anchor_$name.json" \
    > "$logs/anchor_$name.log" 2>&1
  echo "== $r"
  python3 "$anchor/compare.py" "$logs/sf_$name.json" "$logs/anchor_$name.json"
  if [ "$name" = rows_lm ]; then # the training steps and the deterministic backward's cost
    echo "== $r: training steps"
    python3 bench/training_steps.py "$logs/sf_$name.json" "$logs/anchor_$name.json"
  fi
  if [ "${SIDE_BY_SIDE_UNTUNED:-0}" = 1 ]; then
    echo "== $r, scanforge --untuned"
    python3 "$anchor/compare.py" "$logs/sf_untuned_$name.json" "$logs/anchor_$name.json"
  fi
  if [ "${SIDE_BY_SIDE_BLOCK_STATES:-0}" = 1 ]; then
    echo "== $r, scanforge --block-states"
    python3 "$anchor/compare.py" "$logs/sf_block_$name.json" "$logs/anchor_$name.json"
    if [ "$name" = rows_lm ]; then
      echo "== $r, scanforge --block-states: training steps"
      python3 bench/training_steps.py "$logs/sf_block_$name.json" "$logs/anchor_$name.json"
    fi
  fi
done
