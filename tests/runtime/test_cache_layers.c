/* test_cache_layers.c: read-only cache layers ($SCANFORGE_CACHE_PATH): a layer warmed by
 * root serves another user without a compile; the trust rule skips group-, world- and
 * other-user-writable layers with a warning; missing layers are skipped; the first layer
 * wins; nothing is ever written into a layer. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <ftw.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/cache/cache.h"
#include "runtime/compile/compile.h"
#include "runtime/launch/context.h"
#include "base/error.h"
#include "runtime/launch/kernels.h"
#include "tests/support/temp_dir.h"

enum { NOBODY = 65534 };

/* ---- helpers ------------------------------------------------------------------------ */

static int builds; /* this process's calls of build_text */

static sf_status build_text(void *user, void **data, size_t *size) {
  builds++;
  *size = strlen(user);
  *data = malloc(*size);
  memcpy(*data, user, *size);
  return SF_OK;
}

static sf_cache_key key_named(const char *name) {
  sf_cache_input in[] = {{"source", name, strlen(name)}, {"target", "sm_90", 5}};
  return sf_cache_key_of(in, 2);
}

/* Opens a cache: `dir` writable, `layers` the read-only list ("" none). */
static sf_cache *open_with(const char *dir, const char *layers, bool shared) {
  sf_cache_options opt = {.dir = dir, .read_only_path = layers, .shared = shared};
  sf_cache *c = NULL;
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK, "%s", sf_last_error());
  return c;
}

/* Gets key `name`, built as `text` on a miss; returns where it came from and the bytes. */
static sf_cache_source get(sf_cache *c, const char *name, const char *text, char *got, size_t cap) {
  sf_cache_key key = key_named(name);
  const void *data;
  size_t size;
  sf_cache_source where;
  sf_status s = sf_cache_get_or_build(c, &key, "sm_90", "{}", build_text, (void *)text, &data,
                                      &size, &where);
  cr_assert_eq(s, SF_OK, "%s: %s", sf_status_name(s), sf_last_error());
  cr_assert_lt(size, cap);
  memcpy(got, data, size);
  got[size] = '\0';
  return where;
}

/* A layer at <base>/<name> holding key `name` -> `text`, filled as `cache warm --into`
 * does (shared modes, no layers read). */
static char *make_layer(const char *base, const char *leaf, const char *name, const char *text) {
  static char paths[4][1024]; /* room for the layers of one test */
  static int used;
  char *path = paths[used++ % 4];
  snprintf(path, sizeof paths[0], "%s/%s", base, leaf);
  sf_cache *c = open_with(path, "", true);
  cr_assert_null(sf_cache_warning(c), "%s", sf_cache_warning(c));
  char got[256];
  cr_assert_eq(get(c, name, text, got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(c);
  return path;
}

/* True when some warning contains every one of the (NULL-terminated) words. */
static bool warned(sf_cache *c, const char *first, ...) {
  for (size_t i = 0; i < sf_cache_warning_count(c); i++) {
    const char *w = sf_cache_warning_at(c, i);
    bool all = true;
    va_list ap;
    va_start(ap, first);
    for (const char *word = first; word && all; word = va_arg(ap, const char *))
      all = strstr(w, word) != NULL;
    va_end(ap);
    if (all) return true;
  }
  return false;
}

static char *all_warnings(sf_cache *c) {
  static char text[8192];
  text[0] = '\0';
  for (size_t i = 0; i < sf_cache_warning_count(c); i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), "[%s] ", sf_cache_warning_at(c, i));
  return text;
}

/* Every file and directory under `root` with its size, mode and modification time, so
 * that any write (a new file, a rewritten stamp, a chmod) changes the text. */
static char snapshot_text[1 << 16];
static int snapshot_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)flag, (void)ftw;
  size_t n = strlen(snapshot_text);
  snprintf(snapshot_text + n, sizeof snapshot_text - n, "%s %lld %o %lld.%09ld\n", path,
           (long long)st->st_size, (unsigned)st->st_mode, (long long)st->st_mtim.tv_sec,
           st->st_mtim.tv_nsec);
  return 0;
}

static char *snapshot(const char *root) {
  snapshot_text[0] = '\0';
  cr_assert_eq(nftw(root, snapshot_one, 16, FTW_PHYS), 0);
  return strdup(snapshot_text);
}

/* A scratch directory removed when the test's process exits. */
static const char *scratch(void) {
  const char *path = scratch_dir("sf_layers_");
  cr_assert_not_null(path);
  return path;
}

static void require_root(void) {
  if (geteuid() != 0) cr_skip_test("needs root to give directories to other users");
}

/* ---- a layer warmed by root serves another user ------------------------------------ */

/* What the child reports back through shared memory. */
typedef struct child_report {
  char message[1024];
  unsigned long compiles;
  int where;
  size_t size;
  unsigned char head[16];
} child_report;

static int child_fail(child_report *r, int code, const char *what) {
  snprintf(r->message, sizeof r->message, "%s: %s", what, sf_last_error());
  return code;
}

/* In the child, as `nobody`: the context a serving process would make, from the
 * environment alone, and the same kernel the parent warmed. */
static int serve_as_nobody(child_report *r, const char *layer, const char *home,
                           const sf_variant *v, sf_target target) {
  if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
    return child_fail(r, 10, "cannot drop to nobody");
  if (geteuid() != NOBODY) return child_fail(r, 11, "still not nobody");
  setenv("SCANFORGE_CACHE_PATH", layer, 1);
  setenv("SCANFORGE_CACHE_DIR", home, 1);
  sf_context *ctx;
  if (sf_context_create(NULL, &ctx) != SF_OK) return child_fail(r, 12, "sf_context_create");
  if (sf_context_warning(ctx)) {
    snprintf(r->message, sizeof r->message, "unexpected warning: %s", sf_context_warning(ctx));
    return 13;
  }
  unsigned long before = sf_compile_count();
  const void *data;
  size_t size;
  sf_cache_source where;
  if (sf_variant_binary(ctx->cache, target, v, &data, &size, &where) != SF_OK)
    return child_fail(r, 14, "sf_variant_binary");
  r->compiles = sf_compile_count() - before;
  r->where = (int)where;
  r->size = size;
  memcpy(r->head, data, size < 16 ? size : 16);
  sf_context_destroy(ctx);
  return 0;
}

Test(cache_layers, root_warmed_layer_serves_nobody_without_compiling, .timeout = 120) {
  require_root();
  const char *base = scratch();
  cr_assert_eq(chmod(base, 0755), 0); /* nobody must reach the layer inside */
  char layer[4096], home[4096];
  snprintf(layer, sizeof layer, "%s/opt/scanforge/kernels", base);
  snprintf(home, sizeof home, "%s/home", base);
  cr_assert_eq(mkdir(home, 0700), 0);
  cr_assert_eq(chown(home, NOBODY, NOBODY), 0);

  /* The image build: root warms the layer (under a umask that would hide it). */
  sf_variant v;
  cr_assert_eq(sf_variant_parse("op=fwd,dstate=8,threads=32,items=4,channels=4", &v), SF_OK);
  sf_target target = {.arch = 80};
  mode_t old_umask = umask(077);
  sf_cache *warm = open_with(layer, "", true);
  umask(old_umask);
  const void *data;
  size_t size;
  sf_cache_source where;
  unsigned long before = sf_compile_count();
  cr_assert_eq(sf_variant_binary(warm, target, &v, &data, &size, &where), SF_OK, "%s",
               sf_last_error());
  cr_assert_eq(where, SF_CACHE_BUILT);
  cr_assert_eq(sf_compile_count() - before, 1, "the counter sees NVRTC's compile");
  size_t warmed_size = size;
  unsigned char warmed_head[16];
  memcpy(warmed_head, data, 16);
  sf_cache_close(warm);
  char *layer_before = snapshot(layer);

  /* The serving process: another user, the layer from the environment. */
  child_report *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(r, MAP_FAILED);
  memset(r, 0, sizeof *r);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) _exit(serve_as_nobody(r, layer, home, &v, target));
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d: %s", status,
            r->message);
  cr_assert_eq(r->compiles, 0, "nobody compiled %lu times instead of reading the layer", r->compiles);
  cr_assert_eq(r->where, SF_CACHE_FROM_DISK);
  cr_assert_eq(r->size, warmed_size);
  cr_assert_eq(memcmp(r->head, warmed_head, 16), 0, "not the bytes root warmed");

  char *layer_after = snapshot(layer);
  cr_assert_str_eq(layer_after, layer_before, "the layer changed while nobody read it");
  char published[4200];
  snprintf(published, sizeof published, "%s/v1/sm_80", home);
  cr_assert_neq(access(published, F_OK), 0, "the hit was copied into nobody's cache");
  free(layer_before);
  free(layer_after);
}

/* ---- the trust rule ------------------------------------------------------------------ */

Test(cache_layers, group_writable_layer_skipped_unless_trusted) {
  const char *base = scratch();
  char *layer = make_layer(base, "team", "k", "from the team");
  char home[4096], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  cr_assert_eq(chmod(layer, 0775), 0);

  sf_cache *c = open_with(home, layer, false);
  cr_assert(warned(c, "skipping read-only layer", layer, "writable by group",
                   "SCANFORGE_CACHE_TRUST_GROUP", NULL), "%s", all_warnings(c));
  cr_assert_null(strstr(all_warnings(c), "memory only"), "the writable cache is fine");
  builds = 0;
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_BUILT);
  cr_assert_str_eq(got, "built here");
  sf_cache_close(c);

  setenv("SCANFORGE_CACHE_TRUST_GROUP", "1", 1);
  c = open_with(home, layer, false);
  cr_assert_eq(sf_cache_warning_count(c), 0, "%s", all_warnings(c));
  builds = 0;
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_str_eq(got, "from the team");
  cr_assert_eq(builds, 0);
  sf_cache_close(c);
}

Test(cache_layers, group_writable_target_folder_skipped_once) {
  const char *base = scratch();
  char *layer = make_layer(base, "team", "k", "from the team");
  char sub[4096], home[4096], got[256];
  snprintf(sub, sizeof sub, "%s/v1/sm_90", layer);
  snprintf(home, sizeof home, "%s/home", base);
  cr_assert_eq(chmod(sub, 0775), 0);
  sf_cache *c = open_with(home, layer, false);
  cr_assert_eq(sf_cache_warning_count(c), 0, "the root and v1 are fine: %s", all_warnings(c));
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_BUILT);
  cr_assert_eq(get(c, "k2", "built here", got, sizeof got), SF_CACHE_BUILT);
  cr_assert(warned(c, "skipping sm_90", layer, "writable by group", NULL), "%s", all_warnings(c));
  cr_assert_eq(sf_cache_warning_count(c), 1, "said once: %s", all_warnings(c));
  sf_cache_close(c);
}

Test(cache_layers, world_writable_layer_skipped_even_when_group_trusted) {
  const char *base = scratch();
  char *layer = make_layer(base, "open", "k", "from anyone");
  char home[4096], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  cr_assert_eq(chmod(layer, 0777), 0);
  setenv("SCANFORGE_CACHE_TRUST_GROUP", "1", 1);
  sf_cache *c = open_with(home, layer, false);
  cr_assert(warned(c, "skipping read-only layer", "writable by everyone", NULL), "%s",
            all_warnings(c));
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(c);
}

Test(cache_layers, layer_of_another_user_skipped) {
  require_root();
  const char *base = scratch();
  char *layer = make_layer(base, "theirs", "k", "from someone else");
  char home[4096], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  cr_assert_eq(chown(layer, NOBODY, NOBODY), 0);
  sf_cache *c = open_with(home, layer, false);
  cr_assert(warned(c, "skipping read-only layer", "owned by uid 65534", NULL), "%s",
            all_warnings(c));
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(c);
}

Test(cache_layers, missing_and_relative_layers_skipped_with_a_warning) {
  const char *base = scratch();
  char *layer = make_layer(base, "real", "k", "from the real one");
  char list[8192], home[4096], empty[4096], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  snprintf(empty, sizeof empty, "%s/empty", base);
  cr_assert_eq(mkdir(empty, 0755), 0);
  /* Empty elements are ignored, as in $PATH. */
  snprintf(list, sizeof list, ":%s/nowhere::relative/dir:%s:%s:", base, empty, layer);
  setenv("SCANFORGE_CACHE_PATH", list, 1);
  sf_cache *c = open_with(home, NULL, false); /* NULL: from the environment */
  cr_assert(warned(c, "nowhere", "does not exist", NULL), "%s", all_warnings(c));
  cr_assert(warned(c, "relative/dir", "not an absolute path", NULL), "%s", all_warnings(c));
  cr_assert(warned(c, empty, "no v1", NULL), "%s", all_warnings(c));
  cr_assert_eq(sf_cache_warning_count(c), 3, "%s", all_warnings(c));
  cr_assert_eq(sf_cache_layer_count(c), 4);
  sf_cache_layer_info info;
  cr_assert_eq(sf_cache_layer_info_of(c, 3, &info), SF_OK);
  cr_assert_str_eq(info.dir, layer);
  cr_assert_null(info.skipped);
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_str_eq(got, "from the real one");
  sf_cache_close(c);
}

/* ---- lookups --------------------------------------------------------------------------- */

Test(cache_layers, first_layer_wins) {
  const char *base = scratch();
  char *a = make_layer(base, "a", "k", "from a");
  char *b = make_layer(base, "b", "k", "from b");
  make_layer(base, "home", "k", "from home"); /* the writable cache comes last */
  char home[4096], list[8192], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  snprintf(list, sizeof list, "%s:%s", a, b);
  sf_cache *c = open_with(home, list, false);
  cr_assert_eq(get(c, "k", "built", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_str_eq(got, "from a");
  sf_cache_close(c);
  snprintf(list, sizeof list, "%s:%s", b, a);
  c = open_with(home, list, false);
  cr_assert_eq(get(c, "k", "built", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_str_eq(got, "from b");
  sf_cache_close(c);
  c = open_with(home, "", false);
  cr_assert_eq(get(c, "k", "built", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_str_eq(got, "from home");
  sf_cache_close(c);
}

Test(cache_layers, read_when_the_writable_cache_is_refused) {
  const char *base = scratch();
  char *layer = make_layer(base, "layer", "k", "from the layer");
  char home[4096], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  cr_assert_eq(mkdir(home, 0777), 0);
  cr_assert_eq(chmod(home, 0777), 0);
  sf_cache *c = open_with(home, layer, false);
  cr_assert(warned(c, "memory only", NULL), "%s", all_warnings(c));
  cr_assert_eq(get(c, "k", "built", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_str_eq(got, "from the layer");
  sf_cache_close(c);

  /* Asked for memory only: no disk at all, layers included. */
  sf_cache_options opt = {.memory_only = true, .read_only_path = layer};
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK);
  cr_assert_eq(get(c, "k", "built", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(c);
}

Test(cache_layers, damaged_layer_entry_passed_over_and_kept) {
  const char *base = scratch();
  char *layer = make_layer(base, "layer", "k", "from the layer, soon damaged");
  char home[4096], bin[4096], hex[33], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  sf_cache_key key = key_named("k");
  sf_cache_key_hex(&key, hex);
  snprintf(bin, sizeof bin, "%s/v1/sm_90/%s.bin", layer, hex);
  FILE *f = fopen(bin, "r+b");
  cr_assert_not_null(f);
  fseek(f, -3, SEEK_END);
  fputc('#', f);
  fclose(f);
  char *before = snapshot(layer);
  sf_cache *c = open_with(home, layer, false);
  cr_assert_eq(get(c, "k", "built here", got, sizeof got), SF_CACHE_BUILT);
  cr_assert(warned(c, "ignoring", bin, "damaged", NULL), "%s", all_warnings(c));
  sf_cache_close(c);
  char *after = snapshot(layer);
  cr_assert_str_eq(after, before, "the damaged entry is the layer owner's to fix");
  free(before);
  free(after);
}

Test(cache_layers, nothing_is_written_into_a_read_only_layer) {
  const char *base = scratch();
  char *layer = make_layer(base, "layer", "hit", "from the layer");
  char home[4096], got[256];
  snprintf(home, sizeof home, "%s/home", base);
  char *before = snapshot(layer);

  /* A budget of one byte: every publish evicts what it can. */
  sf_cache_options opt = {.dir = home, .read_only_path = layer, .max_bytes = 1};
  sf_cache *c;
  cr_assert_eq(sf_cache_open(&opt, &c), SF_OK);
  cr_assert_eq(get(c, "hit", "built", got, sizeof got), SF_CACHE_FROM_DISK);
  cr_assert_eq(get(c, "miss", "built", got, sizeof got), SF_CACHE_BUILT);
  cr_assert_eq(get(c, "miss2", "built", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_stats st;
  cr_assert_eq(sf_cache_layer_stat(c, 0, &st), SF_OK, "%s", sf_last_error());
  cr_assert_eq(st.entries, 1);
  cr_assert_str_eq(st.dir, layer);
  cr_assert_eq(sf_cache_prune(c, 0, NULL), SF_OK);
  cr_assert_eq(sf_cache_clear(c, NULL), SF_OK);
  sf_cache_close(c);

  char *after = snapshot(layer);
  cr_assert_str_eq(after, before, "scanforge wrote into a read-only layer");
  free(before);
  free(after);
}

static int count_entry(void *user, const sf_cache_entry *e) {
  (void)e;
  (*(int *)user)++;
  return 0;
}

Test(cache_layers, layers_are_listed_and_skipped_ones_refuse_listing) {
  const char *base = scratch();
  char *layer = make_layer(base, "layer", "one", "1");
  sf_cache *fill = open_with(layer, "", true);
  char got[16], home[4096], list[8192];
  cr_assert_eq(get(fill, "two", "2", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(fill);
  snprintf(home, sizeof home, "%s/home", base);
  snprintf(list, sizeof list, "%s:%s/nowhere", layer, base);
  sf_cache *c = open_with(home, list, false);
  int count = 0;
  cr_assert_eq(sf_cache_layer_list(c, 0, count_entry, &count), SF_OK);
  cr_assert_eq(count, 2);
  cr_assert_eq(sf_cache_layer_list(c, 1, count_entry, &count), SF_ECACHE);
  cr_assert_eq(sf_cache_layer_list(c, 2, count_entry, &count), SF_EINVAL);
  cr_assert_eq(count, 2);
  sf_cache_close(c);
}

Test(cache_layers, bad_trust_group_value_is_a_warning) {
  const char *base = scratch();
  char home[4096];
  snprintf(home, sizeof home, "%s/home", base);
  setenv("SCANFORGE_CACHE_TRUST_GROUP", "maybe", 1);
  sf_cache *c = open_with(home, "", false);
  sf_cache_close(c);
  const char *warning = sf_environment_warning();
  cr_assert_not_null(warning);
  cr_assert(strstr(warning, "SCANFORGE_CACHE_TRUST_GROUP=\"maybe\" is not usable"), "%s", warning);
}

Test(cache_layers, group_writable_cache_shared_on_opt_in) {
  const char *base = scratch();
  char team[1024], got[64], path[1200], hex[33];
  snprintf(team, sizeof team, "%s/team", base);
  cr_assert_eq(mkdir(team, 0770), 0);
  cr_assert_eq(chmod(team, 0770), 0);
  setenv("SCANFORGE_CACHE_TRUST_GROUP", "1", 1);
  sf_cache *c = open_with(team, "", false);
  cr_assert_eq(sf_cache_warning_count(c), 0, "%s", all_warnings(c));
  cr_assert_eq(get(c, "k", "for the team", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(c);
  /* What it made, teammates can read and extend. */
  sf_cache_key key = key_named("k");
  sf_cache_key_hex(&key, hex);
  struct stat st;
  snprintf(path, sizeof path, "%s/v1/sm_90/%s.bin", team, hex);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0660);
  snprintf(path, sizeof path, "%s/v1/sm_90", team);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0770);
}

Test(cache_layers, context_hands_out_every_warning) {
  const char *base = scratch();
  char list[1024], home[1024];
  snprintf(list, sizeof list, "%s/one:%s/two", base, base);
  snprintf(home, sizeof home, "%s/home", base);
  setenv("SCANFORGE_CACHE_PATH", list, 1);
  setenv("SCANFORGE_CACHE_DIR", home, 1);
  sf_context *ctx;
  cr_assert_eq(sf_context_create(NULL, &ctx), SF_OK);
  cr_assert_eq(sf_context_warning_count(ctx), 2);
  cr_assert_not_null(strstr(sf_context_warning_at(ctx, 0), "/one"));
  cr_assert_not_null(strstr(sf_context_warning_at(ctx, 1), "/two"));
  cr_assert_null(sf_context_warning_at(ctx, 2));
  cr_assert_eq(sf_context_warning(ctx), sf_context_warning_at(ctx, 0));
  sf_context_destroy(ctx);
}

/* The cache resolves a symbolic link to its directory once, when it vets it: a link
 * swapped afterwards (to a directory of someone else's) changes nothing. */
Test(cache_layers, a_link_swapped_after_vetting_does_not_redirect) {
  const char *base = scratch();
  char mine[1024], theirs[1024], link[1024], path[1200], hex[33], got[64];
  snprintf(mine, sizeof mine, "%s/mine", base);
  snprintf(theirs, sizeof theirs, "%s/theirs", base);
  snprintf(link, sizeof link, "%s/link", base);
  cr_assert_eq(mkdir(mine, 0700), 0);
  cr_assert_eq(mkdir(theirs, 0777), 0);
  cr_assert_eq(chmod(theirs, 0777), 0);
  cr_assert_eq(symlink(mine, link), 0);
  sf_cache *c = open_with(link, "", false);
  cr_assert_eq(sf_cache_warning_count(c), 0, "%s", all_warnings(c));
  cr_assert_eq(unlink(link), 0);
  cr_assert_eq(symlink(theirs, link), 0);
  cr_assert_eq(get(c, "after", "built after the swap", got, sizeof got), SF_CACHE_BUILT);
  sf_cache_close(c);
  sf_cache_key key = key_named("after");
  sf_cache_key_hex(&key, hex);
  snprintf(path, sizeof path, "%s/v1/sm_90/%s.bin", mine, hex);
  cr_expect_eq(access(path, F_OK), 0, "the entry is in the vetted directory");
  snprintf(path, sizeof path, "%s/v1", theirs);
  cr_expect_neq(access(path, F_OK), 0, "nothing went through the swapped link");
}
