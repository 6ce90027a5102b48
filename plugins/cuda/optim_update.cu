// Device code of the fused optimizer updates (optim.sgd_step_, adam_step_,
// rmsprop_step_, adagrad_step_): one thread per element, the optim plugin's
// cpu steps in double with its roundings to the parameter's dtype. Products
// and sums use __d*_rn so nvcc never fuses them into FMAs: float32
// trajectories then match the cpu's bit for bit.
#include <math.h>

#include "cuda_device.h"
#include "cuda_kernels.h"

#define MUL(a, b) __dmul_rn((a), (b))
#define ADD(a, b) __dadd_rn((a), (b))

__global__ void optim_kernel(cuda_optim_args a, int64_t n) {
  const int dp = a.dt[0];
  CUDA_GRID_LOOP(i, n) {
    int64_t o[5];
    for (int k = 0; k < 5; k++) o[k] = a.t[k] ? cd_offset(i, a.l[k]) : 0;
    double p = cd_load(a.t[0], o[0], dp), g = cd_load(a.t[1], o[1], a.dt[1]);
    const double *f = a.f;
    const bool *b = a.b;
    switch (a.kind) {
      case CUDA_OPT_SGD: {
        if (b[3]) g = -g;
        if (b[0]) g = cd_round(ADD(g, MUL(f[0], p)), dp);
        if (b[1]) {
          double m =
              b[4] ? g : cd_round(ADD(cd_round(MUL(cd_load(a.t[2], o[2], a.dt[2]), f[1]), dp), MUL(f[2], g)), dp);
          cd_store(a.t[2], o[2], a.dt[2], m);
          m = cd_load(a.t[2], o[2], a.dt[2]);
          g = b[2] ? cd_round(ADD(g, MUL(f[1], m)), dp) : m;
        }
        cd_store(a.t[0], o[0], dp, ADD(p, MUL(f[3], g)));
        break;
      }
      case CUDA_OPT_ADAM: {
        if (b[0]) g = -g;
        if (b[1])
          p = cd_round(MUL(p, f[1]), dp);
        else if (b[2])
          g = cd_round(ADD(g, MUL(f[0], p)), dp);
        double m = cd_round(ADD(cd_round(MUL(cd_load(a.t[2], o[2], a.dt[2]), f[2]), dp), MUL(f[4], g)), dp);
        double v = cd_round(ADD(cd_round(MUL(cd_load(a.t[3], o[3], a.dt[3]), f[3]), dp),
                                cd_round(MUL(cd_round(MUL(f[5], g), dp), g), dp)),
                            dp);
        cd_store(a.t[2], o[2], a.dt[2], m);
        cd_store(a.t[3], o[3], a.dt[3], v);
        m = cd_load(a.t[2], o[2], a.dt[2]);
        v = cd_load(a.t[3], o[3], a.dt[3]);
        if (b[3]) {
          double x = cd_load(a.t[4], o[4], a.dt[4]);
          x = (v != v || x != x) ? NAN : v > x ? v : x;  // torch.maximum propagates NaN
          cd_store(a.t[4], o[4], a.dt[4], x);
          v = cd_load(a.t[4], o[4], a.dt[4]);
        }
        double denom = cd_round(ADD(cd_round(cd_round(sqrt(v), dp) / f[6], dp), f[7]), dp);
        cd_store(a.t[0], o[0], dp, ADD(p, cd_round(cd_round(MUL(f[8], m), dp) / denom, dp)));
        break;
      }
      case CUDA_OPT_RMSPROP: {
        if (b[0]) g = -g;
        if (b[1]) g = cd_round(ADD(g, MUL(f[0], p)), dp);
        double sq = cd_round(ADD(cd_round(MUL(cd_load(a.t[2], o[2], a.dt[2]), f[1]), dp),
                                 cd_round(MUL(cd_round(MUL(f[2], g), dp), g), dp)),
                             dp);
        cd_store(a.t[2], o[2], a.dt[2], sq);
        sq = cd_load(a.t[2], o[2], a.dt[2]);
        double avg;
        if (b[2]) {
          double ga = cd_round(ADD(cd_round(MUL(cd_load(a.t[3], o[3], a.dt[3]), f[1]), dp), MUL(f[2], g)), dp);
          cd_store(a.t[3], o[3], a.dt[3], ga);
          ga = cd_load(a.t[3], o[3], a.dt[3]);
          avg = cd_round(sqrt(cd_round(ADD(sq, cd_round(MUL(-ga, ga), dp)), dp)), dp);
        } else {
          avg = cd_round(sqrt(sq), dp);
        }
        avg = cd_round(ADD(avg, f[3]), dp);
        if (b[3]) {
          double m = cd_round(ADD(cd_round(MUL(cd_load(a.t[4], o[4], a.dt[4]), f[4]), dp), cd_round(g / avg, dp)), dp);
          cd_store(a.t[4], o[4], a.dt[4], m);
          m = cd_load(a.t[4], o[4], a.dt[4]);
          cd_store(a.t[0], o[0], dp, ADD(p, MUL(f[5], m)));
        } else {
          cd_store(a.t[0], o[0], dp, ADD(p, cd_round(cd_round(MUL(f[5], g), dp) / avg, dp)));
        }
        break;
      }
      default: {  // adagrad
        if (b[0]) g = -g;
        if (b[1]) g = cd_round(ADD(g, MUL(f[0], p)), dp);
        double sum = cd_round(ADD(cd_load(a.t[2], o[2], a.dt[2]), cd_round(MUL(g, g), dp)), dp);
        cd_store(a.t[2], o[2], a.dt[2], sum);
        sum = cd_load(a.t[2], o[2], a.dt[2]);
        double sd = cd_round(ADD(cd_round(sqrt(sum), dp), f[1]), dp);
        cd_store(a.t[0], o[0], dp, ADD(p, cd_round(cd_round(MUL(f[2], g), dp) / sd, dp)));
        break;
      }
    }
  }
}

extern "C" int cuda_launch_optim(const cuda_optim_args *a, int64_t n, cudaStream_t st) {
  if (n <= 0) return 0;
  optim_kernel<<<cuda_blocks(n), CUDA_THREADS, 0, st>>>(*a, n);
  return CUDA_CHECK_LAUNCH("optim", "optim_kernel");
}
