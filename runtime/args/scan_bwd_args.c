/* scan_bwd_args.c: validation and stride resolution of every argument of a backward call. */
#include "runtime/args/scan_bwd_args.h"

#include <stdint.h>

#include "base/error.h"
#include "runtime/args/scan_args.h"

bool sf_scan_bwd_has_work(const sf_scan_bwd_args *args) {
  return sf_scan_fwd_has_work(&args->fwd);
}

/* dout or an activation gradient: a (batch, dim, L) tensor in T with its own strides. */
typedef struct activation {
  const char *name, *batch_name, *dim_name;
  const void *ptr;
  int64_t *batch_stride, *dim_stride;
} activation;

enum { ACTIVATIONS = 4 };

/* In the order of the struct's fields. */
static void list_activations(sf_scan_bwd_args *a, activation list[ACTIVATIONS]) {
  list[0] = (activation){"dout", "dout_batch_stride", "dout_dim_stride", a->dout,
                         &a->dout_batch_stride, &a->dout_dim_stride};
  list[1] = (activation){"du", "du_batch_stride", "du_dim_stride", a->du, &a->du_batch_stride,
                         &a->du_dim_stride};
  list[2] = (activation){"ddelta", "ddelta_batch_stride", "ddelta_dim_stride", a->ddelta,
                         &a->ddelta_batch_stride, &a->ddelta_dim_stride};
  list[3] = (activation){"dz", "dz_batch_stride", "dz_dim_stride", a->dz, &a->dz_batch_stride,
                         &a->dz_dim_stride};
}

void sf_scan_bwd_resolve(const sf_scan_bwd_args *args, sf_scan_bwd_args *resolved) {
  *resolved = *args;
  sf_scan_fwd_resolve(&args->fwd, &resolved->fwd);
  activation list[ACTIVATIONS];
  list_activations(resolved, list);
  for (int i = 0; i < ACTIVATIONS; i++)
    if (list[i].ptr)
      sf_scan_resolve_activation(&resolved->fwd, list[i].batch_stride, list[i].dim_stride);
}

/* The forward's arguments as the forward checks them, except that the backward never
 * reads out and last_state: a stand-in `out` with contiguous strides makes the forward's
 * rules skip them. */
static sf_status check_forward(const sf_scan_fwd_args *fwd) {
  static char unused_out;
  sf_scan_fwd_args copy = *fwd;
  copy.out = &unused_out;
  copy.out_batch_stride = copy.out_dim_stride = 0;
  copy.last_state = NULL;
  return sf_scan_fwd_validate(&copy);
}

/* A gradient of an input that is not there has no meaning: the caller mixed up calls. */
static sf_status check_absent_inputs(const sf_scan_bwd_args *a) {
  const struct {
    const char *gradient, *input;
    const void *grad_ptr, *input_ptr;
  } pairs[] = {
      {"dz", "z", a->dz, a->fwd.z},
      {"dD", "D", a->dD, a->fwd.D},
      {"ddelta_bias", "delta_bias", a->ddelta_bias, a->fwd.delta_bias},
      {"dh0", "h0", a->dh0, a->fwd.h0},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    if (pairs[i].grad_ptr && !pairs[i].input_ptr)
      return sf_fail(SF_EINVAL, "%s: expected NULL because fwd.%s is NULL, got a pointer",
                     pairs[i].gradient, pairs[i].input);
  return SF_OK;
}

static sf_status check_pointers(const sf_scan_bwd_args *a) {
  if (!a->fwd.saved_states)
    return sf_fail(SF_EINVAL,
                   "saved_states: expected the states the forward saved (fwd.saved_states), "
                   "got NULL");
  if (!a->dout) return sf_fail(SF_EINVAL, "dout: expected a pointer, got NULL");
  return SF_OK;
}

/* Strides are >= 0, and those of an absent tensor are 0 (as the forward asks of z). */
static sf_status check_stride_signs(const activation list[ACTIVATIONS]) {
  for (int i = 0; i < ACTIVATIONS; i++) {
    const char *names[2] = {list[i].batch_name, list[i].dim_name};
    const int64_t values[2] = {*list[i].batch_stride, *list[i].dim_stride};
    for (int k = 0; k < 2; k++) {
      if (values[k] < 0)
        return sf_fail(SF_EINVAL, "%s: expected >= 0 (0 means contiguous), got %lld", names[k],
                       (long long)values[k]);
      if (!list[i].ptr && values[k] != 0)
        return sf_fail(SF_EINVAL, "%s: expected 0 because %s is NULL, got %lld", names[k],
                       list[i].name, (long long)values[k]);
    }
  }
  return SF_OK;
}

/* A variable dB or dC: (batch, G, N, L) fp32 contiguous. */
static sf_status check_variable_gradient(const char *name, const sf_scan_fwd_args *f) {
  if (f->batch > INT64_MAX / f->groups) /* groups >= 1: validated with the forward */
    return sf_fail(SF_EINVAL, "%s: its size in bytes overflows int64 (batch %lld * groups %d)",
                   name, (long long)f->batch, f->groups);
  return sf_scan_check_fp32_size(name, f->batch * f->groups, f->dstate, f->seqlen);
}

/* On resolved strides. Gradients shaped like a validated input (dA like A, fixed dB like
 * fixed B, dD and ddelta_bias like A's rows, dh0 like h0) fit whenever that input does. */
static sf_status check_layouts(sf_scan_bwd_args *r) {
  const sf_scan_fwd_args *f = &r->fwd;
  activation list[ACTIVATIONS];
  list_activations(r, list);
  sf_status st = SF_OK;
  for (int i = 0; i < ACTIVATIONS && st == SF_OK; i++)
    if (list[i].ptr)
      st = sf_scan_check_activation(f, list[i].name, list[i].batch_name, *list[i].batch_stride,
                                    list[i].dim_name, *list[i].dim_stride);
  if (st == SF_OK && r->d_last_state)
    st = sf_scan_check_fp32_size("d_last_state", f->batch, f->dim, f->dstate);
  if (st == SF_OK && r->dB && f->B_var) st = check_variable_gradient("dB", f);
  if (st == SF_OK && r->dC && f->C_var) st = check_variable_gradient("dC", f);
  return st;
}

sf_status sf_scan_bwd_validate(const sf_scan_bwd_args *args) {
  if (!args) return sf_fail(SF_EINVAL, "args: expected a pointer, got NULL");
  sf_status st = check_forward(&args->fwd);
  if (st == SF_OK) st = check_absent_inputs(args);
  if (st == SF_OK && sf_scan_bwd_has_work(args)) st = check_pointers(args);
  if (st == SF_OK) {
    sf_scan_bwd_args copy = *args; /* list_activations wants a mutable struct */
    activation list[ACTIVATIONS];
    list_activations(&copy, list);
    st = check_stride_signs(list);
  }
  if (st == SF_OK) {
    sf_scan_bwd_args resolved;
    sf_scan_bwd_resolve(args, &resolved);
    st = check_layouts(&resolved);
  }
  return st;
}

sf_status sf_scan_bwd_prepare(const sf_scan_bwd_args *args, sf_scan_bwd_args *resolved) {
  sf_status st = sf_scan_bwd_validate(args);
  if (st == SF_OK) sf_scan_bwd_resolve(args, resolved);
  return st;
}
