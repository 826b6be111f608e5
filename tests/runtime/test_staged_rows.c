/* test_staged_rows.c: which calls stage rows off 16-byte alignment, so that the launch takes
 * the kernels that copy them in 4-byte pieces (runtime/args/staged_rows.h). */
#include <criterion/criterion.h>
#include <stdalign.h>

#include "runtime/args/scan_args.h"
#include "runtime/args/staged_rows.h"

static alignas(16) char memory[1 << 12]; /* only addresses are looked at */

/* A contiguous call with variable B and C and a gate, strides resolved. */
static sf_scan_fwd_args call(sf_dtype dtype, int64_t seqlen) {
  sf_scan_fwd_args a = {.batch = 2, .dim = 64, .seqlen = seqlen, .dstate = 8, .groups = 2, .dtype = dtype,
                        .u = memory, .delta = memory + 256, .B = memory + 512, .B_var = true,
                        .C = memory + 768, .C_var = true, .z = memory + 1024};
  sf_scan_fwd_args resolved;
  sf_scan_fwd_resolve(&a, &resolved);
  return resolved;
}

Test(staged_rows, a_whole_number_of_16_bytes_a_row_is_aligned) {
  const sf_scan_fwd_args bf16_2048 = call(SF_BF16, 2048), fp32_196 = call(SF_FP32, 196);
  cr_expect(sf_staged_rows_aligned(&bf16_2048, NULL, 0, 0), "L = 2048 in bf16: 4096-byte rows");
  cr_expect(sf_staged_rows_aligned(&fp32_196, NULL, 0, 0), "L = 196 in fp32: 784-byte rows");
  cr_expect(sf_staged_rows_aligned(&bf16_2048, memory + 1280, 2 * 64 * 2048, 2048), "with an aligned dout");
}

Test(staged_rows, rows_of_other_lengths_or_bases_are_not) {
  const sf_scan_fwd_args bf16_196 = call(SF_BF16, 196), fp32_49 = call(SF_FP32, 49), bf16_49 = call(SF_BF16, 49);
  cr_expect_not(sf_staged_rows_aligned(&bf16_196, NULL, 0, 0), "L = 196 in bf16: 392-byte rows");
  cr_expect_not(sf_staged_rows_aligned(&fp32_49, NULL, 0, 0), "L = 49 in fp32: 196-byte rows");
  cr_expect_not(sf_staged_rows_aligned(&bf16_49, NULL, 0, 0), "L = 49 in bf16: 98-byte rows");
  sf_scan_fwd_args shifted = call(SF_FP32, 2048);
  shifted.delta = memory + 260;
  cr_expect_not(sf_staged_rows_aligned(&shifted, NULL, 0, 0), "delta 4 bytes past a boundary");
  const sf_scan_fwd_args aligned = call(SF_FP32, 2048);
  cr_expect_not(sf_staged_rows_aligned(&aligned, memory + 1288, 64 * 2048, 2048), "dout 8 bytes past");
  cr_expect_not(sf_staged_rows_aligned(&aligned, memory + 1280, 64 * 2048, 2049), "dout rows of 2049 floats");
}

Test(staged_rows, only_the_rows_a_call_stages_count) {
  sf_scan_fwd_args a = call(SF_BF16, 2048);
  a.z = NULL, a.z_batch_stride = 3, a.z_dim_stride = 3; /* no gate: its strides mean nothing */
  a.B_var = false, a.B = memory + 4, a.B_state_stride = 3; /* fixed B: (dim, N) fp32, not staged */
  cr_expect(sf_staged_rows_aligned(&a, NULL, 0, 0));
  a.C_state_stride = 2049; /* variable C rows of 2049 bf16 */
  cr_expect_not(sf_staged_rows_aligned(&a, NULL, 0, 0));
}
