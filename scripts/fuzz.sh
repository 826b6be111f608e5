#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with clang into build-fuzz/ and runs each for a
# while (docs/fuzzing.md). Fails when a harness finds a crash, a leak, undefined behaviour
# or a hang, and prints the input that reproduces it.
#   bash scripts/fuzz.sh [SECONDS] [HARNESS...]     SECONDS per harness: argument, else
#                                                    $FUZZ_SECONDS, else 40
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-${FUZZ_SECONDS:-40}}"
[ $# -gt 0 ] && shift
case "$seconds" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac

# The longest input each harness gets: a little more than the largest real file it reads.
declare -A max_len=([variant_spec]=512 [template]=4096 [tuning_db]=40000 [cache_manifest]=4096
                    [bench_rows]=2048 [tune_entries]=2048)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(variant_spec template tuning_db cache_manifest bench_rows tune_entries)
for h in "${harnesses[@]}"; do
  [ -n "${max_len[$h]:-}" ] || { echo "fuzz.sh: no harness '$h' (known: ${!max_len[*]})" >&2; exit 2; }
done

bash scripts/install-deps.sh
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (libFuzzer); apt-get install clang" >&2; exit 1; }
build=build-fuzz
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DSCANFORGE_FUZZ=ON -DSCANFORGE_BUILD_TESTS=OFF \
      -DSCANFORGE_BUILD_CLI=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${harnesses[@]}")

# Seeds from the repository's own files, assembled afresh each run (nothing committed
# twice); the hand-made ones live in fuzz/corpus/<harness>/.
seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{variant_spec,template,tuning_db,bench_rows,tune_entries}
n=0
{
  grep -ohE '`[A-Za-z_]+=[^` ]+`' README.md docs/*.md | tr -d '`'
  sed -n 's/^ *"flags": "\(.*\)",$/\1/p' tuning/defaults/*.json
  # `scanforge variants` of the ordinary build, when there is one (CI builds it first).
  if [ -x build/scanforge ]; then build/scanforge variants 2>/dev/null; fi
} | sort -u | while read -r spec; do
  n=$((n + 1)); printf '%s' "$spec" > "$seeds/variant_spec/seed_$n"
done
for f in templates/*.tpl templates/*.lua; do
  # Whole-line pieces that fit max_len, so every part of every template is a seed.
  split -C 4000 -d "$f" "$seeds/template/$(basename "$f")."
done
cp tuning/defaults/*.json "$seeds/tuning_db/"
cp bench/rows_*.txt "$seeds/bench_rows/"
sed -n 's/^    \([0-9][0-9,]* .*\)$/\1/p; s/^    \([0-9][0-9,]*\)$/\1/p' docs/tuning.md > "$seeds/tune_entries/docs_tuning"

failed=()
for h in "${harnesses[@]}"; do
  corpus="$build/corpus/$h" artifacts="$build/artifacts/$h"
  mkdir -p "$corpus" "$artifacts"
  rm -f "$artifacts"/*
  echo "== fuzz_$h: ${seconds}s, inputs up to ${max_len[$h]} bytes"
  dirs=("$corpus" "fuzz/corpus/$h" "fuzz/regressions/$h")
  [ -d "$seeds/$h" ] && dirs+=("$seeds/$h")
  existing=()
  for d in "${dirs[@]}"; do [ -d "$d" ] && existing+=("$d"); done
  dict=()
  [ -f "fuzz/$h.dict" ] && dict=(-dict="fuzz/$h.dict")
  # The first folder takes what the run finds: build-fuzz/corpus/ grows from run to run.
  if ! "$build/fuzz/fuzz_$h" -max_total_time="$seconds" -max_len="${max_len[$h]}" -timeout=20 \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "${existing[@]}" \
       >"$build/fuzz_$h.log" 2>&1 || [ -n "$(ls -A "$artifacts")" ]; then
    tail -n 60 "$build/fuzz_$h.log"
    failed+=("$h")
    for f in "$artifacts"/*; do [ -e "$f" ] && echo "fuzz_$h: reproduce with: $build/fuzz/fuzz_$h $f"; done
  else
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$build/fuzz_$h.log" | tail -n 2 || true
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failed: ${failed[*]} (logs in $build/fuzz_<harness>.log; keep each input in fuzz/regressions/<harness>/ once fixed)" >&2
  exit 1
fi
echo "fuzz.sh: every harness ran ${seconds}s clean"
