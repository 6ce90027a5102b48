/* Wick ABI: state dicts: ordered maps from names ("fc1.weight") to tensors,
 * plus string metadata, as PyTorch's state_dict(). Modules produce and load
 * them, optimizers describe their state with them, the io plugin saves them. */
#ifndef WICK_STATE_DICT_H
#define WICK_STATE_DICT_H

#include <wick/types.h>

typedef struct wk_state_dict wk_state_dict;

/* Returns a new empty state dict (free with wk_state_dict_free), or NULL. */
WK_API wk_state_dict *wk_state_dict_new(void);
/* Releases every tensor and frees the dict. NULL does nothing. */
WK_API void wk_state_dict_free(wk_state_dict *sd);
/* Sets name -> t (retains t; replaces an existing entry in place, keeping its
 * position). Names are non-empty. */
WK_API wk_status wk_state_dict_set(wk_state_dict *sd, const char *name, wk_tensor *t);
/* The tensor stored under name (borrowed), or NULL without an error. */
WK_API wk_tensor *wk_state_dict_get(const wk_state_dict *sd, const char *name);
/* Removes name; WK_ERR_NOT_FOUND naming it when absent. */
WK_API wk_status wk_state_dict_remove(wk_state_dict *sd, const char *name);
/* Number of entries, and the i-th key (static while the entry lives) and
 * tensor (borrowed), in insertion order. */
WK_API int wk_state_dict_size(const wk_state_dict *sd);
WK_API const char *wk_state_dict_key(const wk_state_dict *sd, int i);
WK_API wk_tensor *wk_state_dict_value(const wk_state_dict *sd, int i);
/* String metadata (checkpoint hyper-parameters, versions): set copies both
 * strings; get returns NULL when absent. */
WK_API wk_status wk_state_dict_set_meta(wk_state_dict *sd, const char *key, const char *value);
WK_API const char *wk_state_dict_get_meta(const wk_state_dict *sd, const char *key);
WK_API int wk_state_dict_meta_size(const wk_state_dict *sd);
WK_API const char *wk_state_dict_meta_key(const wk_state_dict *sd, int i);
WK_API const char *wk_state_dict_meta_value(const wk_state_dict *sd, int i);

#endif
