/* wick info --probe: every plugin candidate is loaded alone in a child
 * process, so a plugin that crashes, aborts or hangs in dlopen or init is
 * reported as such (with the signal) and this process survives. The parent
 * finds the candidates without loading any (WICK_PLUGINS set to a name no
 * plugin has: each is recorded as skipped, with its path); each child loads
 * one with wk_plugin_load and writes its status and reason to a pipe.
 * Normal loading (wk_init) keeps its in-process path. */
#define _GNU_SOURCE /* sigabbrev_np, strsignal */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wick/wick.h>

#include "tools.h"

#define PROBE_NONE "wick-probe:no-plugin"

/* Child: load the plugin at path, report "status\tversion\treason". */
static void probe_child(const char *path, int fd) {
  unsetenv("WICK_PLUGINS");
  unsetenv("WICK_DISABLE_PLUGINS");
  wk_plugin_load(path);
  const wk_plugin *rec = NULL;
  for (int i = wk_plugin_count() - 1; i >= 0 && !rec; i--)
    if (wk_plugin_path(wk_plugin_at(i)) && strcmp(wk_plugin_path(wk_plugin_at(i)), path) == 0 &&
        wk_plugin_get_status(wk_plugin_at(i)) != WK_PLUGIN_SKIPPED)
      rec = wk_plugin_at(i);
  char msg[2048];
  int n = snprintf(msg, sizeof msg, "%d\t%s\t%s\n", rec ? (int)wk_plugin_get_status(rec) : 0,
                   rec && wk_plugin_version(rec) ? wk_plugin_version(rec) : "",
                   rec ? (wk_plugin_reason(rec) ? wk_plugin_reason(rec) : "") : wk_last_error_message());
  if (n > 0 && write(fd, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1)) < 0) _exit(3);
  _exit(0);
}

/* Reads what the child wrote until EOF or the deadline; returns false on timeout. */
static bool read_report(int fd, char *buf, size_t cap, int timeout_ms) {
  size_t k = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int left = timeout_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) return false;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = read(fd, buf + k, cap - 1 - k);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    k += (size_t)n;
    if (k == cap - 1) break;
  }
  buf[k] = 0;
  return true;
}

int wick_probe_cmd(void) {
  const char *t = getenv("WICK_PROBE_TIMEOUT");
  int timeout_s = t && atoi(t) > 0 ? atoi(t) : 30;
  setenv("WICK_PLUGINS", PROBE_NONE, 1);
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wick: initialisation failed: %s\n", wk_last_error_message());
    return 1;
  }
  int n = wk_plugin_count(), bad = 0;
  printf("Wick %s, plugin search path: %s\n", wk_version(), wk_plugin_search_path());
  printf("Probing %d plugin candidate%s, each loaded alone in a child process:\n", n, n == 1 ? "" : "s");
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    const wk_plugin *p = wk_plugin_at(i);
    const char *name = wk_plugin_name(p), *path = wk_plugin_path(p);
    if (!path) continue;
    int fds[2];
    if (pipe(fds) != 0) {
      perror("wick info --probe: pipe");
      return 1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
      perror("wick info --probe: fork");
      return 1;
    }
    if (pid == 0) {
      close(fds[0]);
      probe_child(path, fds[1]);
    }
    close(fds[1]);
    char rep[2048] = "";
    bool answered = read_report(fds[0], rep, sizeof rep, timeout_s * 1000);
    close(fds[0]);
    if (!answered) kill(pid, SIGKILL);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    char verdict[2300];
    if (!answered) {
      snprintf(verdict, sizeof verdict, "HUNG: no answer within %d s in dlopen or init (killed)", timeout_s);
      bad++;
    } else if (WIFSIGNALED(ws)) {
      int sig = WTERMSIG(ws);
      snprintf(verdict, sizeof verdict, "CRASHED: killed by signal %d (SIG%s: %s) in dlopen or init", sig,
               sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", strsignal(sig));
      bad++;
    } else if (!rep[0]) {
      snprintf(verdict, sizeof verdict, "EXITED: the process ended with status %d in dlopen or init",
               WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
      bad++;
    } else {
      char *ver = strchr(rep, '\t'), *why = ver ? strchr(ver + 1, '\t') : NULL;
      if (ver) *ver++ = 0;
      if (why) *why++ = 0;
      size_t wl = why ? strlen(why) : 0;
      if (wl && why[wl - 1] == '\n') why[wl - 1] = 0;
      int st = atoi(rep);
      if (st == WK_PLUGIN_LOADED)
        snprintf(verdict, sizeof verdict, "loaded%s%s", ver && *ver ? ", version " : "", ver ? ver : "");
      else
        snprintf(verdict, sizeof verdict, "%s: %s", st == WK_PLUGIN_SKIPPED ? "skipped" : "failed",
                 why && *why ? why : "no reason given");
    }
    printf("  %-14s %s\n  %-14s %s\n", name ? name : "?", verdict, "", path);
  }
  printf("%d of %d candidates crashed, aborted, exited or hung while loading\n", bad, n);
  wk_shutdown();
  return bad ? 1 : 0;
}
