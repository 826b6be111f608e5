/* bench_rows.c: the rows of `scanforge bench`: their list, the --rows file parsed, a row's label. */
#include "cli/bench_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/scan_common.h"
#include "base/error.h"

bool bench_rows_add(bench_row_list *list, bench_row row) {
  if (list->count == list->capacity) {
    int capacity = list->capacity ? 2 * list->capacity : 32;
    bench_row *grown = realloc(list->rows, (size_t)capacity * sizeof *grown);
    if (!grown) return false;
    list->rows = grown;
    list->capacity = capacity;
  }
  list->rows[list->count++] = row;
  return true;
}

void bench_rows_free(bench_row_list *list) {
  free(list->rows);
  *list = (bench_row_list){0};
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static char *trim(char *s) {
  while (is_blank(*s)) s++;
  char *end = s + strlen(s);
  while (end > s && is_blank(end[-1])) *--end = '\0';
  return s;
}

/* One line "batch,dim,L,N[,z][,dtype]" (comment and blanks gone) into *r; *typed says
 * whether it named its dtype. */
static bool parse_row(char *line, bench_row *r, bool *typed) {
  char *rest = line, *fields[6];
  int count = 0;
  for (char *field; (field = strsep(&rest, ",")) != NULL;) {
    if (count == 6) return false;
    fields[count++] = trim(field);
  }
  if (count < 4) return false;
  long long shape[4];
  for (int i = 0; i < 4; i++) /* what cli_parse_shape accepts, field by field */
    if (!cli_parse_positive(fields[i], i == 3 ? 256 : (1LL << 40), &shape[i])) return false;
  *r = (bench_row){.batch = shape[0], .dim = shape[1], .seqlen = shape[2], .dstate = (int)shape[3]};
  *typed = false;
  int next = 4;
  if (next < count && strcmp(fields[next], "z") == 0) r->z = true, next++;
  if (next < count && cli_parse_dtype(fields[next], &r->dtype)) *typed = true, next++;
  return next == count;
}

sf_status bench_rows_parse(const char *text, size_t length, const char *origin, const sf_dtype *dtypes,
                           int ndtypes, bench_row_list *out) {
  size_t pos = 0;
  int number = 0;
  while (pos < length) {
    number++;
    const char *start = text + pos, *newline = memchr(start, '\n', length - pos);
    size_t size = newline ? (size_t)(newline - start) : length - pos;
    pos += size + (newline ? 1 : 0);
    if (memchr(start, '\0', size))
      return sf_fail(SF_EINVAL, "%s:%d: the line holds a NUL byte (a rows file is text)", origin, number);
    char *line = malloc(size + 1);
    if (!line) return sf_fail(SF_ENOMEM, "%s: out of memory", origin);
    memcpy(line, start, size);
    line[size] = '\0';
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *row_text = trim(line);
    if (!*row_text) {
      free(line);
      continue;
    }
    char *shown = strdup(row_text); /* parse_row cuts the text up */
    bench_row r;
    bool typed = false;
    sf_status st = SF_OK;
    if (!shown)
      st = sf_fail(SF_ENOMEM, "%s: out of memory", origin);
    else if (!parse_row(row_text, &r, &typed))
      st = sf_fail(SF_EINVAL, "%s:%d: expected batch,dim,L,N[,z][,dtype] with positive integers (N at most 256), got '%.200s%s'",
                   origin, number, shown, strlen(shown) > 200 ? "..." : "");
    for (int i = 0; st == SF_OK && i < (typed ? 1 : ndtypes); i++) {
      if (!typed) r.dtype = dtypes[i];
      if (!bench_rows_add(out, r)) st = sf_fail(SF_ENOMEM, "%s: out of memory", origin);
    }
    free(shown);
    free(line);
    if (st != SF_OK) return st;
  }
  if (out->count == 0) return sf_fail(SF_EINVAL, "%s: no rows in the file", origin);
  return SF_OK;
}

void bench_row_label(const bench_row *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%lld,%lld,%lld,%d%s", (long long)r->batch, (long long)r->dim, (long long)r->seqlen,
           r->dstate, r->z ? ",z" : "");
}
