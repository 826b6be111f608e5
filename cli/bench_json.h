/* bench_json.h: the rows of `scanforge bench --json`. */
#ifndef SCANFORGE_CLI_BENCH_JSON_H
#define SCANFORGE_CLI_BENCH_JSON_H

#include <jansson.h>

#include "cli/bench_rows.h"
#include "cli/bench_timing.h"

/* Each pass's key in the JSON ("forward", "backward", "backward_deterministic"). */
extern const char *const bench_pass_key[PASSES];

/* A row and the passes it timed as a new JSON object (the caller owns it). */
json_t *bench_row_json(const bench_row *r, const bench_row_result *res);

#endif
