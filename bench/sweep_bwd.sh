#!/usr/bin/env bash
# Times the backward of a row file under several launch specs (run on the device machine).
# usage: bench/sweep_bwd.sh ROWS SPEC...; an empty SPEC is the tuned or heuristic choice.
# Prints bench's lines, each prefixed with its spec and pass (fwd or bwd). SWEEP_ARGS: more bench
# arguments for every run (for example '--block-states', which times the forward too).
set -u
rows=$1; shift
for spec in "$@"; do
  args=(--rows "$rows" --reps 20 --warmup 3 --no-overheads)
  if [ -z "${SWEEP_ARGS:-}" ]; then args+=(--backward-only); else read -r -a more <<< "$SWEEP_ARGS"; args+=("${more[@]}"); fi
  [ -n "$spec" ] && args+=(--bwd-spec "$spec")
  scanforge bench "${args[@]}" 2>&1 | awk -v spec="${spec:-default}" '/^forward/ { pass = "fwd" } /^backward/ { pass = "bwd" } /^[0-9]/ { print spec, pass, $0 }'
done
