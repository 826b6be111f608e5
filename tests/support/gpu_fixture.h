/* gpu_fixture.h: a context on the GPU for the suites of tests/gpu, or a clean skip without one. */
#ifndef SCANFORGE_TESTS_GPU_FIXTURE_H
#define SCANFORGE_TESTS_GPU_FIXTURE_H

#include "scanforge/scanforge.h"

/* The context of the running test; NULL when there is no CUDA device or driver. */
extern sf_context *gpu_ctx;

/* .init and .fini of every GPU test. */
void gpu_setup(void);
void gpu_teardown(void);
/* Skips the running test (a skip, not a pass) when there is no GPU, saying why. */
void gpu_skip_without_device(void);

#endif
