/* bench_rows_source.h: where the rows of `scanforge bench` and `scanforge plan` come from:
 * the reference rows, or a --rows file. Messages name the command (`command`: "bench"). */
#ifndef SCANFORGE_CLI_BENCH_ROWS_SOURCE_H
#define SCANFORGE_CLI_BENCH_ROWS_SOURCE_H

#include "cli/bench_rows.h"

/* The reference rows (bench/rows_reference.txt); the first is the smallest. */
extern const bench_row bench_reference_rows[];

/* What --rows and --dtype ask for: the file's rows (those without a type in each type of
 * dtypes[], fp32 and bf16 when ndtypes is 0), or without a path the reference rows (as
 * they are, or each shape once in each type of dtypes[]). -1 on success, else the exit
 * status (the message printed). */
int bench_rows_load(const char *command, const char *path, const sf_dtype *dtypes, int ndtypes, bench_row_list *out);

#endif
