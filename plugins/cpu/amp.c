/* cpu kernels of GradScaler's two fused steps (the amp plugin's scaler calls
 * them): amp_foreach_non_finite_check_and_unscale_ multiplies every gradient
 * by inv_scale in one pass and raises found_inf to 1 when any element is inf
 * or NaN; amp_update_scale_ grows or backs off the scale. The arithmetic is
 * PyTorch's cpu kernels' (float math for float/half/bfloat16, double for
 * double; the scale rounded to float after each product). The core's meta
 * functions checked the arguments. */
#include <math.h>

#include "cpu.h"

typedef struct {
  float inv;
  wk_dtype dt;
  int found; /* set (atomically: chunks run in parallel) when a non-finite value is seen */
} unscale_ctx;

static void unscale_loop(void *vc, char **data, const int64_t *strides, int64_t n) {
  unscale_ctx *c = vc;
  char *p = data[0];
  const int64_t s = strides[0];
  const float inv = c->inv;
  bool bad = false;
  switch (c->dt) {
    case WK_F32:
      for (int64_t i = 0; i < n; i++, p += s) {
        float v = *(float *)p;
        bad |= !isfinite(v);
        *(float *)p = inv == 1.f ? v : v * inv;
      }
      break;
    case WK_F64:
      for (int64_t i = 0; i < n; i++, p += s) {
        double v = *(double *)p;
        bad |= !isfinite(v);
        *(double *)p = inv == 1.f ? v : v * (double)inv;
      }
      break;
    default: /* half and bfloat16: float math, rounded back on the store */
      for (int64_t i = 0; i < n; i++, p += s) {
        float v = (float)wk_load_f64(p, c->dt);
        bad |= !isfinite(v);
        wk_store_f64(p, c->dt, inv == 1.f ? v : v * inv);
      }
      break;
  }
  if (bad) __atomic_store_n(&c->found, 1, __ATOMIC_RELAXED);
}

/* amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> () */
static wk_status k_unscale(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)outs;
  wk_tensor *found = WK_ARG_T(1), *inv = WK_ARG_T(2);
  unscale_ctx c = {(float)wk_load_f64(wk_tensor_data(inv), WK_F32), WK_F32, 0};
  for (int i = 0; i < args[0].len; i++) {
    wk_tensor *t = args[0].u.tensors[i];
    c.dt = wk_tensor_dtype(t);
    wk_iter it;
    wk_status s = wk_iter_init(&it, WK_OPNAME, &t, 1);
    if (s) return s;
    wk_iter_run(&it, unscale_loop, &c);
    wk_tensor_bump_version(t);
  }
  if (c.found) *(float *)wk_tensor_data(found) = 1.f; /* never reset: it gathers several calls */
  wk_tensor_bump_version(found);
  return WK_OK;
}

/* amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor,
 *                   float scale_backoff_factor, int growth_interval) -> Tensor(a!) */
static wk_status k_update_scale(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  (void)ctx;
  wk_tensor *scale_t = WK_ARG_T(0), *tracker_t = WK_ARG_T(1);
  float *scale = wk_tensor_data(scale_t);
  int32_t *tracker = wk_tensor_data(tracker_t);
  const float found = *(const float *)wk_tensor_data(WK_ARG_T(2));
  const double growth = WK_ARG_F(3), backoff = WK_ARG_F(4);
  const int64_t interval = WK_ARG_I(5);
  if (found != 0) { /* NaN counts as found, as in C++'s `if (*found_inf)` */
    *scale = (float)((double)*scale * backoff);
    *tracker = 0;
  } else {
    int64_t successful = (int64_t)*tracker + 1;
    if (successful == interval) {
      float grown = (float)((double)*scale * growth);
      if (isfinite(grown)) *scale = grown; /* never grow past float's range to inf */
      *tracker = 0;
    } else {
      *tracker = (int32_t)successful;
    }
  }
  wk_tensor_bump_version(scale_t);
  wk_tensor_bump_version(tracker_t);
  outs[0] = WK_VT(scale_t);
  return WK_OK;
}

wk_status cpu_register_amp(void) {
  wk_status s = cpu_reg("amp_foreach_non_finite_check_and_unscale_", k_unscale, NULL);
  return s ? s : cpu_reg("amp_update_scale_", k_update_scale, NULL);
}
