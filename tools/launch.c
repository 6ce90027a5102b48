/* `wick launch --nproc-per-node N [--master-addr A] [--master-port P]
 * [--timeout S] PROGRAM ARGS...`: torchrun for Wick on one node. Open MPI's
 * mpirun starts the N processes (the engine the dist-mpi plugin joins), each
 * through `wick launch --worker`, which sets torchrun's environment (RANK,
 * LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,
 * MASTER_ADDR, MASTER_PORT) from Open MPI's and then becomes PROGRAM. A rank
 * that dies makes mpirun stop the others and exit non-zero, naming the rank;
 * one that hangs makes the others' waits time out (--timeout sets
 * WICK_DIST_TIMEOUT). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools.h"

static int launch_usage(FILE *f) {
  fprintf(f,
          "usage: wick launch --nproc-per-node N [--master-addr ADDR] [--master-port PORT] [--timeout SECONDS]\n"
          "                   PROGRAM [ARGS...]\n"
          "  starts N processes of PROGRAM on this node with torchrun's environment (RANK, LOCAL_RANK,\n"
          "  WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), through Open MPI's mpirun\n");
  return f == stderr ? 2 : 0;
}

/* mpirun's path on PATH, or NULL. */
static const char *find_mpirun(char *buf, size_t n) {
  const char *env = getenv("WICK_MPIRUN");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    size_t len = strcspn(path, ":");
    snprintf(buf, n, "%.*s/mpirun", (int)len, path);
    if (len && access(buf, X_OK) == 0) return buf;
    path += len + (path[len] == ':');
  }
  return NULL;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = s ? strtol(s, &end, 10) : 0;
  if (!s || !*s || *end || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* wick launch --worker ADDR PORT PROGRAM ARGS: one rank, started by mpirun. */
static int worker(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "wick launch --worker: needs ADDR PORT PROGRAM\n");
    return 2;
  }
  const char *rank = getenv("OMPI_COMM_WORLD_RANK"), *size = getenv("OMPI_COMM_WORLD_SIZE");
  const char *lrank = getenv("OMPI_COMM_WORLD_LOCAL_RANK"), *lsize = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!rank || !size) {
    fprintf(stderr, "wick launch --worker: not started by mpirun (OMPI_COMM_WORLD_RANK is unset)\n");
    return 2;
  }
  setenv("RANK", rank, 1);
  setenv("WORLD_SIZE", size, 1);
  setenv("LOCAL_RANK", lrank ? lrank : rank, 1);
  setenv("LOCAL_WORLD_SIZE", lsize ? lsize : size, 1);
  setenv("GROUP_RANK", "0", 1);
  setenv("ROLE_RANK", rank, 1);
  setenv("ROLE_WORLD_SIZE", size, 1);
  setenv("MASTER_ADDR", argv[3], 1);
  setenv("MASTER_PORT", argv[4], 1);
  execvp(argv[5], argv + 5);
  fprintf(stderr, "wick launch: rank %s: cannot run %s: %s\n", rank, argv[5], strerror(errno));
  return 127;
}

int wick_launch_cmd(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[2], "--worker") == 0) return worker(argc, argv);
  long nproc = 0, port = 29500, timeout = 0;
  const char *addr = "127.0.0.1";
  int i = 2;
  for (; i < argc && argv[i][0] == '-'; i += 2) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(o, "--help") || !strcmp(o, "-h")) return launch_usage(stdout);
    if (!strcmp(o, "--")) {
      i++;
      break;
    }
    bool ok = v != NULL;
    if (!strcmp(o, "--nproc-per-node") || !strcmp(o, "--nproc_per_node"))
      ok = ok && parse_int(v, 1, 4096, &nproc);
    else if (!strcmp(o, "--master-addr") || !strcmp(o, "--master_addr"))
      addr = v;
    else if (!strcmp(o, "--master-port") || !strcmp(o, "--master_port"))
      ok = ok && parse_int(v, 1, 65535, &port);
    else if (!strcmp(o, "--timeout"))
      ok = ok && parse_int(v, 1, 86400 * 7, &timeout);
    else if (!strcmp(o, "--nnodes") && v && !strcmp(v, "1"))
      ok = true;
    else {
      fprintf(stderr, "wick launch: unknown option '%s'%s\n", o,
              !strcmp(o, "--nnodes") ? " (one node only: use mpirun with a hostfile for several)" : "");
      return launch_usage(stderr);
    }
    if (!ok) {
      fprintf(stderr, "wick launch: bad value '%s' for %s\n", v ? v : "(none)", o);
      return 2;
    }
  }
  if (nproc < 1 || i >= argc) {
    fprintf(stderr, "wick launch: %s\n", nproc < 1 ? "--nproc-per-node N is required" : "no PROGRAM given");
    return launch_usage(stderr);
  }
  char mbuf[PATH_MAX], self[PATH_MAX];
  const char *mpirun = find_mpirun(mbuf, sizeof mbuf);
  if (!mpirun) {
    fprintf(stderr, "wick launch: mpirun not found on PATH (apt-get install openmpi-bin), or set WICK_MPIRUN\n");
    return 127;
  }
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "wick launch: cannot find the wick executable: %s\n", strerror(errno));
    return 1;
  }
  self[n] = 0;
  char np[24], ps[24], to[32];
  snprintf(np, sizeof np, "%ld", nproc);
  snprintf(ps, sizeof ps, "%ld", port);
  if (timeout) {
    snprintf(to, sizeof to, "%ld", timeout);
    setenv("WICK_DIST_TIMEOUT", to, 1);
  }
  /* mpirun refuses root without these; a container's root is the common case. */
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  int nargs = argc - i;
  char **av = calloc((size_t)nargs + 16, sizeof *av);
  if (!av) return 1;
  int k = 0;
  av[k++] = (char *)mpirun;
  av[k++] = "-np";
  av[k++] = np;
  av[k++] = "--oversubscribe"; /* torchrun starts N whatever the cores */
  av[k++] = "--bind-to";
  av[k++] = "none"; /* each rank keeps every core for its intra-op threads, as under torchrun */
  av[k++] = self;
  av[k++] = "launch";
  av[k++] = "--worker";
  av[k++] = (char *)addr;
  av[k++] = ps;
  for (int j = i; j < argc; j++) av[k++] = argv[j];
  av[k] = NULL;
  fflush(stdout);
  execv(mpirun, av);
  fprintf(stderr, "wick launch: cannot run %s: %s\n", mpirun, strerror(errno));
  free(av);
  return 127;
}
