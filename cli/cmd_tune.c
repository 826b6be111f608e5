/* cmd_tune.c: scanforge tune: autotune launch configurations for this GPU into the tuning database; report them. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/scan_common.h"
#include "tuning/database_write.h"
#include "tuning/report/plot.h"
#include "runtime/launch_config/select.h"
#include "tuning/tuner.h"
#include "scanforge/scanforge.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge tune [--entries FILE] [--op fwd|bwd|all] [--budget SECONDS]\n"
          "                      [--force | --force-before TIME] [--db FILE] [--jobs N] [--reps N]\n"
          "       scanforge tune --list [--entries FILE] [--op ...]\n"
          "       scanforge tune --report [--plot FILE] [--db FILE]\n"
          "       scanforge tune --export-defaults FILE [--db FILE]\n"
          "\n"
          "Finds, for each entry (op, N, dtype, flags and a shape bucket), the fastest launch\n"
          "configuration (threads, items, channels) on this GPU and saves it in the tuning\n"
          "database that every later launch reads (docs/tuning.md). Per entry: every candidate\n"
          "the templates accept is compiled (through the kernel cache, on all CPUs), checked\n"
          "against the float64 reference on a small shape of its configuration, then timed on\n"
          "the entry's shape (CUDA events, inputs rotated over more than L2, warm-up, median\n"
          "of --reps). The heuristics' choice is always a candidate and stays the winner unless\n"
          "another is over 1%% faster. Each entry is saved as soon as it is done, so a stopped\n"
          "run resumes where it stopped: entries already in the database for this GPU, driver,\n"
          "NVRTC and templates are skipped.\n"
          "\n"
          "  --entries FILE   entries to tune instead of the default grid (the reference rows\n"
          "                   and MambaVision's shapes, fp32 and bf16): one a line,\n"
          "                   'BATCH,DIM,L,N[,G] [op=bwd,dtype=bf16,z=1,...]' ('#' comments);\n"
          "                   keys op, dtype, z, D, delta_bias, softplus, B, C, deterministic,\n"
          "                   block_states (op=bwd: timed on the states a training forward\n"
          "                   saves at every block's start, docs/design-block-states.md)\n"
          "                   (defaults: op=fwd,dtype=fp32,z=0,D=1,delta_bias=1,softplus=1)\n"
          "  --op LIST        fwd, bwd or all (default all): which entries of the grid or file\n"
          "  --budget SECONDS stop cleanly after this long, keeping what was measured\n"
          "  --force          tune entries the database already has\n"
          "  --force-before TIME\n"
          "                   tune those it has from before TIME (UTC, as the database writes\n"
          "                   it: 2026-11-26T19:00:00Z): run again with the same TIME, a\n"
          "                   re-tune that --budget stopped goes on where it stopped\n"
          "  --db FILE        the database (default: $SCANFORGE_TUNING_DB, else tuning.json\n"
          "                   beside the kernel cache)\n"
          "  --jobs N         compile threads (default: one per CPU, at most 16)\n"
          "  --reps N         timed runs per candidate, at least 20 (default 25)\n"
          "  --list           print the entries that would be tuned, one a line, and exit\n"
          "  --report         print this GPU's entries (every GPU's without one) and write the\n"
          "                   plot of candidates' times against the winners'\n"
          "  --plot FILE      the report's plot: SVG when FILE ends in .svg, else PNG\n"
          "                   (default tuning-report.png)\n"
          "  --export-defaults FILE\n"
          "                   write this GPU's entries (every GPU's without one), winners only,\n"
          "                   as a shipped-defaults file for tuning/defaults/\n"
          "  -h, --help       this text\n"
          "\n"
          "Progress goes to stderr; Ctrl-C stops like --budget. SCANFORGE_TUNING=off makes\n"
          "launches ignore the database.\n"
          "\n"
          "exit status: 0 every entry tuned or already there (or stopped by --budget), 1 an\n"
          "entry failed, the run was interrupted or no GPU, 2 bad usage.\n");
}

static int usage_error(const char *fmt, const char *value) {
  fprintf(stderr, "scanforge tune: ");
  fprintf(stderr, fmt, value);
  fprintf(stderr, "\n(see 'scanforge tune --help')\n");
  return 2;
}

typedef struct tune_cli {
  const char *entries_path, *db_path, *plot_path, *export_path, *force_before;
  bool fwd, bwd, force, list, report;
  double budget_s;
  long long jobs, reps;
} tune_cli;

static int parse(int argc, char **argv, tune_cli *o) {
  enum { OPT_ENTRIES = 256, OPT_OP, OPT_BUDGET, OPT_FORCE, OPT_FORCE_BEFORE, OPT_DB, OPT_JOBS, OPT_REPS, OPT_LIST,
         OPT_REPORT, OPT_PLOT, OPT_EXPORT };
  static const struct option options[] = {
      {"entries", required_argument, NULL, OPT_ENTRIES}, {"op", required_argument, NULL, OPT_OP},
      {"budget", required_argument, NULL, OPT_BUDGET},   {"force", no_argument, NULL, OPT_FORCE},
      {"db", required_argument, NULL, OPT_DB},           {"jobs", required_argument, NULL, OPT_JOBS},
      {"reps", required_argument, NULL, OPT_REPS},       {"list", no_argument, NULL, OPT_LIST},
      {"report", no_argument, NULL, OPT_REPORT},         {"plot", required_argument, NULL, OPT_PLOT},
      {"export-defaults", required_argument, NULL, OPT_EXPORT}, {"help", no_argument, NULL, 'h'},
      {"force-before", required_argument, NULL, OPT_FORCE_BEFORE},
      {NULL, 0, NULL, 0},
  };
  optind = 1;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":h", options, NULL)) != -1;) {
    switch (c) {
      case OPT_ENTRIES: o->entries_path = optarg; break;
      case OPT_OP:
        if (strcmp(optarg, "fwd") == 0) o->fwd = true, o->bwd = false;
        else if (strcmp(optarg, "bwd") == 0) o->fwd = false, o->bwd = true;
        else if (strcmp(optarg, "all") == 0) o->fwd = o->bwd = true;
        else return usage_error("--op: expected fwd, bwd or all, got '%s'", optarg);
        break;
      case OPT_BUDGET: {
        char *end;
        errno = 0;
        o->budget_s = strtod(optarg, &end);
        if (errno || *end || !(o->budget_s > 0)) return usage_error("--budget: expected a positive number of seconds, got '%s'", optarg);
        break;
      }
      case OPT_FORCE: o->force = true; break;
      case OPT_FORCE_BEFORE:
        if (!sf_tune_is_utc_time(optarg))
          return usage_error("--force-before: expected a UTC time such as 2026-11-26T19:00:00Z, got '%s'", optarg);
        o->force_before = optarg;
        break;
      case OPT_DB: o->db_path = optarg; break;
      case OPT_JOBS:
        if (!cli_parse_positive(optarg, 64, &o->jobs)) return usage_error("--jobs: expected an integer in 1..64, got '%s'", optarg);
        break;
      case OPT_REPS:
        if (!cli_parse_positive(optarg, 100000, &o->reps) || o->reps < 20)
          return usage_error("--reps: expected an integer in 20..100000, got '%s'", optarg);
        break;
      case OPT_LIST: o->list = true; break;
      case OPT_REPORT: o->report = true; break;
      case OPT_PLOT: o->plot_path = optarg; break;
      case OPT_EXPORT: o->export_path = optarg; break;
      case 'h': usage(stdout); return 0;
      case ':': return usage_error("missing the value of %s", argv[optind - 1]);
      default: return usage_error("unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (o->force && o->force_before) return usage_error("%s", "--force and --force-before go one at a time");
  if (o->list + o->report + (o->export_path != NULL) > 1)
    return usage_error("%s", "--list, --report and --export-defaults go one at a time");
  return -1;
}

/* ---- entries ---------------------------------------------------------------------------- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *text = malloc(cap);
  for (size_t got; text && (got = fread(text + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (n + 1 == cap) {
      char *grown = realloc(text, cap *= 2);
      if (!grown) free(text);
      text = grown;
    }
  }
  fclose(f);
  if (text) text[n] = '\0';
  return text;
}

/* The requests of --entries or the default grid, filtered by --op; -1 on success, else
 * the exit status. */
static int load_requests(const tune_cli *o, sf_tune_request **out, int *count) {
  sf_tune_request *all = NULL;
  int n = 0;
  if (o->entries_path) {
    char *text = read_file(o->entries_path);
    if (!text) {
      fprintf(stderr, "scanforge tune: --entries: cannot read '%s': %s\n", o->entries_path, strerror(errno));
      return 2;
    }
    sf_status st = sf_tune_parse_requests(text, o->entries_path, &all, &n);
    free(text);
    if (st != SF_OK) {
      fprintf(stderr, "scanforge tune: --entries: %s\n", sf_last_error());
      return 2;
    }
  } else {
    enum { GRID_CAP = 256 }; /* the grid has a few dozen */
    all = malloc(GRID_CAP * sizeof *all);
    if (!all) return cli_fail("tune", "out of memory");
    n = sf_tune_default_requests(all, GRID_CAP, true);
    if (n > GRID_CAP) n = GRID_CAP;
  }
  int kept = 0;
  for (int i = 0; i < n; i++)
    if (all[i].variant.op == SF_OP_FWD ? o->fwd : o->bwd) all[kept++] = all[i];
  *out = all;
  *count = kept;
  return -1;
}

/* ---- progress ---------------------------------------------------------------------------- */

typedef struct progress_state {
  bool tty;
  double last_ms;
  int entry_number;
} progress_state;

static void clock_text(double seconds, char *buf, size_t cap) {
  if (seconds < 0) {
    snprintf(buf, cap, "--:--");
    return;
  }
  long s = (long)(seconds + 0.5);
  snprintf(buf, cap, "%ld:%02ld", s / 60, s % 60);
}

static void on_progress(void *user, const sf_tune_progress *p) {
  progress_state *ps = user;
  const double now = cli_now_ms();
  if (now - ps->last_ms < (ps->tty ? 100 : 10000)) return; /* a log gets a line every 10 s */
  ps->last_ms = now;
  char elapsed[32], eta[32], bar[24];
  clock_text(p->elapsed_s, elapsed, sizeof elapsed);
  clock_text(p->eta_s, eta, sizeof eta);
  const bool compiling = strcmp(p->phase, "compiling") == 0;
  double fraction = compiling ? (p->to_compile ? (double)p->compiled / p->to_compile : 1)
                              : (p->entry + (p->candidates ? (double)p->candidate / p->candidates : 0)) / p->entries;
  int filled = (int)(fraction * 20);
  for (int i = 0; i < 20; i++) bar[i] = i < filled ? '#' : '.';
  bar[20] = '\0';
  if (compiling)
    fprintf(stderr, "%s[%s] compiling %d/%d candidates  elapsed %s  ETA %s%s", ps->tty ? "\r\033[K" : "", bar,
            p->compiled, p->to_compile, elapsed, eta, ps->tty ? "" : "\n");
  else
    fprintf(stderr, "%s[%s] entry %d/%d  candidate %d/%d  elapsed %s  ETA %s  %.60s%s", ps->tty ? "\r\033[K" : "", bar,
            p->entry + 1, p->entries, p->candidate + 1, p->candidates, elapsed, eta, p->label, ps->tty ? "" : "\n");
  fflush(stderr);
}

static void clear_progress(progress_state *ps) {
  if (ps->tty) fprintf(stderr, "\r\033[K");
}

static void print_entry_line(const sf_tune_entry *e) {
  int failed = 0;
  for (int i = 0; i < e->candidate_count; i++) failed += !e->candidates[i].ok;
  char winner[48], dflt[48];
  const sf_tune_knobs won = sf_tune_knobs_of(&e->variant);
  sf_tune_knobs_short(&won, winner, sizeof winner);
  sf_tune_knobs_short(&e->default_knobs, dflt, sizeof dflt);
  printf("winner %s %.1f us, default %s %.1f us (%.2fx), %d candidates (%d failed)%s\n", winner, e->winner_us, dflt,
         e->default_us,
         e->winner_us > 0 && e->default_us > 0 ? e->default_us / e->winner_us : 0, e->candidate_count, failed,
         e->complete ? "" : " [stopped before every candidate ran]");
}

static void on_entry(void *user, const sf_tune_request *r, const sf_tune_entry *e, bool skipped, const char *failure) {
  progress_state *ps = user;
  clear_progress(ps);
  char label[256];
  sf_tune_request_format(r, label, sizeof label);
  printf("%3d  %s\n     ", ++ps->entry_number, label);
  char winner[48];
  const sf_tune_knobs won = sf_tune_knobs_of(&e->variant);
  sf_tune_knobs_short(&won, winner, sizeof winner);
  if (skipped)
    printf("already tuned (%s; --force tunes it again): winner %s %.1f us\n", e->tuned_at[0] ? e->tuned_at : "no time",
           winner, e->winner_us);
  else if (failure)
    printf("FAILED: %s\n", failure);
  else
    print_entry_line(e);
  fflush(stdout);
}

/* ---- tuning -------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

static int run_tune(const tune_cli *o, const char *db_path, const sf_tune_request *requests, int count) {
  if (cli_note_template_dir("tune") != CLI_OK) return CLI_FAILED;
  char why[512];
  if (!cli_gpu_available(why, sizeof why)) {
    fprintf(stderr, "scanforge tune: needs a CUDA GPU, and none can be used here: %s\n", why);
    return 1;
  }
  sf_context *ctx = NULL;
  if (sf_context_create(NULL, &ctx) != SF_OK) return cli_fail("tune", "cannot create a context");
  size_t warnings_shown = 0;
  cli_print_warnings("tune", ctx, &warnings_shown);
  sf_tune_gpu gpu;
  if (sf_tune_gpu_of_device(0, &gpu) == SF_OK)
    printf("GPU %s (cc %d.%d, %d SMs, %.0f GiB), driver %d, NVRTC %s, templates %s\ndatabase %s\n\n", gpu.name,
           gpu.cc_major, gpu.cc_minor, gpu.sm_count, gpu.memory / 1073741824.0, gpu.driver_version, gpu.nvrtc,
           gpu.templates, db_path);
  progress_state ps = {.tty = isatty(STDERR_FILENO)};
  struct sigaction sa = {.sa_handler = on_sigint}, old;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  sf_tune_options opt = {.db_path = db_path, .budget_s = o->budget_s, .force = o->force, .force_before = o->force_before, .jobs = (int)o->jobs,
                         .reps = o->reps ? (int)o->reps : 25, .warmup = 3, .stop = &interrupted,
                         .progress = on_progress, .entry_done = on_entry, .user = &ps};
  sf_tune_summary sum;
  const double t0 = cli_now_ms();
  sf_status st = sf_tune_run(ctx, requests, count, &opt, &sum);
  sigaction(SIGINT, &old, NULL);
  clear_progress(&ps);
  int status = 0;
  if (st != SF_OK) {
    status = cli_fail("tune", "the run failed");
  } else {
    if (sum.warning[0]) fprintf(stderr, "scanforge tune: warning: %s\n", sum.warning);
    printf("\n%d tuned (%d incomplete), %d already there, %d failed, %d left, in %.1f s\n", sum.tuned, sum.partial,
           sum.skipped, sum.failed, sum.left, (cli_now_ms() - t0) * 1e-3);
    if (sum.stopped)
      printf("stopped by %s: run the same command again to go on where it stopped\n",
             interrupted ? "an interrupt" : "--budget");
    status = sum.failed > 0 || interrupted ? 1 : 0;
  }
  sf_context_destroy(ctx);
  return status;
}

/* ---- report and export ------------------------------------------------------------------------ */

/* The sections to show: this GPU's (any driver or software) when there is one, else all. */
static bool section_wanted(const sf_tune_section *s, const sf_tune_gpu *here) {
  return !here || sf_tune_gpu_same_device(&s->gpu, here);
}

static int run_report(const tune_cli *o, const char *db_path, const sf_tune_gpu *here) {
  sf_tune_db db;
  char *warning = NULL;
  sf_tune_db_load(db_path, &db, &warning);
  if (warning) fprintf(stderr, "scanforge tune: warning: %s\n", warning);
  free(warning);
  const sf_tune_entry **shown = NULL;
  int count = 0, capacity = 0;
  printf("tuning database %s\n", db_path);
  for (int s = 0; s < db.count; s++) {
    const sf_tune_section *sec = &db.sections[s];
    if (!section_wanted(sec, here)) continue;
    printf("\n%s (cc %d.%d, %d SMs), driver %d, NVRTC %s, templates %s%s\n", sec->gpu.name, sec->gpu.cc_major,
           sec->gpu.cc_minor, sec->gpu.sm_count, sec->gpu.driver_version, sec->gpu.nvrtc, sec->gpu.templates,
           here && sf_tune_gpu_equal(&sec->gpu, here) ? " (this GPU and software)" : "");
    printf("%4s %-3s %-4s %3s %-5s %-18s %-7s %-12s %9s %-12s %9s %7s %5s %6s\n", "#", "op", "type", "N", "flags",
           "shape B,D,L[,G]", "buckets", "winner", "us", "default", "us", "speedup", "cands", "failed");
    for (int e = 0; e < sec->count; e++) {
      const sf_tune_entry *en = &sec->entries[e];
      if (count == capacity) {
        capacity = capacity ? 2 * capacity : 32;
        const sf_tune_entry **grown = realloc(shown, (size_t)capacity * sizeof *grown);
        if (!grown) break;
        shown = grown;
      }
      shown[count++] = en;
      char flags[8], shape[48], buckets[16], winner[48], dflt[48];
      snprintf(flags, sizeof flags, "%s%s%s%s", en->variant.has_z ? "z" : "-", en->variant.B_var ? "" : "Bf",
               en->variant.deterministic ? "d" : "", en->block_states ? "s" : "");
      if (en->shape.groups > 1)
        snprintf(shape, sizeof shape, "%lld,%lld,%lld,%d", (long long)en->shape.batch, (long long)en->shape.dim,
                 (long long)en->shape.seqlen, en->shape.groups);
      else
        snprintf(shape, sizeof shape, "%lld,%lld,%lld", (long long)en->shape.batch, (long long)en->shape.dim,
                 (long long)en->shape.seqlen);
      snprintf(buckets, sizeof buckets, "%d,%d", en->seqlen_bucket, en->rows_bucket);
      const sf_tune_knobs won = sf_tune_knobs_of(&en->variant);
      sf_tune_knobs_short(&won, winner, sizeof winner);
      sf_tune_knobs_short(&en->default_knobs, dflt, sizeof dflt);
      int failed = 0;
      for (int c = 0; c < en->candidate_count; c++) failed += !en->candidates[c].ok;
      printf("%4d %-3s %-4s %3d %-5s %-18s %-7s %-12s %9.1f %-12s %9.1f %6.2fx %5d %6d%s\n", count,
             en->variant.op == SF_OP_FWD ? "fwd" : "bwd", sf_dtype_name(en->variant.dtype), en->variant.dstate, flags,
             shape, buckets, winner, en->winner_us, dflt, en->default_us,
             en->winner_us > 0 && en->default_us > 0 ? en->default_us / en->winner_us : 0, en->candidate_count, failed,
             en->complete ? "" : "  (incomplete)");
    }
  }
  int status = 0;
  if (count == 0) {
    printf("\nno entries%s\n", here ? " for this GPU: run 'scanforge tune'" : "");
  } else {
    const char *plot = o->plot_path ? o->plot_path : "tuning-report.png";
    if (sf_tune_plot(shown, count, plot) != SF_OK)
      status = cli_fail("tune", "cannot write the plot");
    else
      printf("\nplot: %s (candidates' times over each entry's winner's, log scale)\n", plot);
  }
  free(shown);
  sf_tune_db_free(&db);
  return status;
}

static int run_export(const tune_cli *o, const char *db_path, const sf_tune_gpu *here) {
  sf_tune_db db, out;
  char *warning = NULL;
  sf_tune_db_load(db_path, &db, &warning);
  if (warning) {
    fprintf(stderr, "scanforge tune: %s\n", warning);
    free(warning);
    sf_tune_db_free(&db);
    return 1;
  }
  sf_tune_db_init(&out);
  sf_status st = SF_OK;
  for (int s = 0; s < db.count && st == SF_OK; s++)
    if (section_wanted(&db.sections[s], here))
      for (int e = 0; e < db.sections[s].count && st == SF_OK; e++)
        if (db.sections[s].entries[e].complete) st = sf_tune_db_put(&out, &db.sections[s].gpu, &db.sections[s].entries[e]);
  char *text = st == SF_OK ? sf_tune_db_dump(&out, false) : NULL;
  int status = 0;
  FILE *f = text ? fopen(o->export_path, "w") : NULL;
  if (!text) {
    status = cli_fail("tune", "out of memory");
  } else if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0) {
    fprintf(stderr, "scanforge tune: --export-defaults: cannot write '%s': %s\n", o->export_path, strerror(errno));
    status = 1;
  } else {
    int entries = 0;
    for (int s = 0; s < out.count; s++) entries += out.sections[s].count;
    printf("wrote %s: %d entries of %d GPU section%s (winners only)\n", o->export_path, entries, out.count,
           out.count == 1 ? "" : "s");
    if (entries == 0) status = 1;
  }
  free(text);
  sf_tune_db_free(&db);
  sf_tune_db_free(&out);
  return status;
}

int cmd_tune(int argc, char **argv) {
  tune_cli o = {.fwd = true, .bwd = true};
  int status = parse(argc, argv, &o);
  if (status >= 0) return status;
  char *db_path = o.db_path ? strdup(o.db_path) : sf_tune_db_default_path();
  if (!db_path) return cli_fail("tune", "no tuning database path");
  sf_tune_request *requests = NULL;
  int count = 0;
  char why[512];
  sf_tune_gpu here;
  const bool gpu = cli_gpu_available(why, sizeof why) && sf_tune_gpu_of_device(0, &here) == SF_OK;
  if (o.report) {
    status = run_report(&o, db_path, gpu ? &here : NULL);
  } else if (o.export_path) {
    status = run_export(&o, db_path, gpu ? &here : NULL);
  } else if ((status = load_requests(&o, &requests, &count)) < 0) {
    if (o.list) {
      for (int i = 0; i < count; i++) {
        char line[256];
        sf_tune_request_format(&requests[i], line, sizeof line);
        printf("%s\n", line);
      }
      status = 0;
    } else {
      status = run_tune(&o, db_path, requests, count);
    }
  }
  free(requests);
  free(db_path);
  return status;
}
