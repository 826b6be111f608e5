#!/usr/bin/env bash
# Times a row file's forward and backward with the sequence split into segments no
# shorter than each given length (run on the device machine; docs/design-segments.md).
# usage: bench/sweep_segments.sh ROWS LENGTH...   e.g. bench/sweep_segments.sh bench/rows_mid.txt 512 64 16
# Prints bench's lines, each prefixed with the least segment length.
set -u
rows=$1; shift
for least in "$@"; do
  SCANFORGE_MIN_SEGMENT=$least scanforge bench --rows "$rows" --reps 20 --warmup 3 2>&1 |
    awk -v least="$least" '/^(forward|backward)/ { print "== segments >= " least ": " $0 } /^[0-9]/ { print least, $0 }'
done
