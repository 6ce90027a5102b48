/* `wick doctor DIR [--clean]`: lists the temporary files that saves killed
 * mid-write (kill -9) left in DIR (".NAME.tmp-PID-N" whose PID is gone) and,
 * with --clean, removes them. A live writer's temporary file is never listed. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tools.h" /* first: stale_tmp.h allocates with wk_malloc */
#include "../plugins/io/stale_tmp.h"

typedef struct {
  bool clean;
  int failed;
} doctor_state;

static void report(const char *path, pid_t pid, int err, void *u) {
  doctor_state *d = u;
  if (!d->clean)
    printf("stale temporary file: %s (writer pid %ld is gone)\n", path, (long)pid);
  else if (err) {
    fprintf(stderr, "wick doctor: cannot remove '%s': %s\n", path, strerror(err));
    d->failed++;
  } else
    printf("removed stale temporary file: %s (writer pid %ld is gone)\n", path, (long)pid);
}

int wick_doctor_cmd(int argc, char **argv) {
  const char *dir = NULL;
  doctor_state d = {false, 0};
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--clean") == 0)
      d.clean = true;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf(
          "usage: wick doctor DIR [--clean]\n"
          "Lists the temporary files (.NAME.tmp-PID-N) that killed saves left in DIR;\n"
          "--clean removes them. Files of a writer that is still running are left alone.\n");
      return 0;
    } else if (argv[i][0] == '-' || dir) {
      fprintf(stderr, "wick doctor: unexpected argument '%s'\nusage: wick doctor DIR [--clean]\n", argv[i]);
      return 2;
    } else
      dir = argv[i];
  }
  if (!dir) {
    fprintf(stderr, "usage: wick doctor DIR [--clean]\n");
    return 2;
  }
  int n = io_tmp_stale(dir, d.clean, report, &d);
  if (n < 0) {
    fprintf(stderr, "wick doctor: cannot read directory '%s': %s\n", dir, strerror(errno));
    return 1;
  }
  if (n == 0)
    printf("%s: no stale temporary files\n", dir);
  else if (!d.clean)
    printf("%s: %d stale temporary file%s (remove with --clean)\n", dir, n, n == 1 ? "" : "s");
  return d.failed ? 1 : 0;
}
