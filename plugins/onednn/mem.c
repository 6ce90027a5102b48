/* onednn plugin: memory descriptors from tensors, scratch memory from the
 * core allocator, cached reorders, and primitive execution that moves data
 * between Wick's plain layouts and the blocked layouts oneDNN prefers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

#define ODN_MAX_ARGS 12

void odn_md_strided(dnnl_memory_desc_t *md, int nd, const int64_t *dims, const int64_t *strides, dnnl_data_type_t dt) {
  dnnl_dims_t d, s;
  for (int i = 0; i < nd; i++) {
    d[i] = dims[i];
    s[i] = strides[i];
  }
  memset(md, 0, sizeof *md);
  odn.memory_desc_init_by_strides(md, nd, d, dt, s);
}

void odn_md_of(dnnl_memory_desc_t *md, const wk_tensor *t) {
  odn_md_strided(md, wk_tensor_dim(t), wk_tensor_sizes(t), wk_tensor_strides(t), odn_dt(wk_tensor_dtype(t)));
}

void *odn_alloc(size_t n) {
  return wk_device_alloc(wk_cpu(), n ? n : 1);
}
void odn_free(void *p) {
  if (p) wk_device_free(wk_cpu(), p);
}

/* ---- reorders ---------------------------------------------------------------------------------- */
typedef struct {
  const char *op;
  const dnnl_memory_desc_t *from, *to;
} reorder_ctx;

static odn_prim *make_reorder(void *v) {
  reorder_ctx *c = v;
  dnnl_primitive_attr_t a = odn_attr(c->op);
  if (!a) return NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t st = odn.reorder_primitive_desc_create(&pd, c->from, odn_engine, c->to, odn_engine, a);
  odn.primitive_attr_destroy(a);
  if (odn_check(st, c->op, "reorder description")) return NULL;
  return odn_prim_from_pd(c->op, pd, NULL, 0);
}

static wk_status run(const char *op, const odn_prim *p, dnnl_exec_arg_t *ea, dnnl_memory_t *mems, int n, size_t bytes) {
  dnnl_stream_t s = odn_stream(op, bytes);
  if (!s) return wk_last_error();
  void *sp = NULL;
  wk_status st = WK_OK;
  if (p->scratch) {
    if (!(sp = odn_alloc(p->scratch))) return wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for scratch", op);
    if ((st = odn_check(odn.memory_create(&mems[n], &p->scratch_md, odn_engine, sp), op, "memory creation"))) {
      odn_free(sp);
      return st;
    }
    ea[n] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mems[n]};
    n++;
  }
  st = odn_check(odn.primitive_execute(p->prim, s, n, ea), op, "execution");
  if (!st) st = odn_check(odn.stream_wait(s), op, "stream wait");
  if (p->scratch) odn.memory_destroy(mems[n - 1]);
  odn_free(sp);
  return st;
}

wk_status odn_reorder(const char *op, const dnnl_memory_desc_t *from, const void *src, const dnnl_memory_desc_t *to,
                      void *dst) {
  /* key: both descriptors, byte for byte (a stray padding difference only costs a miss) */
  unsigned char key[2 * sizeof(dnnl_memory_desc_t) + 8];
  memcpy(key, "reorder", 8);
  memcpy(key + 8, from, sizeof *from);
  memcpy(key + 8 + sizeof *from, to, sizeof *to);
  reorder_ctx c = {op, from, to};
  odn_entry *e = odn_prim_get(key, sizeof key, make_reorder, &c);
  if (!e) return wk_last_error();
  const odn_prim *p = odn_entry_val(e);
  dnnl_memory_t m[3] = {NULL, NULL, NULL};
  wk_status st = odn_check(odn.memory_create(&m[0], from, odn_engine, (void *)src), op, "memory creation");
  if (!st) st = odn_check(odn.memory_create(&m[1], to, odn_engine, dst), op, "memory creation");
  if (!st) {
    dnnl_exec_arg_t ea[3] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}};
    st = run(op, p, ea, m, 2, 2 * odn.memory_desc_get_size(from));
  }
  if (m[0]) odn.memory_destroy(m[0]);
  if (m[1]) odn.memory_destroy(m[1]);
  odn_cache_unpin(e);
  return st;
}

/* ---- execution ---------------------------------------------------------------------------------- */
wk_status odn_exec(const char *op, const odn_prim *p, const odn_arg *args, int n) {
  if (n > ODN_MAX_ARGS) return wk_error(WK_ERR_INTERNAL, "%s(): too many oneDNN arguments", op);
  dnnl_exec_arg_t ea[ODN_MAX_ARGS + 1];
  dnnl_memory_t mems[ODN_MAX_ARGS + 1] = {0};
  void *tmp[ODN_MAX_ARGS] = {0};
  wk_status st = WK_OK;
  int k = 0;
  size_t bytes = 0;
  for (; k < n && !st; k++) {
    const odn_arg *a = &args[k];
    bool same = !a->want || a->want->ndims == 0 || odn.memory_desc_equal(a->want, a->have);
    const dnnl_memory_desc_t *use = same ? a->have : a->want;
    void *ptr = a->data;
    if (!same) {
      if (!(tmp[k] = odn_alloc(odn.memory_desc_get_size(a->want)))) {
        st = wk_error(WK_ERR_NO_MEMORY, "%s(): out of memory for a layout copy", op);
        break;
      }
      if (!a->output && (st = odn_reorder(op, a->have, a->data, a->want, tmp[k]))) break;
      ptr = tmp[k];
    }
    bytes += odn.memory_desc_get_size(use);
    if ((st = odn_check(odn.memory_create(&mems[k], use, odn_engine, ptr), op, "memory creation"))) break;
    ea[k] = (dnnl_exec_arg_t){a->id, mems[k]};
  }
  if (!st && getenv("WICK_ONEDNN_DEBUG"))
    for (int i = 0; i < n; i++) {
      const dnnl_memory_desc_t *want = odn.primitive_desc_query_md(p->pd, dnnl_query_exec_arg_md, args[i].id);
      const dnnl_memory_desc_t *use = args[i].want && args[i].want->ndims ? args[i].want : args[i].have;
      fprintf(stderr, "%s arg %d: pd wants ndims %d, equal %d\n", op, args[i].id, want ? want->ndims : -1,
              want ? odn.memory_desc_equal(want, use) : -1);
    }
  if (!st) st = run(op, p, ea, mems, n, bytes);
  for (int i = 0; i < n && !st; i++)
    if (tmp[i] && args[i].output) st = odn_reorder(op, args[i].want, tmp[i], args[i].have, args[i].data);
  for (int i = 0; i < n; i++) {
    if (mems[i]) odn.memory_destroy(mems[i]);
    odn_free(tmp[i]);
  }
  return st;
}
