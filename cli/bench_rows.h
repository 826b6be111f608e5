/* bench_rows.h: the rows `scanforge bench` times, and the --rows file that lists them. */
#ifndef SCANFORGE_CLI_BENCH_ROWS_H
#define SCANFORGE_CLI_BENCH_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

/* One call shape and type: batch, dim, L, N, with or without the gate z. */
typedef struct bench_row {
  int64_t batch, dim, seqlen;
  int dstate;
  bool z;
  sf_dtype dtype;
} bench_row;

typedef struct bench_row_list {
  bench_row *rows;
  int count, capacity;
} bench_row_list;

/* Appends a row; false when out of memory. */
bool bench_rows_add(bench_row_list *list, bench_row row);
void bench_rows_free(bench_row_list *list);

/* The row as "batch,dim,L,N[,z]" (the type apart), for tables and messages. */
void bench_row_label(const bench_row *r, char *buf, size_t cap);

/* Parses the text of a rows file (`length` bytes): one row per line,
 * "batch,dim,L,N[,z][,dtype]" (positive integers, N at most 256), '#' starts a comment,
 * blank lines are skipped. A row without its dtype is added once per entry of dtypes[].
 * SF_EINVAL names origin:line and the line when one is not a row, or says the text has
 * no rows; SF_ENOMEM when out of memory. On failure *out holds what came before. */
sf_status bench_rows_parse(const char *text, size_t length, const char *origin, const sf_dtype *dtypes,
                           int ndtypes, bench_row_list *out);

#endif
