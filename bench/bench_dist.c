/* bench_dist: all_reduce latency and bandwidth through the dist service
 * (4 KB .. 64 MB of float32, median of repeated runs), the same with Open
 * MPI's blocking MPI_Allreduce called directly (--raw: the engine Wick runs
 * on, without the progress thread), and DDP training steps of the LeNet CNN
 * with the share of all-reduce time hidden behind backward (--ddp).
 *
 *   mpirun -np 2 bench_dist [--raw] [--ddp] [--max-mb 64] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/dist.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#include "bench_util.h"

#ifdef BENCH_DIST_RAW
#include <mpi.h>
#endif

static int iters_for(size_t bytes) {
  size_t n = (size_t)256 << 20;
  int it = (int)(n / bytes);
  return it < 5 ? 5 : it > 200 ? 200 : it;
}

static void row(int rank, int size, size_t bytes, double *t, int n) {
  double med = bench_median(t, n);
  double algbw = (double)bytes / med / 1e9, busbw = algbw * 2.0 * (size - 1) / size;
  if (rank == 0) printf("| %8.0f KB | %10.1f | %8.3f | %8.3f |\n", (double)bytes / 1024, med * 1e6, algbw, busbw);
}

static void header(int rank, const char *what) {
  if (rank) return;
  printf(
      "\n%s\n| size        | median us  | algbw GB/s | busbw GB/s "
      "|\n|-------------|------------|----------|----------|\n",
      what);
}

static int wick_allreduce(wk_dist_group *w, size_t max_bytes) {
  int R = wk_dist_rank(w), S = wk_dist_size(w);
  header(R, "Wick dist.mpi all_reduce (sum, float32), blocking form");
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    wk_tensor *t = wk_ones(WK_SHAPE((int64_t)(bytes / 4)), (wk_options){0});
    int it = iters_for(bytes);
    double *ts = malloc(sizeof(double) * (size_t)it);
    for (int k = 0; k < 3; k++) wk_dist_all_reduce(w, t, WK_REDUCE_SUM);
    for (int k = 0; k < it; k++) {
      wk_dist_barrier(w);
      double t0 = bench_now();
      if (wk_dist_all_reduce(w, t, WK_REDUCE_SUM) != WK_OK) {
        fprintf(stderr, "all_reduce: %s\n", wk_last_error_message());
        return 1;
      }
      ts[k] = bench_now() - t0;
    }
    /* every rank's slowest is the collective's time */
    wk_tensor *tt = wk_tensor_from_data(ts, WK_F64, WK_SHAPE(it));
    wk_dist_all_reduce(w, tt, WK_REDUCE_MAX);
    memcpy(ts, wk_tensor_data(tt), sizeof(double) * (size_t)it);
    row(R, S, bytes, ts, it);
    wk_release(tt);
    wk_release(t);
    free(ts);
  }
  return 0;
}

/* DDP steps of LeNet on random 1x28x28 batches: step time and overlap. */
static int ddp_steps(wk_dist_group *w, int batch) {
  int R = wk_dist_rank(w), S = wk_dist_size(w);
  wk_manual_seed(0);
  wk_module *model = wk_nn_lenet();
  wk_module *net = wk_ddp_wrap(model, w, NULL);
  if (!net) {
    fprintf(stderr, "ddp: %s\n", wk_last_error_message());
    return 1;
  }
  wk_tensor *p[32];
  int np = wk_module_named_parameters(model, NULL, p, 32);
  wk_optimizer *opt = wk_optim_sgd(p, np, (wk_sgd_opts){.lr = 0.01, .momentum = 0.9});
  int64_t labels[1024];
  if (batch > 1024) batch = 1024;
  for (int i = 0; i < batch; i++) labels[i] = i % 10;
  wk_tensor *y = wk_tensor_from_data(labels, WK_I64, WK_SHAPE(batch));
  wk_tensor *x = wk_randn(WK_SHAPE(batch, 1, 28, 28), (wk_options){0});
  const int warm = 3, steps = 20;
  double ts[64], tb[64];
  for (int s = 0; s < warm + steps; s++) {
    if (s == warm) wk_ddp_reset_stats(net);
    double t0 = bench_now();
    wk_scope_begin();
    wk_optim_zero_grad(opt, true);
    wk_tensor *loss = wk_cross_entropy(wk_module_forward(net, x), y);
    double t1 = bench_now();
    if (wk_backward(loss) != WK_OK) {
      fprintf(stderr, "backward: %s\n", wk_last_error_message());
      return 1;
    }
    double t2 = bench_now();
    wk_optim_step(opt);
    wk_scope_end();
    if (s >= warm) {
      ts[s - warm] = bench_now() - t0;
      tb[s - warm] = t2 - t1;
    }
  }
  wk_ddp_stats st = {.struct_size = sizeof st};
  wk_ddp_get_stats(net, &st);
  double step = bench_median(ts, steps), bwd = bench_median(tb, steps);
  double hidden = st.comm_s > 0 ? 1 - st.exposed_s / st.comm_s : 0;
  printf(
      "rank %d/%d: LeNet batch %d per rank: step %.2f ms (backward %.2f ms); %d bucket(s), %lld bytes; all-reduce "
      "%.2f ms/step, exposed after backward %.2f ms/step: %.0f%% hidden behind backward\n",
      R, S, batch, step * 1e3, bwd * 1e3, st.buckets, (long long)st.bucket_bytes, st.comm_s / steps * 1e3,
      st.exposed_s / steps * 1e3, hidden < 0 ? 0 : 100 * hidden);
  wk_optimizer_free(opt);
  wk_release(x);
  wk_release(y);
  if (net != model) wk_module_release(net);
  wk_module_release(model);
  return 0;
}

#ifdef BENCH_DIST_RAW
static int raw_allreduce(size_t max_bytes) {
  int R, S;
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &S);
  header(R, "Open MPI MPI_Allreduce (sum, float32) called directly");
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    float *b = malloc(bytes);
    for (size_t i = 0; i < bytes / 4; i++) b[i] = 1;
    int it = iters_for(bytes);
    double *ts = malloc(sizeof(double) * (size_t)it);
    for (int k = 0; k < 3; k++) MPI_Allreduce(MPI_IN_PLACE, b, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < it; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = bench_now();
      MPI_Allreduce(MPI_IN_PLACE, b, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      ts[k] = bench_now() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, ts, it, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    row(R, S, bytes, ts, it);
    free(ts);
    free(b);
  }
  MPI_Finalize();
  return 0;
}
#endif

int main(int argc, char **argv) {
  bool raw = false, ddp = false;
  double max_mb = 64;
  int batch = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--raw"))
      raw = true;
    else if (!strcmp(argv[i], "--ddp"))
      ddp = true;
    else if (!strcmp(argv[i], "--max-mb") && i + 1 < argc)
      max_mb = atof(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: mpirun -np N bench_dist [--raw] [--ddp] [--max-mb 64] [--batch 64]\n");
      return 2;
    }
  }
  size_t max_bytes = (size_t)(max_mb * 1024 * 1024);
  if (raw) {
#ifdef BENCH_DIST_RAW
    return raw_allreduce(max_bytes);
#else
    fprintf(stderr, "bench_dist: built without Open MPI\n");
    return 2;
#endif
  }
  if (wk_init() != WK_OK) return 1;
  wk_dist_group *w = wk_dist_init(NULL);
  if (!w) {
    fprintf(stderr, "bench_dist: %s\n", wk_last_error_message());
    return 1;
  }
  int rc = ddp ? ddp_steps(w, batch) : wick_allreduce(w, max_bytes);
  wk_shutdown();
  return rc;
}
