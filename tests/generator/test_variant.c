/* test_variant.c: spec parsing, canonical form, and every validation error. */
#include <criterion/criterion.h>
#include <string.h>

#include "generator/generator.h"
#include "scanforge/scanforge.h"

static void expect_invalid(const char *spec, const char *must_mention) {
  sf_variant v;
  sf_status st = sf_variant_parse(spec, &v);
  cr_expect_eq(st, SF_EINVAL, "spec '%s' should be rejected, got %s", spec, sf_status_name(st));
  cr_expect(strstr(sf_last_error(), must_mention) != NULL,
            "message for '%s' should mention '%s', got: %s", spec, must_mention, sf_last_error());
}

Test(variant, defaults_and_canonical_round_trip) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse("", &v), SF_OK);
  char canonical[512];
  sf_variant_format(&v, canonical, sizeof canonical);
  cr_expect(strstr(canonical, "op=fwd,split=time,dstate=16,dtype=fp32") == canonical, "got %s", canonical);

  const char *spec = "op=fwd,dstate=16,dtype=bf16,threads=128,items=16,z=1,D=1,delta_bias=1,softplus=1,B=var,C=fixed";
  cr_assert_eq(sf_variant_parse(spec, &v), SF_OK, "%s", sf_last_error());
  cr_expect_eq(v.dtype, SF_BF16);
  cr_expect_eq(v.threads, 128);
  cr_expect_eq(v.items, 16);
  cr_expect(v.has_z && v.has_D && v.has_delta_bias && v.softplus && v.B_var && !v.C_var);
  sf_variant_format(&v, canonical, sizeof canonical);
  sf_variant again;
  cr_assert_eq(sf_variant_parse(canonical, &again), SF_OK);
  char canonical_again[512];
  sf_variant_format(&again, canonical_again, sizeof canonical_again);
  cr_expect_str_eq(canonical, canonical_again);
}

Test(variant, key_order_and_blanks_do_not_matter) {
  sf_variant a, b;
  cr_assert_eq(sf_variant_parse("dtype=fp16, dstate=8 ,z=1", &a), SF_OK);
  cr_assert_eq(sf_variant_parse("z=1,dstate=8,dtype=fp16", &b), SF_OK);
  char sa[512], sb[512];
  sf_variant_format(&a, sa, sizeof sa);
  sf_variant_format(&b, sb, sizeof sb);
  cr_expect_str_eq(sa, sb);
}

Test(variant, every_validation_error_names_key_value_and_allowed) {
  expect_invalid("op=sideways", "'op'");
  expect_invalid("op=sideways", "fwd, bwd");
  expect_invalid("dstate=0", "1..256");
  expect_invalid("dstate=257", "'dstate'");
  expect_invalid("dstate=16x", "'16x'");
  expect_invalid("dtype=fp64", "fp32, fp16, bf16");
  expect_invalid("threads=48", "power of two");
  expect_invalid("threads=2048", "'threads'");
  expect_invalid("items=0", "'items'");
  expect_invalid("channels=0", "'channels'");
  expect_invalid("threads=512,channels=4", "1024");
  expect_invalid("threads=8,channels=2", "multiple of 32");
  expect_invalid("z=2", "0 or 1");
  expect_invalid("D=yes", "'D'");
  expect_invalid("softplus=-1", "'softplus'");
  expect_invalid("B=sometimes", "var, fixed");
  expect_invalid("C=", "'C'");
  expect_invalid("deterministic=1", "op=bwd");
  expect_invalid("pairs=1", "op=bwd with split=state");
  expect_invalid("op=bwd,split=time,pairs=1", "'pairs'");
  expect_invalid("op=bwd,split=state,pairs=2", "0 or 1");
  expect_invalid("split=time,words=1", "split=state only");
  expect_invalid("colour=blue", "unknown key 'colour'");
  expect_invalid("dstate=8,dstate=16", "twice");
  expect_invalid("dstate", "key=value");
}

/* words=1 (rows off 16-byte alignment, docs/design-row-alignment.md) is a module of its own:
 * a key of the canonical spec when set, and absent from it when not, so that the specs of
 * aligned calls read as they did before the key. */
Test(variant, words_is_in_the_canonical_spec_only_when_set) {
  sf_variant v;
  cr_assert_eq(sf_variant_parse("op=bwd,split=state,threads=4,items=8,channels=16,words=1", &v), SF_OK, "%s",
               sf_last_error());
  cr_expect(v.words);
  char canonical[512];
  sf_variant_format(&v, canonical, sizeof canonical);
  const size_t length = strlen(canonical);
  cr_expect(length > 8 && strcmp(canonical + length - 8, ",words=1") == 0, "got %s", canonical);
  sf_variant again;
  cr_assert_eq(sf_variant_parse(canonical, &again), SF_OK);
  cr_expect(again.words && sf_variant_same(&v, &again));
  v.words = false;
  sf_variant_format(&v, canonical, sizeof canonical);
  cr_expect_null(strstr(canonical, "words"), "got %s", canonical);
  cr_expect_not(sf_variant_same(&v, &again), "words=0 and words=1 are different modules");
}

Test(variant, failed_parse_leaves_output_untouched) {
  sf_variant v = sf_variant_default();
  v.dstate = 77;
  cr_expect_eq(sf_variant_parse("dstate=8,threads=3", &v), SF_EINVAL);
  cr_expect_eq(v.dstate, 77);
}

Test(variant, overlong_keys_and_values_are_errors_not_cut_short) {
  /* Cut to the buffer's 63 characters, this value would read as minblocks=0. */
  char spec[128] = "minblocks=";
  memset(spec + strlen(spec), '0', 70);
  strcat(spec, "5");
  expect_invalid(spec, "too long");
  expect_invalid("minblocks_and_then_some_more_letters=1", "too long");
  sf_variant v;
  cr_expect_eq(sf_variant_parse("minblocks=" "0000000000000000000000000000000000000000000000000000000000005", &v), SF_OK,
               "a long value that fits is still read: %s", sf_last_error());
  cr_expect_eq(v.min_blocks, 5);
}
