/* replay_main.c: a main() for the harnesses of fuzz/ in the ordinary (gcc) build: runs
 * LLVMFuzzerTestOneInput over every file named, or in the folders named, so that crashes
 * the fuzzer once found (fuzz/regressions/<harness>/) stay fixed. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzz_support.h"

/* Runs one file through the harness; false when it cannot be read. */
static bool replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t size = 0, capacity = 4096;
  uint8_t *data = malloc(capacity);
  for (size_t got; data && (got = fread(data + size, 1, capacity - size, f)) > 0;) {
    size += got;
    if (size == capacity) {
      uint8_t *grown = realloc(data, capacity *= 2);
      if (!grown) free(data);
      data = grown;
    }
  }
  bool ok = data && !ferror(f);
  fclose(f);
  if (ok) LLVMFuzzerTestOneInput(data, size);
  free(data);
  return ok;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every regular file of the folder, in name order; -1 when the folder cannot be read. */
static int replay_folder(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  char **names = NULL;
  size_t count = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char **grown = realloc(names, (count + 1) * sizeof *names);
    if (!grown) break;
    names = grown;
    if ((names[count] = strdup(e->d_name)) == NULL) break;
    count++;
  }
  closedir(d);
  qsort(names, count, sizeof *names, by_name);
  int replayed = 0;
  for (size_t i = 0; i < count; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      if (!replay_file(path)) {
        fprintf(stderr, "cannot read %s\n", path);
        replayed = -1;
      } else if (replayed >= 0) {
        replayed++;
      }
    }
    free(names[i]);
  }
  free(names);
  return replayed;
}

int main(int argc, char **argv) {
  int total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) continue; /* a harness without regressions yet has no folder */
    int n = S_ISDIR(st.st_mode) ? replay_folder(argv[i]) : (replay_file(argv[i]) ? 1 : -1);
    if (n < 0) {
      fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    total += n;
  }
  printf("replayed %d inputs\n", total);
  return 0;
}
