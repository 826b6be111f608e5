/* scan_args.h: forward-call arguments with their 0 ("contiguous") strides resolved. */
#ifndef SCANFORGE_SCAN_ARGS_H
#define SCANFORGE_SCAN_ARGS_H

#include <stdbool.h>

#include "scanforge/scanforge.h"

/* True when the call has something to compute (batch, dim and seqlen all > 0). */
bool sf_scan_fwd_has_work(const sf_scan_fwd_args *args);

/* Copies `args` into `resolved` with every 0 stride replaced by its contiguous value:
 * u/delta/z/out dim 0 -> L, batch 0 -> dim * dim_stride; variable B/C state 0 -> L,
 * group 0 -> N * state_stride, batch 0 -> G * group_stride. Strides of absent tensors
 * (z NULL, fixed B or C) stay 0. Products that would overflow saturate at INT64_MAX,
 * which sf_scan_fwd_validate then reports, so this never has undefined behaviour. */
void sf_scan_fwd_resolve(const sf_scan_fwd_args *args, sf_scan_fwd_args *resolved);

/* What both execution paths call first: sf_scan_fwd_validate, then sf_scan_fwd_resolve.
 * The GPU path adds its own checks on the resolved copy afterwards (pointer and stride
 * alignment for vector loads, int32 index limits), defined by the kernel it launches. */
sf_status sf_scan_fwd_prepare(const sf_scan_fwd_args *args, sf_scan_fwd_args *resolved);

/* The forward's rules for one more tensor, for the backward's gradients (same rules,
 * their own names in the messages). `a` gives batch, dim, seqlen and dtype. */
/* (batch, dim, L) strides: dim 0 -> L, batch 0 -> dim * dim_stride (saturating). */
void sf_scan_resolve_activation(const sf_scan_fwd_args *a, int64_t *batch_stride,
                                int64_t *dim_stride);
/* A (batch, dim, L) tensor in the activation type with resolved strides: its extent fits
 * in int64 bytes and its rows do not overlap. */
sf_status sf_scan_check_activation(const sf_scan_fwd_args *a, const char *tensor,
                                   const char *batch_name, int64_t batch_stride,
                                   const char *dim_name, int64_t dim_stride);
/* A contiguous fp32 tensor of x * y * z elements fits in int64 bytes. */
sf_status sf_scan_check_fp32_size(const char *tensor, int64_t x, int64_t y, int64_t z);

#endif
