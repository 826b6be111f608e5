/* bench_table.h: the text tables `scanforge bench` prints, one per pass, a line per row. */
#ifndef SCANFORGE_CLI_BENCH_TABLE_H
#define SCANFORGE_CLI_BENCH_TABLE_H

#include <stdbool.h>

#include "cli/bench_rows.h"
#include "cli/bench_timing.h"

/* The launch's main kernel blocks over what the GPU holds at once (blocks per SM x SMs):
 * 1.0 is one full wave; 1.1 leaves most SMs idle during a second, short one. */
double bench_waves(const sf_launch_shape *s);
/* The title and column heads of pass p's table (with_det: the deterministic columns). */
void bench_table_header(bench_pass p, bool with_det);
/* The row's line of pass p's table, flushed so that a long run shows each row as it ends. */
void bench_table_row(const bench_row *r, const bench_row_result *res, bench_pass p);

#endif
