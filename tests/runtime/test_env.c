/* test_env.c: every environment variable scanforge reads, with good, garbage, negative,
 * overflowing and empty values; the warning names the variable, the value and what is
 * expected, and each bad variable is reported once per process. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache/cache.h"
#include "base/env.h"
#include "scanforge/scanforge.h"

static const char overflow[] = "99999999999999999999";

typedef struct env_case {
  const char *text;
  bool ok;
  int64_t number; /* when ok, for the numeric kinds */
} env_case;

/* A path longer than any the library can use. */
static const char *too_long(void) {
  static char text[5001];
  memset(text, 'a', sizeof text - 1);
  text[0] = '/';
  return text;
}

static int count_of(const char *haystack, const char *needle) {
  int n = 0;
  for (const char *p = haystack; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Checks each case of one variable through the pure parser. */
static void check_cases(sf_env_var var, const env_case *cases, size_t count, bool numeric) {
  const char *name = sf_env_name(var);
  for (size_t i = 0; i < count; i++) {
    const env_case *c = &cases[i];
    sf_env_value v = {0};
    char why[512];
    const bool ok = sf_env_parse(var, c->text, &v, why, sizeof why);
    cr_expect_eq(ok, c->ok, "%s=\"%.40s\": parsed %d, expected %d (%s)", name, c->text, ok, c->ok, why);
    if (ok && numeric)
      cr_expect_eq(v.number, c->number, "%s=\"%s\": %lld, expected %lld", name, c->text, (long long)v.number,
                   (long long)c->number);
    if (ok && !numeric) cr_expect_str_eq(v.text, c->text);
    if (ok || !c->text[0]) {
      cr_expect_str_eq(why, "", "%s=\"%.40s\": no warning expected, got %s", name, c->text, why);
      continue;
    }
    char shown[64];
    snprintf(shown, sizeof shown, "%s=\"%.20s", name, c->text);
    cr_expect(strstr(why, shown), "the warning names the variable and the value (%s): %s", shown, why);
    cr_expect(strstr(why, "expected "), "the warning says what is expected: %s", why);
    cr_expect(strstr(why, "; using "), "the warning says what is used instead: %s", why);
  }
}

#define CHECK(var, cases, numeric) check_cases(var, cases, sizeof cases / sizeof cases[0], numeric)

Test(env, cache_max_bytes) {
  const env_case cases[] = {
      {"64M", true, 64 << 20},   {"1048576", true, 1048576}, {"2GiB", true, 2ll << 30},
      {"512k", true, 512 << 10}, {"1T", true, 1ll << 40},    {"lots", false, 0},
      {"12X", false, 0},         {" 5M", false, 0},          {"-5", false, 0},
      {"0", false, 0},           {overflow, false, 0},       {"9000000000G", false, 0},
      {"", false, 0},
  };
  CHECK(SF_ENV_CACHE_MAX_BYTES, cases, true);
}

Test(env, workspace_keep_bytes) {
  const env_case cases[] = {
      {"256M", true, 256 << 20}, {"1", true, 1},       {"4G", true, 4ll << 30}, {"0", false, 0},
      {"-1", false, 0},          {"1Q", false, 0},     {overflow, false, 0},    {"", false, 0},
  };
  CHECK(SF_ENV_WORKSPACE_KEEP_BYTES, cases, true);
}

Test(env, min_segment) {
  const env_case cases[] = {
      {"32", true, 32},   {"4", true, 4},       {"512", true, 512},    {"48", false, 0},
      {"2", false, 0},    {"1024", false, 0},   {"-8", false, 0},      {"+8", false, 0},
      {"8x", false, 0},   {"0x10", false, 0},   {overflow, false, 0},  {"many", false, 0},
      {"", false, 0},
  };
  CHECK(SF_ENV_MIN_SEGMENT, cases, true);
}

Test(env, tuning_switch) {
  const env_case cases[] = {
      {"off", true, 0},  {"OFF", true, 0},  {"0", true, 0},        {"no", true, 0},
      {"false", true, 0}, {"on", true, 1},  {"1", true, 1},        {"Yes", true, 1},
      {"true", true, 1}, {"maybe", false, 0}, {"-1", false, 0},    {overflow, false, 0},
      {"2", false, 0},   {"", false, 0},
  };
  CHECK(SF_ENV_TUNING, cases, true);
}

Test(env, cpu_kernels) {
  const env_case cases[] = {
      {"portable", true, SF_ENV_CPU_PORTABLE}, {"auto", true, SF_ENV_CPU_AUTO}, {"avx512", false, 0},
      {"Portable", false, 0},                  {"-1", false, 0},                {overflow, false, 0},
      {"", false, 0},
  };
  CHECK(SF_ENV_CPU_KERNELS, cases, true);
}

/* Any text names a path or a library; only one too long for the library's buffers is bad. */
Test(env, paths) {
  const sf_env_var paths[] = {SF_ENV_CACHE_DIR,     SF_ENV_TUNING_DB, SF_ENV_TEMPLATE_DIR,
                              SF_ENV_NVRTC_LIBRARY, SF_ENV_CUDA_HOME, SF_ENV_CUDA_LIBRARY};
  const env_case cases[] = {
      {"/opt/scanforge/cache", true, 0}, {"relative/dir", true, 0}, {"libnvrtc.so.12", true, 0},
      {"-1", true, 0},                   {overflow, true, 0},       {too_long(), false, 0},
      {"", false, 0},
  };
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) CHECK(paths[i], cases, false);
}

Test(env, xdg_cache_home_must_be_absolute) {
  const env_case cases[] = {
      {"/home/me/.cache", true, 0}, {"relative", false, 0}, {"-1", false, 0},
      {too_long(), false, 0},       {"", false, 0},
  };
  CHECK(SF_ENV_XDG_CACHE_HOME, cases, false);
}

Test(env, a_long_value_is_shortened_in_the_warning) {
  sf_env_value v;
  char why[512];
  cr_assert_not(sf_env_parse(SF_ENV_CACHE_DIR, too_long(), &v, why, sizeof why));
  cr_expect(strstr(why, "...\" is not usable"), "%s", why);
  cr_expect_lt(strlen(why), 300u, "%s", why);
}

/* ---- through the process's environment and the warning channel ---------------------- */

Test(env, nothing_to_say_when_unset_or_good) {
  const char *names[] = {"SCANFORGE_CACHE_DIR", "XDG_CACHE_HOME", "SCANFORGE_CACHE_MAX_BYTES",
                         "SCANFORGE_TUNING", "SCANFORGE_TUNING_DB", "SCANFORGE_TEMPLATE_DIR",
                         "SCANFORGE_CPU_KERNELS", "SCANFORGE_MIN_SEGMENT", "SCANFORGE_NVRTC_LIBRARY",
                         "CUDA_HOME", "SCANFORGE_CUDA_LIBRARY", "SCANFORGE_CACHE_PATH",
                         "SCANFORGE_CACHE_TRUST_GROUP", "SCANFORGE_SEGMENTS", "SCANFORGE_WORKSPACE_KEEP_BYTES"};
  cr_assert_eq(sizeof names / sizeof names[0], (size_t)SF_ENV_COUNT, "a variable is missing here");
  for (int i = 0; i < SF_ENV_COUNT; i++) {
    cr_expect_str_eq(sf_env_name((sf_env_var)i), names[i]);
    unsetenv(names[i]);
  }
  cr_expect_null(sf_environment_warning());
  setenv("SCANFORGE_CACHE_MAX_BYTES", "", 1); /* empty: the same as unset */
  setenv("SCANFORGE_MIN_SEGMENT", "128", 1);
  setenv("SCANFORGE_TUNING", "off", 1);
  setenv("SCANFORGE_CPU_KERNELS", "portable", 1);
  setenv("XDG_CACHE_HOME", "/tmp", 1);
  cr_expect_null(sf_environment_warning(), "%s", sf_environment_warning());
  sf_env_value v;
  cr_expect_not(sf_env_get(SF_ENV_CACHE_MAX_BYTES, &v));
  cr_assert(sf_env_get(SF_ENV_MIN_SEGMENT, &v));
  cr_expect_eq(v.number, 128);
  cr_expect_not(sf_env_get(SF_ENV_COUNT, &v), "not a variable");
}

Test(env, a_bad_value_falls_back_and_is_reported_once) {
  setenv("SCANFORGE_CACHE_MAX_BYTES", "-5", 1);
  sf_env_value v;
  for (int i = 0; i < 3; i++) cr_expect_not(sf_env_get(SF_ENV_CACHE_MAX_BYTES, &v));
  sf_cache *cache;
  sf_cache_options opt = {.memory_only = true};
  cr_assert_eq(sf_cache_open(&opt, &cache), SF_OK);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_stat(cache, &st), SF_OK);
  cr_expect_eq(st.max_bytes, 1u << 30, "the default budget");
  sf_cache_close(cache);

  const char *first = sf_environment_warning();
  cr_assert_not_null(first);
  cr_expect_eq(count_of(first, "SCANFORGE_CACHE_MAX_BYTES"), 1, "%s", first);
  cr_expect(strstr(first, "SCANFORGE_CACHE_MAX_BYTES=\"-5\" is not usable: expected a positive byte count"),
            "%s", first);
  cr_expect(strstr(first, "using 1 GiB"), "%s", first);
  cr_expect_eq(sf_environment_warning(), first, "nothing new: the same text");

  /* Another bad value of the same variable is not reported again ... */
  setenv("SCANFORGE_CACHE_MAX_BYTES", "lots", 1);
  cr_expect_not(sf_env_get(SF_ENV_CACHE_MAX_BYTES, &v));
  cr_expect_eq(sf_environment_warning(), first);
  /* ... another variable is, on a line of its own, and the first text stays valid. */
  setenv("SCANFORGE_MIN_SEGMENT", "48", 1);
  const char *both = sf_environment_warning();
  cr_assert_not_null(both);
  cr_expect_str_eq(both + strlen(first), "\nSCANFORGE_MIN_SEGMENT=\"48\" is not usable: expected a power of "
                                         "two from 4 to 512; using 64");
  cr_expect(strstr(first, "\"-5\""), "%s", first);
  cr_expect_eq(count_of(both, "\n"), 1);
}

Test(env, every_variable_reports_through_one_channel) {
  const struct {
    const char *name, *bad;
  } bad[] = {{"SCANFORGE_CACHE_DIR", too_long()}, {"XDG_CACHE_HOME", "relative"},
             {"SCANFORGE_CACHE_MAX_BYTES", overflow}, {"SCANFORGE_TUNING", "maybe"},
             {"SCANFORGE_TUNING_DB", too_long()}, {"SCANFORGE_TEMPLATE_DIR", too_long()},
             {"SCANFORGE_CPU_KERNELS", "avx512"}, {"SCANFORGE_MIN_SEGMENT", "-8"},
             {"SCANFORGE_NVRTC_LIBRARY", too_long()}, {"CUDA_HOME", too_long()},
             {"SCANFORGE_CUDA_LIBRARY", too_long()}, {"SCANFORGE_CACHE_PATH", too_long()},
             {"SCANFORGE_CACHE_TRUST_GROUP", "maybe"}, {"SCANFORGE_SEGMENTS", "sometimes"},
             {"SCANFORGE_WORKSPACE_KEEP_BYTES", "0"}};
  cr_assert_eq(sizeof bad / sizeof bad[0], (size_t)SF_ENV_COUNT);
  for (int i = 0; i < SF_ENV_COUNT; i++) setenv(bad[i].name, bad[i].bad, 1);
  const char *text = sf_environment_warning();
  cr_assert_not_null(text);
  cr_expect_eq(count_of(text, "\n"), SF_ENV_COUNT - 1, "one line a variable:\n%s", text);
  for (int i = 0; i < SF_ENV_COUNT; i++) {
    char needle[128];
    snprintf(needle, sizeof needle, "%s=\"", bad[i].name);
    cr_expect_eq(count_of(text, needle), 1, "%s once in:\n%s", bad[i].name, text);
    sf_env_value v;
    cr_expect_not(sf_env_get((sf_env_var)i, &v), "%s: the default is used", bad[i].name);
  }
  cr_expect_eq(sf_environment_warning(), text, "reported once: asking again changes nothing");
}
