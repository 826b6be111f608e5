/* test_generate.c: generation is deterministic, names its spec, and honours the template's checks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generator/generator.h"
#include "generator/template_set.h"
#include "runtime/cuda/dynamic_shared.h"
#include "scanforge/scanforge.h"

static char *generate(const char *spec) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse(spec, &v), SF_OK, "%s", sf_last_error());
  char *source = NULL;
  size_t length = 0;
  cr_assert_eq(sf_generate(&v, &source, &length), SF_OK, "%s", sf_last_error());
  cr_assert_eq(strlen(source), length);
  return source;
}

Test(generate, same_variant_same_bytes) {
  const char *specs[] = {"dstate=16,dtype=bf16,threads=32,items=8,z=1,D=1,delta_bias=1,softplus=1",
                         "dstate=3,dtype=fp16,threads=8,items=7,channels=4,B=fixed",
                         "dstate=256,threads=256,items=4,C=fixed"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    char *first = generate(specs[i]);
    char *second = generate(specs[i]);
    cr_expect_str_eq(first, second, "generation of %s is not deterministic", specs[i]);
    free(first);
    free(second);
  }
}

Test(generate, header_names_canonical_spec) {
  char *source = generate("dtype=bf16,dstate=8");
  sf_variant v;
  sf_variant_parse("dtype=bf16,dstate=8", &v);
  char spec[512], expected[600];
  sf_variant_format(&v, spec, sizeof spec);
  snprintf(expected, sizeof expected, "// variant: %s\n", spec);
  cr_expect(strstr(source, expected) != NULL, "header should hold '%s'", expected);
  cr_expect(strstr(source, "sf_scan_fwd") != NULL);
  free(source);
}

Test(generate, variants_differ_where_flags_differ) {
  char *plain = generate("dstate=16");
  char *gated = generate("dstate=16,z=1");
  cr_expect(strcmp(plain, gated) != 0);
  cr_expect(strstr(gated, "z_row") != NULL);
  cr_expect(strstr(plain, "z_row") == NULL, "an absent gate must not appear in the source");
  free(plain);
  free(gated);
}

Test(generate, template_rejection_is_an_invalid_argument) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse("items=40", &v), SF_OK);
  char *source = NULL;
  size_t length;
  cr_expect_eq(sf_generate(&v, &source, &length), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "variant key 'items'") != NULL, "got: %s", sf_last_error());
  cr_expect_null(source);
}

/* `dynamic_spec` keeps its arrays in dynamic shared memory and declares `bytes` of it for
 * the loader (runtime/cuda/dynamic_shared.h); the same with `static_items` steps a block
 * fits and declares none; `refused_spec` needs more than the 227 KiB a block may have and
 * the template refuses it with its own message. */
static void expect_dynamic_above_48k(const char *dynamic_spec, int bytes, int static_items, const char *refused_spec) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse(dynamic_spec, &v), SF_OK);
  char *source = NULL;
  size_t length;
  cr_assert_eq(sf_generate(&v, &source, &length), SF_OK, "%s", sf_last_error());
  const int dynamic = sf_source_dynamic_shared(source);
  cr_expect_eq(dynamic, bytes, "%s: declared %d bytes", dynamic_spec, dynamic);
  cr_expect(strstr(source, "extern __shared__") != NULL);
  free(source);
  v.items = static_items;
  cr_assert_eq(sf_generate(&v, &source, &length), SF_OK, "%s", sf_last_error());
  cr_expect_eq(sf_source_dynamic_shared(source), 0);
  cr_expect_null(strstr(source, "extern __shared__"));
  free(source);
  source = NULL;
  cr_assert_eq(sf_variant_parse(refused_spec, &v), SF_OK);
  cr_expect_eq(sf_generate(&v, &source, &length), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "at most 232448 allowed") != NULL, "got: %s", sf_last_error());
  cr_expect_null(source);
}

/* The backward's carry kernel holds the block's staging twice (with and without a
 * segment's state): at N = 64 with 32 lanes, 16 steps and one channel that is 51104 bytes of
 * static shared memory, over the 48 KiB allowed. Such a variant keeps its arrays in dynamic
 * shared memory instead, one layout for every entry point (one body's arrays: the main
 * kernel's 40912 bytes); with 8 steps it fits; N = 128 on 4 lanes over 16 steps of 16
 * channels is refused. */
Test(generate, backward_shared_memory_above_48k_is_dynamic) {
  expect_dynamic_above_48k("op=bwd,split=state,dstate=64,threads=32,items=16,channels=1,states=1", 40912, 8,
                           "op=bwd,split=state,dstate=128,threads=4,items=16,channels=16,states=1");
}

/* The same for the split=state forward: N = 128 in bf16 with 32 steps of 16 channels
 * (81920 bytes: the staging, dt, the lanes' parts of y, the copy table) is dynamic; with
 * 16 steps it fits statically; 32 channels of N = 256 over 64 steps are refused. */
Test(generate, forward_shared_memory_above_48k_is_dynamic) {
  expect_dynamic_above_48k("op=fwd,split=state,dstate=128,dtype=bf16,z=1,threads=8,items=32,channels=16", 81920, 16,
                           "op=fwd,split=state,dstate=256,threads=8,items=64,channels=32");
}

/* 16-bit backwards from N = 32 on store their dB and dC terms as bf16 pairs
 * (docs/design-packed-terms.md); fp32 backwards and smaller N keep fp32 terms. */
/* A spec and whether its generated source should hold a marker. */
typedef struct {
  const char *spec;
  bool present;
} marker_case;

/* For each case, whether `marker` is in the generated source is as the case says. */
static void expect_marker(const marker_case *cases, size_t count, const char *marker, const char *what) {
  for (size_t i = 0; i < count; i++) {
    char *source = generate(cases[i].spec);
    const bool found = strstr(source, marker) != NULL;
    cr_expect_eq(found, cases[i].present, "%s: %s %s", cases[i].spec, what, found ? "present" : "absent");
    free(source);
  }
}

/* Every marker is in spec's generated source, each after the one before it. */
static void expect_in_order(const char *spec, const char *const *markers, int count) {
  char *source = generate(spec);
  const char *previous = source;
  for (int i = 0; i < count; i++) {
    const char *at = strstr(source, markers[i]);
    cr_expect(at != NULL && at >= previous, "%s: '%s' %s", spec, markers[i], at ? "out of order" : "absent");
    if (at) previous = at;
  }
  free(source);
}

Test(generate, backward_packs_16_bit_terms_from_n32) {
  static const marker_case cases[] = {
      {"op=bwd,split=state,dstate=32,dtype=bf16,z=1,threads=8,items=8,channels=8,states=1", true},
      {"op=bwd,split=state,dstate=128,dtype=fp16,threads=16,items=8,channels=8,states=1", true},
      {"op=bwd,split=state,dstate=64,dtype=bf16,threads=8,items=4,channels=16,states=1,pairs=1", true},
      {"op=bwd,split=state,dstate=16,dtype=bf16,z=1,threads=4,items=8,channels=16,states=1", false},
      {"op=bwd,split=state,dstate=64,dtype=fp32,threads=8,items=8,channels=16,states=1", false}};
  expect_marker(cases, sizeof cases / sizeof cases[0], "pack_terms(", "packed terms");
}

/* One split=state variant of each kind: the forward's plain and words kernels, then the
 * backward's. */
static const char *const split_state_kinds[] = {
    "op=fwd,split=state,dstate=16,dtype=bf16,z=1,threads=4,items=16,channels=32,states=1",
    "op=fwd,split=state,dstate=8,dtype=fp32,threads=4,items=16,channels=16,states=1,words=1",
    "op=bwd,split=state,dstate=16,dtype=bf16,z=1,threads=4,items=8,channels=16,states=1",
    "op=bwd,split=state,dstate=8,dtype=fp32,threads=4,items=8,channels=8,states=1,words=1"};

/* Every marker (NULL-terminated) in the generated source of the two forwards of
 * split_state_kinds, and the first of them in neither backward's. */
static void expect_in_forwards_only(const char *what, const char *const *markers) {
  for (size_t i = 0; i < sizeof split_state_kinds / sizeof split_state_kinds[0]; i++) {
    char *source = generate(split_state_kinds[i]);
    const bool forward = strncmp(split_state_kinds[i], "op=fwd", 6) == 0;
    if (forward)
      for (const char *const *m = markers; *m; m++)
        cr_expect(strstr(source, *m) != NULL, "%s: %s: no '%s'", split_state_kinds[i], what, *m);
    else
      cr_expect(strstr(source, markers[0]) == NULL, "%s: %s present", split_state_kinds[i], what);
    free(source);
  }
}

/* The fast fetch (docs/design-fast-fetch.md): the split=state forward's plain
 * kernels issue a whole aligned block's copies without copy_chunk's checks; its words,
 * inner-saves and carry kernels (compiled out by the condition), and every backward, keep
 * the checked path alone. */
Test(generate, forward_fast_fetch_in_its_plain_kernels_only) {
  const char *const markers[] = {"copy_async(to + (meta >> 9)",
                                 "if ((!WORDS && !INNER_SAVES && !CARRY) && all_aligned && t0 + ", NULL};
  expect_in_forwards_only("fast fetch", markers);
}

/* The backward's fast fetch (docs/design-fast-fetch.md): split=state backwards at d_state 4
 * and under take it in their plain kernels (a words module carries the condition too, where
 * WORDS folds it away, as CARRY does in the carry kernel); from d_state 8 on every backward
 * keeps the checked path alone, as split_state_kinds' backwards above. */
Test(generate, backward_fast_fetch_at_small_states_only) {
  static const marker_case cases[] = {
      {"op=bwd,split=state,dstate=2,dtype=bf16,z=1,threads=2,items=32,channels=16,states=1", true},
      {"op=bwd,split=state,dstate=4,dtype=fp32,threads=4,items=8,channels=8,states=1", true},
      {"op=bwd,split=state,dstate=4,dtype=bf16,threads=4,items=16,channels=8,states=1,words=1", true},
      {"op=bwd,split=state,dstate=8,dtype=bf16,z=1,threads=4,items=8,channels=8,states=1", false},
      {"op=bwd,split=state,dstate=16,dtype=bf16,z=1,threads=2,items=8,channels=16,states=1", false}};
  expect_marker(cases, sizeof cases / sizeof cases[0], "if ((!WORDS && !CARRY) && all_aligned && t0 + ", "fast fetch");
}

/* The forward's first fetch (docs/design-first-fetch.md): the split=state forward's words
 * kernels issue the first block's copies as the copy table is built and skip the group's
 * divisions for one group; its plain kernels fetch after the table as before, and the
 * backward has neither. The split=time forward with one group of states issues a chunk's
 * loads before the block's h0 and A are read and published; with several groups, z loads
 * after the state loop and each group's B and C as the group starts. */
Test(generate, forward_first_fetch_in_its_words_kernels_only) {
  const char *const markers[] = {"constexpr bool first_fetched = WORDS;", "if (!first_fetched) fetch(t_begin, 0, !CARRY);",
                                 "const int g = WORDS && p.groups == 1 ? 0 :", NULL};
  expect_in_forwards_only("first fetch", markers);
  /* one group of every state: the chunk's loads come before h0 and A are read, and those
   * before any is used */
  static const char *const early[] = {"load_run(z_row + t0, valid, 0.f, zv);",
                                      "load_run(B_rows + (0 + k) * p.B_state_stride + t0, valid, 0.f, B_now[k]);",
                                      "A_smem[slot][n] = A_row[n] * SF_LOG2E;", "dt[i] = i < valid ? step : 0.f;"};
  expect_in_order("op=fwd,split=time,dstate=4,dtype=fp32,z=1,threads=16,items=4,channels=2,states=4", early, 4);
  /* several groups: B in its group, z after the state loop, no group's B before it */
  static const char *const lean[] = {"auto state_group = [&](int n0) {",
                                     "load_run(B_rows + (n0 + k) * p.B_state_stride + t0, valid, 0.f, B_now[k]);",
                                     "for (int n0 = 0; n0 < 4; n0 += 1) state_group(n0);",
                                     "load_run(z_row + t0, valid, 0.f, zv);"};
  const char *lean_spec = "op=fwd,split=time,dstate=4,dtype=bf16,z=1,threads=64,items=8,channels=2,states=1,minblocks=8";
  expect_in_order(lean_spec, lean, 4);
  expect_marker(&(marker_case){lean_spec, false}, 1, "load_run(B_rows + (0 + k)", "a group's B before the state loop");
}

/* The backward's lanes' parts (docs/design-parts-layout.md): where the equal strides of
 * vector_row_strides leave a phase with two words in one bank, the layout found phase by
 * phase replaces them (groups of slots at offsets: part_base; or wider strides: a larger
 * array), unless its memory costs a block an SM (fp32, gated, 4/8/16: the old array);
 * launches whose strides serve every phase keep them. */
Test(generate, backward_lanes_parts_laid_out_by_phase) {
  struct { const char *spec; const char *array; bool grouped; } cases[] = {
      {"op=bwd,split=state,dstate=16,dtype=bf16,z=1,threads=4,items=8,channels=16,minblocks=6,states=1",
       "float part[3][896];", true},
      {"op=bwd,split=state,dstate=16,dtype=fp32,threads=4,items=8,channels=16,states=1", "float part[2][896];", true},
      {"op=bwd,split=state,dstate=16,dtype=fp32,z=1,threads=4,items=8,channels=16,states=1", "float part[3][576];",
       false},
      {"op=bwd,split=state,dstate=16,dtype=fp32,z=1,threads=8,items=16,channels=4,states=1", "float part[3][704];",
       false},
      {"op=bwd,split=state,dstate=16,dtype=fp32,threads=8,items=8,channels=8,states=1", "float part[2][832];", false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *source = generate(cases[i].spec);
    cr_expect(strstr(source, cases[i].array) != NULL, "%s: no '%s'", cases[i].spec, cases[i].array);
    const bool grouped = strstr(source, "const int part_base =") != NULL;
    cr_expect_eq(grouped, cases[i].grouped, "%s: slot offsets %s", cases[i].spec, grouped ? "present" : "absent");
    free(source);
  }
}

Test(generate, template_set_hash_is_stable) {
  uint64_t a = 0, b = 1;
  cr_assert_eq(sf_template_set_hash(&a), SF_OK);
  cr_assert_eq(sf_template_set_hash(&b), SF_OK);
  cr_expect_eq(a, b);
}

/* pairs=1 adds neighbouring channels' dB and dC terms: the template refuses it without
 * variable B and C, with an odd number of channels, or with one channel a warp; where it
 * is accepted, the source holds one array for both sums instead of two. */
Test(generate, backward_pairs_need_variable_B_and_C_and_channel_pairs_in_a_warp) {
  static const char *refused[][2] = {
      {"op=bwd,split=state,threads=2,items=8,channels=16,states=1,B=fixed,pairs=1", "B=var and C=var"},
      {"op=bwd,split=state,threads=16,items=8,channels=2,states=1,pairs=1,dstate=16,C=fixed", "B=var and C=var"},
      {"op=bwd,split=state,threads=32,items=4,channels=2,states=1,dstate=64,pairs=1", "channels=2 of 32 lanes"},
      {"op=bwd,split=state,threads=32,items=4,channels=1,states=1,dstate=64,pairs=1", "channels=1 of 32 lanes"}};
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
    sf_variant v;
    cr_assert_eq(sf_variant_parse(refused[k][0], &v), SF_OK, "%s: %s", refused[k][0], sf_last_error());
    char *source = NULL;
    size_t length;
    cr_expect_eq(sf_generate(&v, &source, &length), SF_EINVAL, "%s", refused[k][0]);
    cr_expect(strstr(sf_last_error(), "variant key 'pairs'") != NULL && strstr(sf_last_error(), refused[k][1]) != NULL,
              "%s: got: %s", refused[k][0], sf_last_error());
    cr_expect_null(source);
  }
  sf_variant v;
  cr_assert_eq(sf_variant_parse("op=bwd,split=state,threads=2,items=8,channels=16,states=1,pairs=1", &v), SF_OK);
  char *paired = NULL, *plain = NULL;
  size_t length;
  cr_assert_eq(sf_generate(&v, &paired, &length), SF_OK, "%s", sf_last_error());
  v.pairs = false;
  cr_assert_eq(sf_generate(&v, &plain, &length), SF_OK, "%s", sf_last_error());
  cr_expect(strstr(paired, "red_BC[") != NULL && strstr(paired, "red_B[") == NULL && strstr(paired, "__shfl_xor_sync") != NULL);
  cr_expect(strstr(plain, "red_BC[") == NULL && strstr(plain, "red_B[") != NULL && strstr(plain, "red_C[") != NULL);
  free(paired);
  free(plain);
}
