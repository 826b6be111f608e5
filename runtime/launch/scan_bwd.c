/* scan_bwd.c: sf_scan_bwd: validate, then run on the host (CPU) or the device (GPU). */
#include "runtime/cpu/cpu_scan_bwd.h"
#include "base/error.h"
#include "runtime/args/scan_bwd_args.h"
#include "runtime/launch/scan_bwd_gpu.h"

sf_status sf_scan_bwd(sf_context *ctx, const sf_scan_bwd_args *args, const sf_launch *launch) {
  if (!ctx) return sf_fail(SF_EINVAL, "ctx: must not be NULL");
  if (!launch) return sf_fail(SF_EINVAL, "launch: must not be NULL (say on_host or give a stream)");
  if (launch->on_host) return sf_cpu_scan_bwd(args, launch->host_threads);
  sf_scan_bwd_args resolved;
  sf_status st = sf_scan_bwd_prepare(args, &resolved);
  if (st != SF_OK) return st;
  if (!sf_scan_bwd_has_work(&resolved)) return SF_OK;
  return sf_gpu_scan_bwd(ctx, &resolved, launch);
}

sf_status sf_scan_bwd_shape(sf_context *ctx, const sf_scan_bwd_args *args, const sf_launch *launch,
                            sf_launch_shape *out) {
  if (!ctx) return sf_fail(SF_EINVAL, "ctx: must not be NULL");
  if (!out) return sf_fail(SF_EINVAL, "out: must not be NULL");
  if (launch && launch->on_host) return sf_fail(SF_EINVAL, "launch: the shape is a device call's; on_host runs on the CPU");
  sf_scan_bwd_args resolved;
  sf_status st = sf_scan_bwd_prepare(args, &resolved);
  if (st != SF_OK) return st;
  if (!sf_scan_bwd_has_work(&resolved)) return *out = (sf_launch_shape){0}, SF_OK; /* launches nothing */
  return sf_gpu_scan_bwd_shape(ctx, &resolved, launch, out);
}
