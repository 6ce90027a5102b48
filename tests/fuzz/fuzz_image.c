/* libFuzzer target: the PNG and JPEG decoders behind ImageFolder
 * (wk_image_decode; the first byte picks the channel conversion). */
#include <wick/data.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fz_init();
  if (n < 1) return 0;
  static const int ch[4] = {0, 1, 3, 4};
  wk_tensor *t = wk_image_decode(data + 1, n - 1, ch[data[0] & 3]);
  fz_check_error(!t);
  wk_release(t);
  return 0;
}
