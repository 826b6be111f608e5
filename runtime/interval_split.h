/* interval_split.h: whether a split=state kernel scans its state intervals in parallel. */
#ifndef SCANFORGE_INTERVAL_SPLIT_H
#define SCANFORGE_INTERVAL_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/context.h"
#include "runtime/module.h"

/* The split=state templates can scan their state intervals in parallel (one block per
 * interval, grid z) once a carry pass has measured what each interval hands the next.
 * That pass costs about a fifth of the backward and half of the forward, and pays only
 * when one block per group of channels leaves the GPU idle: *parallel is set when there
 * are at least two intervals and the `blocks` of the plain launch fill less than
 * `max_fill` of what the GPU holds at once (the kernel's blocks per SM x SMs). */
sf_status sf_intervals_in_parallel(sf_context *ctx, const sf_kernel *kernel, const sf_variant *v, int64_t blocks,
                                   int64_t nsaved, double max_fill, bool *parallel);

/* The measured limits (H200, docs/perf.md: backward v5, forward v8). Backward: 10x faster
 * with 64 channels of 65536 steps, 18% slower for the Mamba-130M row at 73% of a wave.
 * Forward: 4-6x faster with few channels over long sequences and 9% faster at 32% of a
 * wave ((2,512,2048,128) bf16), 10-35% slower at 48%. */
#define SF_BWD_PARALLEL_MAX_FILL 0.5
#define SF_FWD_PARALLEL_MAX_FILL 0.4

#endif
