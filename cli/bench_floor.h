/* bench_floor.h: the floor `scanforge bench` compares a pass with: the least time its bytes
 * and its exps can take on the GPU. */
#ifndef SCANFORGE_CLI_BENCH_FLOOR_H
#define SCANFORGE_CLI_BENCH_FLOOR_H

#include <stdbool.h>

#include "cli/bench_rows.h"
#include "cli/bench_timing.h"

/* Sets out's bytes, exps and floor_ms for the row's forward or backward on g. */
void bench_set_floor(const bench_gpu *g, const bench_row *r, bool backward, bench_pass_result *out);

#endif
