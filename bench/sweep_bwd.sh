#!/usr/bin/env bash
# Times the backward of a row file under several launch specs (run on the device machine).
# usage: bench/sweep_bwd.sh ROWS SPEC...; an empty SPEC is the tuned or heuristic choice.
# Prints bench's backward lines, each prefixed with its spec.
set -u
rows=$1; shift
for spec in "$@"; do
  args=(--rows "$rows" --reps 20 --warmup 3 --backward-only)
  [ -n "$spec" ] && args+=(--bwd-spec "$spec")
  scanforge bench "${args[@]}" 2>&1 | awk -v spec="${spec:-default}" '/^[0-9]/ { print spec, $0 }'
done
