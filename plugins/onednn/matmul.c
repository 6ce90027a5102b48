/* onednn plugin: mm and addmm (beta = alpha = 1, the linear layer's form)
 * with oneDNN's matmul primitive, for f32 and bf16 matrices that are row- or
 * column-major (transposed views such as linear's weight.t() included); the
 * core's meta functions checked the arguments. Registered only where measured
 * faster than the cpu plugin's OpenBLAS path (see odn_register_matmul). */
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

#define ODN_MM_MIN (1 << 17) /* multiply-adds */

typedef struct {
  char tag[8];
  int32_t dt, has_bias;
  int32_t blocked_b, pad; /* B used again at its version: oneDNN's layout, a cached copy */
  int64_t M, N, K;
  int64_t sa[2], sb[2], bdims[2], sbias[2];
} mm_key;

/* A 2-D operand oneDNN's fast paths read: one of its strides is 1. */
static bool mat_ok(const wk_tensor *t, wk_dtype dt) {
  if (!t || wk_tensor_dim(t) != 2 || wk_tensor_dtype(t) != dt || wk_tensor_device(t).type != WK_DEVICE_CPU)
    return false;
  const int64_t *s = wk_tensor_strides(t), *z = wk_tensor_sizes(t);
  if (z[0] <= 0 || z[1] <= 0) return false;
  return (s[1] == 1 && s[0] >= z[1]) || (s[0] == 1 && s[1] >= z[0]);
}

static bool mm_parse(wk_tensor *a, wk_tensor *b, wk_tensor *bias, mm_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->tag, "matmul", 7);
  if (!a || !odn_usable()) return false;
  wk_dtype dt = wk_tensor_dtype(a);
  if ((dt != WK_F32 && !(dt == WK_BF16 && odn_bf16())) || !mat_ok(a, dt) || !mat_ok(b, dt)) return false;
  k->dt = (int32_t)odn_dt(dt);
  k->M = wk_tensor_size(a, 0);
  k->K = wk_tensor_size(a, 1);
  k->N = wk_tensor_size(b, 1);
  memcpy(k->sa, wk_tensor_strides(a), sizeof k->sa);
  memcpy(k->sb, wk_tensor_strides(b), sizeof k->sb);
  if (!bias) return true;
  /* bias broadcast to [M, N] from [N], [1, N], [M, 1], [M, N] or a scalar */
  if (wk_tensor_dtype(bias) != dt || wk_tensor_device(bias).type != WK_DEVICE_CPU || wk_tensor_dim(bias) > 2)
    return false;
  int nd = wk_tensor_dim(bias);
  int64_t d[2] = {1, 1}, s[2] = {0, 0};
  for (int i = 0; i < nd; i++) {
    d[2 - nd + i] = wk_tensor_size(bias, i);
    s[2 - nd + i] = wk_tensor_stride(bias, i);
  }
  if ((d[0] != 1 && d[0] != k->M) || (d[1] != 1 && d[1] != k->N)) return false;
  for (int i = 0; i < 2; i++)
    if (d[i] == 1) s[i] = i == 0 ? d[1] : 1; /* size-1 dims: canonical strides */
  if (!((s[1] == 1 && s[0] >= d[1]) || (s[0] == 1 && s[1] >= d[0]))) return false;
  k->has_bias = 1;
  memcpy(k->bdims, d, sizeof d);
  memcpy(k->sbias, s, sizeof s);
  return true;
}

static void mds(const mm_key *k, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b, dnnl_memory_desc_t *bias,
                dnnl_memory_desc_t *c) {
  dnnl_data_type_t dt = (dnnl_data_type_t)k->dt;
  int64_t da[2] = {k->M, k->K}, db[2] = {k->K, k->N}, dc[2] = {k->M, k->N}, sc[2] = {k->N, 1};
  odn_md_strided(a, 2, da, k->sa, dt);
  odn_md_strided(b, 2, db, k->sb, dt);
  odn_md_strided(c, 2, dc, sc, dt);
  if (k->has_bias) odn_md_strided(bias, 2, k->bdims, k->sbias, dt);
}

static odn_prim *mm_make(void *v) {
  const mm_key *k = v;
  dnnl_memory_desc_t a, b, bias, c;
  mds(k, &a, &b, &bias, &c);
  if (k->blocked_b) {
    dnnl_dims_t db = {k->K, k->N};
    odn.memory_desc_init_by_tag(&b, 2, db, (dnnl_data_type_t)k->dt, dnnl_format_tag_any);
  }
  dnnl_matmul_desc_t md;
  if (odn_check(odn.matmul_desc_init(&md, &a, &b, k->has_bias ? &bias : NULL, &c), "mm", "matmul description"))
    return NULL;
  dnnl_query_t q[2] = {dnnl_query_undef, dnnl_query_weights_md};
  return odn_prim_create("mm", &md, NULL, NULL, q, 2);
}

static wk_status run_mm(const wk_kernel_ctx *ctx, const char *op, wk_tensor *a, wk_tensor *b, wk_tensor *bias, wk_value *outs) {
  mm_key k;
  if (!mm_parse(a, b, bias, &k))
    return wk_error(WK_ERR_UNSUPPORTED, "%s(): the onednn kernel does not handle these arguments (the cpu kernel does)",
                    op);
  /* a weight used again at the same version (inference): blocked and cached */
  static int plain = -1; /* WICK_ONEDNN_PLAIN_MATMUL=1: never (for measuring) */
  if (plain < 0) plain = getenv("WICK_ONEDNN_PLAIN_MATMUL") != NULL;
  k.blocked_b = !plain && odn_weight_seen(op, b, NULL);
  wk_tensor *c = wk_meta_empty(ctx, 0); /* [M, N], a's dtype: the core's meta function */
  if (!c) return wk_last_error();
  odn_entry *e = odn_prim_get(&k, sizeof k, mm_make, &k);
  wk_status s = e ? WK_OK : wk_last_error();
  if (!s) {
    dnnl_memory_desc_t ma, mb, mbias, mc;
    mds(&k, &ma, &mb, &mbias, &mc);
    const odn_prim *p = odn_entry_val(e);
    odn_arg ar[4] = {{DNNL_ARG_SRC, NULL, &ma, wk_tensor_data(a), false},
                     {DNNL_ARG_WEIGHTS, k.blocked_b ? &p->md[1] : NULL, &mb, wk_tensor_data(b), false},
                     {DNNL_ARG_DST, NULL, &mc, wk_tensor_data(c), true},
                     {DNNL_ARG_BIAS, NULL, &mbias, bias ? wk_tensor_data(bias) : NULL, false}};
    odn_wentry *we = NULL;
    if (!(s = odn_weight_arg(op, b, &ar[1], true, &we))) s = odn_exec(op, p, ar, bias ? 4 : 3);
    odn_weight_unpin(we);
  }
  odn_cache_unpin(e);
  if (s) {
    wk_release(c);
    return s;
  }
  outs[0] = WK_VT(c);
  return WK_OK;
}

/* Tiny products (a classifier head) run as fast through OpenBLAS, without
 * the primitive's fixed cost: left to the cpu kernel. */
static bool big_enough(const mm_key *k) {
  return k->M * k->N * k->K >= ODN_MM_MIN;
}

static bool mm_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  mm_key k;
  return mm_parse(WK_ARG_T(0), WK_ARG_T(1), NULL, &k) && big_enough(&k);
}

static wk_status k_mm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  return run_mm(ctx, "mm", WK_ARG_T(0), WK_ARG_T(1), NULL, outs);
}

/* addmm(self, mat1, mat2, *, beta, alpha): only beta == alpha == 1 */
static bool addmm_ok(const wk_value *args, mm_key *k) {
  if (wk_value_as_f64(&args[3]) != 1 || wk_value_as_f64(&args[4]) != 1) return false;
  return mm_parse(WK_ARG_T(1), WK_ARG_T(2), WK_ARG_T(0), k);
}

static bool addmm_supports(const wk_kernel_ctx *ctx, const wk_value *args) {
  mm_key k;
  return addmm_ok(args, &k) && big_enough(&k);
}

static wk_status k_addmm(const wk_kernel_ctx *ctx, const wk_value *args, wk_value *outs) {
  mm_key k;
  if (!addmm_ok(args, &k))
    return wk_error(WK_ERR_UNSUPPORTED,
                    "addmm(): the onednn kernel does not handle these arguments (the cpu kernel does)");
  return run_mm(ctx, "addmm", WK_ARG_T(1), WK_ARG_T(2), WK_ARG_T(0), outs);
}

wk_status odn_register_matmul(void) {
  wk_status s = odn_reg("mm", k_mm, mm_supports, NULL);
  if (!s) s = odn_reg("addmm", k_addmm, addmm_supports, NULL);
  return s;
}
