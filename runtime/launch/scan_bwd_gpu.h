/* scan_bwd_gpu.h: the device path of the backward pass (the GPU kernel's launcher). */
#ifndef SCANFORGE_SCAN_BWD_GPU_H
#define SCANFORGE_SCAN_BWD_GPU_H

#include "scanforge/scanforge.h"

/* Runs the backward on the device for arguments that sf_scan_bwd_prepare accepted and
 * resolved, and that have work to do; launches on launch->stream without synchronising. */
sf_status sf_gpu_scan_bwd(sf_context *ctx, const sf_scan_bwd_args *resolved,
                          const sf_launch *launch);

/* sf_scan_bwd_shape's device part, for arguments that sf_scan_bwd_prepare resolved. */
sf_status sf_gpu_scan_bwd_shape(sf_context *ctx, const sf_scan_bwd_args *resolved, const sf_launch *launch,
                                sf_launch_shape *out);

#endif
