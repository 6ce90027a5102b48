/* libFuzzer target: ONNX models from memory (the onnx plugin's wire-format
 * depth scan, protobuf-c unpacking, the importer's checks and its batch-norm
 * fold). A model that
 * loads must validate and run its shape inference again without error. */
#include <wick/onnx.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  fz_init();
  /* the first byte's low bit turns on the batch-norm fold (its pattern matching sees the same hostile graph) */
  wk_graph *g = wk_onnx_load_buffer(data, n, WK_ONNX_LOAD_OPTS(.fold_batch_norm = n && (data[0] & 1)));
  fz_check_error(g == NULL);
  if (g) {
    if (wk_graph_validate(g) != WK_OK || wk_graph_propagate(g) != WK_OK) abort();
    wk_graph_release(g);
  }
  return 0;
}
