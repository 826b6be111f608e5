/* scan_common.c: parsing, clocks and check reports shared by the check, bench and demo commands. */
#include "cli/scan_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool cli_parse_positive(const char *text, long long max, long long *out) {
  if (!text || *text < '0' || *text > '9') return false; /* no sign, no space */
  char *end;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno || *end || value < 1 || value > max) return false;
  *out = value;
  return true;
}

bool cli_parse_shape(const char *text, int64_t shape[4]) {
  char copy[128];
  if (!text || strlen(text) >= sizeof copy) return false;
  strcpy(copy, text);
  int count = 0;
  char *rest = copy;
  for (char *field; (field = strsep(&rest, ",")) != NULL; count++) {
    long long value;
    if (count == 4 || !cli_parse_positive(field, count == 3 ? 256 : (1LL << 40), &value)) return false;
    shape[count] = value;
  }
  return count == 4;
}

bool cli_parse_dtype(const char *text, sf_dtype *out) {
  static const sf_dtype all[] = {SF_FP32, SF_FP16, SF_BF16};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (text && strcmp(text, sf_dtype_name(all[i])) == 0) {
      *out = all[i];
      return true;
    }
  return false;
}

double cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

bool cli_gpu_available(char *why, size_t cap) {
  int count = 0;
  if (sf_device_count(&count) != SF_OK) {
    snprintf(why, cap, "%s", sf_last_error());
    return false;
  }
  if (count == 0) {
    snprintf(why, cap, "the CUDA driver sees no device");
    return false;
  }
  return true;
}

bool cli_parse_dtype_list(const char *text, sf_dtype *dtypes, int *count) {
  char copy[64];
  if (strlen(text) >= sizeof copy) return false;
  strcpy(copy, text);
  *count = 0;
  char *rest = copy;
  for (char *field; (field = strsep(&rest, ",")) != NULL;) {
    sf_dtype t;
    if (!cli_parse_dtype(field, &t)) return false;
    for (int i = 0; i < *count; i++)
      if (dtypes[i] == t) return false;
    dtypes[(*count)++] = t;
  }
  return *count > 0;
}

bool cli_spec_parses(const char *spec, bool backward, char *why, size_t cap) {
  sf_variant v = sf_variant_default();
  if (backward) v.op = SF_OP_BWD, v.split_states = true; /* what a backward spec's keys apply to */
  if (sf_variant_apply(spec, &v) == SF_OK) return true;
  snprintf(why, cap, "%s", sf_last_error());
  return false;
}

sf_scan_bwd_args cli_query_args(const sf_check_shape *s) {
  static _Alignas(16) float never_read[4];
  float *x = never_read;
  return (sf_scan_bwd_args){
      .fwd = {.batch = s->batch, .dim = s->dim, .seqlen = s->seqlen, .dstate = s->dstate,
              .groups = s->groups, .dtype = s->dtype, .delta_softplus = s->softplus, .u = x, .delta = x, .A = x,
              .B = x, .B_var = !s->B_fixed, .C = x, .C_var = !s->C_fixed, .D = s->D ? x : NULL,
              .delta_bias = s->delta_bias ? x : NULL, .z = s->z ? x : NULL, .h0 = s->h0 ? x : NULL,
              .out = x, .last_state = x, .saved_states = x},
      .dout = x, .du = x, .ddelta = x, .dz = s->z ? x : NULL, .dA = x, .dB = x, .dC = x,
      .deterministic = s->deterministic};
}

sf_status cli_check_variant(const sf_check_shape *s, const char *spec, sf_variant *out) {
  sf_scan_fwd_args args = cli_query_args(s).fwd;
  sf_launch launch = {.spec = spec};
  sf_status st = sf_scan_fwd_variant(&args, &launch, out);
  if (st == SF_OK) st = sf_variant_validate(out);
  return st;
}

sf_status cli_check_bwd_variant(const sf_check_shape *s, const char *spec, sf_variant *out) {
  sf_scan_bwd_args args = cli_query_args(s);
  sf_launch launch = {.spec = spec};
  sf_status st = sf_scan_bwd_variant(&args, &launch, out);
  if (st == SF_OK) st = sf_variant_validate(out);
  return st;
}

sf_status cli_check_block_interval(const sf_check_shape *s, const char *spec, int64_t *interval) {
  sf_scan_bwd_args args = cli_query_args(s);
  sf_launch launch = {.spec = spec};
  return sf_scan_bwd_block_states_interval(&args, &launch, interval);
}

sf_status cli_check_bwd_run_variant(sf_context *ctx, const sf_check_shape *s, const char *spec, sf_variant *inout) {
  sf_scan_bwd_args args = cli_query_args(s);
  sf_launch launch = {.spec = spec};
  sf_launch_shape shape;
  sf_status st = sf_scan_bwd_shape(ctx, &args, &launch, &shape);
  if (st == SF_OK && shape.blocks > 0) *inout = shape.variant;
  return st;
}

const char *cli_origin_text(sf_kernel_origin origin) {
  switch (origin) {
    case SF_KERNEL_LOADED: return "already loaded in this process";
    case SF_KERNEL_FROM_MEMORY: return "compiled earlier by this process";
    case SF_KERNEL_FROM_DISK: return "read from the disk cache";
    case SF_KERNEL_COMPILED: return "compiled by NVRTC";
  }
  return "unknown";
}

void cli_describe_shape(const sf_check_shape *s, char *buf, size_t cap) {
  snprintf(buf, cap, "batch %lld, dim %lld, L %lld, N %d, groups %d, %s;%s%s%s%s%s B %s, C %s",
           (long long)s->batch, (long long)s->dim, (long long)s->seqlen, s->dstate, s->groups,
           sf_dtype_name(s->dtype), s->z ? " z," : "", s->D ? " D," : "",
           s->delta_bias ? " delta_bias," : "", s->softplus ? " softplus," : "",
           s->h0 ? " h0," : "", s->B_fixed ? "fixed" : "var", s->C_fixed ? "fixed" : "var");
}

static void print_error_line(const char *indent, const char *name, double error, double bar) {
  printf("%s%-13s %-10.3g %-8.0e %s\n", indent, name, error, bar, error <= bar ? "PASS" : "FAIL");
}

void cli_print_check(const sf_check_result *r, const char *indent) {
  printf("%s%-13s %-10s %-8s\n", indent, "output", "rel.error", "bar");
  print_error_line(indent, "out", r->out_error, r->bar);
  print_error_line(indent, "last_state", r->last_state_error, r->bar);
  print_error_line(indent, "saved states", r->saved_error, r->bar);
}

void cli_print_check_bwd(const sf_check_bwd_result *r, const char *indent) {
  printf("%s%-13s %-10s %-8s\n", indent, "gradient", "rel.error", "bar");
  for (int i = 0; i < r->count; i++) print_error_line(indent, r->grads[i].name, r->grads[i].error, r->bar);
}
