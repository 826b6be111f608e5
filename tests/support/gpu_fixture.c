/* gpu_fixture.c: a context on the GPU for the suites of tests/gpu, or a clean skip without one. */
#include "tests/support/gpu_fixture.h"

#include <criterion/criterion.h>

sf_context *gpu_ctx;

void gpu_setup(void) {
  int count = 0;
  gpu_ctx = NULL;
  if (sf_device_count(&count) != SF_OK || count == 0) return;
  cr_assert_eq(sf_context_create(NULL, &gpu_ctx), SF_OK, "%s", sf_last_error());
}

void gpu_teardown(void) {
  sf_context_destroy(gpu_ctx);
  gpu_ctx = NULL;
}

void gpu_skip_without_device(void) {
  if (!gpu_ctx) cr_skip_test("no CUDA device or driver: %s", sf_last_error());
}
