/* cmd_cache.c: scanforge cache stat|ls|prune|clear: look after the on-disk kernel cache. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cache_warm.h"
#include "cli/commands.h"
#include "cli/manifest_summary.h"
#include "runtime/cache/cache.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge cache stat|ls|prune|clear [--dir DIR] [--max-bytes N] [--verbose]\n"
          "       scanforge cache warm --arch LIST [--grid default|FILE] [--jobs N]\n"
          "                            [--dir DIR | --into DIR]\n\n"
          "Looks after the disk cache of compiled kernels.\n"
          "  stat    each read-only layer ($SCANFORGE_CACHE_PATH) and the writable cache:\n"
          "          where, entries and bytes; the writable cache's budget\n"
          "  ls      the entries of each layer, most recently used first: last use, size,\n"
          "          target, key, and what they were built from (--verbose: the manifest);\n"
          "          entries built from SCANFORGE_TEMPLATE_DIR's templates say\n"
          "          [experimental templates]\n"
          "  prune   removes least recently used entries until the writable cache fits its\n"
          "          budget (or --max-bytes N), and what killed writers left behind\n"
          "  clear   removes every entry of the writable cache (read-only layers are never\n"
          "          pruned or cleared)\n"
          "  warm    compiles a variant grid for the architectures of --arch ahead of time\n"
          "          (no GPU needed): --grid default is `scanforge variants`; a FILE holds\n"
          "          one spec a line ('#' comments); --jobs N compile threads (default:\n"
          "          one per CPU). Example: scanforge cache warm --arch sm_80,sm_90\n\n"
          "options:\n"
          "  --dir DIR        the writable cache directory (default: $SCANFORGE_CACHE_DIR,\n"
          "                   else $XDG_CACHE_HOME/scanforge, else ~/.cache/scanforge)\n"
          "  --into DIR       warm: fill DIR as a read-only layer for others (created 0755,\n"
          "                   entries 0644, no budget unless --max-bytes), e.g. in an image:\n"
          "                   scanforge cache warm --arch sm_80,sm_90 --into /opt/scanforge/kernels\n"
          "                   then serve with SCANFORGE_CACHE_PATH=/opt/scanforge/kernels\n"
          "  --max-bytes N    the budget: bytes, or with a K, M, G suffix (binary units);\n"
          "                   default $SCANFORGE_CACHE_MAX_BYTES, else 1G\n"
          "  -v, --verbose    ls: print each entry's manifest\n"
          "Entries being built by another process right now are left alone.\n");
}

/* "1.5 MiB" */
static const char *human(uint64_t bytes, char *buf, size_t cap) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, cap, "%" PRIu64 " B", bytes);
  else
    snprintf(buf, cap, "%.1f %s", v, units[u]);
  return buf;
}

/* One line per read-only layer: where, and its entries or why it is skipped. */
static void stat_layers(sf_cache *cache) {
  for (size_t i = 0; i < sf_cache_layer_count(cache); i++) {
    sf_cache_layer_info info;
    sf_cache_stats st;
    char a[32];
    if (sf_cache_layer_info_of(cache, i, &info) != SF_OK) continue;
    printf("layer %-4zu %s (read-only)", i + 1, info.dir);
    if (info.skipped)
      printf(": skipped (see the warning above)\n");
    else if (sf_cache_layer_stat(cache, i, &st) != SF_OK)
      printf(": unreadable: %s\n", sf_last_error());
    else
      printf(": %" PRIu64 " entries, %s\n", st.entries, human(st.bytes, a, sizeof a));
  }
}

static int do_stat(sf_cache *cache) {
  sf_cache_stats st;
  if (sf_cache_stat(cache, &st) != SF_OK) return cli_fail("cache", "stat failed");
  char a[32], b[32];
  stat_layers(cache);
  printf("directory  %s%s\n", st.dir ? st.dir : "(none)", sf_cache_layer_count(cache) ? " (writable)" : "");
  printf("mode       %s\n", st.memory_only ? "memory only (nothing is kept on disk)" : "disk");
  if (!st.memory_only) {
    printf("entries    %" PRIu64 "\n", st.entries);
    printf("bytes      %s (%" PRIu64 ")\n", human(st.bytes, a, sizeof a), st.bytes);
  }
  printf("budget     %s (%" PRIu64 ")\n", human(st.max_bytes, b, sizeof b), st.max_bytes);
  return 0;
}

/* The cache's warnings from number *shown on, each once (*shown is advanced). */
static void print_warnings(const sf_cache *cache, size_t *shown) {
  for (const size_t count = sf_cache_warning_count(cache); *shown < count; (*shown)++)
    fprintf(stderr, "scanforge cache: warning: %s\n", sf_cache_warning_at(cache, *shown));
}

typedef struct ls_state {
  bool verbose;
  int count;
} ls_state;

static int print_entry(void *user, const sf_cache_entry *e) {
  ls_state *s = user;
  char when[32] = "-", size[32], inputs[1024];
  if (e->last_use_ns) {
    time_t t = (time_t)(e->last_use_ns / 1000000000u);
    struct tm local;
    localtime_r(&t, &local);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
  }
  if (s->count++ == 0)
    printf("%-19s  %10s  %-8s  %-32s  %s\n", "LAST USE", "SIZE", "TARGET", "KEY", "INPUTS");
  manifest_summary(e->manifest, inputs, sizeof inputs);
  printf("%-19s  %10s  %-8s  %-32s  %s%s\n", when, human(e->size, size, sizeof size), e->subdir,
         e->key_hex, e->header_ok ? "" : "(damaged) ", inputs);
  if (s->verbose && e->manifest) printf("%s\n", e->manifest);
  return 0;
}

static void print_removed(const char *verb, const sf_cache_removed *r) {
  char a[32];
  printf("%s %" PRIu64 " entries, %s", verb, r->entries, human(r->bytes, a, sizeof a));
  if (r->busy) printf("; %" PRIu64 " being built, left alone", r->busy);
  printf("\n");
}

/* ls over every layer: a heading per layer when there are read-only ones. */
static int do_ls(sf_cache *cache, bool verbose, bool memory_only) {
  size_t layers = sf_cache_layer_count(cache);
  int rc = 0;
  for (size_t i = 0; i < layers; i++) {
    sf_cache_layer_info info;
    if (sf_cache_layer_info_of(cache, i, &info) != SF_OK) continue;
    printf("%s== layer %zu: %s (read-only) ==\n", i ? "\n" : "", i + 1, info.dir);
    ls_state s = {verbose, 0};
    if (info.skipped) printf("skipped (see the warning above)\n");
    else if (sf_cache_layer_list(cache, i, print_entry, &s) != SF_OK) rc = cli_fail("cache", "ls failed");
    else if (s.count == 0) printf("no entries\n");
  }
  sf_cache_stats st;
  if (layers && sf_cache_stat(cache, &st) == SF_OK)
    printf("\n== %s (writable) ==\n", st.dir ? st.dir : "(none)");
  if (memory_only) {
    /* The warning above said why; the layers, when there are some, were the point. */
    fprintf(stderr, "scanforge cache ls: no writable disk cache to list\n");
    return layers ? rc : 1;
  }
  ls_state s = {verbose, 0};
  if (sf_cache_list(cache, print_entry, &s) != SF_OK) rc = cli_fail("cache", "ls failed");
  else if (s.count == 0) printf("no entries\n");
  return rc;
}

int cmd_cache(int argc, char **argv) {
  static const struct option options[] = {
      {"dir", required_argument, NULL, 'd'},
      {"into", required_argument, NULL, 'i'},
      {"max-bytes", required_argument, NULL, 'm'},
      {"verbose", no_argument, NULL, 'v'},
      {"arch", required_argument, NULL, 'a'},
      {"grid", required_argument, NULL, 'g'},
      {"jobs", required_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  sf_cache_options opt = {0};
  bool verbose = false;
  const char *arch = NULL, *grid = "default", *into = NULL;
  int jobs = 0;
  for (int c; (c = getopt_long(argc, argv, "vh", options, NULL)) != -1;) {
    switch (c) {
    case 'd': opt.dir = optarg; break;
    case 'i': into = optarg; break;
    case 'm':
      if (sf_cache_parse_bytes(optarg, &opt.max_bytes) != SF_OK || opt.max_bytes == 0) {
        fprintf(stderr, "scanforge cache: --max-bytes: expected a positive byte count such as "
                        "64M, got '%s'\n", optarg);
        return 2;
      }
      break;
    case 'v': verbose = true; break;
    case 'a': arch = optarg; break;
    case 'g': grid = optarg; break;
    case 'j':
      jobs = atoi(optarg);
      if (jobs < 1 || jobs > 64) {
        fprintf(stderr, "scanforge cache: --jobs: expected 1..64, got '%s'\n", optarg);
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind + 1 != argc) {
    fprintf(stderr, "scanforge cache: expected one action: stat, ls, prune, clear or warm\n");
    usage(stderr);
    return 2;
  }
  const char *action = argv[optind];
  if (strcmp(action, "stat") && strcmp(action, "ls") && strcmp(action, "prune") &&
      strcmp(action, "clear") && strcmp(action, "warm")) {
    fprintf(stderr, "scanforge cache: unknown action '%s'\n", action);
    usage(stderr);
    return 2;
  }

  if (into && (strcmp(action, "warm") != 0 || opt.dir)) {
    fprintf(stderr, "scanforge cache: --into: only for warm, and not with --dir (got %s%s)\n",
            action, opt.dir ? " --dir" : "");
    return 2;
  }
  if (into) {
    /* A layer others read: readable modes, nothing read from other layers (every entry
     * must land in it), and no eviction of what it is being filled with. */
    opt.dir = into;
    opt.shared = true;
    opt.read_only_path = "";
    if (!opt.max_bytes) opt.max_bytes = UINT64_MAX;
  }
  if (strcmp(action, "warm") == 0 && !arch) {
    fprintf(stderr, "scanforge cache warm: --arch is required, e.g. --arch sm_80,sm_90\n");
    return 2;
  }
  if (strcmp(action, "warm") == 0) {
    int rc = cache_warm_check_arch(arch);
    if (rc) return rc;
    if (cli_note_template_dir("cache warm") != CLI_OK) return CLI_FAILED;
  }
  sf_cache *cache;
  if (sf_cache_open(&opt, &cache) != SF_OK) return cli_fail("cache", "cannot open the cache");
  size_t warned = 0;
  print_warnings(cache, &warned);
  int rc = 0;
  sf_cache_removed removed;
  sf_cache_stats st;
  if (sf_cache_stat(cache, &st) != SF_OK) {
    rc = cli_fail("cache", "cannot read the cache");
  } else if (strcmp(action, "ls") == 0) {
    rc = do_ls(cache, verbose, st.memory_only);
  } else if (st.memory_only && strcmp(action, "stat") != 0) {
    /* The warning above said why. */
    fprintf(stderr, "scanforge cache %s: no disk cache to work on\n", action);
    rc = 1;
  } else if (strcmp(action, "stat") == 0) {
    rc = do_stat(cache);
  } else if (strcmp(action, "warm") == 0) {
    rc = cache_warm(cache, arch, grid, jobs);
    /* What went wrong while compiling (a full disk) is said too, and a warm whose
     * kernels did not all reach the disk has failed. */
    print_warnings(cache, &warned);
    sf_cache_stats after;
    if (rc == 0 && sf_cache_stat(cache, &after) == SF_OK && after.memory_only) {
      fprintf(stderr, "scanforge cache warm: the cache went memory-only while warming "
                      "(the warning above): not every kernel is on disk\n");
      rc = 1;
    }
  } else if (strcmp(action, "prune") == 0) {
    if (sf_cache_prune(cache, st.max_bytes, &removed) != SF_OK)
      rc = cli_fail("cache", "prune failed");
    else
      print_removed("removed", &removed);
  } else {
    if (sf_cache_clear(cache, &removed) != SF_OK) rc = cli_fail("cache", "clear failed");
    else print_removed("removed", &removed);
  }
  sf_cache_close(cache);
  return rc;
}
