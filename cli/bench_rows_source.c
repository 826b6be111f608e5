/* bench_rows_source.c: the rows `scanforge bench` and `scanforge plan` run: the reference
 * rows in the asked types, or a --rows file read whole and parsed (cli/bench_rows.c). */
#include "cli/bench_rows_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cli/commands.h"

/* The default rows: the reference rows (as bench/rows_reference.txt lists them). */
const bench_row bench_reference_rows[] = {
    {1, 4, 16, 4, false, SF_FP32},
    {4, 16, 64, 16, false, SF_FP32},
    {16, 64, 256, 64, false, SF_FP32},
    {1, 256, 1024, 16, false, SF_FP32},
    {1, 768, 1024, 16, false, SF_FP32},
    {64, 160, 196, 8, false, SF_FP32},
    {64, 320, 49, 8, false, SF_FP32},
    {64, 256, 196, 8, false, SF_FP32},
    {64, 512, 49, 8, false, SF_FP32},
    {8, 1536, 2048, 16, true, SF_FP32},
    {4, 4096, 2048, 16, true, SF_FP32},
    {1, 1536, 16384, 16, true, SF_FP32},
    {8, 1536, 2048, 16, true, SF_BF16},
    {4, 4096, 2048, 16, true, SF_BF16},
    {64, 160, 196, 8, false, SF_BF16},
    {64, 512, 49, 8, false, SF_BF16},
};
enum { REFERENCE_ROWS = sizeof bench_reference_rows / sizeof bench_reference_rows[0] };

static bool same_shape(const bench_row *a, const bench_row *b) {
  return a->batch == b->batch && a->dim == b->dim && a->seqlen == b->seqlen && a->dstate == b->dstate &&
         a->z == b->z;
}

/* The rows of the file at path; a row without a type is added in each type of dtypes[].
 * -1 on success, else the exit status (the message printed). */
static int bench_rows_read_file(const char *command, const char *path, const sf_dtype *dtypes, int ndtypes,
                                bench_row_list *out) {
  FILE *in = fopen(path, "rb");
  if (!in) {
    fprintf(stderr, "scanforge %s: --rows: cannot open '%s': %s\n", command, path, strerror(errno));
    return 2;
  }
  size_t length = 0, capacity = 0;
  char *text = NULL;
  bool failed = false;
  for (;;) {
    if (length == capacity) {
      char *grown = realloc(text, capacity = capacity ? 2 * capacity : 4096);
      if (!grown) {
        failed = true;
        break;
      }
      text = grown;
    }
    size_t got = fread(text + length, 1, capacity - length, in);
    length += got;
    if (got == 0) break;
  }
  failed |= ferror(in) != 0;
  fclose(in);
  if (failed) {
    free(text);
    fprintf(stderr, "scanforge %s: --rows: cannot read '%s'\n", command, path);
    return 2;
  }
  sf_status st = bench_rows_parse(text, length, path, dtypes, ndtypes, out);
  free(text);
  if (st == SF_ENOMEM) return cli_fail(command, "out of memory");
  if (st != SF_OK) {
    fprintf(stderr, "scanforge %s: --rows %s\n", command, sf_last_error());
    return 2;
  }
  return -1;
}

/* The reference rows into *out: as they are (ndtypes 0), else each shape once in every
 * type of dtypes[]. */
static int bench_rows_default(const char *command, const sf_dtype *dtypes, int ndtypes, bench_row_list *out) {
  for (int i = 0; i < REFERENCE_ROWS; i++) {
    if (ndtypes == 0) { /* the reference rows as they are */
      if (!bench_rows_add(out, bench_reference_rows[i])) return cli_fail(command, "out of memory");
      continue;
    }
    bool seen = false; /* each shape once, in every asked type */
    for (int k = 0; k < i && !seen; k++) seen = same_shape(&bench_reference_rows[k], &bench_reference_rows[i]);
    for (int t = 0; t < ndtypes && !seen; t++) {
      bench_row r = bench_reference_rows[i];
      r.dtype = dtypes[t];
      if (!bench_rows_add(out, r)) return cli_fail(command, "out of memory");
    }
  }
  return -1;
}

int bench_rows_load(const char *command, const char *path, const sf_dtype *dtypes, int ndtypes, bench_row_list *out) {
  static const sf_dtype both[] = {SF_FP32, SF_BF16};
  if (!path) return bench_rows_default(command, dtypes, ndtypes, out);
  return ndtypes ? bench_rows_read_file(command, path, dtypes, ndtypes, out)
                 : bench_rows_read_file(command, path, both, 2, out);
}
