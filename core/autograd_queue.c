/* The autograd engine's end-of-backward callbacks: PyTorch's
 * Variable._execution_engine.queue_callback, which DistributedDataParallel
 * uses to wait for its gradient all-reduces once backward has produced every
 * gradient. One queue per backward, kept per thread (backwards nest). */
#include <stdlib.h>

#include "autograd_queue.h"

typedef struct wk__cb_item {
  wk_autograd_callback_fn fn;
  void *user;
  struct wk__cb_item *next;
} wk__cb_item;

static __thread wk__cb_queue *t_queue;

void wk__cb_queue_begin(wk__cb_queue *q) {
  q->head = q->tail = NULL;
  q->outer = t_queue;
  t_queue = q;
}

wk_status wk__cb_queue_end(wk__cb_queue *q, wk_status s) {
  /* Callbacks run while q is still current, so one may queue another. */
  while (q->head) {
    wk__cb_item *it = q->head;
    q->head = it->next;
    if (!q->head) q->tail = NULL;
    if (!s) {
      s = it->fn(it->user);
      if (s && !wk__error_pending()) wk_error(s, "autograd: a queued callback failed");
    }
    free(it);
  }
  t_queue = q->outer;
  return s;
}

wk_status wk_autograd_queue_callback(wk_autograd_callback_fn fn, void *user) {
  if (!fn) return wk_error(WK_ERR_NULL, "autograd_queue_callback: argument 'fn' is NULL");
  if (!t_queue)
    return wk_error(WK_ERR_STATE,
                    "autograd_queue_callback: no backward is running on this thread (call it from a "
                    "hook or a derivative)");
  wk__cb_item *it = wk_malloc(sizeof *it);
  if (!it) return wk_error(WK_ERR_NO_MEMORY, "autograd_queue_callback: out of memory");
  it->fn = fn;
  it->user = user;
  it->next = NULL;
  if (t_queue->tail)
    t_queue->tail->next = it;
  else
    t_queue->head = it;
  t_queue->tail = it;
  return WK_OK;
}
