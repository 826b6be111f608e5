#!/usr/bin/env bash
# Full variant specs, one a line, for `scanforge cache warm --grid`: each launch of a sweep
# file (bench/sweeps/, one launch's knobs a line, '#' comments) joined to the call's keys,
# once per type and with words=0 and 1 (the runtime picks words=1 for rows off 16-byte
# alignment, such as L = 49 in fp32 or 196 in bf16: docs/design-row-alignment.md).
# usage: bench/sweeps/full_specs.sh SWEEP_FILE KEYS TYPES
#   KEYS: the call's variant keys but the type (e.g. op=bwd,dstate=8,z=0); TYPES: fp32,bf16,...
set -eu
[ $# -eq 3 ] || { echo "usage: $0 SWEEP_FILE KEYS TYPES" >&2; exit 2; }
sweep=$1 keys=$2 types=$3
[ -r "$sweep" ] || { echo "$0: cannot read the sweep file '$sweep'" >&2; exit 2; }
IFS=, read -r -a type_list <<< "$types"
grep -v '^[[:space:]]*\(#\|$\)' "$sweep" | while read -r launch; do
  for t in "${type_list[@]}"; do
    for words in 0 1; do echo "$keys,dtype=$t,$launch,words=$words"; done
  done
done
