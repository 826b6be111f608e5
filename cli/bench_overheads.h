/* bench_overheads.h: what `scanforge bench` reports once per pass besides the rows: a cold
 * NVRTC compile, a disk-cache hit, an in-process kernel lookup and the host time of a call. */
#ifndef SCANFORGE_CLI_BENCH_OVERHEADS_H
#define SCANFORGE_CLI_BENCH_OVERHEADS_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/bench_rows.h"
#include "cli/bench_timing.h"

/* The variant of the first row's forward or backward into *v, printed and compiled cold
 * (timed into j); false when the row has no variant. Runs before the rows, which would
 * otherwise have compiled it already. */
bool bench_first_variant(bench_gpu *g, const bench_row_list *rows, bool backward, json_t *j, sf_variant *v);
/* After the rows: the disk and in-process hits of v (when `have`) and the host launch. */
void bench_measure_cached(bench_gpu *g, bool have, const sf_variant *v, bool backward, json_t *j);

#endif
