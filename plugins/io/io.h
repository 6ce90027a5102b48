/* io plugin: private declarations shared by its files (safetensors.c: the
 * format and atomic writes; checkpoint.c: checkpoints on top of it). */
#ifndef WICK_IO_PLUGIN_H
#define WICK_IO_PLUGIN_H

#include <wick/sdk.h>
#include <wick/io.h>

/* Load options with the defaults filled in (reads a smaller, older struct). */
wk_status io_opts(const char *fn, const wk_io_load_opts *opts, wk_io_load_opts *out);

/* Saves sd to `path` atomically (path != NULL) or to a new malloc'd buffer
 * (*data, *nbytes). `fn` names the public call in error messages. */
wk_status io_st_save(const char *fn, const wk_state_dict *sd, const char *path, void **data, size_t *nbytes);

/* Loads a file (path) or buffer (data/nbytes, `path` NULL) into *out. */
wk_status io_st_load(const char *fn, const char *path, const void *data, size_t nbytes, const wk_io_load_opts *opts,
                     wk_state_dict **out);

wk_status io_ckpt_save(const char *path, const wk_checkpoint *ck);
wk_status io_ckpt_load(const char *path, wk_checkpoint *out, const wk_io_load_opts *opts);
void io_ckpt_clear(wk_checkpoint *ck);

#endif
