/* `wick launch --nproc-per-node N [--nnodes M --node-rank K] [--master-addr A]
 * [--master-port P] [--timeout S] PROGRAM ARGS...`: torchrun for Wick. Open
 * MPI's mpirun starts the N processes of this node (the engine the dist-mpi
 * plugin joins), each through `wick launch --worker`, which sets torchrun's
 * environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
 * ROLE_RANK, MASTER_ADDR, MASTER_PORT) from Open MPI's and then becomes
 * PROGRAM. A rank that dies makes mpirun stop the others and exit non-zero,
 * naming the rank; one that hangs makes the others' waits time out (--timeout
 * sets WICK_DIST_TIMEOUT).
 *
 * Several nodes, as torchrun: one launcher per node, each with --nnodes M,
 * its --node-rank K and node 0's --master-addr/--master-port. Node 0's
 * launcher runs Open MPI's ompi-server (the name service that lets separate
 * mpiruns connect) and hands its URI to the other launchers on A:P (a TCP
 * line, the rendezvous: nothing else goes through it); every node's mpirun
 * gets --ompi-server URI, and the dist-mpi plugin joins the nodes' ranks with
 * MPI_Comm_connect/accept (WICK_DIST_NNODES, WICK_DIST_NODE_RANK,
 * WICK_DIST_RDZV). Every node must run the same N. */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools.h"

static int launch_usage(FILE *f) {
  fprintf(f,
          "usage: wick launch --nproc-per-node N [--nnodes M --node-rank K] [--master-addr ADDR]\n"
          "                   [--master-port PORT] [--timeout SECONDS] PROGRAM [ARGS...]\n"
          "  starts N processes of PROGRAM on this node with torchrun's environment (RANK, LOCAL_RANK,\n"
          "  WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), through Open MPI's mpirun.\n"
          "  Several nodes: run one launcher per node with the same --nnodes, --nproc-per-node,\n"
          "  --master-addr (node 0's address) and --master-port, and --node-rank 0 .. M-1; node 0's\n"
          "  launcher runs ompi-server and gives its address to the others on ADDR:PORT.\n");
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
  /* several nodes: this mpirun's ranks are node K's; the world is M times larger */
  const char *nn = getenv("WICK_DIST_NNODES"), *nr = getenv("WICK_DIST_NODE_RANK");
  long nnodes = nn ? atol(nn) : 1, node = nr ? atol(nr) : 0;
  if (nnodes < 1) nnodes = 1;
  char grank[24], gsize[24], gnode[24];
  snprintf(grank, sizeof grank, "%ld", node * atol(size) + atol(rank));
  snprintf(gsize, sizeof gsize, "%ld", nnodes * atol(size));
  snprintf(gnode, sizeof gnode, "%ld", node);
  setenv("RANK", grank, 1);
  setenv("WORLD_SIZE", gsize, 1);
  setenv("LOCAL_RANK", lrank ? lrank : rank, 1);
  setenv("LOCAL_WORLD_SIZE", lsize ? lsize : size, 1);
  setenv("GROUP_RANK", gnode, 1);
  setenv("ROLE_RANK", grank, 1);
  setenv("ROLE_WORLD_SIZE", gsize, 1);
  setenv("MASTER_ADDR", argv[3], 1);
  setenv("MASTER_PORT", argv[4], 1);
  execvp(argv[5], argv + 5);
  fprintf(stderr, "wick launch: rank %s: cannot run %s: %s\n", rank, argv[5], strerror(errno));
  return 127;
}

/* ---- several nodes: the rendezvous ---- */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct addrinfo *resolve(const char *addr, long port, bool passive) {
  char ps[16];
  snprintf(ps, sizeof ps, "%ld", port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0};
  struct addrinfo *res = NULL;
  int rc = getaddrinfo(addr, ps, &hints, &res);
  if (rc) {
    fprintf(stderr, "wick launch: cannot resolve --master-addr %s: %s\n", addr, gai_strerror(rc));
    return NULL;
  }
  return res;
}

/* Node K > 0: node 0's ompi-server URI from ADDR:PORT, retried until wait_s. */
static bool fetch_uri(const char *addr, long port, long node, double wait_s, char *uri, size_t n) {
  struct addrinfo *res = resolve(addr, port, false);
  if (!res) return false;
  double t0 = now_s();
  int err = 0;
  bool ok = false;
  while (!ok && now_s() - t0 < wait_s) {
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      size_t got = 0;
      while (got < n - 1 && poll(&p, 1, 5000) == 1) {
        ssize_t r = read(fd, uri + got, n - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
      }
      uri[got] = 0;
      char *nl = strchr(uri, '\n');
      if (nl) *nl = 0, ok = uri[0] != 0;
    } else {
      err = errno;
    }
    if (fd >= 0) close(fd);
    if (!ok) {
      struct timespec ts = {0, 200000000};
      nanosleep(&ts, NULL);
    }
  }
  freeaddrinfo(res);
  if (!ok)
    fprintf(stderr,
            "wick launch: node %ld: no rendezvous at %s:%ld after %g s (%s): is node 0's launcher running with the "
            "same --master-addr and --master-port?\n",
            node, addr, port, wait_s, err ? strerror(err) : "no address received");
  return ok;
}

static volatile sig_atomic_t g_signal;
static void on_signal(int sig) {
  g_signal = sig;
}

/* The ompi-server program: $WICK_OMPI_SERVER, else next to mpirun, else on PATH. */
static const char *find_ompi_server(const char *mpirun, char *buf, size_t n) {
  const char *env = getenv("WICK_OMPI_SERVER");
  if (env && *env) return env;
  const char *slash = strrchr(mpirun, '/');
  if (slash) {
    snprintf(buf, n, "%.*s/ompi-server", (int)(slash - mpirun), mpirun);
    if (access(buf, X_OK) == 0) return buf;
  }
  return "ompi-server";
}

static int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* Node 0: listens on ADDR:PORT, starts ompi-server, runs mpirun (av, whose
 * --ompi-server argument is uri) as a child while handing the URI to the
 * other nodes' launchers, then stops ompi-server. Returns mpirun's exit
 * status, or 1 when something before it failed. */
static int run_node0(const char *mpirun, char **av, const char *addr, long port, char *uri, size_t n) {
  struct addrinfo *res = resolve(addr, port, true);
  if (!res) return 1;
  int lfd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol), one = 1;
  if (lfd >= 0) setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (lfd < 0 || bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 64)) {
    fprintf(stderr, "wick launch: node 0: cannot listen on %s:%ld for the other nodes: %s\n", addr, port,
            strerror(errno));
    if (lfd >= 0) close(lfd);
    freeaddrinfo(res);
    return 1;
  }
  freeaddrinfo(res);
  char dir[] = "/tmp/wick-launch-XXXXXX", file[64], sbuf[PATH_MAX];
  if (!mkdtemp(dir)) {
    fprintf(stderr, "wick launch: cannot make a temporary directory: %s\n", strerror(errno));
    close(lfd);
    return 1;
  }
  snprintf(file, sizeof file, "%s/uri", dir);
  const char *server = find_ompi_server(mpirun, sbuf, sizeof sbuf);
  pid_t spid = fork();
  if (spid == 0) {
    execlp(server, server, "--no-daemonize", "-r", file, (char *)NULL);
    fprintf(stderr, "wick launch: cannot run %s: %s (Open MPI's name server, package openmpi-bin)\n", server,
            strerror(errno));
    _exit(127);
  }
  int rc = 1, status = 0;
  pid_t mpid = -1;
  /* ompi-server writes its URI when it is ready */
  for (double t0 = now_s(); spid > 0 && now_s() - t0 < 30;) {
    FILE *f = fopen(file, "r");
    if (f) {
      bool got = fgets(uri, (int)n, f) != NULL;
      fclose(f);
      char *nl = strchr(uri, '\n');
      if (got && nl) {
        *nl = 0;
        break;
      }
    }
    if (waitpid(spid, &status, WNOHANG) == spid) {
      fprintf(stderr, "wick launch: node 0: ompi-server exited (status %d) before it was ready\n", exit_code(status));
      spid = -1;
      break;
    }
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  if (spid > 0 && !uri[0]) fprintf(stderr, "wick launch: node 0: ompi-server did not start within 30 s\n");
  if (spid > 0 && uri[0]) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    mpid = fork();
    if (mpid == 0) {
      close(lfd);
      execv(mpirun, av);
      fprintf(stderr, "wick launch: cannot run %s: %s\n", mpirun, strerror(errno));
      _exit(127);
    }
  }
  for (bool forwarded = false; mpid > 0;) {
    if (g_signal && !forwarded) kill(mpid, g_signal), forwarded = true;
    if (waitpid(mpid, &status, WNOHANG) == mpid) {
      rc = exit_code(status);
      break;
    }
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) {
      int c = accept(lfd, NULL, NULL);
      if (c >= 0) {
        char line[1100];
        int len = snprintf(line, sizeof line, "%s\n", uri);
        if (write(c, line, (size_t)len) != len) fprintf(stderr, "wick launch: node 0: a node's rendezvous failed\n");
        close(c);
      }
    }
  }
  close(lfd);
  if (spid > 0) {
    kill(spid, SIGTERM);
    waitpid(spid, NULL, 0);
  }
  unlink(file);
  rmdir(dir);
  return rc;
}

int wick_launch_cmd(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[2], "--worker") == 0) return worker(argc, argv);
  long nproc = 0, port = 29500, timeout = 0, nnodes = 1, node = -1;
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
    else if (!strcmp(o, "--nnodes"))
      ok = ok && parse_int(v, 1, 4096, &nnodes);
    else if (!strcmp(o, "--node-rank") || !strcmp(o, "--node_rank"))
      ok = ok && parse_int(v, 0, 4095, &node);
    else {
      fprintf(stderr, "wick launch: unknown option '%s'\n", o);
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
  if (nnodes > 1 && (node < 0 || node >= nnodes)) {
    fprintf(stderr, "wick launch: --nnodes %ld needs --node-rank K with 0 <= K < %ld%s\n", nnodes, nnodes,
            node < 0 ? " (none given)" : "");
    return 2;
  }
  if (nnodes == 1 && node > 0) {
    fprintf(stderr, "wick launch: --node-rank %ld with one node (--nnodes 1)\n", node);
    return 2;
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
  char **av = calloc((size_t)nargs + 18, sizeof *av);
  if (!av) return 1;
  int k = 0;
  av[k++] = (char *)mpirun;
  char uri[1024] = "";
  if (nnodes > 1) { /* several nodes: mpirun joins node 0's ompi-server */
    char nn[24], nr[24], rdzv[300];
    snprintf(nn, sizeof nn, "%ld", nnodes);
    snprintf(nr, sizeof nr, "%ld", node);
    snprintf(rdzv, sizeof rdzv, "%s:%ld", addr, port);
    setenv("WICK_DIST_NNODES", nn, 1);
    setenv("WICK_DIST_NODE_RANK", nr, 1);
    setenv("WICK_DIST_RDZV", rdzv, 1);
    av[k++] = "--ompi-server";
    av[k++] = uri;
  }
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
  if (nnodes > 1) {
    double wait_s = timeout ? (double)timeout : 300;
    int rc = node == 0 ? run_node0(mpirun, av, addr, port, uri, sizeof uri)
                       : (fetch_uri(addr, port, node, wait_s, uri, sizeof uri) ? -1 : 1);
    if (rc >= 0) {
      free(av);
      return rc;
    }
  }
  execv(mpirun, av);
  fprintf(stderr, "wick launch: cannot run %s: %s\n", mpirun, strerror(errno));
  free(av);
  return 127;
}
