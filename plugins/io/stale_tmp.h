/* The io plugin's temporary files (".NAME.tmp-PID-N" next to the target) and
 * finding those a killed writer left behind; shared by safetensors.c (cleans
 * before each save) and tools/doctor.c (`wick doctor`). Header-only: include
 * it after <wick/sdk.h> (plugins) or <wick/wick.h> (programs), which declare
 * the wk_malloc/wk_free it allocates with. */
#ifndef WICK_IO_STALE_TMP_H
#define WICK_IO_STALE_TMP_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* True when `name` is exactly ".BASE.tmp-PID-N" (BASE non-empty, PID and N
 * decimal, PID > 0): the pattern sink_open creates. *pid gets PID. */
static inline bool io_tmp_name_pid(const char *name, pid_t *pid) {
  if (name[0] != '.') return false;
  const char *t = NULL;
  for (const char *q = strstr(name + 1, ".tmp-"); q; q = strstr(q + 1, ".tmp-")) t = q;
  if (!t || t == name + 1) return false;
  const char *d = t + 5, *e = d;
  while (*e >= '0' && *e <= '9') e++;
  if (e == d || e - d > 10 || *e != '-' || d[0] == '0') return false;
  const char *c = e + 1, *ce = c;
  while (*ce >= '0' && *ce <= '9') ce++;
  if (ce == c || ce - c > 10 || *ce) return false;
  long long v = strtoll(d, NULL, 10);
  if (v <= 0 || v > 0x7fffffff) return false;
  *pid = (pid_t)v;
  return true;
}

/* A temporary file whose writer is gone: kill(pid, 0) fails with ESRCH (a
 * PID in use by some other process, or one we may not signal, counts as
 * alive: the file is kept). */
static inline bool io_tmp_writer_gone(pid_t pid) {
  return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

/* Calls found(path, pid, u) for each regular file in `dir` named like an io
 * temporary file whose writer is gone, and removes it first when `clean`
 * (found gets the unlink's errno, 0 on success or when not cleaning).
 * Returns the number found, or -1 with errno set when dir cannot be read. */
static inline int io_tmp_stale(const char *dir, bool clean,
                               void (*found)(const char *path, pid_t pid, int err, void *u), void *u) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int count = 0;
  size_t dl = strlen(dir);
  struct dirent *ent;
  while ((ent = readdir(d))) {
    pid_t pid;
    if (!io_tmp_name_pid(ent->d_name, &pid) || !io_tmp_writer_gone(pid)) continue;
    char *path = wk_malloc(dl + strlen(ent->d_name) + 2);
    if (!path) break;
    sprintf(path, "%s/%s", dir, ent->d_name);
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
      int err = clean && unlink(path) != 0 ? errno : 0;
      count++;
      if (found) found(path, pid, err, u);
    }
    wk_free(path);
  }
  closedir(d);
  return count;
}

#endif
