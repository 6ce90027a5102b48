/* libFuzzer target: safetensors from memory (the io plugin's parser and
 * strict JSON check) and the same bytes as a checkpoint file. */
#include <wick/io.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fz_init();
  wk_state_dict *sd = NULL;
  wk_status st = wk_load_safetensors_buffer(data, n, &sd, NULL);
  fz_check_error(st != WK_OK);
  if (st == WK_OK) {
    /* a loaded dict saves and loads back */
    void *buf = NULL;
    size_t nb = 0;
    if (wk_save_safetensors_buffer(sd, &buf, &nb) != WK_OK) abort();
    wk_state_dict *again = NULL;
    if (wk_load_safetensors_buffer(buf, nb, &again, NULL) != WK_OK) abort();
    if (wk_state_dict_size(again) != wk_state_dict_size(sd)) abort();
    wk_state_dict_free(again);
    wk_free(buf);
    wk_state_dict_free(sd);
  }
  wk_checkpoint ck = WK_CHECKPOINT_INIT;
  wk_io_load_opts opts = {.struct_size = sizeof opts, .keep_rng = true};
  st = wk_checkpoint_load(fz_file(0, ".safetensors", data, n), &ck, &opts);
  fz_check_error(st != WK_OK);
  wk_checkpoint_clear(&ck);
  return 0;
}
