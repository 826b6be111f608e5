/* test_cuda_driver.c: the driver layer without a GPU: no-driver errors, target choice, the kernel table. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/dynamic_shared.h"
#include "base/error.h"
#include "runtime/cuda/kernel_table.h"
#include "runtime/cuda/memory_kind.h"
#include "runtime/cuda/module.h"
#include "runtime/compile/target.h"

/* Criterion runs every test in its own process, so each test opens (or fails to open)
 * the driver afresh: the environment set at the top of a test is what the load sees. */
static void use_missing_driver(void) {
  cr_assert_eq(setenv("SCANFORGE_CUDA_LIBRARY", "/nonexistent/scanforge-test/libcuda.so.1", 1), 0);
}

/* ---- no driver ------------------------------------------------------------------- */

Test(cuda_driver, missing_library_is_enodevice_with_dlopen_reason) {
  use_missing_driver();
  const sf_cu *cu = (const sf_cu *)1;
  cr_assert_eq(sf_cu_load(&cu), SF_ENODEVICE);
  cr_expect_null(cu);
  const char *msg = sf_last_error();
  cr_expect(strstr(msg, "/nonexistent/scanforge-test/libcuda.so.1") != NULL, "message: %s", msg);
  cr_expect(strstr(msg, "No such file") != NULL, "dlopen's reason missing: %s", msg);
  /* Every later call fails the same way, with the message set again. */
  sf_clear_error();
  cr_assert_eq(sf_cu_load(&cu), SF_ENODEVICE);
  cr_expect(strstr(sf_last_error(), "libcuda.so.1") != NULL);
}

Test(cuda_driver, public_device_calls_fail_cleanly_without_driver) {
  use_missing_driver();
  int count = 7;
  cr_assert_eq(sf_device_count(&count), SF_ENODEVICE);
  cr_expect_eq(count, 0);
  cr_expect(strstr(sf_last_error(), "libcuda.so.1") != NULL, "message: %s", sf_last_error());
  sf_device_info info;
  memset(&info, 0x5a, sizeof info);
  cr_assert_eq(sf_device_get_info(0, &info), SF_ENODEVICE);
  cr_expect_eq(info.name[0], '\0');
  cr_assert_eq(sf_device_get_info(-1, &info), SF_ENODEVICE);
  cr_expect_eq(sf_device_count(NULL), SF_EINVAL);
  cr_expect_eq(sf_device_get_info(0, NULL), SF_EINVAL);
  cr_expect_eq(sf_device_get_info(-2, &info), SF_EINVAL);
}

Test(cuda_driver, contexts_and_modules_fail_cleanly_without_driver) {
  use_missing_driver();
  CUcontext ctx = (CUcontext)1;
  cr_expect_eq(sf_cu_primary_context(0, &ctx), SF_ENODEVICE);
  cr_expect_null(ctx);
  ctx = (CUcontext)1;
  cr_expect_eq(sf_cu_current_context(0, &ctx), SF_ENODEVICE);
  cr_expect_null(ctx);

  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  static const uint8_t key[SF_KERNEL_KEY_BYTES] = {1, 2, 3};
  static const char ptx[] = ".version 7.0\n.target sm_75\n.address_size 64\n";
  sf_module_request rq = {(CUcontext)0x1000, key, "k", ptx, sizeof ptx, 0, 0, false};
  const sf_kernel *kernel = (const sf_kernel *)1;
  cr_expect_eq(sf_module_get(table, &rq, &kernel), SF_ENODEVICE);
  cr_expect_null(kernel);
  cr_expect(strstr(sf_last_error(), "libcuda.so.1") != NULL, "message: %s", sf_last_error());
  cr_expect_eq(sf_kernel_table_count(table), 0);
  sf_module_table_destroy(table);
}

Test(cuda_driver, every_pointer_is_host_memory_without_driver) {
  use_missing_driver();
  int on_stack = 0;
  sf_memory_kind kind = SF_MEMORY_DEVICE;
  cr_assert_eq(sf_memory_kind_of(&on_stack, &kind), SF_OK);
  cr_expect_eq(kind, SF_MEMORY_HOST);
  kind = SF_MEMORY_DEVICE;
  cr_assert_eq(sf_memory_kind_of(NULL, &kind), SF_OK);
  cr_expect_eq(kind, SF_MEMORY_HOST);
}

Test(cuda_driver, default_library_missing_names_libcuda) {
  unsetenv("SCANFORGE_CUDA_LIBRARY");
  void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (probe) cr_skip_test("this machine has libcuda.so.1: the no-driver path cannot be seen");
  cr_assert_eq(sf_cu_load(NULL), SF_ENODEVICE);
  cr_expect(strstr(sf_last_error(), "libcuda.so.1") != NULL, "message: %s", sf_last_error());
  cr_expect(strstr(sf_last_error(), "SCANFORGE_CUDA_LIBRARY") != NULL);
}

Test(cuda_driver, library_without_entry_points_is_unsupported) {
  /* libm opens but has no cu* symbols: the message names the first one missing. */
  cr_assert_eq(setenv("SCANFORGE_CUDA_LIBRARY", "libm.so.6", 1), 0);
  cr_assert_eq(sf_cu_load(NULL), SF_EUNSUPPORTED);
  const char *msg = sf_last_error();
  cr_expect(strstr(msg, "libm.so.6") != NULL, "message: %s", msg);
  cr_expect(strstr(msg, "lacks cuInit") != NULL, "message: %s", msg);
}

Test(cuda_driver, check_names_the_call_and_maps_the_status) {
  use_missing_driver();
  cr_expect_eq(sf_cu_check(CUDA_SUCCESS, "cuMemAlloc"), SF_OK);
  cr_expect_eq(sf_cu_check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), SF_ENOMEM);
  const char *msg = sf_last_error();
  cr_expect(strncmp(msg, "cuMemAlloc: ", 12) == 0, "message: %s", msg);
  cr_expect(strstr(msg, "CUresult 2") != NULL, "no driver to name it, so the number: %s", msg);
  cr_expect_eq(sf_cu_check(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "cuLaunchKernel"), SF_ERESOURCE);
  cr_expect_eq(sf_cu_check(CUDA_ERROR_NO_DEVICE, "cuInit"), SF_ENODEVICE);
  cr_expect_eq(sf_cu_check(CUDA_ERROR_INVALID_PTX, "cuModuleLoadDataEx"), SF_ECUDA);
  cr_expect(strstr(sf_last_error(), "cuModuleLoadDataEx: CUresult 218") == sf_last_error());
}

/* ---- target choice ---------------------------------------------------------------- */

/* What NVRTC 13.0 reports. */
static const int nvrtc13_archs[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
#define NVRTC13_COUNT ((int)(sizeof nvrtc13_archs / sizeof nvrtc13_archs[0]))

typedef struct target_case {
  int major, minor;
  int arch;
  bool use_ptx;
} target_case;

Test(target, cubin_when_known_ptx_when_newer_or_between) {
  static const target_case cases[] = {
      {7, 5, 75, false},   /* Turing */
      {8, 0, 80, false},   /* A100 */
      {8, 6, 86, false},
      {8, 9, 89, false},   /* Ada */
      {9, 0, 90, false},   /* H100, H200 */
      {10, 0, 100, false}, /* B200 */
      {12, 0, 120, false},
      {12, 1, 121, false},
      {12, 9, 121, true},  /* a newer minor than NVRTC knows */
      {13, 0, 121, true},  /* a newer major */
      {15, 2, 121, true},
      {10, 1, 100, true},  /* between listed archs: PTX of the one below */
      {9, 5, 90, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const target_case *c = &cases[i];
    sf_target t = {-1, true};
    cr_assert_eq(sf_target_arch(c->major, c->minor, nvrtc13_archs, NVRTC13_COUNT, &t), SF_OK,
                 "cc %d.%d: %s", c->major, c->minor, sf_last_error());
    cr_expect_eq(t.arch, c->arch, "cc %d.%d: arch %d, expected %d", c->major, c->minor, t.arch,
                 c->arch);
    cr_expect_eq(t.use_ptx, c->use_ptx, "cc %d.%d: use_ptx %d", c->major, c->minor, t.use_ptx);
  }
}

Test(target, order_of_the_list_does_not_matter) {
  static const int shuffled[] = {90, 121, 75, 100, 80};
  sf_target t;
  cr_assert_eq(sf_target_arch(9, 0, shuffled, 5, &t), SF_OK);
  cr_expect(t.arch == 90 && !t.use_ptx);
  cr_assert_eq(sf_target_arch(8, 9, shuffled, 5, &t), SF_OK);
  cr_expect(t.arch == 80 && t.use_ptx, "arch %d ptx %d", t.arch, t.use_ptx);
  cr_assert_eq(sf_target_arch(20, 0, shuffled, 5, &t), SF_OK);
  cr_expect(t.arch == 121 && t.use_ptx);
}

Test(target, older_than_nvrtc_and_bad_input_fail) {
  sf_target t;
  cr_expect_eq(sf_target_arch(7, 0, nvrtc13_archs, NVRTC13_COUNT, &t), SF_EUNSUPPORTED);
  cr_expect(strstr(sf_last_error(), "sm_70") && strstr(sf_last_error(), "sm_75"),
            "message: %s", sf_last_error());
  cr_expect_eq(sf_target_arch(6, 1, nvrtc13_archs, NVRTC13_COUNT, &t), SF_EUNSUPPORTED);
  cr_expect_eq(sf_target_arch(9, 0, nvrtc13_archs, 0, &t), SF_EINVAL);
  cr_expect_eq(sf_target_arch(9, 0, NULL, 3, &t), SF_EINVAL);
  cr_expect_eq(sf_target_arch(0, 0, nvrtc13_archs, NVRTC13_COUNT, &t), SF_EINVAL);
  cr_expect_eq(sf_target_arch(9, 10, nvrtc13_archs, NVRTC13_COUNT, &t), SF_EINVAL);
  cr_expect_eq(sf_target_arch(9, 0, nvrtc13_archs, NVRTC13_COUNT, NULL), SF_EINVAL);
}

Test(target, format_gives_nvrtc_arch_names) {
  char buf[32];
  cr_expect_eq(sf_target_format((sf_target){90, false}, buf, sizeof buf), 5);
  cr_expect_str_eq(buf, "sm_90");
  cr_expect_eq(sf_target_format((sf_target){121, true}, buf, sizeof buf), 11);
  cr_expect_str_eq(buf, "compute_121");
}

/* ---- kernel table, with fake handles ----------------------------------------------- */

enum { FAKE_KEYS = 300, FAKE_THREADS = 8, FAKE_CONTEXTS = 2 };

typedef struct fake_loader {
  atomic_int builds[FAKE_CONTEXTS][FAKE_KEYS]; /* how often each kernel was built */
  atomic_int releases;
} fake_loader;

static void fake_key(int i, uint8_t key[SF_KERNEL_KEY_BYTES]) {
  memset(key, 0, SF_KERNEL_KEY_BYTES);
  /* Keys differing in their last byte too, so no prefix comparison can pass. */
  key[0] = (uint8_t)i;
  key[1] = (uint8_t)(i >> 8);
  key[SF_KERNEL_KEY_BYTES - 1] = (uint8_t)(i * 7);
}

static CUcontext fake_context(int c) { return (CUcontext)(uintptr_t)(0x1000 + 0x100 * c); }

typedef struct fake_build {
  fake_loader *loader;
  int context, index;
} fake_build;

/* The "module" and "function" encode which kernel was built, so a lookup that returns
 * the wrong entry shows. */
static sf_status fake_build_kernel(void *user, sf_kernel *k) {
  fake_build *b = user;
  atomic_fetch_add(&b->loader->builds[b->context][b->index], 1);
  k->module = (CUmodule)(uintptr_t)(0x10000 + b->context * FAKE_KEYS + b->index);
  k->function = (CUfunction)(uintptr_t)(0x20000 + b->context * FAKE_KEYS + b->index);
  k->registers = 32;
  k->max_threads_per_block = 1024;
  return SF_OK;
}

static void fake_release(void *user, const sf_kernel *k) {
  (void)k;
  atomic_fetch_add(&((fake_loader *)user)->releases, 1);
}

typedef struct worker {
  sf_kernel_table *table;
  fake_loader *loader;
  int seed;
  int failures;
} worker;

static void *hammer(void *arg) {
  worker *w = arg;
  char name[32];
  uint8_t key[SF_KERNEL_KEY_BYTES];
  for (int round = 0; round < 3; round++) {
    for (int n = 0; n < FAKE_CONTEXTS * FAKE_KEYS; n++) {
      /* Each thread walks the kernels in its own order, so inserts race with lookups. */
      int j = (n * 7 + w->seed * 131) % (FAKE_CONTEXTS * FAKE_KEYS);
      int c = j % FAKE_CONTEXTS, i = j / FAKE_CONTEXTS;
      fake_key(i, key);
      snprintf(name, sizeof name, "kernel_%d", i % 3);
      fake_build b = {w->loader, c, i};
      const sf_kernel *k = NULL;
      if (sf_kernel_table_get_or_add(w->table, fake_context(c), key, name, fake_build_kernel, &b,
                                     &k) != SF_OK ||
          !k || k->function != (CUfunction)(uintptr_t)(0x20000 + c * FAKE_KEYS + i) ||
          k->context != fake_context(c) || strcmp(k->name, name) != 0 ||
          sf_kernel_table_find(w->table, fake_context(c), key, name) != k)
        w->failures++;
    }
  }
  return NULL;
}

Test(kernel_table, threads_build_each_kernel_once_and_agree) {
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(2048, &table), SF_OK);
  fake_loader *loader = calloc(1, sizeof *loader);
  cr_assert_not_null(loader);
  pthread_t threads[FAKE_THREADS];
  worker workers[FAKE_THREADS];
  for (int t = 0; t < FAKE_THREADS; t++) {
    workers[t] = (worker){table, loader, t, 0};
    cr_assert_eq(pthread_create(&threads[t], NULL, hammer, &workers[t]), 0);
  }
  for (int t = 0; t < FAKE_THREADS; t++) {
    pthread_join(threads[t], NULL);
    cr_expect_eq(workers[t].failures, 0, "thread %d saw %d wrong results", t, workers[t].failures);
  }
  for (int c = 0; c < FAKE_CONTEXTS; c++)
    for (int i = 0; i < FAKE_KEYS; i++)
      cr_expect_eq(atomic_load(&loader->builds[c][i]), 1, "kernel (%d, %d) built %d times", c, i,
                   atomic_load(&loader->builds[c][i]));
  cr_expect_eq(sf_kernel_table_count(table), (size_t)FAKE_CONTEXTS * FAKE_KEYS);
  sf_kernel_table_destroy(table, fake_release, loader);
  cr_expect_eq(atomic_load(&loader->releases), FAKE_CONTEXTS * FAKE_KEYS);
  free(loader);
}

Test(kernel_table, context_key_and_name_each_tell_kernels_apart) {
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(64, &table), SF_OK);
  fake_loader *loader = calloc(1, sizeof *loader);
  uint8_t key[SF_KERNEL_KEY_BYTES], other_key[SF_KERNEL_KEY_BYTES];
  fake_key(5, key);
  fake_key(5, other_key);
  other_key[SF_KERNEL_KEY_BYTES - 1] ^= 1;
  fake_build b = {loader, 0, 5};
  const sf_kernel *k;
  cr_assert_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "fwd", fake_build_kernel,
                                          &b, &k), SF_OK);
  cr_expect_eq(sf_kernel_table_find(table, fake_context(0), key, "fwd"), k);
  cr_expect_null(sf_kernel_table_find(table, fake_context(1), key, "fwd"));
  cr_expect_null(sf_kernel_table_find(table, fake_context(0), other_key, "fwd"));
  cr_expect_null(sf_kernel_table_find(table, fake_context(0), key, "bwd"));
  cr_expect_null(sf_kernel_table_find(table, fake_context(0), key, "fw"));
  cr_expect_null(sf_kernel_table_find(NULL, fake_context(0), key, "fwd"));
  /* The table keeps its own copy of the name. */
  char name[] = "bwd";
  cr_assert_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, name, fake_build_kernel,
                                          &b, &k), SF_OK);
  name[0] = 'x';
  cr_expect_str_eq(k->name, "bwd");
  cr_expect_eq(sf_kernel_table_find(table, fake_context(0), key, "bwd"), k);
  cr_expect_eq(sf_kernel_table_count(table), 2);
  sf_kernel_table_destroy(table, NULL, NULL);
  free(loader);
}

static sf_status failing_build(void *user, sf_kernel *k) {
  (void)k;
  ++*(int *)user;
  return sf_fail(SF_ECUDA, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: test");
}

Test(kernel_table, failed_build_leaves_nothing_and_can_be_retried) {
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES];
  fake_key(1, key);
  int calls = 0;
  const sf_kernel *k = (const sf_kernel *)1;
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "k", failing_build, &calls,
                                          &k), SF_ECUDA);
  cr_expect_null(k);
  cr_expect(strstr(sf_last_error(), "INVALID_PTX") != NULL);
  cr_expect_eq(sf_kernel_table_count(table), 0);
  cr_expect_null(sf_kernel_table_find(table, fake_context(0), key, "k"));
  /* A second try builds again (a failure is not cached). */
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "k", failing_build, &calls,
                                          &k), SF_ECUDA);
  cr_expect_eq(calls, 2);
  fake_loader *loader = calloc(1, sizeof *loader);
  fake_build b = {loader, 0, 1};
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "k", fake_build_kernel, &b,
                                          &k), SF_OK);
  cr_expect_eq(sf_kernel_table_find(table, fake_context(0), key, "k"), k);
  sf_kernel_table_destroy(table, NULL, NULL);
  free(loader);
}

Test(kernel_table, full_table_is_eresource) {
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(8, &table), SF_OK); /* holds 6 */
  fake_loader *loader = calloc(1, sizeof *loader);
  uint8_t key[SF_KERNEL_KEY_BYTES];
  const sf_kernel *k;
  for (int i = 0; i < 6; i++) {
    fake_key(i, key);
    fake_build b = {loader, 0, i};
    cr_assert_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "k", fake_build_kernel,
                                            &b, &k), SF_OK, "%d: %s", i, sf_last_error());
  }
  fake_key(6, key);
  fake_build b = {loader, 0, 6};
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "k", fake_build_kernel, &b,
                                          &k), SF_ERESOURCE);
  cr_expect(strstr(sf_last_error(), "full") != NULL, "message: %s", sf_last_error());
  cr_expect_eq(atomic_load(&loader->builds[0][6]), 0, "a full table must not build");
  /* What is in it is still found. */
  for (int i = 0; i < 6; i++) {
    fake_key(i, key);
    cr_expect_not_null(sf_kernel_table_find(table, fake_context(0), key, "k"), "%d", i);
  }
  fake_key(6, key);
  cr_expect_null(sf_kernel_table_find(table, fake_context(0), key, "k"));
  sf_kernel_table_destroy(table, NULL, NULL);
  free(loader);
}

Test(kernel_table, bad_arguments) {
  sf_kernel_table *table = (sf_kernel_table *)1;
  cr_expect_eq(sf_kernel_table_create(2, &table), SF_EINVAL);
  cr_expect_null(table);
  cr_assert_eq(sf_kernel_table_create(5, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES] = {0};
  const sf_kernel *k;
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "", fake_build_kernel, NULL,
                                          &k), SF_EINVAL);
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), NULL, "k", fake_build_kernel,
                                          NULL, &k), SF_EINVAL);
  cr_expect_eq(sf_kernel_table_get_or_add(table, fake_context(0), key, "k", NULL, NULL, &k),
               SF_EINVAL);
  sf_kernel_table_destroy(table, NULL, NULL);
  sf_kernel_table_destroy(NULL, NULL, NULL);
}

/* ---- launch checks on a kernel's recorded limits ------------------------------------ */

Test(module, launch_check_uses_the_recorded_limits) {
  sf_kernel k = {0};
  k.name = "scan_fwd";
  k.registers = 128;
  k.max_threads_per_block = 512;
  k.static_shared = 4096;
  k.max_dynamic_shared = 45056;
  cr_expect_eq(sf_kernel_check_launch(&k, 512, 45056), SF_OK);
  cr_expect_eq(sf_kernel_check_launch(&k, 1, 0), SF_OK);
  cr_expect_eq(sf_kernel_check_launch(&k, 1024, 0), SF_ERESOURCE);
  cr_expect(strstr(sf_last_error(), "1024") && strstr(sf_last_error(), "512") &&
                strstr(sf_last_error(), "128 registers"),
            "message: %s", sf_last_error());
  cr_expect_eq(sf_kernel_check_launch(&k, 256, 45057), SF_ERESOURCE);
  cr_expect(strstr(sf_last_error(), "45057") != NULL, "message: %s", sf_last_error());
  cr_expect_eq(sf_kernel_check_launch(&k, 0, 0), SF_EINVAL);
  cr_expect_eq(sf_kernel_check_launch(NULL, 32, 0), SF_EINVAL);
}

Test(module, get_checks_its_arguments_before_the_driver) {
  use_missing_driver();
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES] = {9};
  const sf_kernel *k;
  sf_module_request rq = {(CUcontext)0x1000, key, "k", NULL, 0, 0, 0, false};
  cr_expect_eq(sf_module_get(table, &rq, &k), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "no binary") != NULL, "message: %s", sf_last_error());
  rq.image = "x";
  rq.image_size = 1;
  rq.dynamic_shared = -1;
  cr_expect_eq(sf_module_get(table, &rq, &k), SF_EINVAL);
  rq.dynamic_shared = 0;
  rq.context = NULL;
  cr_expect_eq(sf_module_get(table, &rq, &k), SF_EINVAL);
  cr_expect_eq(sf_module_get(NULL, &rq, &k), SF_EINVAL);
  cr_expect_eq(sf_module_get(table, NULL, &k), SF_EINVAL);
  sf_module_table_destroy(table);
}

/* ---- a module's dynamic shared memory, as its source declares it -------------------- */

Test(dynamic_shared, read_from_the_declaration_else_zero) {
  cr_expect_eq(sf_source_dynamic_shared("extern \"C\" { __device__ unsigned char sf_dynamic_shared_16[5924]; }"),
               5924 * 16);
  cr_expect_eq(sf_source_dynamic_shared("__global__ void k() {}"), 0, "no declaration");
  cr_expect_eq(sf_source_dynamic_shared("sf_dynamic_shared_16[]"), 0, "no size");
  cr_expect_eq(sf_source_dynamic_shared("sf_dynamic_shared_16[12x]"), 0, "not a number");
  cr_expect_eq(sf_source_dynamic_shared("sf_dynamic_shared_16[-4]"), 0, "negative");
  cr_expect_eq(sf_source_dynamic_shared(NULL), 0);
}
