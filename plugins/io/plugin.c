/* io plugin entry: registers the "io" service (safetensors state dicts and
 * training checkpoints). */
#include "io.h"

static wk_status save_safetensors(const wk_state_dict *sd, const char *path) {
  if (!path) return wk_error(WK_ERR_NULL, "save_safetensors: argument 'path' is NULL");
  return io_st_save("save_safetensors", sd, path, NULL, NULL);
}

static wk_status load_safetensors(const char *path, wk_state_dict **out, const wk_io_load_opts *opts) {
  if (out) *out = NULL;
  if (!path) return wk_error(WK_ERR_NULL, "load_safetensors: argument 'path' is NULL");
  return io_st_load("load_safetensors", path, NULL, 0, opts, out);
}

static wk_status save_buffer(const wk_state_dict *sd, void **data, size_t *nbytes) {
  if (data) *data = NULL;
  if (nbytes) *nbytes = 0;
  if (!data || !nbytes)
    return wk_error(WK_ERR_NULL, "save_safetensors_buffer: argument '%s' is NULL", !data ? "data" : "nbytes");
  return io_st_save("save_safetensors_buffer", sd, NULL, data, nbytes);
}

static wk_status load_buffer(const void *data, size_t nbytes, wk_state_dict **out, const wk_io_load_opts *opts) {
  if (out) *out = NULL;
  if (!data && nbytes) return wk_error(WK_ERR_NULL, "load_safetensors_buffer: argument 'data' is NULL");
  return io_st_load("load_safetensors_buffer", NULL, data ? data : "", nbytes, opts, out);
}

static const wk_io_iface g_io = {
    .struct_size = sizeof(wk_io_iface),
    .save_safetensors = save_safetensors,
    .load_safetensors = load_safetensors,
    .save_safetensors_buffer = save_buffer,
    .load_safetensors_buffer = load_buffer,
    .checkpoint_save = io_ckpt_save,
    .checkpoint_load = io_ckpt_load,
    .checkpoint_clear = io_ckpt_clear,
};

wk_status io_opts(const char *fn, const wk_io_load_opts *opts, wk_io_load_opts *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  if (!opts) return WK_OK;
  size_t need = offsetof(wk_io_load_opts, map_location) + sizeof(wk_device);
  if (opts->struct_size < need)
    return wk_error(WK_ERR_INVALID_ARG,
                    "%s: opts->struct_size is %zu; set it to sizeof(wk_io_load_opts) (WK_IO_LOAD_OPTS does)", fn,
                    opts->struct_size);
  /* An older, smaller struct: the missing tail keeps the defaults. */
  memcpy(out, opts, opts->struct_size < sizeof *out ? opts->struct_size : sizeof *out);
  out->struct_size = sizeof *out;
  return WK_OK;
}

static wk_status io_init(void) {
  return wk_service_register(WK_IO_SERVICE, WK_IO_SERVICE_VERSION, &g_io);
}

WK_PLUGIN_DEFINE("io", "0.1.0", "safetensors state dicts and training checkpoints (the io service)", io_init, NULL)
