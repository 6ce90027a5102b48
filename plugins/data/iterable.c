/* data plugin: iterable-style datasets: the handle over a user's stream
 * implementation, the check that refuses them where random access is needed,
 * and a transform mapped over a stream (each sample drawing from its own
 * stream seed: the worker's seed and its position in the stream). */
#include "data.h"

wk_dataset *dt_iterable_new(const wk_iterable_impl *impl, void *self) {
  if (!impl) {
    wk_error(WK_ERR_NULL, "iterable_dataset_new: argument 'impl' is NULL");
    return NULL;
  }
  if (impl->struct_size < offsetof(wk_iterable_impl, next) + sizeof impl->next || !impl->open || !impl->next) {
    wk_error(WK_ERR_INVALID_ARG,
             "iterable_dataset_new: impl needs struct_size = sizeof(wk_iterable_impl), open and next");
    return NULL;
  }
  wk_dataset *ds = wk_calloc(1, sizeof *ds);
  if (!ds) {
    wk_error(WK_ERR_NO_MEMORY, "iterable_dataset_new: out of memory");
    return NULL;
  }
  memcpy(&ds->iter, impl, impl->struct_size < sizeof ds->iter ? impl->struct_size : sizeof ds->iter);
  ds->iter.struct_size = sizeof ds->iter;
  ds->iterable = true;
  ds->self = self;
  atomic_init(&ds->rc, 1);
  return ds;
}
bool dt_need_map_style(const char *fn, wk_dataset *ds) {
  if (!ds->iterable) return true;
  wk_error(WK_ERR_UNSUPPORTED,
           "%s: the dataset is iterable-style: it has no length or random access (read it with a "
           "DataLoader)",
           fn);
  return false;
}

/* ---- A transform over a stream ----------------------------------------------------------------- */
typedef struct {
  wk_dataset *parent;
  wk_transform *tf;
  int field;
} imapped;
typedef struct {
  void *inner;
  uint64_t seed;
  int64_t pos; /* samples given so far: sample k draws from (seed, k) */
} imapped_stream;

static wk_status imapped_open(void *p, const wk_worker_info *info, void **stream) {
  imapped *m = p;
  imapped_stream *s = wk_calloc(1, sizeof *s);
  if (!s) return wk_error(WK_ERR_NO_MEMORY, "dataset_map: out of memory");
  s->seed = info->seed;
  wk_status st = m->parent->iter.open(m->parent->self, info, &s->inner);
  if (st != WK_OK) {
    wk_free(s);
    return st;
  }
  *stream = s;
  return WK_OK;
}
static wk_status imapped_next(void *p, void *stream, wk_sample *out) {
  imapped *m = p;
  imapped_stream *s = stream;
  wk_status st = m->parent->iter.next(m->parent->self, s->inner, out);
  if (st != WK_OK || out->n == 0) return st;
  if (out->n < 0 || out->n > WK_SAMPLE_MAX || m->field >= out->n || !out->t[m->field])
    return wk_error(WK_ERR_INDEX,
                    "dataset_map: sample %lld of the stream has %d fields, the transform applies to field %d",
                    (long long)s->pos, out->n, m->field);
  wk_tensor *y = dt_transform_apply(m->tf, out->t[m->field], wk_data_sample_seed(s->seed, 0, s->pos++));
  if (!y) return wk_last_error();
  wk_release(out->t[m->field]);
  out->t[m->field] = y;
  return WK_OK;
}
static void imapped_close(void *p, void *stream) {
  imapped *m = p;
  imapped_stream *s = stream;
  if (m->parent->iter.close) m->parent->iter.close(m->parent->self, s->inner);
  wk_free(s);
}
static void imapped_free(void *p) {
  imapped *m = p;
  dt_dataset_release(m->parent);
  dt_transform_release(m->tf);
  wk_free(m);
}

wk_dataset *dt_map_iterable(wk_dataset *ds, int field, wk_transform *tf) {
  imapped *m = wk_malloc(sizeof *m);
  if (!m) {
    wk_error(WK_ERR_NO_MEMORY, "dataset_map: out of memory");
    return NULL;
  }
  m->parent = dt_dataset_retain(ds);
  m->tf = dt_transform_retain(tf);
  m->field = field;
  wk_iterable_impl impl = {sizeof impl, imapped_open, imapped_next, imapped_close, imapped_free};
  wk_dataset *out = dt_iterable_new(&impl, m);
  if (!out) imapped_free(m);
  return out;
}
