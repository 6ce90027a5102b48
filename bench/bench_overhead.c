/* Per-call overhead of the dispatcher: wk_add on 1-element tensors (the
 * reference cpu kernel), and a trivial kernel registered boxed vs. unboxed
 * (libffi) to isolate the cost of the libffi call. Prints ns per call. */
#include <stdio.h>
#include <stdlib.h>
#include <wick/wick.h>

#include "bench_util.h"

static wk_status trivial_boxed(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  outs[0] = WK_VT(wk_retain(args[0].u.t));
  return WK_OK;
}
static wk_tensor *trivial_unboxed(wk_tensor *a, wk_tensor *b) { return wk_retain(a); }

/* Median over 7 repetitions of n calls of op(a, b), in ns per call. */
static double time_op(wk_op *op, wk_tensor *a, wk_tensor *b, long n) {
  double r[7];
  wk_value args[2] = {WK_VT(a), WK_VT(b)}, out[1];
  for (int rep = 0; rep < 7; rep++) {
    double t0 = bench_now();
    for (long i = 0; i < n; i++) {
      if (wk_op_call(op, args, 2, out) != WK_OK) {
        fprintf(stderr, "bench: %s\n", wk_last_error_message());
        exit(1);
      }
      wk_release(out[0].u.t);
    }
    r[rep] = (bench_now() - t0) / (double)n * 1e9;
  }
  qsort(r, 7, sizeof r[0], bench_cmp_);
  return r[3];
}

static double time_front_end(wk_tensor *a, wk_tensor *b, long n) {
  double r[7];
  for (int rep = 0; rep < 7; rep++) {
    double t0 = bench_now();
    for (long i = 0; i < n; i++) wk_release(wk_add(a, b));
    r[rep] = (bench_now() - t0) / (double)n * 1e9;
  }
  qsort(r, 7, sizeof r[0], bench_cmp_);
  return r[3];
}

/* Median ns per wk_add on 1-element tensors where one input requires grad
 * (a graph node is recorded and freed on every call). */
static double time_recording(wk_tensor *a, wk_tensor *b, long n) {
  double r[7];
  for (int rep = 0; rep < 7; rep++) {
    double t0 = bench_now();
    for (long i = 0; i < n; i++) wk_release(wk_add(a, b));
    r[rep] = (bench_now() - t0) / (double)n * 1e9;
  }
  qsort(r, 7, sizeof r[0], bench_cmp_);
  return r[3];
}

/* Median microseconds of backward through a chain of `len` adds/muls on a
 * 1-element tensor (the build of the chain is not timed). */
static double time_chain_backward(long len) {
  double r[7];
  for (int rep = 0; rep < 7; rep++) {
    wk_scope_begin();
    wk_tensor *x = wk_tensor_from_data((float[]){1}, WK_F32, WK_SHAPE(1));
    wk_tensor_set_requires_grad(x, true);
    wk_tensor *y = x;
    for (long i = 0; i < len; i++) y = (i & 1) ? wk_mul_scalar(y, 1.0001) : wk_add_scalar(y, 0.5);
    wk_tensor *loss = wk_sum(y);
    double t0 = bench_now();
    if (wk_backward(loss) != WK_OK) {
      fprintf(stderr, "bench: %s\n", wk_last_error_message());
      exit(1);
    }
    r[rep] = (bench_now() - t0) * 1e6;
    wk_scope_end();
  }
  qsort(r, 7, sizeof r[0], bench_cmp_);
  return r[3];
}

/* A chain of `len` scalar adds/muls on a 1-element tensor, the program that
 * is traced for the replay row. */
static wk_status chain_fn(void *user, wk_tensor *const *in, int n, wk_tensor **out, int max, int *nout) {
  (void)n, (void)max;
  long len = *(const long *)user;
  wk_tensor *y = wk_retain(in[0]);
  for (long i = 0; i < len && y; i++) {
    wk_tensor *z = (i & 1) ? wk_mul_scalar(y, 1.0001) : wk_add_scalar(y, 0.5);
    wk_release(y);
    y = z;
  }
  out[0] = y;
  *nout = y ? 1 : 0;
  return y ? WK_OK : wk_last_error();
}

/* Median ns per op of the chain: eager (replay = false) or replayed from its trace. */
static double time_chain(long len, bool replay, long reps) {
  wk_tensor *x = wk_tensor_from_data((float[]){1}, WK_F32, WK_SHAPE(1));
  wk_graph *g = replay ? wk_trace(chain_fn, &len, &x, 1, NULL) : NULL;
  if (replay && !g) {
    fprintf(stderr, "bench: %s\n", wk_last_error_message());
    exit(1);
  }
  double r[7];
  for (int rep = 0; rep < 7; rep++) {
    double t0 = bench_now();
    for (long k = 0; k < reps; k++) {
      wk_tensor *y = NULL;
      int no;
      wk_status st = replay ? wk_graph_run(g, &x, 1, (wk_device){0}, &y, 1) : chain_fn(&len, &x, 1, &y, 1, &no);
      if (st) {
        fprintf(stderr, "bench: %s\n", wk_last_error_message());
        exit(1);
      }
      wk_release(y);
    }
    r[rep] = (bench_now() - t0) / (double)(reps * len) * 1e9;
  }
  qsort(r, 7, sizeof r[0], bench_cmp_);
  wk_graph_release(g);
  wk_release(x);
  return r[3];
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wk_init: %s\n", wk_last_error_message());
    return 1;
  }
  wk_tensor *a = wk_tensor_from_data((float[]){1}, WK_F32, WK_SHAPE(1));
  wk_tensor *b = wk_tensor_from_data((float[]){2}, WK_F32, WK_SHAPE(1));
  wk_op_declare("bench.boxed(Tensor a, Tensor b) -> Tensor", 0);
  wk_op_declare("bench.unboxed(Tensor a, Tensor b) -> Tensor", 0);
  wk_kernel_desc d = {sizeof d, "bench.boxed", WK_DEVICE_CPU, 100, trivial_boxed, NULL, NULL, "bench"};
  if (wk_kernel_register(&d) ||
      wk_kernel_register_unboxed("bench.unboxed", WK_DEVICE_CPU, 100, (void (*)(void))trivial_unboxed, "bench")) {
    fprintf(stderr, "bench: %s\n", wk_last_error_message());
    return 1;
  }
  time_front_end(a, b, n / 10); /* warm up */
  printf("wk_add_1elem_ns %.1f\n", time_front_end(a, b, n));
  printf("boxed_trivial_ns %.1f\n", time_op(wk_op_find("bench.boxed"), a, b, n));
  printf("unboxed_libffi_trivial_ns %.1f\n", time_op(wk_op_find("bench.unboxed"), a, b, n));
  wk_tensor *ag = wk_tensor_from_data((float[]){1}, WK_F32, WK_SHAPE(1));
  wk_tensor_set_requires_grad(ag, true);
  printf("wk_add_1elem_autograd_ns %.1f\n", time_recording(ag, b, n));
  printf("chain1000_backward_us %.1f\n", time_chain_backward(1000));
  long reps = n / 1000 > 1 ? n / 1000 : 1;
  time_chain(1000, true, reps / 10 + 1); /* warm up */
  printf("chain1000_eager_ns_per_op %.1f\n", time_chain(1000, false, reps));
  printf("chain1000_replay_ns_per_op %.1f\n", time_chain(1000, true, reps));
  wk_release(ag);
  wk_release(a);
  wk_release(b);
  wk_shutdown();
  return 0;
}
