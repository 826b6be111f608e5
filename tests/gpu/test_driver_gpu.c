/* test_driver_gpu.c: the driver layer on a real GPU: device info, a hand-written PTX kernel through the module table. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_driver.h"
#include "base/error.h"
#include "runtime/cuda/kernel_table.h"
#include "runtime/cuda/memory_kind.h"
#include "runtime/cuda/module.h"

/* c[i] = a[i] + b[i] for i < n, staged through 1 KiB of static shared memory (so the
 * kernel has some to report); blocks of at most 256 threads. Written by hand: PTX needs
 * no NVRTC, and the driver compiles it for whatever GPU runs the test. */
static const char add_ptx[] =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".shared .align 4 .b8 sf_test_staging[1024];\n"
    "\n"
    ".visible .entry sf_test_add(\n"
    "\t.param .u64 sf_test_add_a,\n"
    "\t.param .u64 sf_test_add_b,\n"
    "\t.param .u64 sf_test_add_c,\n"
    "\t.param .u32 sf_test_add_n\n"
    ")\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .b32 %r<8>;\n"
    "\t.reg .f32 %f<5>;\n"
    "\t.reg .b64 %rd<11>;\n"
    "\n"
    "\tld.param.u64 %rd1, [sf_test_add_a];\n"
    "\tld.param.u64 %rd2, [sf_test_add_b];\n"
    "\tld.param.u64 %rd3, [sf_test_add_c];\n"
    "\tld.param.u32 %r1, [sf_test_add_n];\n"
    "\tmov.u32 %r2, %ctaid.x;\n"
    "\tmov.u32 %r3, %ntid.x;\n"
    "\tmov.u32 %r4, %tid.x;\n"
    "\tmad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "\tmul.wide.u32 %rd6, %r5, 4;\n"
    "\tmov.f32 %f3, 0f00000000;\n"
    "\tsetp.ge.u32 %p1, %r5, %r1;\n"
    "\t@%p1 bra STAGE;\n"
    "\tcvta.to.global.u64 %rd4, %rd1;\n"
    "\tcvta.to.global.u64 %rd5, %rd2;\n"
    "\tadd.s64 %rd7, %rd4, %rd6;\n"
    "\tadd.s64 %rd8, %rd5, %rd6;\n"
    "\tld.global.f32 %f1, [%rd7];\n"
    "\tld.global.f32 %f2, [%rd8];\n"
    "\tadd.f32 %f3, %f1, %f2;\n"
    "STAGE:\n"
    "\tmov.u32 %r6, sf_test_staging;\n"
    "\tshl.b32 %r7, %r4, 2;\n"
    "\tadd.s32 %r6, %r6, %r7;\n"
    "\tst.shared.f32 [%r6], %f3;\n"
    "\tbar.sync 0;\n"
    "\tld.shared.f32 %f4, [%r6];\n"
    "\t@%p1 bra DONE;\n"
    "\tcvta.to.global.u64 %rd9, %rd3;\n"
    "\tadd.s64 %rd10, %rd9, %rd6;\n"
    "\tst.global.f32 [%rd10], %f4;\n"
    "DONE:\n"
    "\tret;\n"
    "}\n";

/* Line 7 uses registers never declared: ptxas refuses it. */
static const char broken_ptx[] =
    ".version 7.5\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry sf_test_broken()\n"
    "{\n"
    "\tadd.f32 %f1, %f2, %f3;\n"
    "\tret;\n"
    "}\n";

#define CU_OK(call)                                                                       \
  do {                                                                                    \
    CUresult cu_ok_result = (call);                                                       \
    cr_assert_eq(cu_ok_result, CUDA_SUCCESS, "%s: %s", #call, sf_cu_error_name(cu_ok_result)); \
  } while (0)

/* The driver table, or a skip (not a pass) on a machine without a GPU. */
static const sf_cu *need_gpu(void) {
  int count = 0;
  if (sf_device_count(&count) != SF_OK) cr_skip_test("no CUDA driver or device: %s", sf_last_error());
  if (count < 1) cr_skip_test("the CUDA driver sees no device");
  const sf_cu *cu;
  cr_assert_eq(sf_cu_load(&cu), SF_OK, "%s", sf_last_error());
  return cu;
}

static void make_key(uint8_t key[SF_KERNEL_KEY_BYTES], int salt) {
  for (int i = 0; i < SF_KERNEL_KEY_BYTES; i++) key[i] = (uint8_t)(0xa0 + i + salt);
}

Test(gpu_driver, device_info_is_sane) {
  need_gpu();
  int count = 0;
  cr_assert_eq(sf_device_count(&count), SF_OK);
  for (int d = 0; d < count; d++) {
    sf_device_info info;
    cr_assert_eq(sf_device_get_info(d, &info), SF_OK, "device %d: %s", d, sf_last_error());
    cr_log_info("device %d: %s, cc %d.%d, %d SMs, %.1f GiB, L2 %d KiB, shared/block %d (opt-in %d), "
                "clock %d MHz, bus %d bits, driver %d",
                d, info.name, info.cc_major, info.cc_minor, info.sm_count,
                (double)info.total_memory / (1 << 30), info.l2_bytes / 1024,
                info.max_shared_per_block, info.max_shared_per_block_optin, info.clock_khz / 1000,
                info.memory_bus_width, info.driver_version);
    cr_expect_eq(info.ordinal, d);
    cr_expect(info.name[0] != '\0', "empty name");
    cr_expect(info.cc_major * 10 + info.cc_minor >= 75, "cc %d.%d", info.cc_major, info.cc_minor);
    cr_expect_gt(info.sm_count, 0);
    cr_expect_gt(info.total_memory, (uint64_t)1 << 30);
    cr_expect_gt(info.l2_bytes, 0);
    cr_expect_geq(info.max_shared_per_block, 48 * 1024);
    cr_expect_geq(info.max_shared_per_block_optin, info.max_shared_per_block);
    cr_expect_geq(info.max_shared_per_sm, info.max_shared_per_block_optin);
    cr_expect_geq(info.max_registers_per_block, 65536);
    cr_expect_eq(info.max_threads_per_block, 1024);
    cr_expect_gt(info.memory_bus_width, 0);
    cr_expect_geq(info.driver_version, 12000);
  }
  sf_device_info info;
  cr_expect_eq(sf_device_get_info(count, &info), SF_EINVAL);
}

Test(gpu_driver, primary_context_is_made_current_only_when_none_is) {
  const sf_cu *cu = need_gpu();
  sf_device_info info;
  /* A fresh thread has no current context: ordinal -1 has nothing to describe. */
  cr_expect_eq(sf_device_get_info(-1, &info), SF_EINVAL);
  CUcontext primary = NULL, again = NULL, current = NULL, now = NULL;
  cr_assert_eq(sf_cu_primary_context(0, &primary), SF_OK, "%s", sf_last_error());
  cr_assert_not_null(primary);
  CU_OK(cu->CtxGetCurrent(&now));
  cr_expect_null(now, "retaining must not make the context current");
  cr_assert_eq(sf_cu_current_context(0, &current), SF_OK, "%s", sf_last_error());
  cr_expect_eq(current, primary);
  CU_OK(cu->CtxGetCurrent(&now));
  cr_expect_eq(now, primary);
  cr_assert_eq(sf_cu_primary_context(0, &again), SF_OK);
  cr_expect_eq(again, primary, "retained once, the same handle every time");
  cr_assert_eq(sf_device_get_info(-1, &info), SF_OK, "%s", sf_last_error());
  cr_expect_eq(info.ordinal, 0);
  cr_expect_eq(sf_cu_primary_context(1000, &again), SF_EINVAL);
}

Test(gpu_driver, ptx_kernel_adds_arrays_through_the_module_table) {
  const sf_cu *cu = need_gpu();
  CUcontext ctx;
  cr_assert_eq(sf_cu_current_context(0, &ctx), SF_OK, "%s", sf_last_error());
  sf_device_info info;
  cr_assert_eq(sf_device_get_info(0, &info), SF_OK);

  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(SF_MODULE_TABLE_DEFAULT_CAPACITY, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES];
  make_key(key, 0);
  /* Without the terminating NUL: the loader must add one. */
  sf_module_request rq = {ctx, key, "sf_test_add", add_ptx, strlen(add_ptx), 0, 0, false};
  const sf_kernel *k = NULL;
  cr_assert_eq(sf_module_get(table, &rq, &k), SF_OK, "%s", sf_last_error());
  cr_log_info("sf_test_add: %d registers, %d B static shared, %d B local, max %d threads, "
              "max dynamic shared %d, binary %d, ptx %d",
              k->registers, k->static_shared, k->local_bytes, k->max_threads_per_block,
              k->max_dynamic_shared, k->binary_version, k->ptx_version);
  cr_expect_gt(k->registers, 0);
  cr_expect_eq(k->static_shared, 1024);
  cr_expect_geq(k->max_threads_per_block, 256);
  cr_expect_eq(k->max_dynamic_shared, info.max_shared_per_block - 1024);
  cr_expect_eq(k->binary_version, info.cc_major * 10 + info.cc_minor, "JIT-compiled for the device");
  cr_expect_eq(k->ptx_version, 75);
  cr_expect_eq(k->context, ctx);
  cr_expect_str_eq(k->name, "sf_test_add");
  cr_expect_eq(sf_kernel_check_launch(k, 256, 0), SF_OK);

  /* Loaded once: the second request is a lookup and needs no image. */
  sf_module_request lookup = {ctx, key, "sf_test_add", NULL, 0, 0, 0, false};
  const sf_kernel *again = NULL;
  cr_assert_eq(sf_module_get(table, &lookup, &again), SF_OK, "%s", sf_last_error());
  cr_expect_eq(again, k);
  cr_expect_eq(sf_kernel_table_find(table, ctx, key, "sf_test_add"), k);
  cr_expect_eq(sf_kernel_table_count(table), 1);

  enum { N = 1000, THREADS = 256 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  cr_assert(a && b);
  for (int i = 0; i < N; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = 1000.0f - (float)i * 0.25f;
  }
  CUdeviceptr da, db, dc, dcopy;
  CU_OK(cu->MemAlloc(&da, N * sizeof(float)));
  CU_OK(cu->MemAlloc(&db, N * sizeof(float)));
  CU_OK(cu->MemAlloc(&dc, (N + 1) * sizeof(float))); /* one past n: must stay untouched */
  CU_OK(cu->MemAlloc(&dcopy, (N + 1) * sizeof(float)));
  CU_OK(cu->MemcpyHtoD(da, a, N * sizeof(float)));
  CU_OK(cu->MemcpyHtoD(db, b, N * sizeof(float)));

  CUstream stream;
  CUevent start, stop;
  CU_OK(cu->StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cu->EventCreate(&start, CU_EVENT_DEFAULT));
  CU_OK(cu->EventCreate(&stop, CU_EVENT_DEFAULT));
  CU_OK(cu->MemsetD32Async(dc, 0x7fc00000u, N + 1, stream)); /* NaN: an unwritten element shows */
  unsigned n = N;
  void *params[] = {&da, &db, &dc, &n};
  CU_OK(cu->EventRecord(start, stream));
  CU_OK(cu->LaunchKernel(k->function, (N + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, stream,
                         params, NULL));
  CU_OK(cu->EventRecord(stop, stream));
  CU_OK(cu->MemcpyDtoDAsync(dcopy, dc, (N + 1) * sizeof(float), stream));
  CU_OK(cu->StreamSynchronize(stream));
  CU_OK(cu->EventSynchronize(stop));
  float ms = -1.0f;
  CU_OK(cu->EventElapsedTime(&ms, start, stop));
  cr_expect_geq(ms, 0.0f);

  float *result = malloc((N + 1) * sizeof *result);
  CU_OK(cu->MemcpyDtoH(result, dcopy, (N + 1) * sizeof(float)));
  int wrong = 0;
  for (int i = 0; i < N; i++)
    if (result[i] != a[i] + b[i] && wrong++ < 5)
      cr_log_error("c[%d] = %g, expected %g", i, result[i], a[i] + b[i]);
  cr_expect_eq(wrong, 0, "%d of %d sums wrong", wrong, N);
  cr_expect(isnan(result[N]), "c[n] was written: %g", result[N]);

  sf_memory_kind kind = SF_MEMORY_HOST;
  cr_assert_eq(sf_memory_kind_of((void *)(uintptr_t)dc, &kind), SF_OK, "%s", sf_last_error());
  cr_expect_eq(kind, SF_MEMORY_DEVICE);
  kind = SF_MEMORY_DEVICE;
  cr_assert_eq(sf_memory_kind_of(a, &kind), SF_OK, "%s", sf_last_error());
  cr_expect_eq(kind, SF_MEMORY_HOST);

  CU_OK(cu->EventDestroy(start));
  CU_OK(cu->EventDestroy(stop));
  CU_OK(cu->StreamDestroy(stream));
  CU_OK(cu->MemFree(da));
  CU_OK(cu->MemFree(db));
  CU_OK(cu->MemFree(dc));
  CU_OK(cu->MemFree(dcopy));
  CU_OK(cu->CtxSynchronize());
  free(a);
  free(b);
  free(result);
  sf_module_table_destroy(table);
}

Test(gpu_driver, dynamic_shared_memory_is_opted_in_and_bounded) {
  const sf_cu *cu = need_gpu();
  CUcontext ctx;
  cr_assert_eq(sf_cu_current_context(0, &ctx), SF_OK, "%s", sf_last_error());
  sf_device_info info;
  cr_assert_eq(sf_device_get_info(0, &info), SF_OK);
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES];

  /* All the opt-in shared memory the device allows, beside the 1 KiB static. */
  int most = info.max_shared_per_block_optin - 1024;
  make_key(key, 1);
  sf_module_request rq = {ctx, key, "sf_test_add", add_ptx, sizeof add_ptx, most, 0, false};
  const sf_kernel *k = NULL;
  cr_assert_eq(sf_module_get(table, &rq, &k), SF_OK, "%s", sf_last_error());
  cr_expect_eq(k->max_dynamic_shared, most);
  cr_expect_eq(sf_kernel_check_launch(k, 128, (size_t)most), SF_OK);
  CUdeviceptr buf;
  CU_OK(cu->MemAlloc(&buf, 128 * sizeof(float)));
  CU_OK(cu->MemsetD8(buf, 0, 128 * sizeof(float)));
  unsigned n = 128;
  void *params[] = {&buf, &buf, &buf, &n};
  CU_OK(cu->LaunchKernel(k->function, 1, 1, 1, 128, 1, 1, (unsigned)most, NULL, params, NULL));
  CU_OK(cu->CtxSynchronize());
  CU_OK(cu->MemFree(buf));

  /* One byte more than the device has: refused at load, nothing kept. */
  make_key(key, 2);
  rq.dynamic_shared = most + 1;
  cr_expect_eq(sf_module_get(table, &rq, &k), SF_ERESOURCE);
  cr_expect(strstr(sf_last_error(), "shared memory") != NULL, "message: %s", sf_last_error());
  cr_expect_eq(sf_kernel_table_count(table), 1);
  sf_module_table_destroy(table);
}

Test(gpu_driver, broken_ptx_fails_with_the_jit_log) {
  need_gpu();
  CUcontext ctx;
  cr_assert_eq(sf_cu_current_context(0, &ctx), SF_OK, "%s", sf_last_error());
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES];
  make_key(key, 3);
  sf_module_request rq = {ctx, key, "sf_test_broken", broken_ptx, sizeof broken_ptx, 0, 0, false};
  const sf_kernel *k = (const sf_kernel *)1;
  cr_assert_eq(sf_module_get(table, &rq, &k), SF_ECUDA);
  cr_expect_null(k);
  const char *msg = sf_last_error();
  cr_log_info("broken PTX: %s", msg);
  cr_expect(strstr(msg, "sf_test_broken") != NULL, "message: %s", msg);
  cr_expect(strstr(msg, "CUDA_ERROR_INVALID_PTX") != NULL, "message: %s", msg);
  cr_expect(strstr(msg, "line 7") != NULL, "the JIT log is missing: %s", msg);
  cr_expect_eq(sf_kernel_table_count(table), 0);
  sf_module_table_destroy(table);
}

Test(gpu_driver, missing_kernel_name_is_reported) {
  need_gpu();
  CUcontext ctx;
  cr_assert_eq(sf_cu_current_context(0, &ctx), SF_OK, "%s", sf_last_error());
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  uint8_t key[SF_KERNEL_KEY_BYTES];
  make_key(key, 4);
  sf_module_request rq = {ctx, key, "no_such_kernel", add_ptx, sizeof add_ptx, 0, 0, false};
  const sf_kernel *k;
  cr_assert_eq(sf_module_get(table, &rq, &k), SF_ECUDA);
  cr_expect(strstr(sf_last_error(), "no_such_kernel") != NULL, "message: %s", sf_last_error());
  cr_expect(strstr(sf_last_error(), "CUDA_ERROR_NOT_FOUND") != NULL, "message: %s", sf_last_error());
  cr_expect_eq(sf_kernel_table_count(table), 0);
  sf_module_table_destroy(table);
}

typedef struct loader_thread {
  sf_kernel_table *table;
  CUcontext context;
  const sf_kernel *kernel;
  sf_status status;
  CUcontext current_after;
  int current_checked;
} loader_thread;

static void *load_from_thread(void *arg) {
  loader_thread *t = arg;
  uint8_t key[SF_KERNEL_KEY_BYTES];
  make_key(key, 5);
  sf_module_request rq = {t->context, key, "sf_test_add", add_ptx, sizeof add_ptx, 0, 0, false};
  t->status = sf_module_get(t->table, &rq, &t->kernel);
  const sf_cu *cu;
  if (sf_cu_load(&cu) == SF_OK && cu->CtxGetCurrent(&t->current_after) == CUDA_SUCCESS)
    t->current_checked = 1;
  return NULL;
}

Test(gpu_driver, threads_share_one_load_and_keep_their_context) {
  need_gpu();
  CUcontext primary;
  cr_assert_eq(sf_cu_primary_context(0, &primary), SF_OK, "%s", sf_last_error());
  sf_kernel_table *table;
  cr_assert_eq(sf_kernel_table_create(16, &table), SF_OK);
  enum { THREADS = 8 };
  pthread_t threads[THREADS];
  loader_thread work[THREADS];
  for (int i = 0; i < THREADS; i++) {
    work[i] = (loader_thread){table, primary, NULL, SF_EINTERNAL, (CUcontext)1, 0};
    cr_assert_eq(pthread_create(&threads[i], NULL, load_from_thread, &work[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    cr_expect_eq(work[i].status, SF_OK, "thread %d", i);
    cr_expect_eq(work[i].kernel, work[0].kernel, "thread %d got another kernel", i);
    cr_expect(work[i].current_checked);
    /* The load made the context current only for itself. */
    cr_expect_null(work[i].current_after, "thread %d left a context current", i);
  }
  cr_expect_eq(sf_kernel_table_count(table), 1);
  sf_module_table_destroy(table);
}
