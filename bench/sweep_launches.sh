#!/usr/bin/env bash
# Times a row file's backward (or, with SWEEP_PASS=fwd, its forward) under several launch
# specs (run on the device machine; docs/tuning.md: re-choosing an entry by a sweep).
# usage: bench/sweep_launches.sh ROWS SPEC...; an empty SPEC is the tuned or heuristic choice.
# Prints bench's lines, each prefixed with its spec and pass (fwd or bwd). SWEEP_ARGS: more bench
# arguments for every run (for example '--block-states', which times the forward too unless
# SWEEP_ARGS also names the pass: '--backward-only --block-states').
set -u
rows=$1; shift
pass=${SWEEP_PASS:-bwd}
case "$pass" in
  bwd) knob=--bwd-spec; only=--backward-only ;;
  fwd) knob=--spec; only=--forward-only ;;
  *) echo "SWEEP_PASS: expected fwd or bwd, got '$pass'" >&2; exit 2 ;;
esac
for spec in "$@"; do
  args=(--rows "$rows" --reps 20 --warmup 3 --no-overheads)
  if [ -z "${SWEEP_ARGS:-}" ]; then args+=("$only"); else read -r -a more <<< "$SWEEP_ARGS"; args+=("${more[@]}"); fi
  [ -n "$spec" ] && args+=("$knob" "$spec")
  scanforge bench "${args[@]}" 2>&1 | awk -v spec="${spec:-default}" '/^forward/ { pass = "fwd" } /^backward/ { pass = "bwd" } /^[0-9]/ { print spec, pass, $0 }'
done
