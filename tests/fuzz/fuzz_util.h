/* Shared bits of the libFuzzer targets (tests/fuzz): Wick initialised once,
 * the error slot cleared per input, inputs written to a private temp file
 * for the readers that take paths. */
#ifndef WICK_FUZZ_UTIL_H
#define WICK_FUZZ_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wick/wick.h>

static inline void fz_init(void) {
  static int done;
  if (done) return;
  done = 1;
  if (wk_init() != WK_OK) {
    fprintf(stderr, "fuzz: wk_init: %s\n", wk_last_error_message());
    abort();
  }
}

/* Writes data to this process's temp file number k (suffix picks the reader's
 * format detection) and returns its path. */
static inline const char *fz_file(int k, const char *suffix, const uint8_t *data, size_t n) {
  static char path[4][256];
  snprintf(path[k], sizeof path[k], "%s/wick-fuzz-%d-%d%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid(), k, suffix);
  FILE *f = fopen(path[k], "wb");
  if (!f) abort();
  if (n && fwrite(data, 1, n, f) != n) abort();
  fclose(f);
  return path[k];
}

/* A failing call must leave a message. */
static inline void fz_check_error(int failed) {
  if (failed && wk_last_error() == WK_OK) {
    fprintf(stderr, "fuzz: a call failed without recording an error\n");
    abort();
  }
  if (failed && !*wk_last_error_message()) {
    fprintf(stderr, "fuzz: an error without a message\n");
    abort();
  }
  wk_clear_error();
}
#endif
