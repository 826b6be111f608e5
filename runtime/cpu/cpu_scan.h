/* cpu_scan.h: the forward selective scan on host memory, multi-threaded, fp32 arithmetic. */
#ifndef SCANFORGE_CPU_SCAN_H
#define SCANFORGE_CPU_SCAN_H

#include "scanforge/scanforge.h"

/* Runs docs/math.md's forward on host pointers: validates `args` (sf_scan_fwd_validate), then
 * writes out, and last_state and saved_states when given. Loads and stores use the
 * activation type, all arithmetic is fp32. Channels go in blocks (8 per AVX2 vector, 1 on
 * the portable path: cpu_kernel.h, chosen at run time), and blocks are split over
 * `num_threads` pthreads (<= 0: the number of online CPUs; never more than the blocks or
 * 1024); each channel's arithmetic is its own, so the result does not depend on the thread
 * count. Outputs must not overlap inputs. With batch, dim or seqlen 0 nothing is touched.
 * SF_EINVAL for bad arguments, SF_ENOMEM when scratch memory cannot be had. */
sf_status sf_cpu_scan_fwd(const sf_scan_fwd_args *args, int num_threads);

#endif
