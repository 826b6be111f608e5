/* tuning_database.h: the tuning database: per GPU, the winning launch configuration of each shape bucket; reading it (tuning/database_write.h writes it). */
#ifndef SCANFORGE_TUNING_DATABASE_H
#define SCANFORGE_TUNING_DATABASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scanforge/scanforge.h"

/* The file is JSON (docs/tuning.md shows one):
 *   {"format": "scanforge-tuning", "version": 1,
 *    "sections": [{"gpu": {...}, "entries": [{...}, ...]}, ...]}
 * A file of another format or version is ignored as a whole. */
#define SF_TUNE_DB_FORMAT "scanforge-tuning"
#define SF_TUNE_DB_VERSION 1

/* What a section is measured on: the GPU's identity (name, compute capability, SM count,
 * memory) and the software that shaped the kernels (driver, NVRTC, template set). */
typedef struct sf_tune_gpu {
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  uint64_t memory;     /* bytes */
  int driver_version;  /* 13000 for CUDA 13.0 */
  char nvrtc[16];      /* "13.0" */
  char templates[24];  /* the template set's hash, 16 hex digits */
} sf_tune_gpu;

/* A launch configuration: the knobs the tuner chooses (sf_variant's). split_states and
 * states matter to the forward only. */
typedef struct sf_tune_knobs {
  bool split_states; /* "split=state": lanes split the states (scan_fwd_states.tpl) */
  int threads, items, channels;
  int states;        /* split=time: states a thread works on at once */
  int min_blocks;    /* blocks per SM the kernel must fit (0: the compiler's choice) */
} sf_tune_knobs;

sf_tune_knobs sf_tune_knobs_of(const sf_variant *v);
void sf_tune_knobs_apply(const sf_tune_knobs *k, sf_variant *v);
bool sf_tune_knobs_equal(const sf_tune_knobs *a, const sf_tune_knobs *b);
/* As a launch spec: "split=time,threads=32,items=8,channels=4,states=1,minblocks=0". */
void sf_tune_knobs_spec(const sf_tune_knobs *k, char *buf, size_t cap);
/* Short, for tables: "32/8/4/1" (threads/items/channels/states), "st:8/32/4" with
 * split=state; "+b2" appended for minblocks=2. */
void sf_tune_knobs_short(const sf_tune_knobs *k, char *buf, size_t cap);

/* The shape a measurement was taken on. */
typedef struct sf_tune_shape {
  int64_t batch, dim, seqlen;
  int groups;
} sf_tune_shape;

/* One candidate configuration and what became of it. */
typedef struct sf_tune_candidate {
  sf_tune_knobs knobs;
  bool ok;            /* it ran, passed the check and was timed */
  char why[256];      /* when !ok: why not ("out of GPU resources: ...", "failed the check: ...") */
  double median_us, min_us, p90_us;
  int reps;           /* timed repetitions (fewer when stopped early: see docs/tuning.md) */
  double error;       /* relative error against the reference in the check; < 0 when not checked */
} sf_tune_candidate;

/* One (op, dstate, dtype, flags, block states, shape bucket) entry. `variant` holds op,
 * dstate, dtype and the flags (z, D, delta_bias, softplus, B, C, deterministic); its knobs
 * (split, threads, items, channels, states) are the winner's. */
typedef struct sf_tune_entry {
  sf_variant variant;
  /* A backward measured on block states (docs/design-block-states.md): the launch for
   * calls whose forward saved states at a short interval (state_interval != 0), which
   * run another entry point and want other knobs. JSON "block_states": true. */
  bool block_states;
  sf_tune_shape shape;        /* what was measured; its buckets are the key */
  int seqlen_bucket, rows_bucket;
  sf_tune_knobs default_knobs; /* the heuristics' choice; threads 0 when not known (a file without "default") */
  double winner_us, default_us; /* medians, measured in the same run */
  bool complete;              /* every candidate was tried (false: stopped by a budget) */
  char tuned_at[32];          /* UTC, ISO 8601 */
  sf_tune_candidate *candidates; /* may be NULL (shipped defaults keep the winner only) */
  int candidate_count;
} sf_tune_entry;

typedef struct sf_tune_section {
  sf_tune_gpu gpu;
  sf_tune_entry *entries;
  int count, capacity;
} sf_tune_section;

typedef struct sf_tune_db {
  sf_tune_section *sections;
  int count, capacity;
} sf_tune_db;

/* ---- buckets -------------------------------------------------------------------------
 * A shape's bucket is (ceil(log2 L), ceil(log2 (batch * dim))): bucket k holds the values
 * in (2^(k-1), 2^k], so L = 49 and L = 64 share bucket 6 and L = 65 starts bucket 7. */
int sf_tune_bucket(int64_t value);

/* ---- entries ------------------------------------------------------------------------ */

/* The flags of a variant as a spec fragment: "z=1,D=1,delta_bias=1,softplus=1,B=var,C=var,deterministic=0". */
void sf_tune_flags_format(const sf_variant *v, char *buf, size_t cap);
/* Sets the flags of *v from such a fragment; SF_EINVAL for any other key. */
sf_status sf_tune_flags_parse(const char *text, sf_variant *v);

/* True when two entries have the same key: op, dstate, dtype, flags, block_states and both buckets. */
bool sf_tune_entry_same_key(const sf_tune_entry *a, const sf_tune_entry *b);
/* A deep copy (candidates included); false when out of memory. */
bool sf_tune_entry_copy(sf_tune_entry *dst, const sf_tune_entry *src);
void sf_tune_entry_free(sf_tune_entry *e);

/* ---- the in-memory database --------------------------------------------------------- */

void sf_tune_db_init(sf_tune_db *db);
void sf_tune_db_free(sf_tune_db *db);

/* Exactly the same GPU and software. */
bool sf_tune_gpu_equal(const sf_tune_gpu *a, const sf_tune_gpu *b);
/* The same GPU model and memory (name, compute capability, SM count, memory). */
bool sf_tune_gpu_same_device(const sf_tune_gpu *a, const sf_tune_gpu *b);

/* The section of exactly this GPU and software, or NULL. */
sf_tune_section *sf_tune_db_find_section(const sf_tune_db *db, const sf_tune_gpu *gpu);
/* The entry of the section with the key of `key`, or NULL. */
sf_tune_entry *sf_tune_section_find(const sf_tune_section *s, const sf_tune_entry *key);

/* Adds (a copy of) the entry to the section of `gpu`, creating the section, replacing an
 * entry of the same key. SF_ENOMEM when out of memory. */
sf_status sf_tune_db_put(sf_tune_db *db, const sf_tune_gpu *gpu, const sf_tune_entry *entry);
/* Puts every entry of `from` into `into` (later ones win). */
sf_status sf_tune_db_merge(sf_tune_db *into, const sf_tune_db *from);

/* The section to use on `gpu`: the same device and template set; of those, the one whose
 * driver and NVRTC match too, else the first. NULL when none. *other_templates (may be
 * NULL) is set when a section of the same device was skipped for its template set. */
const sf_tune_section *sf_tune_db_match(const sf_tune_db *db, const sf_tune_gpu *gpu,
                                        bool *other_templates);

/* ---- JSON ----------------------------------------------------------------------------- */

/* Parses a database from text. A text that is not such a database fails with SF_EINVAL
 * and a message that says what is wrong and where (`origin` names the text). */
sf_status sf_tune_db_parse(const char *text, size_t length, const char *origin, sf_tune_db *out);

/* ---- files ---------------------------------------------------------------------------- */

/* $SCANFORGE_TUNING_DB, else tuning.json in $SCANFORGE_CACHE_DIR, else in
 * $XDG_CACHE_HOME/scanforge, else in ~/.cache/scanforge: a new string (free() it), or
 * NULL with the message set. */
char *sf_tune_db_default_path(void);

/* Reads the file at `path` into *out. A missing file gives an empty database and SF_OK.
 * A file that cannot be read or parsed, or has another format or version, also gives an
 * empty database and SF_OK, with *warning (may be NULL) set to a new string that says
 * why (free() it): a bad tuning file is never fatal. */
sf_status sf_tune_db_load(const char *path, sf_tune_db *out, char **warning);

#endif
