/* segments.h: how a split=state kernel splits the sequence into segments scanned in
 * parallel. */
#ifndef SCANFORGE_SEGMENTS_H
#define SCANFORGE_SEGMENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/module.h"
#include "runtime/launch/context.h"

/* The split=state templates can scan segments of the sequence in parallel (one block per
 * segment, grid z) once a carry pass has measured what each segment hands the next
 * (docs/design-segments.md). That pass costs about a fifth of the backward and half of
 * the forward, and pays only when one block per group of channels leaves the GPU idle. */
typedef struct sf_segments {
  int64_t count; /* segments scanned in parallel; 0: one block walks every step */
  int length;    /* steps per segment: a power of two dividing the state interval */
} sf_segments;

/* Segments for a launch of `blocks` blocks (grid x times batch rows) of `kernel`: none
 * unless the variant splits states, the sequence spans two state intervals or more and
 * the blocks fill less than `max_fill` of what the GPU holds at once (the kernel's blocks
 * per SM x SMs). Then the state interval is halved, down to SF_MIN_SEGMENT steps (and
 * never under the variant's block of steps), until the segments' blocks fill the GPU
 * SF_SEGMENT_WAVES times over. */
sf_status sf_plan_segments(sf_context *ctx, const sf_kernel *kernel, const sf_variant *v, int64_t blocks,
                           int64_t seqlen, double max_fill, sf_segments *plan);
/* The two passes that run before a segmented scan, shared by the forward and the backward:
 * the carry pass (sf_scan_{fwd,bwd}_carry) and the combine (sf_scan_{fwd,bwd}_combine,
 * templates/carry_combine.tpl), with the carries' stream-ordered workspace. */
typedef struct sf_segment_passes {
  const sf_kernel *carry, *combine;
  CUdeviceptr carries; /* `arrays` arrays of `count` floats, one after another */
  int64_t count;       /* floats per array: batch x dim x segments x dstate */
  int64_t per_row;     /* floats per batch row of one array: dim x segments x dstate */
} sf_segment_passes;

/* Loads both passes' kernels of variant v and allocates `arrays` carry arrays for `plan`
 * over batch x dim channels (nothing when plan has no segments). */
sf_status sf_segment_passes_open(sf_context *ctx, const sf_cu *cu, const sf_variant *v, const sf_segments *plan,
                                 int64_t batch, int64_t dim, int arrays, CUstream stream, sf_segment_passes *out);
/* Carry array `array` from batch row b0 on (the chunk a launch covers). */
float *sf_segment_carries(const sf_segment_passes *sp, int array, int64_t b0);
/* Runs the carry pass (grid x by `rows` by `carry_segments`, `block` threads) and the
 * combine (sf_combine_runs threads per (row, channel, state) for carry_segments maps,
 * kernel_params.h) of one chunk of `rows` batch rows; `params` is the kernel's argument
 * block with the carries set. */
sf_status sf_segment_passes_run(const sf_cu *cu, const sf_segment_passes *sp, unsigned grid_x, int64_t rows,
                                int64_t carry_segments, unsigned block, int64_t dim, int64_t dstate, void **params,
                                CUstream stream);
/* Frees the workspace (stream-ordered); returns `st`, or the free's failure when st is SF_OK. */
sf_status sf_segment_passes_close(const sf_cu *cu, sf_segment_passes *sp, CUstream stream, sf_status st);
/* The same choice for a GPU that holds `capacity` of the kernel's blocks at once. */
sf_segments sf_segments_for(const sf_variant *v, int64_t blocks, int64_t seqlen, double capacity, double max_fill);

/* The measured limits (H200, docs/perf.md: backward v5, forward v8). Backward: 10x faster
 * with 64 channels of 65536 steps, 18% slower for the Mamba-130M row at 73% of a wave.
 * Forward: 4-6x faster with few channels over long sequences and 9% faster at 32% of a
 * wave ((2,512,2048,128) bf16), 10-35% slower at 48%. */
#define SF_BWD_PARALLEL_MAX_FILL 0.5
#define SF_FWD_PARALLEL_MAX_FILL 0.4
/* Shorter segments give more blocks but more carries to combine and a pipeline to fill
 * per block ($SCANFORGE_MIN_SEGMENT overrides it, for experiments: a power of two). */
#define SF_MIN_SEGMENT 64
#define SF_SEGMENT_WAVES 2
/* a launch's grid z holds at most 65535 blocks */
#define SF_MAX_SEGMENTS 65535

#endif
