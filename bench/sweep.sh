#!/usr/bin/env bash
# Times bench/rows_key.txt under several launch specs (run on the device machine).
# usage: bench/sweep.sh [SPEC...]; prints one table per spec.
set -u
rows=$(dirname "$0")/rows_key.txt
for spec in "$@"; do
  echo "== spec: ${spec:-heuristic}"
  if [ -n "$spec" ]; then scanforge bench --rows "$rows" --reps 30 --spec "$spec" 2>&1 | grep -E '^[0-9]'
  else scanforge bench --rows "$rows" --reps 30 2>&1 | grep -E '^[0-9]'; fi
done
