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
#include "runtime/cache.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: scanforge cache stat|ls|prune|clear [--dir DIR] [--max-bytes N] [--verbose]\n"
          "       scanforge cache warm --arch LIST [--grid default|FILE] [--jobs N] [--dir DIR]\n\n"
          "Looks after the disk cache of compiled kernels.\n"
          "  stat    where the cache is, its entries and bytes, its budget\n"
          "  ls      the entries, most recently used first: last use, size, target, key,\n"
          "          and what they were built from (--verbose: the whole manifest)\n"
          "  prune   removes least recently used entries until the cache fits its budget\n"
          "          (or --max-bytes N), and what killed writers left behind\n"
          "  clear   removes every entry\n"
          "  warm    compiles a variant grid for the architectures of --arch ahead of time\n"
          "          (no GPU needed): --grid default is `scanforge variants`; a FILE holds\n"
          "          one spec a line ('#' comments); --jobs N compile threads (default:\n"
          "          one per CPU). Example: scanforge cache warm --arch sm_80,sm_90\n\n"
          "options:\n"
          "  --dir DIR        the cache directory (default: $SCANFORGE_CACHE_DIR, else\n"
          "                   $XDG_CACHE_HOME/scanforge, else ~/.cache/scanforge)\n"
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

static int do_stat(sf_cache *cache) {
  sf_cache_stats st;
  if (sf_cache_stat(cache, &st) != SF_OK) return cli_fail("cache", "stat failed");
  char a[32], b[32];
  printf("directory  %s\n", st.dir ? st.dir : "(none)");
  printf("mode       %s\n", st.memory_only ? "memory only (nothing is kept on disk)" : "disk");
  if (!st.memory_only) {
    printf("entries    %" PRIu64 "\n", st.entries);
    printf("bytes      %s (%" PRIu64 ")\n", human(st.bytes, a, sizeof a), st.bytes);
  }
  printf("budget     %s (%" PRIu64 ")\n", human(st.max_bytes, b, sizeof b), st.max_bytes);
  return 0;
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

int cmd_cache(int argc, char **argv) {
  static const struct option options[] = {
      {"dir", required_argument, NULL, 'd'},
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
  const char *arch = NULL, *grid = "default";
  int jobs = 0;
  for (int c; (c = getopt_long(argc, argv, "vh", options, NULL)) != -1;) {
    switch (c) {
    case 'd': opt.dir = optarg; break;
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

  if (strcmp(action, "warm") == 0 && !arch) {
    fprintf(stderr, "scanforge cache warm: --arch is required, e.g. --arch sm_80,sm_90\n");
    return 2;
  }
  if (strcmp(action, "warm") == 0) {
    int rc = cache_warm_check_arch(arch);
    if (rc) return rc;
  }
  sf_cache *cache;
  if (sf_cache_open(&opt, &cache) != SF_OK) return cli_fail("cache", "cannot open the cache");
  if (sf_cache_warning(cache)) fprintf(stderr, "scanforge cache: warning: %s\n", sf_cache_warning(cache));
  int rc = 0;
  sf_cache_removed removed;
  sf_cache_stats st;
  if (sf_cache_stat(cache, &st) != SF_OK) {
    rc = cli_fail("cache", "cannot read the cache");
  } else if (st.memory_only && strcmp(action, "stat") != 0) {
    /* The warning above said why. */
    fprintf(stderr, "scanforge cache %s: no disk cache to work on\n", action);
    rc = 1;
  } else if (strcmp(action, "stat") == 0) {
    rc = do_stat(cache);
  } else if (strcmp(action, "warm") == 0) {
    rc = cache_warm(cache, arch, grid, jobs);
  } else if (strcmp(action, "ls") == 0) {
    ls_state s = {verbose, 0};
    if (sf_cache_list(cache, print_entry, &s) != SF_OK) rc = cli_fail("cache", "ls failed");
    else if (s.count == 0) printf("no entries\n");
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
