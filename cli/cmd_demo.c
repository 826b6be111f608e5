/* cmd_demo.c: scanforge demo: generate, compile, cache and check the kernels of two real models' calls. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/scan_common.h"
#include "generator/generator.h"
#include "runtime/cache/cache.h"
#include "runtime/check/check.h"
#include "runtime/compile/compile.h"
#include "runtime/launch/context.h"
#include "runtime/launch/kernels.h"
#include "runtime/compile/target.h"
#include "scanforge/scanforge.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge demo [--device gpu|cpu]\n"
          "\n"
          "Shows scanforge's whole way on the calls of two real models: a MambaVision-T\n"
          "stage 3 call (64, 160, 196, 8; bf16 and fp32; D, delta_bias, softplus) and a\n"
          "Mamba-130M layer's call (2, 1536, 2048, 16; fp32; with the gate z).\n"
          "\n"
          "On a GPU: picks each call's variant, generates and compiles its kernel with NVRTC\n"
          "(or finds it in the kernel cache), runs it on random inputs and compares the\n"
          "outputs with a float64 reference against docs/math.md's bars.\n"
          "Without a GPU: compiles the same variants for sm_80 and sm_90 through the cache,\n"
          "then runs the CPU implementation on the same shapes (the Mamba call with batch 1\n"
          "and dim 256, so that the host's float64 reference stays quick) and checks it.\n"
          "\n"
          "Run it twice: the second run finds every kernel in the cache and compiles none.\n"
          "\n"
          "  --device gpu|cpu   where to run; default: gpu when a CUDA GPU is found, else cpu\n"
          "  -h, --help         this text\n"
          "\n"
          "environment: SCANFORGE_CACHE_DIR (kernel cache location), SCANFORGE_TEMPLATE_DIR\n"
          "(read templates from a directory: the kernels come from its templates; the CPU\n"
          "path uses none)\n"
          "exit status: 0 every call passed, 1 a call failed (its compile or check; the last\n"
          "line counts the calls that failed) or something could not run, 2 bad usage.\n");
}

typedef struct demo_call {
  const char *title;
  sf_check_shape shape;
  int64_t cpu_batch, cpu_dim; /* the CPU path's smaller shape, 0 for the same */
} demo_call;

static const demo_call calls[] = {
    {"MambaVision-T stage 3, bf16",
     {.batch = 64, .dim = 160, .seqlen = 196, .dstate = 8, .groups = 1, .dtype = SF_BF16,
      .D = true, .delta_bias = true, .softplus = true}, 0, 0},
    {"MambaVision-T stage 3, fp32",
     {.batch = 64, .dim = 160, .seqlen = 196, .dstate = 8, .groups = 1, .dtype = SF_FP32,
      .D = true, .delta_bias = true, .softplus = true}, 0, 0},
    {"Mamba-130M layer, fp32, gated",
     {.batch = 2, .dim = 1536, .seqlen = 2048, .dstate = 16, .groups = 1, .dtype = SF_FP32,
      .z = true, .D = true, .delta_bias = true, .softplus = true}, 1, 256},
};
enum { CALLS = sizeof calls / sizeof calls[0] };
static const uint64_t DEMO_SEED = 2026;

/* Where this run's kernels came from, and how many calls failed: a call counts once,
 * however many of its compiles or checks fail. */
typedef struct tally {
  int compiled, cached;
  int failed_calls;
} tally;

static void print_header(int index, const demo_call *call, const sf_check_shape *shape) {
  char text[512];
  cli_describe_shape(shape, text, sizeof text);
  printf("\n[%d/%d] %s\n      shape    %s\n", index + 1, CALLS, call->title, text);
}

/* Prints a check's result; false when it failed. */
static bool print_result(const sf_check_result *r, double seconds) {
  cli_print_check(r, "      ");
  printf("      %s (check took %.2f s)\n", r->passed ? "PASS" : "FAIL", seconds);
  return r->passed;
}

/* Prints what went wrong; returns false, for `return call_failed(...)`. */
static bool call_failed(const char *what) {
  cli_fail("demo", what);
  return false;
}

/* The call's variant, printed; false (the reason printed) when there is none. */
static bool call_variant(const sf_check_shape *shape, sf_variant *v) {
  if (cli_check_variant(shape, NULL, v) != SF_OK) return call_failed("no variant for this call");
  char spec[512];
  sf_variant_format(v, spec, sizeof spec);
  printf("      variant  %s\n", spec);
  printf("      template %s\n", sf_template_of(v));
  return true;
}

/* One call on the GPU; false when anything of it failed. */
static bool run_gpu_call(sf_context *ctx, int i, tally *t) {
  const sf_check_shape *shape = &calls[i].shape;
  print_header(i, &calls[i], shape);
  sf_variant v;
  if (!call_variant(shape, &v)) return false;
  const sf_kernel *kernel;
  sf_kernel_origin origin;
  double t0 = cli_now_ms();
  if (sf_kernel_for_variant(ctx, &v, &kernel, &origin) != SF_OK) return call_failed("cannot get the kernel");
  printf("      kernel   %s in %.1f ms (%d registers, %d bytes spilled)\n", cli_origin_text(origin),
         cli_now_ms() - t0, kernel->registers, kernel->local_bytes);
  if (origin == SF_KERNEL_COMPILED)
    t->compiled++;
  else
    t->cached++;
  sf_check_result r;
  t0 = cli_now_ms();
  if (sf_check_fwd(ctx, shape, &(sf_launch){0}, DEMO_SEED + (uint64_t)i, &r) != SF_OK)
    return call_failed("the check could not run");
  return print_result(&r, (cli_now_ms() - t0) / 1e3);
}

/* NVRTC's support for an arch (it may be too new or too old for this toolkit). */
static bool nvrtc_has_arch(int arch) {
  int archs[64], count = 0;
  if (sf_nvrtc_archs(archs, 64, &count) != SF_OK) return false;
  for (int i = 0; i < count && i < 64; i++)
    if (archs[i] == arch) return true;
  return false;
}

/* One call without a GPU: its kernels compiled for sm_80 and sm_90 (while NVRTC is
 * there: *can_compile), then the CPU path checked; false when anything of it failed. */
static bool run_cpu_call(sf_context *ctx, int i, bool *can_compile, tally *t) {
  static const int archs[] = {80, 90};
  sf_check_shape shape = calls[i].shape;
  print_header(i, &calls[i], &shape);
  sf_variant v;
  if (!call_variant(&shape, &v)) return false;
  bool ok = true;
  for (size_t a = 0; a < sizeof archs / sizeof archs[0] && *can_compile; a++) {
    if (!nvrtc_has_arch(archs[a])) {
      printf("      sm_%d    skipped: this NVRTC cannot compile for it\n", archs[a]);
      continue;
    }
    const void *data;
    size_t size;
    sf_cache_source where;
    double t0 = cli_now_ms();
    sf_status st = sf_variant_binary(ctx->cache, (sf_target){.arch = archs[a]}, &v, &data, &size, &where);
    double ms = cli_now_ms() - t0;
    if (st == SF_EUNSUPPORTED) { /* no NVRTC: the CPU path still runs */
      printf("      kernels  not compiled: %s\n", sf_last_error());
      *can_compile = false;
    } else if (st != SF_OK) {
      ok = call_failed("compilation failed");
    } else {
      printf("      sm_%d    %-26s %7zu bytes %8.1f ms\n", archs[a],
             where == SF_CACHE_BUILT ? "compiled by NVRTC" : where == SF_CACHE_FROM_DISK
                 ? "read from the disk cache" : "in memory already", size, ms);
      if (where == SF_CACHE_BUILT)
        t->compiled++;
      else
        t->cached++;
    }
  }
  if (calls[i].cpu_batch) { /* the float64 reference runs on one core: keep it short */
    shape.batch = calls[i].cpu_batch;
    shape.dim = calls[i].cpu_dim;
    printf("      cpu      run at batch %lld, dim %lld: the host's float64 reference is slow\n",
           (long long)shape.batch, (long long)shape.dim);
  }
  sf_check_result r;
  double t0 = cli_now_ms();
  if (sf_check_fwd(ctx, &shape, &(sf_launch){.on_host = true}, DEMO_SEED + (uint64_t)i, &r) != SF_OK)
    return call_failed("the check could not run");
  return print_result(&r, (cli_now_ms() - t0) / 1e3) && ok;
}

static void run_all(sf_context *ctx, bool on_gpu, tally *t) {
  bool can_compile = true;
  for (int i = 0; i < CALLS; i++) {
    bool ok = on_gpu ? run_gpu_call(ctx, i, t) : run_cpu_call(ctx, i, &can_compile, t);
    t->failed_calls += !ok;
  }
}

int cmd_demo(int argc, char **argv) {
  static const struct option options[] = {
      {"device", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *device = NULL;
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", options, NULL)) != -1;) {
    switch (c) {
      case 'd':
        if (strcmp(optarg, "gpu") != 0 && strcmp(optarg, "cpu") != 0) {
          fprintf(stderr, "scanforge demo: --device: expected gpu or cpu, got '%s'\n", optarg);
          return 2;
        }
        device = optarg;
        break;
      case 'h': usage(stdout); return 0;
      case ':': fprintf(stderr, "scanforge demo: missing the value of %s\n", argv[optind - 1]); return 2;
      default: fprintf(stderr, "scanforge demo: unknown option %s\n(see 'scanforge demo --help')\n", argv[optind - 1]); return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "scanforge demo: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }

  char why[512] = "";
  bool gpu_found = cli_gpu_available(why, sizeof why);
  bool on_gpu = device ? strcmp(device, "gpu") == 0 : gpu_found;
  if (on_gpu && !gpu_found) {
    fprintf(stderr, "scanforge demo: --device gpu: no CUDA GPU: %s\n", why);
    return 1;
  }
  if (cli_note_template_dir("demo") != CLI_OK) return CLI_FAILED;
  sf_context *ctx;
  if (sf_context_create(NULL, &ctx) != SF_OK) return cli_fail("demo", "cannot create a context");
  size_t warnings_shown = 0;
  cli_print_warnings("demo", ctx, &warnings_shown);

  printf("scanforge demo: the Mamba selective scan, generated from Lua templates, compiled by\n"
         "NVRTC, cached on disk, checked against a float64 evaluation of docs/math.md.\n\n");
  sf_device_info info;
  sf_target target;
  if (on_gpu && sf_device_get_info(0, &info) == SF_OK && sf_context_target(ctx, &target) == SF_OK) {
    char arch[32];
    sf_target_format(target, arch, sizeof arch);
    printf("device   %s (%d SMs), kernels built for %s\n", info.name, info.sm_count, arch);
  } else if (on_gpu) {
    sf_context_destroy(ctx);
    return cli_fail("demo", "cannot use the GPU");
  } else if (gpu_found) {
    printf("device   cpu (--device cpu); kernels compiled for sm_80 and sm_90, not run\n");
  } else {
    printf("device   cpu: no CUDA GPU here (%s)\n"
           "         kernels are compiled for sm_80 and sm_90, the scan runs on the CPU\n", why);
  }
  sf_cache_stats stats = {0};
  if (sf_cache_stat(ctx->cache, &stats) == SF_OK)
    printf("cache    %s%s\n", stats.dir ? stats.dir : "(none)", stats.memory_only ? " (memory only this run)" : "");

  tally t = {0};
  run_all(ctx, on_gpu, &t);

  printf("\nkernels: %d compiled, %d from cache%s\n", t.compiled, t.cached,
         t.compiled && !(stats.memory_only) ? " (run the demo again: they now come from the cache)" : "");
  const int failed = t.failed_calls;
  if (failed)
    printf("%d of %d calls FAILED\n", failed, CALLS);
  else
    printf("all %d calls within docs/math.md's bars\n", CALLS);
  sf_context_destroy(ctx);
  return failed ? 1 : 0;
}
