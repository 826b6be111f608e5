/* kernel_params.h: the argument block of the generated scan kernels, passed by value.
 * Shared verbatim by the C runtime and the generated CUDA (the template set embeds this
 * file and templates include it), so the two layouts cannot drift apart. Plain C only:
 * pointers, long long, int, float, and one shared helper (sf_combine_runs). */
#ifndef SCANFORGE_KERNEL_PARAMS_H
#define SCANFORGE_KERNEL_PARAMS_H

typedef struct sf_fwd_params {
  /* (batch, dim, L) in T, L contiguous; strides in elements */
  const void *u;
  const void *delta;
  const void *z; /* gate, read only when the variant has z=1 */
  void *out;
  long long u_batch_stride, u_dim_stride;
  long long delta_batch_stride, delta_dim_stride;
  long long z_batch_stride, z_dim_stride;
  long long out_batch_stride, out_dim_stride;
  /* variable: (batch, G, N, L) in T, L contiguous; fixed: (dim, N) fp32, contiguous */
  const void *B;
  const void *C;
  long long B_batch_stride, B_group_stride, B_state_stride;
  long long C_batch_stride, C_group_stride, C_state_stride;
  const float *A;          /* (dim, N) contiguous */
  const float *D;          /* (dim,), read when D=1 */
  const float *delta_bias; /* (dim,), read when delta_bias=1 */
  const float *h0;         /* (batch, dim, N) or NULL: initial state */
  float *last_state;       /* (batch, dim, N) or NULL */
  float *saved_states;     /* (batch, dim, nsaved, N) or NULL: the state after every
                              state_interval-th step and after the last step */
  int batch;
  int dim;
  int seqlen;
  int groups;  /* channel d reads group d / (dim / groups) */
  int state_interval; /* a power of two: sf_scan_fwd_args.state_interval resolved */
  int nsaved;         /* ceil(seqlen / state_interval) */
  int state_shift;    /* log2(state_interval): saved state k ends at step (k + 1) << state_shift.
                         A parameter, not computed in the kernel: the compiler then reads it
                         from the parameter bank instead of keeping (or spilling) a register */
  /* Segments in parallel (split=state templates, their carry pass first): block z takes
   * the steps [z * segment, (z + 1) * segment) alone. segment is a power of two, a
   * multiple of items, that divides the default interval; with a shorter state_interval
   * it may span several saved states, and the backward then needs no carry_state; nsegments =
   * ceil(seqlen / segment). The carries, (batch, dim, nsegments, N) each: the product of
   * a segment's decays and its state at its end from a state of 0 at its start. NULL
   * (and nsegments 0): one block scans every step. The carry pass writes them; the
   * backward's carry pass writes them too, with carry_adjoint below. The forward's
   * combine (sf_scan_fwd_combine) then replaces each carry_state by the state before its
   * segment; the backward's keeps carry_state as measured. */
  int segment, nsegments;
  float *carry_decay, *carry_state;
} sf_fwd_params;

/* The backward kernel's arguments: the forward's inputs (out and last_state unused),
 * what the forward saved, and the gradients. */
typedef struct sf_bwd_params {
  sf_fwd_params f;
  const void *dout; /* (batch, dim, L) in T */
  long long dout_batch_stride, dout_dim_stride;
  const float *d_last_state; /* (batch, dim, N) or NULL */
  void *du;                  /* (batch, dim, L) in T, or NULL */
  void *ddelta;
  void *dz;
  long long du_batch_stride, du_dim_stride;
  long long ddelta_batch_stride, ddelta_dim_stride;
  long long dz_batch_stride, dz_dim_stride;
  /* fp32, zeroed before the launch, accumulated with atomics: dA (dim, N); dB, dC
   * variable (batch, G, N, L) or fixed (dim, N); dD, ddelta_bias (dim,) */
  float *dA, *dB, *dC, *dD, *ddelta_bias;
  float *dh0; /* (batch, dim, N), written */
  /* Segments in parallel (split=state backward): with f.carry_decay and f.carry_state,
   * (batch, dim, f.nsegments, N): a segment's adjoint at its start when the adjoint past
   * its end is 0, until the combine (sf_scan_bwd_combine) replaces it by the adjoint past
   * the segment's end. Block z starts from the state the earlier segments of its state
   * interval hand it and from that adjoint. */
  float *carry_adjoint;
} sf_bwd_params;

/* The arguments of the backward's two small kernels (templates/bwd_sums.tpl), launched
 * in blocks of SF_SUMS_THREADS threads, each serving the five sums the backward writes,
 * in the order dA, dB, dC, dD, ddelta_bias (NULL: not wanted), sizes in floats.
 * sf_scan_bwd_zero clears them before the default mode's atomics; sf_scan_bwd_finalize adds
 * the deterministic mode's partials, `slices` arrays of `sizes` floats a sum. */
#define SF_BWD_SUMS 5
#define SF_SUMS_THREADS 256
#define SF_SUMS_LOADS 8 /* partials a finalize thread loads before it adds them */
typedef struct sf_bwd_zero_params {
  float *sums[SF_BWD_SUMS];
  long long counts[SF_BWD_SUMS];
} sf_bwd_zero_params;
typedef struct sf_bwd_finalize_params {
  const float *partials[SF_BWD_SUMS];
  float *sums[SF_BWD_SUMS];
  long long slices[SF_BWD_SUMS], sizes[SF_BWD_SUMS];
} sf_bwd_finalize_params;

/* The combine kernels' shape (templates/carry_combine.tpl), computed alike on host and
 * device: blocks of 256 threads, each (row, state) pair served by `runs` threads that
 * split its `maps` segment maps into runs. One thread walks all of a pair's maps once the
 * launch's pairs fill the GPU (about half the threads an H100 holds at once; measured on
 * an H100, docs/design-segments.md). With fewer pairs, enough threads that each run fits
 * the SF_COMBINE_RUN_MAPS maps a thread loads at once: up to SF_COMBINE_LANE_RUNS lanes of
 * a warp, chained with shuffles; past that, SF_COMBINE_SHARED_RUNS threads in different
 * warps, chained in shared memory (measured on an H200, docs/design-segments.md). */
#define SF_COMBINE_THREADS 256
#define SF_COMBINE_FILL 131072LL
#define SF_COMBINE_RUN_MAPS 8
#define SF_COMBINE_LANE_RUNS 8
#define SF_COMBINE_SHARED_RUNS 32
#ifdef __CUDACC__
#define SF_PARAMS_FN __device__ __forceinline__
#else
#define SF_PARAMS_FN static inline
#endif
SF_PARAMS_FN int sf_combine_runs(long long states, int maps) {
  if (states >= SF_COMBINE_FILL) return 1;
  int runs = 1;
  while (runs < SF_COMBINE_LANE_RUNS && runs * SF_COMBINE_RUN_MAPS < maps) runs *= 2;
  return runs * SF_COMBINE_RUN_MAPS < maps ? SF_COMBINE_SHARED_RUNS : runs;
}

#endif
