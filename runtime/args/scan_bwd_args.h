/* scan_bwd_args.h: backward-call arguments with their 0 ("contiguous") strides resolved. */
#ifndef SCANFORGE_SCAN_BWD_ARGS_H
#define SCANFORGE_SCAN_BWD_ARGS_H

#include <stdbool.h>

#include "scanforge/scanforge.h"

/* True when the call has something to compute (batch, dim and seqlen all > 0). With
 * nothing to compute a backward call touches nothing, not even the gradients. */
bool sf_scan_bwd_has_work(const sf_scan_bwd_args *args);

/* Copies `args` into `resolved` with every 0 stride replaced by its contiguous value:
 * the forward's (sf_scan_fwd_resolve) and dout/du/ddelta/dz as (batch, dim, L) tensors.
 * Strides of absent tensors stay 0; products saturate as the forward's do. */
void sf_scan_bwd_resolve(const sf_scan_bwd_args *args, sf_scan_bwd_args *resolved);

/* What both execution paths call first: sf_scan_bwd_validate, then sf_scan_bwd_resolve. */
sf_status sf_scan_bwd_prepare(const sf_scan_bwd_args *args, sf_scan_bwd_args *resolved);

#endif
