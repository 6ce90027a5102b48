/* Wick ABI: the io service: state dicts saved and loaded in the safetensors
 * format (https://github.com/huggingface/safetensors: no pickle, no code runs
 * on load), and training checkpoints (several state dicts + epoch/step + RNG
 * states + user metadata) in one safetensors file, written atomically.
 * The io plugin provides the service; the inline wrappers below fetch it once
 * and call it, so user code never links the plugin. */
#ifndef WICK_IO_H
#define WICK_IO_H

#include <stddef.h>
#include <string.h>
#include <wick/wick.h>

#define WK_IO_SERVICE "io"
#define WK_IO_SERVICE_VERSION 1u

/* ---- Load options ------------------------------------------------------------------- */
/* Zero fields mean the defaults. Pass NULL for all defaults, or
 * WK_IO_LOAD_OPTS(.map_location = dev, ...), which sets struct_size. */
typedef struct wk_checkpoint wk_checkpoint;
typedef struct wk_io_load_opts {
  size_t struct_size;     /* sizeof(wk_io_load_opts) */
  wk_device map_location; /* device the loaded tensors are moved to; {0} = cpu */
  /* Checkpoints only. When set, every part of `expected` (names and state
   * dicts, borrowed) is compared with the loaded part of the same name: a
   * differing shape or dtype is always an error; missing / unexpected keys
   * are an error unless non_strict, in which case they are listed in the
   * loaded checkpoint's missing / unexpected arrays. */
  const wk_checkpoint *expected;
  bool non_strict; /* PyTorch's strict=False */
  bool keep_rng;   /* do not restore the generators' states from the file */
} wk_io_load_opts;
#define WK_IO_LOAD_OPTS(...) (&(const wk_io_load_opts){.struct_size = sizeof(wk_io_load_opts), __VA_ARGS__})

/* ---- Checkpoints ---------------------------------------------------------------------- */
#define WK_CHECKPOINT_MAX_PARTS 16
/* A training checkpoint: named parts ("model", "optim", "sched", ...: letters,
 * digits, '_' or '-'; "wick" and "user" are reserved), each a state dict whose
 * tensors and string metadata are saved under "<part>.<key>"; epoch and step;
 * user metadata (the string metadata of `meta`, saved as "user.<key>"); and
 * the generators' states. In the file: tensors keyed "<part>.<key>", scalars
 * in the safetensors "__metadata__" map ("wick.epoch", "wick.rng.cpu", ...),
 * so Python opens it with safetensors.torch.load_file. */
struct wk_checkpoint {
  size_t struct_size;                              /* sizeof(wk_checkpoint) */
  int nparts;                                      /* parts[0..nparts) are used */
  const char *part_names[WK_CHECKPOINT_MAX_PARTS]; /* borrowed on save; owned after load */
  wk_state_dict *parts[WK_CHECKPOINT_MAX_PARTS];   /* borrowed on save; owned after load */
  int64_t epoch, step;
  wk_state_dict *meta; /* user metadata (strings only), or NULL */
  /* The cpu generator's state. Save: when has_rng, rng_seed/rng_offset are
   * written, else the current state is (with every other device's). Load:
   * the state found in the file (restored unless opts->keep_rng). */
  bool has_rng;
  uint64_t rng_seed, rng_offset;
  /* Filled by a non-strict load with `expected`: "<part>.<key>" names. */
  int nmissing, nunexpected;
  char **missing, **unexpected;
  void *reserved_; /* private to the io plugin */
};
#define WK_CHECKPOINT_INIT ((wk_checkpoint){.struct_size = sizeof(wk_checkpoint)})

/* ---- The service interface (append-only; readers honour struct_size) -------------- */
typedef struct wk_io_iface {
  size_t struct_size;
  wk_status (*save_safetensors)(const wk_state_dict *sd, const char *path);
  wk_status (*load_safetensors)(const char *path, wk_state_dict **out, const wk_io_load_opts *opts);
  wk_status (*save_safetensors_buffer)(const wk_state_dict *sd, void **data, size_t *nbytes);
  wk_status (*load_safetensors_buffer)(const void *data, size_t nbytes, wk_state_dict **out,
                                       const wk_io_load_opts *opts);
  wk_status (*checkpoint_save)(const char *path, const wk_checkpoint *ck);
  wk_status (*checkpoint_load)(const char *path, wk_checkpoint *out, const wk_io_load_opts *opts);
  void (*checkpoint_clear)(wk_checkpoint *ck);
} wk_io_iface;
WK_STATIC_ASSERT(sizeof(wk_io_iface) == 64, "wk_io_iface version 1 is frozen");
WK_STATIC_ASSERT(sizeof(wk_io_load_opts) == 32, "wk_io_load_opts is frozen at version 1");
WK_STATIC_ASSERT(sizeof(wk_checkpoint) == 352, "wk_checkpoint is frozen at version 1");

/* The io service, fetched once per translation unit; NULL with the error of
 * wk_service_get (naming the service and the plugin search path). */
static inline const wk_io_iface *wk__io(size_t need) {
  static const wk_io_iface *io_cache; /* filled on first use, maybe by several threads at once */
  const wk_io_iface *io = __atomic_load_n(&io_cache, __ATOMIC_ACQUIRE);
  if (!io) __atomic_store_n(&io_cache, io = (const wk_io_iface *)wk_service_get(WK_IO_SERVICE, WK_IO_SERVICE_VERSION), __ATOMIC_RELEASE);
  if (io && io->struct_size < need) {
    wk_error(WK_ERR_UNSUPPORTED, "the io service is too old (interface of %zu bytes, %zu needed)", io->struct_size,
             need);
    return NULL;
  }
  return io;
}
#define WK__IO(field) wk__io(offsetof(wk_io_iface, field) + sizeof(void (*)(void)))
/* The service for a call that starts a new error scope (error.h): all but
 * wk_checkpoint_clear, which cleans up after failures. */
#define WK__IO_CALL(field) (wk_error_new_call(), WK__IO(field))

/* Saves every tensor of sd (any device, any strides: written contiguous,
 * row-major, little-endian) and its string metadata as the "__metadata__"
 * map, to `path`, atomically: a temporary file in the same directory is
 * written, fsync'd and renamed over `path`, then the directory is fsync'd. On
 * failure `path` is untouched and the temporary file removed. Borrows sd. */
static inline wk_status wk_save_safetensors(const wk_state_dict *sd, const char *path) {
  const wk_io_iface *io = WK__IO_CALL(save_safetensors);
  return io ? io->save_safetensors(sd, path) : wk_last_error();
}
/* Loads a safetensors file into a new state dict (*out; free it with
 * wk_state_dict_free), in the file's order, with its "__metadata__" as the
 * dict's metadata. The whole file is validated first (header length, JSON,
 * dtypes, shapes, offsets in bounds, ordered, non-overlapping and covering the
 * data section; at most 100 MB of header and 65536 tensors): any fault gives
 * WK_ERR_IO naming the file, the tensor and the fault, with *out NULL. Only
 * the 10 dtypes Wick has are read (F32 F64 F16 BF16 I8 U8 I16 I32 I64 BOOL).
 * opts may be NULL. */
static inline wk_status wk_load_safetensors(const char *path, wk_state_dict **out, const wk_io_load_opts *opts) {
  const wk_io_iface *io = WK__IO_CALL(load_safetensors);
  if (!io && out) *out = NULL;
  return io ? io->load_safetensors(path, out, opts) : wk_last_error();
}
/* The same in memory: *data (free with wk_free) receives *nbytes bytes. */
static inline wk_status wk_save_safetensors_buffer(const wk_state_dict *sd, void **data, size_t *nbytes) {
  const wk_io_iface *io = WK__IO_CALL(save_safetensors_buffer);
  if (!io && data) *data = NULL;
  return io ? io->save_safetensors_buffer(sd, data, nbytes) : wk_last_error();
}
/* Loads from nbytes bytes at data (borrowed). */
static inline wk_status wk_load_safetensors_buffer(const void *data, size_t nbytes, wk_state_dict **out,
                                                   const wk_io_load_opts *opts) {
  const wk_io_iface *io = WK__IO_CALL(load_safetensors_buffer);
  if (!io && out) *out = NULL;
  return io ? io->load_safetensors_buffer(data, nbytes, out, opts) : wk_last_error();
}
/* Saves a checkpoint (borrowed) to one safetensors file, atomically. */
static inline wk_status wk_checkpoint_save(const char *path, const wk_checkpoint *ck) {
  const wk_io_iface *io = WK__IO_CALL(checkpoint_save);
  return io ? io->checkpoint_save(path, ck) : wk_last_error();
}
/* Loads a checkpoint into *out (out->struct_size set, e.g. WK_CHECKPOINT_INIT;
 * its other fields are overwritten). The parts, names, meta and key lists are
 * then owned by *out: release them with wk_checkpoint_clear. Restores the
 * generators' states unless opts->keep_rng. On failure *out is cleared. */
static inline wk_status wk_checkpoint_load(const char *path, wk_checkpoint *out, const wk_io_load_opts *opts) {
  const wk_io_iface *io = WK__IO_CALL(checkpoint_load);
  return io ? io->checkpoint_load(path, out, opts) : wk_last_error();
}
/* Frees what wk_checkpoint_load put in ck (parts, names, meta, key lists)
 * and zeroes it, keeping struct_size. NULL does nothing. */
static inline void wk_checkpoint_clear(wk_checkpoint *ck) {
  const wk_io_iface *io = ck ? WK__IO(checkpoint_clear) : NULL;
  if (io) io->checkpoint_clear(ck);
}

/* Appends part `name` -> sd (both borrowed) to a checkpoint being assembled. */
static inline wk_status wk_checkpoint_add(wk_checkpoint *ck, const char *name, wk_state_dict *sd) {
  if (!ck || !name || !sd)
    return wk_error(WK_ERR_NULL, "checkpoint_add: argument '%s' is NULL", !ck ? "ck" : !name ? "name" : "sd");
  if (ck->nparts < 0 || ck->nparts >= WK_CHECKPOINT_MAX_PARTS)
    return wk_error(WK_ERR_INVALID_ARG, "checkpoint_add: a checkpoint holds at most %d parts", WK_CHECKPOINT_MAX_PARTS);
  ck->part_names[ck->nparts] = name;
  ck->parts[ck->nparts++] = sd;
  return WK_OK;
}
/* The part called `name` (borrowed), or NULL without an error. */
static inline wk_state_dict *wk_checkpoint_part(const wk_checkpoint *ck, const char *name) {
  for (int i = 0; ck && name && i < ck->nparts && i < WK_CHECKPOINT_MAX_PARTS; i++)
    if (ck->part_names[i] && strcmp(ck->part_names[i], name) == 0) return ck->parts[i];
  return NULL;
}

#endif
