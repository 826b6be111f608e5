/* fuzz_bench_rows.c: the --rows file reader of `scanforge bench` (cli/bench_rows.c). Every
 * row it accepts must be a shape the command can run: positive sizes, 1 <= N <= 256. */
#include "cli/bench_rows.h"
#include "fuzz/fuzz_support.h"
#include "base/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sf_clear_error(); /* the one state the library keeps between calls */
  static const sf_dtype dtypes[] = {SF_FP32, SF_BF16};
  bench_row_list rows = {0};
  sf_status st = bench_rows_parse((const char *)data, size, "fuzz.txt", dtypes, 2, &rows);
  FUZZ_REQUIRE(st == SF_OK || st == SF_EINVAL || st == SF_ENOMEM, "unexpected status %d", (int)st);
  if (st == SF_OK) FUZZ_REQUIRE(rows.count > 0, "accepted a file with no rows");
  for (int i = 0; i < rows.count; i++) {
    const bench_row *r = &rows.rows[i];
    FUZZ_REQUIRE(r->batch >= 1 && r->dim >= 1 && r->seqlen >= 1 && r->dstate >= 1 && r->dstate <= 256,
                 "row %d: %lld,%lld,%lld,%d", i, (long long)r->batch, (long long)r->dim, (long long)r->seqlen,
                 r->dstate);
    FUZZ_REQUIRE(r->dtype == SF_FP32 || r->dtype == SF_FP16 || r->dtype == SF_BF16, "row %d: dtype %d", i,
                 (int)r->dtype);
  }
  bench_rows_free(&rows);
  return 0;
}
