/* fuzz_template.c: the template format (generator/template_compiler.c: '@' Lua lines and
 * $(expr)) and the Lua sandbox it runs in (generator/sandbox.c), through the generator:
 * the input is the text of the main template, the variant is fixed. Tighter limits than
 * the defaults keep a runaway template to milliseconds. */
#include "fuzz/fuzz_support.h"
#include "base/error.h"
#include "generator/generator.h"
#include "generator/sandbox.h"
#include "scanforge/scanforge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sf_clear_error(); /* the one state the library keeps between calls */
  static int once;
  if (!once) {
    once = 1;
    unsetenv("SCANFORGE_TEMPLATE_DIR"); /* include() and import() read the built-in set */
  }
  const sf_sandbox_limits limits = {.max_bytes = 16u << 20, .max_instructions = 2000000};
  sf_variant v;
  if (sf_variant_parse("op=fwd,dstate=16,dtype=bf16,threads=32,items=8,channels=4,z=1,D=1", &v) != SF_OK) abort();
  char *source = NULL;
  size_t length = 0;
  sf_status st = sf_generate_from_text(&v, "fuzz.tpl", (const char *)data, size, &limits, &source, &length);
  if (st == SF_OK) {
    FUZZ_REQUIRE(source && strlen(source) == length, "the generated text is not %zu bytes long", length);
    free(source);
  } else {
    FUZZ_REQUIRE(st == SF_ETEMPLATE || st == SF_EINVAL, "unexpected status %s: %s", sf_status_name(st),
                 sf_last_error());
    FUZZ_REQUIRE(sf_last_error()[0] != '\0', "a failure with no message");
  }
  return 0;
}
