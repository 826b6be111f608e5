/* scan_args.c: the saved-state interval, stride resolution and the validation of every
 * argument of a forward call. */
#include "runtime/args/scan_args.h"

#include <stdint.h>

#include "base/error.h"

enum { MIN_INTERVAL = 64, MAX_INTERVAL = 512, MAX_DSTATE = 256 };

int64_t sf_scan_state_interval(int64_t seqlen) {
  int64_t interval = MIN_INTERVAL;
  while (interval < seqlen && interval < MAX_INTERVAL) interval *= 2;
  return interval;
}

int64_t sf_scan_saved_states(int64_t seqlen) {
  if (seqlen <= 0) return 0;
  return sf_scan_saved_count(seqlen, 0);
}

/* A state_interval resolved: 0 is the default of this L. */
static int64_t interval_of(int64_t seqlen, int64_t state_interval) {
  return state_interval > 0 ? state_interval : sf_scan_state_interval(seqlen);
}

int64_t sf_scan_saved_count(int64_t seqlen, int64_t state_interval) {
  if (seqlen <= 0) return 0;
  const int64_t interval = interval_of(seqlen, state_interval);
  return seqlen / interval + (seqlen % interval != 0); /* ceil without overflow */
}

int64_t sf_scan_args_interval(const sf_scan_fwd_args *args) { return interval_of(args->seqlen, args->state_interval); }

bool sf_scan_fwd_has_work(const sf_scan_fwd_args *args) {
  return args->batch > 0 && args->dim > 0 && args->seqlen > 0;
}

/* ---- checked arithmetic on non-negative int64 ---------------------------------------- */

/* a * b, saturating at INT64_MAX; 0 for a negative operand (only reached with arguments
 * that validation rejects anyway). */
static int64_t sat_mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static bool mul_fits(int64_t a, int64_t b, int64_t *out) {
  if (a != 0 && b > INT64_MAX / a) return false;
  *out = a * b;
  return true;
}

static bool add_fits(int64_t a, int64_t b, int64_t *out) {
  if (b > INT64_MAX - a) return false;
  *out = a + b;
  return true;
}

/* ---- resolution ----------------------------------------------------------------------- */

static int64_t or_contiguous(int64_t stride, int64_t contiguous) {
  return stride != 0 ? stride : contiguous;
}

/* (batch, dim, L) tensors: dim 0 -> L, batch 0 -> dim * dim_stride. */
static void resolve_activation(const sf_scan_fwd_args *a, int64_t *batch_stride,
                               int64_t *dim_stride) {
  *dim_stride = or_contiguous(*dim_stride, a->seqlen);
  *batch_stride = or_contiguous(*batch_stride, sat_mul(a->dim, *dim_stride));
}

/* Variable (batch, G, N, L) B or C: state 0 -> L, group 0 -> N * state, batch 0 -> G * group. */
static void resolve_variable(const sf_scan_fwd_args *a, int64_t *batch_stride,
                             int64_t *group_stride, int64_t *state_stride) {
  *state_stride = or_contiguous(*state_stride, a->seqlen);
  *group_stride = or_contiguous(*group_stride, sat_mul(a->dstate, *state_stride));
  *batch_stride = or_contiguous(*batch_stride, sat_mul(a->groups, *group_stride));
}

void sf_scan_fwd_resolve(const sf_scan_fwd_args *args, sf_scan_fwd_args *resolved) {
  *resolved = *args;
  sf_scan_fwd_args *r = resolved;
  resolve_activation(r, &r->u_batch_stride, &r->u_dim_stride);
  resolve_activation(r, &r->delta_batch_stride, &r->delta_dim_stride);
  resolve_activation(r, &r->out_batch_stride, &r->out_dim_stride);
  if (r->z) resolve_activation(r, &r->z_batch_stride, &r->z_dim_stride);
  if (r->B_var) resolve_variable(r, &r->B_batch_stride, &r->B_group_stride, &r->B_state_stride);
  if (r->C_var) resolve_variable(r, &r->C_batch_stride, &r->C_group_stride, &r->C_state_stride);
}

/* ---- validation ----------------------------------------------------------------------- */

typedef struct named_value {
  const char *name;
  int64_t value;
} named_value;

/* One strided axis of a tensor whose rows are L contiguous elements. */
typedef struct row_axis {
  const char *stride_name; /* "u_dim_stride" */
  const char *extent_name; /* "dim" */
  int64_t extent;
  int64_t stride; /* resolved */
} row_axis;

/* The rows of a tensor must fit in int64 bytes: L + sum (extent - 1) * stride elements. */
static sf_status check_span(const char *tensor, int64_t seqlen, int element_size,
                            const row_axis *axes, int count) {
  int64_t span = seqlen, term;
  for (int i = 0; i < count; i++) {
    if (axes[i].extent <= 1) continue;
    if (!mul_fits(axes[i].extent - 1, axes[i].stride, &term) || !add_fits(span, term, &span))
      return sf_fail(SF_EINVAL, "%s: its extent overflows int64 (%s %lld, %s %lld)", tensor,
                     axes[i].extent_name, (long long)axes[i].extent, axes[i].stride_name,
                     (long long)axes[i].stride);
  }
  if (!mul_fits(span, element_size, &term))
    return sf_fail(SF_EINVAL, "%s: its size in bytes overflows int64 (%lld elements)", tensor,
                   (long long)span);
  return SF_OK;
}

/* Rows must not overlap. The rule: take the axes of extent > 1 in order of increasing
 * stride (ties keep the listed order, innermost first); the first stride must be >= L and
 * each next one >= the previous stride times the previous extent. Ordering by stride
 * accepts Mamba's own layout, where u is a slice of a (dim, batch, L) buffer. */
static sf_status check_rows(const char *tensor, int64_t seqlen, const row_axis *axes,
                            int count) {
  if (seqlen == 0) return SF_OK; /* empty rows cannot overlap */
  for (int i = 0; i < count; i++)
    if (axes[i].extent == 0) return SF_OK; /* no rows at all */

  const row_axis *order[3];
  int used = 0;
  for (int i = 0; i < count; i++) {
    if (axes[i].extent <= 1) continue; /* a stride that is never multiplied by > 0 */
    int at = used++;
    while (at > 0 && order[at - 1]->stride > axes[i].stride) {
      order[at] = order[at - 1];
      at--;
    }
    order[at] = &axes[i];
  }

  const row_axis *prev = NULL;
  for (int i = 0; i < used; i++) {
    const row_axis *ax = order[i];
    if (!prev && ax->stride < seqlen)
      return sf_fail(SF_EINVAL,
                     "%s: expected 0 or >= seqlen (%lld), got %lld (rows of %s would overlap)",
                     ax->stride_name, (long long)seqlen, (long long)ax->stride, tensor);
    if (prev) {
      int64_t need = sat_mul(prev->extent, prev->stride);
      if (ax->stride < need)
        return sf_fail(SF_EINVAL,
                       "%s: expected 0 or >= %s * %s (%lld * %lld = %lld), got %lld (rows of %s "
                       "would overlap)",
                       ax->stride_name, prev->extent_name, prev->stride_name,
                       (long long)prev->extent, (long long)prev->stride, (long long)need,
                       (long long)ax->stride, tensor);
    }
    prev = ax;
  }
  return SF_OK;
}

static sf_status check_layout(const char *tensor, int64_t seqlen, int element_size,
                              const row_axis *axes, int count) {
  sf_status st = check_span(tensor, seqlen, element_size, axes, count);
  return st != SF_OK ? st : check_rows(tensor, seqlen, axes, count);
}

static sf_status check_activation(const char *tensor, const sf_scan_fwd_args *r,
                                  const char *batch_name, int64_t batch_stride,
                                  const char *dim_name, int64_t dim_stride) {
  row_axis axes[2] = {
      {dim_name, "dim", r->dim, dim_stride},
      {batch_name, "batch", r->batch, batch_stride},
  };
  return check_layout(tensor, r->seqlen, sf_dtype_size(r->dtype), axes, 2);
}

static sf_status check_variable(const char *tensor, const sf_scan_fwd_args *r,
                                const char *names[3], int64_t batch_stride,
                                int64_t group_stride, int64_t state_stride) {
  row_axis axes[3] = {
      {names[2], "dstate", r->dstate, state_stride},
      {names[1], "groups", r->groups, group_stride},
      {names[0], "batch", r->batch, batch_stride},
  };
  return check_layout(tensor, r->seqlen, sf_dtype_size(r->dtype), axes, 3);
}

/* A contiguous fp32 tensor of a * b * c elements must fit in int64 bytes. */
/* state_interval: 0, or a power of two from 4 to the default interval of this L. */
static sf_status check_state_interval(const sf_scan_fwd_args *r) {
  const int64_t k = r->state_interval, most = sf_scan_state_interval(r->seqlen);
  if (k == 0) return SF_OK;
  if (k < 4 || k > most || (k & (k - 1)) != 0)
    return sf_fail(SF_EINVAL,
                   "state_interval: expected 0 (the default, %lld for seqlen %lld) or a power of "
                   "two from 4 to %lld, got %lld",
                   (long long)most, (long long)r->seqlen, (long long)most, (long long)k);
  return SF_OK;
}

static sf_status check_fp32_size(const char *tensor, int64_t a, int64_t b, int64_t c) {
  int64_t n;
  if (!mul_fits(a, b, &n) || !mul_fits(n, c, &n) || !mul_fits(n, 4, &n))
    return sf_fail(SF_EINVAL, "%s: its size in bytes overflows int64 (%lld * %lld * %lld floats)",
                   tensor, (long long)a, (long long)b, (long long)c);
  return SF_OK;
}

static sf_status check_scalars(const sf_scan_fwd_args *a) {
  const named_value sizes[] = {{"batch", a->batch}, {"dim", a->dim}, {"seqlen", a->seqlen}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i].value < 0)
      return sf_fail(SF_EINVAL, "%s: expected >= 0, got %lld", sizes[i].name,
                     (long long)sizes[i].value);
  if (a->dstate < 1 || a->dstate > MAX_DSTATE)
    return sf_fail(SF_EINVAL, "dstate: expected 1..%d, got %d", MAX_DSTATE, a->dstate);
  if (a->groups < 1) return sf_fail(SF_EINVAL, "groups: expected >= 1, got %d", a->groups);
  if ((a->B_var || a->C_var) && a->dim % a->groups != 0)
    return sf_fail(SF_EINVAL, "groups: expected a divisor of dim (%lld), got %d",
                   (long long)a->dim, a->groups);
  if (a->dtype != SF_FP32 && a->dtype != SF_FP16 && a->dtype != SF_BF16)
    return sf_fail(SF_EINVAL, "dtype: expected SF_FP32, SF_FP16 or SF_BF16, got %d",
                   (int)a->dtype);
  return SF_OK;
}

/* Every stride is >= 0; those of absent tensors (no z, fixed B or C) must be 0, so that
 * a caller who meant to pass the tensor hears about it. */
static sf_status check_stride_signs(const sf_scan_fwd_args *a) {
  const named_value strides[] = {
      {"u_batch_stride", a->u_batch_stride},     {"u_dim_stride", a->u_dim_stride},
      {"delta_batch_stride", a->delta_batch_stride}, {"delta_dim_stride", a->delta_dim_stride},
      {"B_batch_stride", a->B_batch_stride},     {"B_group_stride", a->B_group_stride},
      {"B_state_stride", a->B_state_stride},     {"C_batch_stride", a->C_batch_stride},
      {"C_group_stride", a->C_group_stride},     {"C_state_stride", a->C_state_stride},
      {"z_batch_stride", a->z_batch_stride},     {"z_dim_stride", a->z_dim_stride},
      {"out_batch_stride", a->out_batch_stride}, {"out_dim_stride", a->out_dim_stride},
  };
  for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
    if (strides[i].value < 0)
      return sf_fail(SF_EINVAL, "%s: expected >= 0 (0 means contiguous), got %lld",
                     strides[i].name, (long long)strides[i].value);

  const struct {
    bool absent;
    const char *why;
    named_value stride;
  } unused[] = {
      {!a->z, "z is NULL", {"z_batch_stride", a->z_batch_stride}},
      {!a->z, "z is NULL", {"z_dim_stride", a->z_dim_stride}},
      {!a->B_var, "B is fixed (dim, N) fp32 contiguous", {"B_batch_stride", a->B_batch_stride}},
      {!a->B_var, "B is fixed (dim, N) fp32 contiguous", {"B_group_stride", a->B_group_stride}},
      {!a->B_var, "B is fixed (dim, N) fp32 contiguous", {"B_state_stride", a->B_state_stride}},
      {!a->C_var, "C is fixed (dim, N) fp32 contiguous", {"C_batch_stride", a->C_batch_stride}},
      {!a->C_var, "C is fixed (dim, N) fp32 contiguous", {"C_group_stride", a->C_group_stride}},
      {!a->C_var, "C is fixed (dim, N) fp32 contiguous", {"C_state_stride", a->C_state_stride}},
  };
  for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
    if (unused[i].absent && unused[i].stride.value != 0)
      return sf_fail(SF_EINVAL, "%s: expected 0 because %s, got %lld", unused[i].stride.name,
                     unused[i].why, (long long)unused[i].stride.value);
  return SF_OK;
}

static sf_status check_pointers(const sf_scan_fwd_args *a) {
  const struct {
    const char *name;
    const void *ptr;
  } required[] = {{"u", a->u}, {"delta", a->delta}, {"A", a->A},
                  {"B", a->B}, {"C", a->C},         {"out", a->out}};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if (!required[i].ptr)
      return sf_fail(SF_EINVAL, "%s: expected a pointer, got NULL", required[i].name);
  return SF_OK;
}

static sf_status check_layouts(const sf_scan_fwd_args *r) {
  static const char *B_names[3] = {"B_batch_stride", "B_group_stride", "B_state_stride"};
  static const char *C_names[3] = {"C_batch_stride", "C_group_stride", "C_state_stride"};
  sf_status st;
#define CHECK(call)                    \
  do {                                 \
    if ((st = (call)) != SF_OK) return st; \
  } while (0)
  /* In the order of the struct's fields. */
  CHECK(check_activation("u", r, "u_batch_stride", r->u_batch_stride, "u_dim_stride",
                         r->u_dim_stride));
  CHECK(check_activation("delta", r, "delta_batch_stride", r->delta_batch_stride,
                         "delta_dim_stride", r->delta_dim_stride));
  CHECK(check_fp32_size("A", r->dim, r->dstate, 1));
  if (r->B_var)
    CHECK(check_variable("B", r, B_names, r->B_batch_stride, r->B_group_stride,
                         r->B_state_stride));
  else
    CHECK(check_fp32_size("B", r->dim, r->dstate, 1));
  if (r->C_var)
    CHECK(check_variable("C", r, C_names, r->C_batch_stride, r->C_group_stride,
                         r->C_state_stride));
  else
    CHECK(check_fp32_size("C", r->dim, r->dstate, 1));
  if (r->z)
    CHECK(check_activation("z", r, "z_batch_stride", r->z_batch_stride, "z_dim_stride",
                           r->z_dim_stride));
  if (r->h0) CHECK(check_fp32_size("h0", r->batch, r->dim, r->dstate));
  CHECK(check_activation("out", r, "out_batch_stride", r->out_batch_stride, "out_dim_stride",
                         r->out_dim_stride));
  if (r->last_state) CHECK(check_fp32_size("last_state", r->batch, r->dim, r->dstate));
  CHECK(check_state_interval(r));
  if (r->saved_states) {
    int64_t rows;
    if (!mul_fits(r->batch, r->dim, &rows))
      return sf_fail(SF_EINVAL, "saved_states: batch * dim overflows int64");
    CHECK(check_fp32_size("saved_states", rows, sf_scan_saved_count(r->seqlen, r->state_interval),
                          r->dstate));
  }
#undef CHECK
  return SF_OK;
}

sf_status sf_scan_fwd_validate(const sf_scan_fwd_args *args) {
  if (!args) return sf_fail(SF_EINVAL, "args: expected a pointer, got NULL");
  sf_status st = check_scalars(args);
  if (st == SF_OK) st = check_stride_signs(args);
  if (st == SF_OK && sf_scan_fwd_has_work(args)) st = check_pointers(args);
  if (st == SF_OK) {
    sf_scan_fwd_args resolved;
    sf_scan_fwd_resolve(args, &resolved);
    st = check_layouts(&resolved);
  }
  return st;
}

sf_status sf_scan_fwd_prepare(const sf_scan_fwd_args *args, sf_scan_fwd_args *resolved) {
  sf_status st = sf_scan_fwd_validate(args);
  if (st == SF_OK) sf_scan_fwd_resolve(args, resolved);
  return st;
}

void sf_scan_resolve_activation(const sf_scan_fwd_args *a, int64_t *batch_stride,
                                int64_t *dim_stride) {
  resolve_activation(a, batch_stride, dim_stride);
}

sf_status sf_scan_check_activation(const sf_scan_fwd_args *a, const char *tensor,
                                   const char *batch_name, int64_t batch_stride,
                                   const char *dim_name, int64_t dim_stride) {
  return check_activation(tensor, a, batch_name, batch_stride, dim_name, dim_stride);
}

sf_status sf_scan_check_fp32_size(const char *tensor, int64_t x, int64_t y, int64_t z) {
  return check_fp32_size(tensor, x, y, z);
}
