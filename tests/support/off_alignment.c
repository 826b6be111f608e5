/* off_alignment.c: the calls of the GPU suites' rows_off_alignment tests. */
#include "tests/support/off_alignment.h"

sf_check_shape off_alignment_shape(int i, int64_t dim) {
  static const int64_t lengths[] = {49, 98, 196, 1001};
  static const sf_dtype dtypes[] = {SF_FP32, SF_FP16, SF_BF16};
  return (sf_check_shape){.batch = 2, .dim = dim, .seqlen = lengths[i / 3], .dstate = 8, .groups = 2,
                          .dtype = dtypes[i % 3], .z = true, .D = true, .delta_bias = true,
                          .softplus = true, .h0 = true, .d_last_state = true};
}
