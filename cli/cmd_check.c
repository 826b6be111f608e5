/* cmd_check.c: scanforge check: one forward or backward call on random inputs against the float64 reference. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/scan_common.h"
#include "generator/generator.h"
#include "generator/template_set.h"
#include "runtime/check/check.h"
#include "runtime/launch/kernels.h"
#include "scanforge/scanforge.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge check --shape BATCH,DIM,L,N [--groups G] [--dtype fp32|fp16|bf16]\n"
          "                       [--device gpu|cpu] [--z] [--D] [--delta-bias] [--softplus]\n"
          "                       [--fixed-B] [--fixed-C] [--h0] [--spec SPEC] [--seed S]\n"
          "                       [--threads N] [--backward [--d-last-state] [--deterministic]]\n"
          "                       [--state-interval K|block]\n"
          "\n"
          "Runs the forward selective scan once on fresh random inputs (outputs poisoned with\n"
          "NaN first) and compares out, last_state and the saved states (what the backward\n"
          "reads) with a float64 evaluation of docs/math.md's equations. Each relative error\n"
          "||x - ref|| / ||ref|| must be within docs/math.md's bar: 1e-5 for fp32, 5e-3 for fp16\n"
          "and bf16.\n"
          "\n"
          "With --backward it checks the backward instead: a forward on the same path saves\n"
          "the states, then the backward runs on a random cotangent dout (gradients poisoned\n"
          "with NaN first) and every gradient the call has (du, ddelta, dz, dA, dB, dC, dD,\n"
          "ddelta_bias, dh0) is compared with the float64 backward. Bar: 1e-4 for fp32, 1e-2\n"
          "for fp16 and bf16.\n"
          "\n"
          "On the GPU it names the template the kernel is generated from and where it was\n"
          "read (SCANFORGE_TEMPLATE_DIR=dir reads templates from dir, for experiments); the\n"
          "CPU path uses no template.\n"
          "\n"
          "  --shape BATCH,DIM,L,N  the call's shape; N (d_state) is 1..256; required\n"
          "  --groups G             groups of variable B and C; divides DIM (default 1)\n"
          "  --dtype T              activation type: fp32, fp16 or bf16 (default fp32)\n"
          "  --device gpu|cpu       where to run; default: gpu when a CUDA GPU is found, else cpu\n"
          "  --z                    with the gate z (out = y * silu(z))\n"
          "  --D                    with the skip term D * u\n"
          "  --delta-bias           with delta_bias\n"
          "  --softplus             dt = softplus(delta + bias)\n"
          "  --fixed-B, --fixed-C   B or C fixed (dim, N) fp32 instead of variable (batch, G, N, L)\n"
          "  --h0                   with an initial state\n"
          "  --spec SPEC            gpu: launch this variant's threads, items and channels\n"
          "                         (e.g. threads=64,items=8,channels=1) instead of the tuned\n"
          "                         ones; with --backward it is the backward's variant;\n"
          "                         with split=time its threads x items must equal the\n"
          "                         state interval of L (the next power of two >= L,\n"
          "                         clamped to 64..512)\n"
          "  --seed S               seed of the random inputs (default 1)\n"
          "  --threads N            cpu: worker threads (default: one per CPU)\n"
          "  --backward             check the backward pass (the gradients), not the forward\n"
          "  --d-last-state         backward: a random cotangent for last_state too (else zero)\n"
          "  --deterministic        backward: the bitwise-reproducible mode (fixed-order sums);\n"
          "                         the backward runs twice and both runs must give the same\n"
          "                         bits (the CPU path always sums in a fixed order)\n"
          "  --state-interval K     steps between the states the forward saves: a power of two\n"
          "                         from 4 to the default interval of L; 'block' (with\n"
          "                         --backward): at every backward block's start, as a\n"
          "                         training forward saves them (docs/design-block-states.md)\n"
          "  -h, --help             this text\n"
          "\n"
          "examples:\n"
          "  scanforge check --shape 64,160,196,8 --dtype bf16 --D --delta-bias --softplus\n"
          "  scanforge check --shape 8,1536,2048,16 --z --D --delta-bias --softplus --backward\n"
          "  scanforge check --shape 2,64,300,16 --backward --deterministic --spec threads=64,items=8\n"
          "\n"
          "exit status: 0 every error within its bar, 1 a check failed or could not run,\n"
          "2 bad usage.\n");
}

static int usage_error(const char *fmt, const char *value) {
  fprintf(stderr, "scanforge check: ");
  fprintf(stderr, fmt, value);
  fprintf(stderr, "\n(see 'scanforge check --help')\n");
  return 2;
}

typedef struct check_options {
  sf_check_shape shape;
  const char *device; /* "gpu", "cpu" or NULL: choose */
  const char *spec;
  unsigned long long seed;
  long long threads; /* 0: one per CPU */
  bool backward;     /* check the gradients (shape.d_last_state, shape.deterministic) */
} check_options;

/* Parses argv into *o; returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, check_options *o) {
  enum {
    OPT_SHAPE = 256, OPT_GROUPS, OPT_DTYPE, OPT_DEVICE, OPT_Z, OPT_D, OPT_BIAS, OPT_SOFTPLUS,
    OPT_FIXED_B, OPT_FIXED_C, OPT_H0, OPT_SPEC, OPT_SEED, OPT_THREADS, OPT_BACKWARD,
    OPT_D_LAST, OPT_DETERMINISTIC, OPT_STATE_INTERVAL
  };
  static const struct option options[] = {
      {"shape", required_argument, NULL, OPT_SHAPE},   {"groups", required_argument, NULL, OPT_GROUPS},
      {"dtype", required_argument, NULL, OPT_DTYPE},   {"device", required_argument, NULL, OPT_DEVICE},
      {"z", no_argument, NULL, OPT_Z},                 {"D", no_argument, NULL, OPT_D},
      {"delta-bias", no_argument, NULL, OPT_BIAS},     {"softplus", no_argument, NULL, OPT_SOFTPLUS},
      {"fixed-B", no_argument, NULL, OPT_FIXED_B},     {"fixed-C", no_argument, NULL, OPT_FIXED_C},
      {"h0", no_argument, NULL, OPT_H0},               {"spec", required_argument, NULL, OPT_SPEC},
      {"seed", required_argument, NULL, OPT_SEED},     {"threads", required_argument, NULL, OPT_THREADS},
      {"backward", no_argument, NULL, OPT_BACKWARD},   {"d-last-state", no_argument, NULL, OPT_D_LAST},
      {"deterministic", no_argument, NULL, OPT_DETERMINISTIC}, {"help", no_argument, NULL, 'h'},
      {"state-interval", required_argument, NULL, OPT_STATE_INTERVAL},
      {NULL, 0, NULL, 0},
  };
  const char *shape_text = NULL, *interval_text = NULL;
  long long groups = 1, value;
  sf_check_shape *s = &o->shape;
  optind = 1;
  opterr = 0; /* we word the usage errors ourselves */
  for (int c; (c = getopt_long(argc, argv, ":h", options, NULL)) != -1;) {
    switch (c) {
      case OPT_SHAPE: shape_text = optarg; break;
      case OPT_GROUPS:
        if (!cli_parse_positive(optarg, 1LL << 30, &groups))
          return usage_error("--groups: expected a positive integer, got '%s'", optarg);
        break;
      case OPT_DTYPE:
        if (!cli_parse_dtype(optarg, &s->dtype))
          return usage_error("--dtype: expected fp32, fp16 or bf16, got '%s'", optarg);
        break;
      case OPT_DEVICE:
        if (strcmp(optarg, "gpu") != 0 && strcmp(optarg, "cpu") != 0)
          return usage_error("--device: expected gpu or cpu, got '%s'", optarg);
        o->device = optarg;
        break;
      case OPT_Z: s->z = true; break;
      case OPT_D: s->D = true; break;
      case OPT_BIAS: s->delta_bias = true; break;
      case OPT_SOFTPLUS: s->softplus = true; break;
      case OPT_FIXED_B: s->B_fixed = true; break;
      case OPT_FIXED_C: s->C_fixed = true; break;
      case OPT_H0: s->h0 = true; break;
      case OPT_SPEC: o->spec = optarg; break;
      case OPT_SEED: {
        char *end;
        if (optarg[0] < '0' || optarg[0] > '9' || (o->seed = strtoull(optarg, &end, 10), *end))
          return usage_error("--seed: expected a non-negative integer, got '%s'", optarg);
        break;
      }
      case OPT_THREADS:
        if (!cli_parse_positive(optarg, 1024, &value))
          return usage_error("--threads: expected an integer in 1..1024, got '%s'", optarg);
        o->threads = value;
        break;
      case OPT_BACKWARD: o->backward = true; break;
      case OPT_D_LAST: s->d_last_state = true; break;
      case OPT_DETERMINISTIC: s->deterministic = true; break;
      case OPT_STATE_INTERVAL:
        interval_text = optarg;
        if (strcmp(optarg, "block") != 0 && !cli_parse_positive(optarg, 512, &value))
          return usage_error("--state-interval: expected 'block' or a power of two from 4 to 512, got '%s'", optarg);
        s->state_interval = strcmp(optarg, "block") == 0 ? 0 : value;
        break;
      case 'h': usage(stdout); return 0;
      case ':': return usage_error("missing the value of %s", argv[optind - 1]);
      default: return usage_error("unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!shape_text) return usage_error("%s", "--shape BATCH,DIM,L,N is required (e.g. --shape 64,160,196,8)");
  int64_t shape[4];
  if (!cli_parse_shape(shape_text, shape))
    return usage_error("--shape: expected BATCH,DIM,L,N with positive integers (N at most 256), got '%s'", shape_text);
  if (shape[0] * shape[1] * shape[2] > (1LL << 31) || shape[0] > (1 << 30) || shape[1] > (1 << 30) || shape[2] > (1 << 30))
    return usage_error("--shape: BATCH*DIM*L must be at most 2^31, got '%s'", shape_text);
  s->batch = shape[0];
  s->dim = shape[1];
  s->seqlen = shape[2];
  s->dstate = (int)shape[3];
  s->groups = (int)groups;
  if (s->dim % groups != 0) {
    char text[64];
    snprintf(text, sizeof text, "%lld does not divide DIM (%lld)", groups, (long long)s->dim);
    return usage_error("--groups: %s", text);
  }
  if (o->device && strcmp(o->device, "cpu") == 0 && o->spec)
    return usage_error("--spec: %s", "chooses the GPU kernel's launch; it has no meaning with --device cpu");
  if (o->device && strcmp(o->device, "gpu") == 0 && o->threads)
    return usage_error("--threads: %s", "sets the CPU path's workers; it has no meaning with --device gpu");
  if (!o->backward && s->d_last_state)
    return usage_error("--d-last-state: %s", "a cotangent of the backward: give --backward too");
  if (!o->backward && s->deterministic)
    return usage_error("--deterministic: %s", "a mode of the backward: give --backward too");
  if (interval_text && strcmp(interval_text, "block") == 0) {
    if (!o->backward)
      return usage_error("--state-interval: %s", "'block' is the interval of the backward's blocks: give --backward too");
    int64_t interval = 0;
    if (cli_check_block_interval(s, o->spec, &interval) != SF_OK) return usage_error("--state-interval: %s", sf_last_error());
    s->state_interval = interval;
  }
  if (o->spec) { /* a bad spec is a usage error, found before anything runs */
    sf_variant v;
    sf_status st = o->backward ? cli_check_bwd_variant(s, o->spec, &v) : cli_check_variant(s, o->spec, &v);
    if (st != SF_OK) return usage_error("--spec: %s", sf_last_error());
    char *source = NULL; /* a value the template refuses is as bad as one the parser does */
    size_t length;
    st = sf_generate(&v, &source, &length);
    free(source);
    if (st == SF_EINVAL) return usage_error("--spec: %s", sf_last_error());
  }
  return -1;
}

/* On the GPU: the variant of the call (forward or backward) loaded first, to say where it
 * came from; false (the message printed) when it cannot be had. */
static bool load_kernel(sf_context *ctx, const check_options *o) {
  sf_variant v;
  const sf_kernel *kernel;
  sf_kernel_origin origin;
  sf_status st = o->backward ? cli_check_bwd_variant(&o->shape, o->spec, &v) : cli_check_variant(&o->shape, o->spec, &v);
  if (st != SF_OK) {
    cli_fail("check", "no variant for this call");
    return false;
  }
  double t0 = cli_now_ms();
  if (sf_kernel_for_variant(ctx, &v, &kernel, &origin) != SF_OK) {
    cli_fail("check", "cannot load the kernel");
    return false;
  }
  char template_text[4200];
  cli_describe_template(sf_template_of(&v), template_text, sizeof template_text);
  printf("template     %s\n", template_text);
  printf("kernel       %s in %.1f ms (%d registers)\n", cli_origin_text(origin), cli_now_ms() - t0,
         kernel->registers);
  if (o->backward) { /* the backward's variant is not in its result: say it here */
    sf_variant runs = v;
    if (cli_check_bwd_run_variant(ctx, &o->shape, o->spec, &runs) != SF_OK) {
      cli_fail("check", "cannot plan the backward's launch");
      return false;
    }
    char text[512];
    sf_variant_format(&runs, text, sizeof text);
    printf("variant      %s%s\n", text, runs.pairs && !v.pairs ? " (the launch plan took pairs=1: fewer waves)" : "");
  }
  return true;
}

static void print_cpu_variant(const check_options *o) {
  long workers = o->threads ? (long)o->threads : sysconf(_SC_NPROCESSORS_ONLN);
  printf("variant      cpu path (fp32 arithmetic, up to %ld worker thread%s)\n", workers, workers == 1 ? "" : "s");
}

/* The forward check; returns the exit status. */
static int check_forward(sf_context *ctx, const check_options *o, const sf_launch *launch, bool on_gpu) {
  sf_check_result r;
  double t0 = cli_now_ms();
  if (sf_check_fwd(ctx, &o->shape, launch, o->seed, &r) != SF_OK) return cli_fail("check", "the check could not run");
  if (on_gpu) {
    char text[512];
    sf_variant_format(&r.variant, text, sizeof text);
    printf("variant      %s\n", text);
  } else {
    print_cpu_variant(o);
  }
  printf("\n");
  cli_print_check(&r, "");
  printf("\n%s (%.2f s with the float64 reference)\n", r.passed ? "PASS" : "FAIL", (cli_now_ms() - t0) / 1e3);
  return r.passed ? 0 : 1;
}

/* The backward check; with --deterministic a second run must give the same bits. Returns
 * the exit status. */
static int check_backward(sf_context *ctx, const check_options *o, const sf_launch *launch, bool on_gpu) {
  printf("backward     dout random, d_last_state %s; %s\n", o->shape.d_last_state ? "random" : "zero",
         !on_gpu                 ? "the CPU path sums in a fixed order (the same bits for the same --threads)"
         : o->shape.deterministic ? "deterministic mode (fixed-order sums, the same bits every run)"
                                  : "sums with atomics (--deterministic: the bitwise-reproducible mode)");
  if (!on_gpu) print_cpu_variant(o);
  sf_check_bwd_result r;
  double t0 = cli_now_ms();
  if (sf_check_bwd(ctx, &o->shape, launch, o->seed, &r) != SF_OK) return cli_fail("check", "the check could not run");
  printf("\n");
  cli_print_check_bwd(&r, "");
  printf("\nchecksum     %016llx (XXH3 of every gradient's bytes)\n", (unsigned long long)r.checksum);
  bool passed = r.passed;
  if (o->shape.deterministic) {
    sf_check_bwd_result again;
    if (sf_check_bwd(ctx, &o->shape, launch, o->seed, &again) != SF_OK)
      return cli_fail("check", "the second run could not run");
    const bool same = again.checksum == r.checksum;
    printf("second run   %016llx: %s\n", (unsigned long long)again.checksum,
           same ? "the same bits (reproducible)" : "other bits: NOT reproducible");
    passed = passed && again.passed && same;
  }
  printf("\n%s (%.2f s with the float64 reference)\n", passed ? "PASS" : "FAIL", (cli_now_ms() - t0) / 1e3);
  return passed ? 0 : 1;
}

int cmd_check(int argc, char **argv) {
  check_options o = {.shape = {.dtype = SF_FP32, .groups = 1}, .seed = 1};
  int status = parse(argc, argv, &o);
  if (status >= 0) return status;

  char why[512];
  const bool on_gpu = o.device ? strcmp(o.device, "gpu") == 0 : cli_gpu_available(why, sizeof why);
  if (o.device && on_gpu && !cli_gpu_available(why, sizeof why)) {
    fprintf(stderr, "scanforge check: --device gpu: no CUDA GPU: %s\n", why);
    return 1;
  }
  if (!on_gpu && o.spec)
    return usage_error("--spec: %s", "chooses the GPU kernel's launch, and this check runs on the CPU");
  sf_device_info info = {.name = "unknown"};
  if (on_gpu) sf_device_get_info(0, &info);
  if (on_gpu) /* say which one was chosen, and why */
    printf("device       gpu: %s%s\n", info.name, o.device ? "" : " (found; --device cpu runs the CPU path)");
  else if (o.device)
    printf("device       cpu\n");
  else
    printf("device       cpu (no CUDA GPU: %s)\n", why);

  char text[512];
  cli_describe_shape(&o.shape, text, sizeof text);
  printf("shape        %s\n", text);
  printf("seed         %llu\n", o.seed);
  if (on_gpu && cli_note_template_dir("check") != CLI_OK) return CLI_FAILED;
  if (!on_gpu)
    printf("template     none: the CPU path uses no template%s\n",
           sf_template_dir() ? " (SCANFORGE_TEMPLATE_DIR is not read)" : "");

  sf_context *ctx = NULL;
  if (sf_context_create(NULL, &ctx) != SF_OK) return cli_fail("check", "cannot create a context");
  size_t warnings_shown = 0;
  cli_print_warnings("check", ctx, &warnings_shown);

  sf_launch launch = {.on_host = !on_gpu, .host_threads = (int)o.threads, .spec = o.spec};
  int result_code = 1;
  if (!on_gpu || load_kernel(ctx, &o))
    result_code = o.backward ? check_backward(ctx, &o, &launch, on_gpu) : check_forward(ctx, &o, &launch, on_gpu);
  sf_context_destroy(ctx);
  return result_code;
}
