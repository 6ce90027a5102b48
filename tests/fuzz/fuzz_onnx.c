/* libFuzzer target: ONNX models from memory (the onnx plugin's wire-format
 * depth scan, protobuf-c unpacking and the importer's checks). A model that
 * loads must validate and run its shape inference again without error. */
#include <wick/onnx.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fz_init();
  wk_graph *g = wk_onnx_load_buffer(data, n, NULL);
  fz_check_error(g == NULL);
  if (g) {
    if (wk_graph_validate(g) != WK_OK || wk_graph_propagate(g) != WK_OK) abort();
    wk_graph_release(g);
  }
  return 0;
}
