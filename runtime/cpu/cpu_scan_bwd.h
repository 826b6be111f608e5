/* cpu_scan_bwd.h: the backward selective scan on host memory, multi-threaded, fp32 arithmetic. */
#ifndef SCANFORGE_CPU_SCAN_BWD_H
#define SCANFORGE_CPU_SCAN_BWD_H

#include "scanforge/scanforge.h"

/* Runs docs/math.md's backward on host pointers: validates `args` (sf_scan_bwd_validate), then
 * writes every requested gradient (never accumulates into them). The forward is recomputed
 * one state interval at a time from fwd.saved_states, as sf_cpu_scan_fwd saved them, and
 * the reverse scan runs from the last interval to the first. Loads and stores use the
 * activation type, all arithmetic is fp32. Channels go in blocks as in sf_cpu_scan_fwd,
 * split over `num_threads` pthreads (<= 0: the number of online CPUs; never more than the
 * blocks or 1024); the reductions (dA, dB, dC, dD, ddelta_bias) go to per-thread buffers
 * summed in a fixed order, so a given thread count always gives the same bits (du, ddelta,
 * dz and dh0 are the same for every thread count). Gradients must not overlap inputs or
 * each other. With batch, dim or seqlen 0 nothing is touched.
 * SF_EINVAL for bad arguments, SF_ENOMEM when scratch memory cannot be had. */
sf_status sf_cpu_scan_bwd(const sf_scan_bwd_args *args, int num_threads);

#endif
