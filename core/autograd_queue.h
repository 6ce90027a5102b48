/* Core-internal: callbacks queued during a backward (wk_autograd_queue_callback),
 * run by the engine when that backward's graph has run. */
#ifndef WICK_CORE_AUTOGRAD_QUEUE_H
#define WICK_CORE_AUTOGRAD_QUEUE_H

#include "internal.h"

typedef struct wk__cb_queue {
  struct wk__cb_item *head, *tail;
  struct wk__cb_queue *outer; /* the backward this one runs inside, if any */
} wk__cb_queue;

/* Makes q the queue of the backward starting on this thread. */
WK__HIDDEN void wk__cb_queue_begin(wk__cb_queue *q);
/* Ends it: when s is WK_OK, runs the callbacks in order (each may queue more)
 * and returns the first failure; otherwise drops them. Returns the status. */
WK__HIDDEN wk_status wk__cb_queue_end(wk__cb_queue *q, wk_status s);

#endif
