/* template_set.c: reads templates from the built-in set or SCANFORGE_TEMPLATE_DIR. */
#include "generator/template_set.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/env.h"
#include "base/error.h"

const char *sf_template_dir(void) {
  sf_env_value dir; /* secure_getenv: set-user-ID programs take the built-in set */
  return sf_env_get(SF_ENV_TEMPLATE_DIR, &dir) ? dir.text : NULL;
}

sf_status sf_template_dir_check(void) {
  const char *dir = sf_template_dir();
  if (!dir) return SF_OK;
  struct stat info;
  if (stat(dir, &info) != 0)
    return sf_fail(SF_ETEMPLATE, "SCANFORGE_TEMPLATE_DIR=%s: %s (unset it to use the built-in templates)",
                   dir, strerror(errno));
  if (!S_ISDIR(info.st_mode))
    return sf_fail(SF_ETEMPLATE, "SCANFORGE_TEMPLATE_DIR=%s: not a directory (unset it to use the built-in templates)",
                   dir);
  return SF_OK;
}

const char *sf_template_line_name(const char *name, char *buf, size_t cap) {
  for (const sf_template_file *t = sf_builtin_templates; t->name; t++)
    if (strcmp(t->name, name) == 0) return t->path;
  snprintf(buf, cap, "templates/%s", name);
  return buf;
}

static bool is_plain_name(const char *name) {
  return name[0] != '\0' && name[0] != '.' && !strchr(name, '/') && !strchr(name, '\\');
}

static bool is_builtin(const char *name) {
  for (const sf_template_file *t = sf_builtin_templates; t->name; t++)
    if (strcmp(t->name, name) == 0) return true;
  return false;
}

static sf_status read_file(const char *path, char **text, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return sf_fail(SF_ETEMPLATE, "template %s: cannot open: %s", path, strerror(errno));
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + len, 1, cap - len - 1, f);
    len += got;
    if (len + 1 < cap) break;
    char *grown = realloc(buf, cap * 2);
    if (!grown) { free(buf); buf = NULL; break; }
    buf = grown;
    cap *= 2;
  }
  bool failed = ferror(f);
  fclose(f);
  if (!buf) return sf_fail(SF_ENOMEM, "template %s: out of memory reading it", path);
  if (failed) { free(buf); return sf_fail(SF_ETEMPLATE, "template %s: read error", path); }
  buf[len] = '\0';
  *text = buf;
  *size = len;
  return SF_OK;
}

static sf_status read_builtin(const char *name, char **text, size_t *size) {
  for (const sf_template_file *t = sf_builtin_templates; t->name; t++) {
    if (strcmp(t->name, name) != 0) continue;
    char *copy = malloc(t->size + 1);
    if (!copy) return sf_fail(SF_ENOMEM, "template %s: out of memory", name);
    memcpy(copy, t->text, t->size);
    copy[t->size] = '\0';
    *text = copy;
    *size = t->size;
    return SF_OK;
  }
  return sf_fail(SF_ETEMPLATE, "template '%s' is not in the built-in template set", name);
}

/* A directory overrides built-in files of the same name; files it lacks come from the
 * built-in set, so an experiment needs to copy only the files it changes. */
sf_status sf_template_read(const char *name, char **text, size_t *size) {
  if (!is_plain_name(name))
    return sf_fail(SF_ETEMPLATE, "template name '%s' is not a plain file name", name);
  sf_status st = sf_template_dir_check();
  if (st != SF_OK) return st;
  const char *dir = sf_template_dir();
  if (dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (access(path, F_OK) == 0 || !is_builtin(name)) return read_file(path, text, size);
  }
  return read_builtin(name, text, size);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void hash_file(XXH3_state_t *state, const char *name, const char *text, size_t size) {
  XXH3_64bits_update(state, name, strlen(name) + 1);
  XXH3_64bits_update(state, text, size);
}

/* Names of the directory's files that are not built-in, sorted. */
static sf_status list_extra_files(const char *dir, char ***names, size_t *count) {
  DIR *d = opendir(dir);
  if (!d) return sf_fail(SF_ETEMPLATE, "SCANFORGE_TEMPLATE_DIR=%s: cannot open: %s", dir, strerror(errno));
  *names = NULL;
  *count = 0;
  sf_status st = SF_OK;
  for (struct dirent *e; (e = readdir(d));) {
    if (!is_plain_name(e->d_name) || is_builtin(e->d_name)) continue;
    char **grown = realloc(*names, (*count + 1) * sizeof **names);
    char *copy = strdup(e->d_name);
    if (!grown || !copy) {
      free(copy);
      if (grown) *names = grown;
      st = sf_fail(SF_ENOMEM, "template set hash: out of memory");
      break;
    }
    *names = grown;
    (*names)[(*count)++] = copy;
  }
  closedir(d);
  if (st == SF_OK && *count > 1) qsort(*names, *count, sizeof **names, compare_names);
  return st;
}

sf_status sf_template_set_hash(uint64_t *hash) {
  XXH3_state_t *state = XXH3_createState();
  if (!state) return sf_fail(SF_ENOMEM, "template set hash: out of memory");
  XXH3_64bits_reset(state);
  sf_status st = sf_template_dir_check();
  for (const sf_template_file *t = sf_builtin_templates; t->name && st == SF_OK; t++) {
    char *text;
    size_t size;
    st = sf_template_read(t->name, &text, &size);
    if (st != SF_OK) break;
    hash_file(state, t->name, text, size);
    free(text);
  }
  const char *dir = sf_template_dir();
  char **names = NULL;
  size_t count = 0;
  if (st == SF_OK && dir) st = list_extra_files(dir, &names, &count);
  for (size_t i = 0; i < count && st == SF_OK; i++) {
    char *text;
    size_t size;
    st = sf_template_read(names[i], &text, &size);
    if (st != SF_OK) break;
    hash_file(state, names[i], text, size);
    free(text);
  }
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
  if (st == SF_OK) *hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return st;
}
