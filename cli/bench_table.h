/* bench_table.h: the text tables `scanforge bench` prints, one per pass, a line per row. */
#ifndef SCANFORGE_CLI_BENCH_TABLE_H
#define SCANFORGE_CLI_BENCH_TABLE_H

#include <stdbool.h>

#include "cli/bench_rows.h"
#include "cli/bench_timing.h"

/* The title and column heads of pass p's table (with_det: the deterministic columns). */
void bench_table_header(bench_pass p, bool with_det);
/* The row's line of pass p's table, flushed so that a long run shows each row as it ends. */
void bench_table_row(const bench_row *r, const bench_row_result *res, bench_pass p);

#endif
