/* libFuzzer target: CIFAR-10/100 binary batches (plain and gzip); the first
 * byte picks 10 or 100 classes. */
#include <wick/data.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fz_init();
  if (n < 1) return 0;
  const char *path = fz_file(0, ".bin", data + 1, n - 1);
  wk_dataset *ds = wk_dataset_cifar(&path, 1, data[0] & 1 ? 100 : 10);
  fz_check_error(!ds);
  if (ds) {
    int64_t len = wk_dataset_len(ds);
    for (int64_t i = 0; i < len && i < 16; i++) {
      wk_sample s = {0};
      wk_status st = wk_dataset_get(ds, i, NULL, &s);
      fz_check_error(st != WK_OK);
      wk_sample_clear(&s);
    }
    wk_dataset_free(ds);
  }
  return 0;
}
