/* test_tune_compile_order.c: the order in which the tuner's compile threads take variants
 * (tuning/compile_pool.c): planned candidates in order, an entry's second round first,
 * and never one variant twice. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tuning/run_state.h"

static run_state state_with(int count) {
  run_state s = {0};
  s.uniques = calloc((size_t)count, sizeof *s.uniques);
  cr_assert_not_null(s.uniques);
  s.unique_capacity = count;
  atomic_store(&s.unique_count, count);
  return s;
}

Test(tune_compile_order, planned_candidates_in_order_then_none) {
  run_state s = state_with(3);
  for (int i = 0; i < 3; i++) cr_expect_eq(sf_tuner_claim_compile(&s), i);
  cr_expect_eq(sf_tuner_claim_compile(&s), -1, "all three claimed");
  free(s.uniques);
}

Test(tune_compile_order, a_second_round_jumps_the_queue_and_is_not_built_twice) {
  run_state s = state_with(10);
  cr_expect_eq(sf_tuner_claim_compile(&s), 0);
  cr_expect_eq(sf_tuner_claim_compile(&s), 1);
  /* an entry's refinements, appended after all planned candidates: 8 and 9 */
  sf_tuner_compile_first(&s, 8, 10);
  cr_expect_eq(sf_tuner_claim_compile(&s), 8);
  cr_expect_eq(sf_tuner_claim_compile(&s), 9);
  /* the main thread builds 4 itself (it waited for it): nobody else may */
  atomic_store(&s.uniques[4].taken, 1);
  const int expected[] = {2, 3, 5, 6, 7};
  for (int k = 0; k < 5; k++) cr_expect_eq(sf_tuner_claim_compile(&s), expected[k], "claim %d", k);
  cr_expect_eq(sf_tuner_claim_compile(&s), -1, "8 and 9 were built already, 4 by the main thread");
  free(s.uniques);
}

Test(tune_compile_order, a_new_round_replaces_the_old_one) {
  run_state s = state_with(12);
  sf_tuner_compile_first(&s, 6, 8);
  cr_expect_eq(sf_tuner_claim_compile(&s), 6);
  sf_tuner_compile_first(&s, 10, 12); /* the next entry's round; 7 stays in the plain queue */
  cr_expect_eq(sf_tuner_claim_compile(&s), 10);
  cr_expect_eq(sf_tuner_claim_compile(&s), 11);
  cr_expect_eq(sf_tuner_claim_compile(&s), 0);
  int claimed = 1 + 2 + 1;
  while (sf_tuner_claim_compile(&s) >= 0) claimed++;
  cr_expect_eq(claimed, 12, "every variant claimed exactly once");
  free(s.uniques);
}
