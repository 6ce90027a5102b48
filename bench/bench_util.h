/* Helpers shared by the bench programs: a monotonic clock, medians, peak RSS,
 * and the timed training step (forward, cross-entropy, backward, optimizer
 * step) every training benchmark measures. Header-only: each bench is one
 * program. */
#ifndef WICK_BENCH_UTIL_H
#define WICK_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <wick/amp.h>
#include <wick/optim.h>
#include <wick/wick.h>

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of t[0..n) (sorts t). */
static inline double bench_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, bench_cmp_);
  return t[n / 2];
}

/* This process's peak resident set so far, MiB. */
/* True when the row `label` is to be timed: every row, or those BENCH_ONLY (a comma-separated list of row
 * names, as the PyTorch twins read it) names. */
static inline bool bench_selected(const char *label) {
  const char *only = getenv("BENCH_ONLY");
  if (!only || !*only) return true;
  size_t n = strlen(label);
  for (const char *p = only; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, label, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

static inline double bench_peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

/* Runs `warmup` untimed then `steps` timed training steps of model on (x, y)
 * with opt (forward, cross-entropy, backward, step, zero_grad; with amp, the
 * forward and the loss in a bf16 autocast region); t receives
 * each timed step's seconds. On a device other than the cpu the clock is
 * read after synchronising it. false with the error
 * printed, prefixed by `who`. */
static inline bool bench_train_steps_amp(const char *who, wk_module *model, wk_optimizer *opt, wk_tensor *x,
                                         wk_tensor *y, wk_device dev, int warmup, int steps, double *t, bool amp) {
  bool sync = dev.type != WK_DEVICE_CPU && dev.type != WK_DEVICE_DEFAULT;
  for (int s = -warmup; s < steps; s++) {
    if (sync) wk_device_synchronize(dev);
    double t0 = bench_now();
    wk_scope_begin();
    const char *devtype = wk_device_type_name(dev.type == WK_DEVICE_DEFAULT ? WK_DEVICE_CPU : dev.type);
    if (amp && wk_autocast_begin(devtype, WK_BF16) != WK_OK) {
      fprintf(stderr, "%s: %s\n", who, wk_last_error_message());
      return false;
    }
    wk_tensor *loss = wk_cross_entropy(wk_module_forward(model, x), y);
    if (amp) wk_autocast_end(devtype);
    /* zero_grad (set to none) after the step, like PyTorch's tutorial loop and
     * the PyTorch peers: no gradients are alive during the next forward */
    bool ok = loss && !wk_backward(loss) && !wk_optim_step(opt) && !wk_optim_zero_grad(opt, true);
    wk_scope_end();
    if (ok && sync) ok = !wk_device_synchronize(dev);
    if (!ok) {
      fprintf(stderr, "%s: step %d: %s\n", who, s, wk_last_error_message());
      return false;
    }
    if (s >= 0) t[s] = bench_now() - t0;
  }
  return true;
}

/* The same in float32 throughout. */
static inline bool bench_train_steps(const char *who, wk_module *model, wk_optimizer *opt, wk_tensor *x, wk_tensor *y,
                                     wk_device dev, int warmup, int steps, double *t) {
  return bench_train_steps_amp(who, model, opt, x, y, dev, warmup, steps, t, false);
}

#endif
