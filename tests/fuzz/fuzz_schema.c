/* libFuzzer target: the op schema parser (core/schema.c), built into this
 * binary with the error slot and the allocator hook: every input either
 * parses (and then equals itself and is freed) or fails with a message. */
#include "../../core/internal.h"
#include "fuzz_util.h"

_Thread_local int wk__call_depth; /* error.c's wk_error_new_call reads it; dispatch.c is not linked */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  char *text = malloc(n + 1);
  if (!text) return 0;
  memcpy(text, data, n);
  text[n] = 0;
  wk__schema s;
  memset(&s, 0, sizeof s);
  bool ok = wk__schema_parse(text, &s);
  if (ok) {
    if (!wk__schema_equal(&s, &s)) abort();
    wk__schema_free(&s);
  }
  fz_check_error(!ok);
  free(text);
  return 0;
}
