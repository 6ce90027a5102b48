/* libFuzzer target: MNIST IDX readers (plain and gzip: the reader tells them
 * apart by the gzip magic). The input is split at its first byte's share into
 * an images file and a labels file; every sample of an accepted pair is read. */
#include <wick/data.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fz_init();
  if (n < 1) return 0;
  size_t cut = 1 + (size_t)data[0] * (n - 1) / 255;
  const char *img = fz_file(0, "-images", data + 1, cut - 1);
  const char *lab = fz_file(1, "-labels", data + cut, n - cut);
  wk_dataset *ds = wk_dataset_mnist(img, lab);
  fz_check_error(!ds);
  if (ds) {
    int64_t len = wk_dataset_len(ds);
    for (int64_t i = 0; i < len && i < 64; i++) {
      wk_sample s = {0};
      wk_status st = wk_dataset_get(ds, i, NULL, &s);
      fz_check_error(st != WK_OK);
      wk_sample_clear(&s);
    }
    wk_dataset_free(ds);
  }
  return 0;
}
