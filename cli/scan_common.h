/* scan_common.h: what the check, bench and demo commands share: parsing, clocks, check reports. */
#ifndef SCANFORGE_CLI_SCAN_COMMON_H
#define SCANFORGE_CLI_SCAN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/check/check.h"
#include "scanforge/scanforge.h"

/* "BATCH,DIM,L,N": four positive integers, N at most 256. False on anything else. */
bool cli_parse_shape(const char *text, int64_t shape[4]);
/* A decimal integer in 1..max, the whole text. */
bool cli_parse_positive(const char *text, long long max, long long *out);
/* "fp32", "fp16" or "bf16". */
bool cli_parse_dtype(const char *text, sf_dtype *out);
/* "fp32,bf16": distinct types into dtypes[] (room for 3), *count of them; false on
 * anything else. */
bool cli_parse_dtype_list(const char *text, sf_dtype *dtypes, int *count);

/* Whether the spec parser accepts `spec` for a forward or (backward) a split=state
 * backward launch; else why, in why[]. Whether its values fit a call is known per call. */
bool cli_spec_parses(const char *spec, bool backward, char *why, size_t cap);

/* A backward call of the check's shape (its .fwd the forward's, with out and last_state)
 * for the variant and shape queries, which read sizes, flags and which optional inputs are
 * present, never the tensors: every tensor points at a few never-read bytes. */
sf_scan_bwd_args cli_query_args(const sf_check_shape *s);

/* Monotonic wall clock in milliseconds. */
double cli_now_ms(void);

/* True when a CUDA device can be used; otherwise why not goes to why[]. */
bool cli_gpu_available(char *why, size_t cap);

/* The variant a device check of this shape runs (spec may be NULL), validated. */
sf_status cli_check_variant(const sf_check_shape *shape, const char *spec, sf_variant *out);

/* The variant a device backward check of this shape runs (spec may be NULL), validated:
 * threads x items must equal sf_scan_state_interval(L). */
sf_status cli_check_bwd_variant(const sf_check_shape *shape, const char *spec, sf_variant *out);
/* The state interval of the backward's blocks in the block-states mode (sf_scan_bwd_block_states_interval). */
sf_status cli_check_block_interval(const sf_check_shape *shape, const char *spec, int64_t *interval);
/* On the device: the variant the launch plan runs for that check (it may fit the launch to
 * the GPU with its lanes twin or pairs=1: docs/design-waves.md); *inout is left alone when nothing runs. */
sf_status cli_check_bwd_run_variant(sf_context *ctx, const sf_check_shape *shape, const char *spec, sf_variant *inout);

/* "compiled by NVRTC", "read from the disk cache", ... */
const char *cli_origin_text(sf_kernel_origin origin);

/* "batch 64, dim 160, L 196, N 8, groups 1, bf16; D, delta_bias, softplus, B var, C var" */
void cli_describe_shape(const sf_check_shape *shape, char *buf, size_t cap);

/* Prints one line per output (error, bar, PASS/FAIL), each line starting with `indent`. */
void cli_print_check(const sf_check_result *result, const char *indent);
/* The same for the gradients of a backward check. */
void cli_print_check_bwd(const sf_check_bwd_result *result, const char *indent);

#endif
