/* fuzz_tuning_db.c: the tuning database loader (runtime/launch_config/tuning_database.c: JSON checked against
 * its schema). What it accepts must survive a write and a re-read unchanged, as
 * sf_tune_db_save does with the entries already in the file. */
#include "fuzz/fuzz_support.h"
#include "base/error.h"
#include "runtime/launch_config/tuning_database.h"
#include "tuning/database_write.h"

static void require_round_trip(const sf_tune_db *db, bool with_candidates) {
  char *first = sf_tune_db_dump(db, with_candidates);
  if (!first) return; /* out of memory */
  sf_tune_db back;
  sf_status st = sf_tune_db_parse(first, strlen(first), "dump", &back);
  FUZZ_REQUIRE(st == SF_OK, "the dump of an accepted database is rejected: %s\n%s", sf_last_error(), first);
  char *second = sf_tune_db_dump(&back, with_candidates);
  FUZZ_REQUIRE(!second || strcmp(first, second) == 0, "the database changed on a re-read:\n%s\n---\n%s", first, second);
  free(second);
  sf_tune_db_free(&back);
  free(first);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sf_clear_error(); /* the one state the library keeps between calls */
  sf_tune_db db;
  if (sf_tune_db_parse((const char *)data, size, "fuzz.json", &db) != SF_OK) {
    FUZZ_REQUIRE(db.count == 0 && db.sections == NULL, "a rejected database left sections behind");
    return 0;
  }
  require_round_trip(&db, true);
  require_round_trip(&db, false);
  sf_tune_db_free(&db);
  return 0;
}
