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

/* Checks that text[0, n) is one RFC 8259 JSON value with only space, tab, CR
 * or LF around it, no control byte or \u0000 inside strings and at most
 * max_depth nested objects/arrays (json_strict.c; UTF-8 is not checked).
 * IO_JSON_BAD: *at is the fault's byte offset, why[whycap] says what it is;
 * IO_JSON_TRAILING: *at is the first byte after the value. */
enum { IO_JSON_OK, IO_JSON_BAD, IO_JSON_TRAILING };
int io_json_strict(const char *text, size_t n, int max_depth, size_t *at, char *why, size_t whycap);

wk_status io_ckpt_save(const char *path, const wk_checkpoint *ck);
wk_status io_ckpt_load(const char *path, wk_checkpoint *out, const wk_io_load_opts *opts);
void io_ckpt_clear(wk_checkpoint *ck);

#endif
