/* test_compile.c: the NVRTC compile stage on hand-written CUDA (no generator involved). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/compile/compile.h"
#include "base/error.h"

/* A kernel with shared memory, so the ptxas report has every field. */
static const char good_kernel[] =
    "extern \"C\" __global__ void scale(float *x, float a, int n) {\n"
    "  __shared__ float tile[128];\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  tile[threadIdx.x % 128] = i < n ? x[i] : 0.f;\n"
    "  __syncthreads();\n"
    "  if (i < n) x[i] = a * __expf(tile[(threadIdx.x + 1) % 128]);\n"
    "}\n";

/* Line 3 uses an undeclared name. */
static const char bad_kernel[] =
    "extern \"C\" __global__ void broken(float *x) {\n"
    "  int i = threadIdx.x;\n"
    "  x[i] = undeclared_thing_42 * 2.f;\n"
    "}\n";

static void check_cubin(int arch) {
  sf_binary b;
  sf_status status = sf_compile(good_kernel, "good.cu", arch, false, &b);
  cr_assert_eq(status, SF_OK, "sm_%d: %s: %s", arch, sf_status_name(status), sf_last_error());
  cr_assert_gt(b.size, 64);
  const unsigned char *elf = b.data;
  cr_assert(elf[0] == 0x7f && elf[1] == 'E' && elf[2] == 'L' && elf[3] == 'F', "not an ELF image");
  cr_assert_eq(elf[18] | (elf[19] << 8), 190, "e_machine is not EM_CUDA"); /* little-endian */
  cr_assert_not(b.is_ptx);
  cr_assert_eq(b.arch, arch);
  cr_assert(b.registers > 0 && b.registers <= 255, "registers %d", b.registers);
  cr_assert_eq(b.shared_bytes, 128 * 4, "shared %d", b.shared_bytes);
  cr_assert_eq(b.spill_stores, 0);
  cr_assert_eq(b.spill_loads, 0);
  cr_assert_geq(b.stack_bytes, 0);
  cr_assert_gt(b.compile_ms, 0.0);
  cr_assert_not_null(b.log);
  cr_assert_null(strstr(b.log, "warning"), "log: %s", b.log);
  sf_binary_free(&b);
  cr_assert_null(b.data);
}

Test(compile, cubin_for_sm75) { check_cubin(75); }
Test(compile, cubin_for_sm90) { check_cubin(90); }

Test(compile, error_quotes_the_source_line) {
  sf_binary b;
  sf_status status = sf_compile(bad_kernel, "bad.cu", 80, false, &b);
  cr_assert_eq(status, SF_ECOMPILE, "%s", sf_status_name(status));
  const char *message = sf_last_error();
  cr_assert_not_null(strstr(message, "undeclared_thing_42"), "%s", message);
  cr_assert_not_null(strstr(message, "bad.cu(3): error"), "the NVRTC log is missing: %s", message);
  cr_assert_not_null(strstr(message, "  at line 3:   x[i] = undeclared_thing_42 * 2.f;"),
                     "the source line is not quoted: %s", message);
  cr_assert_null(b.data);
  cr_assert_null(b.log);
}

/* #line directives (as generated sources carry) move the error's place to the template;
 * the quote shows the source line the compiler counted there, and how many there were. */
Test(compile, error_under_a_line_directive_quotes_the_template_place) {
  static const char directed[] =
      "extern \"C\" __global__ void k(float *x) {\n"
      "#line 40 \"templates/made_up.tpl\"\n"
      "  x[0] = first_unknown_47;\n"
      "#line 40 \"templates/made_up.tpl\"\n"
      "  x[1] = first_unknown_47;\n"
      "  x[2] = second_unknown_48;\n"
      "}\n";
  sf_binary b;
  cr_assert_eq(sf_compile(directed, "directed.cu", 80, false, &b), SF_ECOMPILE, "%s", sf_last_error());
  const char *message = sf_last_error();
  cr_expect_not_null(strstr(message, "templates/made_up.tpl(40): error"), "%s", message);
  cr_expect_not_null(strstr(message, "  at templates/made_up.tpl:40:   x[0] = first_unknown_47; (the first of 2 generated lines from there)"),
                     "%s", message);
  cr_expect_not_null(strstr(message, "  at templates/made_up.tpl:41:   x[2] = second_unknown_48;"), "%s", message);
  cr_expect_null(strstr(message, "at line"), "no place of directed.cu itself is in error: %s", message);
}

Test(compile, warnings_stay_in_the_log) {
  static const char warns[] =
      "extern \"C\" __global__ void k(float *x) {\n"
      "  int unused_variable;\n"
      "  x[threadIdx.x] = 1.f;\n"
      "}\n";
  sf_binary b;
  cr_assert_eq(sf_compile(warns, "warns.cu", 80, false, &b), SF_OK, "%s", sf_last_error());
  cr_assert_not_null(strstr(b.log, "warns.cu(2): warning"), "log: %s", b.log);
  sf_binary_free(&b);
}

Test(compile, unsupported_arch_is_named) {
  sf_binary b;
  sf_status status = sf_compile(good_kernel, "good.cu", 12, false, &b);
  cr_assert_eq(status, SF_EINVAL, "%s", sf_status_name(status));
  cr_assert_not_null(strstr(sf_last_error(), "sm_12"), "%s", sf_last_error());
  cr_assert_not_null(strstr(sf_last_error(), " 90"), "supported list missing: %s", sf_last_error());
}

Test(compile, ptx_is_text_with_a_target) {
  sf_binary b;
  sf_status status = sf_compile(good_kernel, "good.cu", 90, true, &b);
  cr_assert_eq(status, SF_OK, "%s", sf_last_error());
  cr_assert(b.is_ptx);
  cr_assert_eq(strlen(b.data), b.size);
  cr_assert_not_null(strstr(b.data, ".target sm_90"), "%.200s", (const char *)b.data);
  cr_assert_not_null(strstr(b.data, ".entry scale"));
  cr_assert_eq(b.registers, -1);
  sf_binary_free(&b);
}

Test(compile, archs_and_version) {
  int major = 0, minor = -1;
  cr_assert_eq(sf_nvrtc_version(&major, &minor), SF_OK, "%s", sf_last_error());
  cr_assert_geq(major, 12);
  cr_assert_geq(minor, 0);
  int count = 0;
  cr_assert_eq(sf_nvrtc_archs(NULL, 0, &count), SF_OK);
  cr_assert_gt(count, 0);
  int *archs = calloc((size_t)count, sizeof *archs);
  int again = 0;
  cr_assert_eq(sf_nvrtc_archs(archs, count, &again), SF_OK);
  cr_assert_eq(again, count);
  int has75 = 0, has90 = 0;
  for (int i = 0; i < count; i++) {
    has75 |= archs[i] == 75;
    has90 |= archs[i] == 90;
    if (i > 0) cr_assert_lt(archs[i - 1], archs[i], "not ascending");
  }
  cr_assert(has75 && has90);
  free(archs);
}

Test(compile, options_string_is_fixed) {
  const char *options = sf_compile_options_string();
  cr_assert_not_null(strstr(options, "-std=c++17"));
  cr_assert_not_null(strstr(options, "--use_fast_math"));
  cr_assert_null(strstr(options, "sm_"), "the arch is not part of the fixed options");
}

/* Criterion runs each test in its own process, so the one-time load sees this variable. */
Test(compile, missing_nvrtc_lists_what_was_tried) {
  setenv("SCANFORGE_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.99", 1);
  sf_binary b;
  sf_status status = sf_compile(good_kernel, "good.cu", 90, false, &b);
  cr_assert_eq(status, SF_EUNSUPPORTED, "%s", sf_status_name(status));
  cr_assert_not_null(strstr(sf_last_error(), "/nonexistent/libnvrtc.so.99"), "%s", sf_last_error());
}
