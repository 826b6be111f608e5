/* database_write.c: the tuning database written as JSON (jansson) and saved to a file shared by concurrent tuners. */
#include "tuning/database_write.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

/* ---- JSON: writing --------------------------------------------------------------------- */

static json_t *gpu_json(const sf_tune_gpu *g) {
  char cc[16];
  snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
  return json_pack("{s:s, s:s, s:i, s:I, s:i, s:s, s:s}", "name", g->name, "compute_capability", cc, "sm_count",
                   g->sm_count, "memory_bytes", (json_int_t)g->memory, "driver_version", g->driver_version,
                   "nvrtc", g->nvrtc, "templates", g->templates);
}

static json_t *config_json(const sf_tune_knobs *k, double median_us) {
  json_t *j = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "split", k->split_states ? "state" : "time", "threads",
                        k->threads, "items", k->items, "channels", k->channels, "states", k->states, "minblocks",
                        k->min_blocks);
  if (j && median_us > 0) json_object_set_new(j, "median_us", json_real(median_us));
  return j;
}

static json_t *candidate_json(const sf_tune_candidate *c) {
  json_t *j = config_json(&c->knobs, 0);
  if (!j) return NULL;
  if (!c->ok) {
    json_object_set_new(j, "failed", json_string(c->why));
    return j;
  }
  json_object_set_new(j, "median_us", json_real(c->median_us));
  json_object_set_new(j, "min_us", json_real(c->min_us));
  json_object_set_new(j, "p90_us", json_real(c->p90_us));
  json_object_set_new(j, "reps", json_integer(c->reps));
  if (c->error >= 0) json_object_set_new(j, "error", json_real(c->error));
  if (c->why[0]) json_object_set_new(j, "note", json_string(c->why));
  return j;
}

static json_t *entry_json(const sf_tune_entry *e, bool with_candidates) {
  char flags[160];
  sf_tune_flags_format(&e->variant, flags, sizeof flags);
  json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:{s:I, s:I, s:I, s:i}}", "op",
                        e->variant.op == SF_OP_FWD ? "fwd" : "bwd", "dstate", e->variant.dstate, "dtype",
                        sf_dtype_name(e->variant.dtype), "flags", flags, "seqlen_bucket", e->seqlen_bucket,
                        "rows_bucket", e->rows_bucket, "shape", "batch", (json_int_t)e->shape.batch, "dim",
                        (json_int_t)e->shape.dim, "seqlen", (json_int_t)e->shape.seqlen, "groups",
                        e->shape.groups);
  if (!j) return NULL;
  if (e->block_states) json_object_set_new(j, "block_states", json_true());
  const sf_tune_knobs winner = sf_tune_knobs_of(&e->variant);
  json_object_set_new(j, "winner", config_json(&winner, e->winner_us));
  /* An entry read without "default" has none (threads 0): writing zeros would make the
   * file unreadable. */
  if (e->default_knobs.threads > 0) json_object_set_new(j, "default", config_json(&e->default_knobs, e->default_us));
  json_object_set_new(j, "complete", json_boolean(e->complete));
  if (e->tuned_at[0]) json_object_set_new(j, "tuned_at", json_string(e->tuned_at));
  if (with_candidates && e->candidate_count > 0) {
    json_t *list = json_array();
    for (int i = 0; i < e->candidate_count; i++) json_array_append_new(list, candidate_json(&e->candidates[i]));
    json_object_set_new(j, "candidates", list);
  }
  return j;
}

char *sf_tune_db_dump(const sf_tune_db *db, bool with_candidates) {
  json_t *root = json_pack("{s:s, s:i}", "format", SF_TUNE_DB_FORMAT, "version", SF_TUNE_DB_VERSION);
  json_t *sections = json_array();
  if (!root || !sections) {
    json_decref(root);
    json_decref(sections);
    return NULL;
  }
  for (int s = 0; s < db->count; s++) {
    const sf_tune_section *sec = &db->sections[s];
    json_t *entries = json_array();
    for (int e = 0; e < sec->count; e++) json_array_append_new(entries, entry_json(&sec->entries[e], with_candidates));
    json_array_append_new(sections, json_pack("{s:o, s:o}", "gpu", gpu_json(&sec->gpu), "entries", entries));
  }
  json_object_set_new(root, "sections", sections);
  char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
  json_decref(root);
  return text;
}

/* ---- files --------------------------------------------------------------------------- */

/* mkdir -p for the directory part of `path`. */
static sf_status make_parent_dirs(const char *path) {
  char *p = strdup(path);
  if (!p) return sf_fail(SF_ENOMEM, "out of memory");
  char *slash = strrchr(p, '/');
  sf_status st = SF_OK;
  if (slash && slash != p) {
    *slash = '\0';
    for (char *q = p + 1; st == SF_OK; q++) {
      if (*q != '/' && *q != '\0') continue;
      char saved = *q;
      *q = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST) st = sf_fail(SF_EIO, "cannot create %s: %s", p, strerror(errno));
      *q = saved;
      if (saved == '\0') break;
    }
  }
  free(p);
  return st;
}

static sf_status write_all(int fd, const char *text, size_t n, const char *path) {
  while (n > 0) {
    ssize_t put = write(fd, text, n);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return sf_fail(SF_EIO, "cannot write %s: %s", path, strerror(errno));
    text += put;
    n -= (size_t)put;
  }
  return SF_OK;
}

/* Writes the database to a temporary file beside `path`, syncs it and renames it over. */
static sf_status publish(const char *path, const sf_tune_db *db) {
  char *text = sf_tune_db_dump(db, true);
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (!text || !tmp) {
    free(text);
    free(tmp);
    return sf_fail(SF_ENOMEM, "tuning database: out of memory");
  }
  snprintf(tmp, n, "%s.XXXXXX", path);
  sf_status st = SF_OK;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    st = sf_fail(SF_EIO, "cannot create a temporary file beside %s: %s", path, strerror(errno));
  } else {
    fchmod(fd, 0644); /* a readable file, like any other result */
    st = write_all(fd, text, strlen(text), tmp);
    if (st == SF_OK) st = write_all(fd, "\n", 1, tmp);
    if (st == SF_OK && fsync(fd) != 0) st = sf_fail(SF_EIO, "cannot sync %s: %s", tmp, strerror(errno));
    close(fd);
    if (st == SF_OK && rename(tmp, path) != 0)
      st = sf_fail(SF_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (st != SF_OK) unlink(tmp);
  }
  free(text);
  free(tmp);
  return st;
}

sf_status sf_tune_db_save(const char *path, const sf_tune_db *additions, char **warning) {
  if (warning) *warning = NULL;
  sf_status st = make_parent_dirs(path);
  if (st != SF_OK) return st;
  size_t n = strlen(path) + sizeof ".lock";
  char *lock_path = malloc(n);
  if (!lock_path) return sf_fail(SF_ENOMEM, "out of memory");
  snprintf(lock_path, n, "%s.lock", path);
  /* The lock file stays: removing it would let a waiter lock an unlinked inode. */
  int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) {
    st = sf_fail(SF_EIO, "cannot open %s: %s", lock_path, strerror(errno));
    free(lock_path);
    return st;
  }
  int rc;
  while ((rc = flock(lock, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    st = sf_fail(SF_EIO, "cannot lock %s: %s", lock_path, strerror(errno));
  } else {
    /* Under the lock: what is on disk now, plus ours. */
    sf_tune_db merged;
    st = sf_tune_db_load(path, &merged, warning);
    if (st == SF_OK) st = sf_tune_db_merge(&merged, additions);
    if (st == SF_OK) st = publish(path, &merged);
    sf_tune_db_free(&merged);
  }
  close(lock); /* releases the flock */
  free(lock_path);
  return st;
}
