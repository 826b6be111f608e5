/* call_variant.c: the variant a call runs: its function from the arguments, its knobs from tuning. */
#include "runtime/launch/call_variant.h"

#include "base/error.h"
#include "runtime/launch_config/select.h"

/* The spec may change the launch configuration, never the function computed. */
static sf_status check_spec_keeps_call(const sf_variant *call, const sf_variant *spec_variant, const char *spec) {
  struct { const char *key; int call, spec; } keys[] = {
      {"op", call->op, spec_variant->op},
      {"dtype", call->dtype, spec_variant->dtype},
      {"dstate", call->dstate, spec_variant->dstate},
      {"z", call->has_z, spec_variant->has_z},
      {"D", call->has_D, spec_variant->has_D},
      {"delta_bias", call->has_delta_bias, spec_variant->has_delta_bias},
      {"softplus", call->softplus, spec_variant->softplus},
      {"B", call->B_var, spec_variant->B_var},
      {"C", call->C_var, spec_variant->C_var},
      {"deterministic", call->deterministic, spec_variant->deterministic},
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (keys[i].call != keys[i].spec)
      return sf_fail(SF_EINVAL,
                     "launch spec '%s': key '%s' does not match the call's arguments (the spec "
                     "may set split, threads, items, channels, states, minblocks and pairs only; words follows the tensors)",
                     spec, keys[i].key);
  return SF_OK;
}

sf_status sf_call_variant(const sf_scan_fwd_args *args, sf_op op, bool deterministic, bool block_states,
                          const sf_launch *launch, sf_variant *out) {
  sf_variant v = sf_variant_default();
  v.op = op;
  v.dtype = args->dtype;
  v.dstate = args->dstate;
  v.has_z = args->z != NULL;
  v.has_D = args->D != NULL;
  v.has_delta_bias = args->delta_bias != NULL;
  v.softplus = args->delta_softplus;
  v.B_var = args->B_var;
  v.C_var = args->C_var;
  v.deterministic = deterministic;
  sf_tune_configure(&v, block_states, args->batch, args->dim, args->groups, args->seqlen, launch);
  if (launch && launch->spec) {
    sf_variant requested = v;
    sf_status st = sf_variant_apply(launch->spec, &requested);
    if (st != SF_OK) return sf_fail_context(st, "launch spec");
    st = check_spec_keeps_call(&v, &requested, launch->spec);
    if (st != SF_OK) return st;
    v = requested;
  }
  *out = v;
  return SF_OK;
}
