/* cpu_kernel.h: the CPU scan's kernels over one block of channels, one set per instruction
 * set (AVX2 + FMA, portable), chosen at run time; cpu_scan.c and cpu_scan_bwd.c drive them. */
#ifndef SCANFORGE_CPU_KERNEL_H
#define SCANFORGE_CPU_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "scanforge/scanforge.h"

/* Where a block's backward reductions go: a thread's private buffers (NULL when that
 * gradient was not asked for). Channel d is local channel (d - chan_first) mod dim; the
 * (batch, group) slot b * G + g is local slot b * G + g - slot_first. */
typedef struct sf_cpu_bwd_sink {
  float *dA, *dB_fixed, *dC_fixed; /* (channels, N) */
  float *dD, *ddelta_bias;         /* (channels) */
  float *dB_var, *dC_var;          /* (slots, N, L) */
  int64_t chan_first, slot_first;
} sf_cpu_bwd_sink;

/* A block is up to `lanes` consecutive channels [d0, d0 + count) of one batch and one
 * group, computed together (one SIMD lane each); each lane's arithmetic is its own, so a
 * channel's results do not depend on how channels are blocked or threaded. */
typedef struct sf_cpu_kernels {
  const char *name; /* "avx2" or "portable" */
  int lanes;        /* channels per block */
  /* Floats of scratch one thread needs for the call (arguments resolved). */
  size_t (*fwd_scratch)(const sf_scan_fwd_args *a);
  size_t (*bwd_scratch)(const sf_scan_fwd_args *a);
  /* docs/math.md's forward / backward for channels [d0, d0 + count) of batch b. A thread runs
   * its blocks in order on one scratch; slot_begins marks the first of those in a (batch,
   * group) slot and slot_ends the last, between which the kernel keeps what the slot's
   * blocks share (B and C converted, per-lane sums of dB and dC) in the scratch. */
  void (*fwd_block)(const sf_scan_fwd_args *a, int64_t b, int64_t d0, int count, float *scratch,
                    bool slot_begins);
  void (*bwd_block)(const sf_scan_bwd_args *a, const sf_cpu_bwd_sink *sink, int64_t b, int64_t d0,
                    int count, float *scratch, bool slot_begins, bool slot_ends);
} sf_cpu_kernels;

extern const sf_cpu_kernels sf_cpu_kernels_portable;
#if defined(__x86_64__) && defined(__GNUC__)
#define SF_CPU_HAVE_AVX2_KERNELS 1
extern const sf_cpu_kernels sf_cpu_kernels_avx2;
#endif

/* The kernels for this machine: AVX2 + FMA where the CPU has both, else portable. The
 * environment variable SCANFORGE_CPU_KERNELS=portable forces the portable ones (tests,
 * comparisons); results differ between the two in the last bits (exp, fused multiply-add). */
const sf_cpu_kernels *sf_cpu_kernels_select(void);

/* How a call's channels are blocked: per (batch, group) slot, blocks of `lanes` channels
 * (the last one partial); without variable B or C all channels are one group. Blocks are
 * numbered batch-major, so a range of blocks covers a contiguous range of rows. */
typedef struct sf_cpu_blocking {
  int64_t groups, per_group, per_slot; /* groups, channels per group, blocks per group */
  int lanes;
} sf_cpu_blocking;

static inline sf_cpu_blocking sf_cpu_blocking_of(const sf_scan_fwd_args *a, int lanes) {
  sf_cpu_blocking k;
  k.groups = (a->B_var || a->C_var) ? a->groups : 1; /* validated to divide dim then */
  k.per_group = a->dim / k.groups;
  k.per_slot = (k.per_group + lanes - 1) / lanes;
  k.lanes = lanes;
  return k;
}

static inline int64_t sf_cpu_block_count(const sf_cpu_blocking *k, int64_t batch) {
  return batch * k->groups * k->per_slot;
}

/* Whether blocks i and j belong to the same (batch, group) slot. */
static inline bool sf_cpu_same_slot(const sf_cpu_blocking *k, int64_t i, int64_t j) {
  return i / k->per_slot == j / k->per_slot;
}

/* Worker threads for `blocks` blocks: `requested`, or one per CPU when it is <= 0; never
 * more than the blocks or 1024. */
static inline int sf_cpu_thread_count(int requested, int64_t blocks) {
  long n = requested;
  if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > 1024) n = 1024;
  if (n > blocks) n = (long)blocks;
  return (int)n;
}

/* Block i: batch *b, channels [*d0, *d0 + *count). */
static inline void sf_cpu_block_at(const sf_cpu_blocking *k, int64_t i, int64_t *b, int64_t *d0,
                                   int *count) {
  const int64_t slot = i / k->per_slot, first = (i % k->per_slot) * k->lanes;
  *b = slot / k->groups;
  *d0 = (slot % k->groups) * k->per_group + first;
  *count = (int)(k->per_group - first < k->lanes ? k->per_group - first : k->lanes);
}

#endif
