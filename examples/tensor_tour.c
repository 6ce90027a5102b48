/* A tour of Wick tensors that follows the first page of PyTorch's tensor
 * tutorial: creation, attributes, indexing, joining, arithmetic,
 * broadcasting, in-place ops, views and printing. A scope releases every
 * temporary, so the C reads like its Python twin. */
#include <stdio.h>
#include <wick/wick.h>

#define SHOW(title, expr)                                 \
  do {                                                    \
    printf("%s\n", title);                                \
    if (wk_print((expr), stdout) != WK_OK) goto fail;     \
    printf("\n");                                         \
  } while (0)

int main(void) {
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wk_init: %s\n", wk_last_error_message());
    return 1;
  }
  wk_manual_seed(0);
  wk_scope_begin();

  /* Directly from data */
  wk_tensor *x_data = wk_tensor_from_data((int64_t[]){1, 2, 3, 4}, WK_I64, WK_SHAPE(2, 2));
  SHOW("x_data = torch.tensor([[1, 2], [3, 4]])", x_data);

  /* From another tensor: keeps shape (and dtype unless overridden) */
  SHOW("torch.ones_like(x_data)", wk_ones_like(x_data, (wk_options){0}));
  SHOW("torch.rand_like(x_data, dtype=torch.float)", wk_rand_like(wk_to_dtype(x_data, WK_F32)));

  /* With a shape */
  SHOW("torch.rand(2, 3)", wk_rand(WK_SHAPE(2, 3), (wk_options){0}));
  SHOW("torch.ones(2, 3)", wk_ones(WK_SHAPE(2, 3), (wk_options){0}));
  SHOW("torch.zeros(2, 3, dtype=torch.float64)", wk_zeros(WK_SHAPE(2, 3), WK_OPTS(.dtype = WK_F64)));

  /* Attributes */
  wk_tensor *tensor = wk_rand(WK_SHAPE(3, 4), (wk_options){0});
  char dev[32];
  printf("Shape of tensor: [%lld, %lld]\nDatatype of tensor: %s\nDevice tensor is stored on: %s\n\n",
         (long long)wk_tensor_size(tensor, 0), (long long)wk_tensor_size(tensor, 1),
         wk_dtype_name(wk_tensor_dtype(tensor)), wk_device_str(wk_tensor_device(tensor), dev, sizeof dev));

  /* Indexing and slicing: tensor[:, 1] = 0 */
  tensor = wk_ones(WK_SHAPE(4, 4), (wk_options){0});
  SHOW("First row: tensor[0]", wk_select(tensor, 0, 0));
  SHOW("First column: tensor[:, 0]", wk_select(tensor, 1, 0));
  SHOW("Last column: tensor[..., -1]", wk_select(tensor, -1, -1));
  wk_fill_(wk_select(tensor, 1, 1), 0);
  SHOW("tensor[:, 1] = 0", tensor);

  /* Joining */
  wk_tensor *three[] = {tensor, tensor, tensor};
  SHOW("torch.cat([tensor, tensor, tensor], dim=1)", wk_cat(three, 3, 1));

  /* Arithmetic */
  SHOW("y1 = tensor @ tensor.T", wk_matmul(tensor, wk_t(tensor)));
  SHOW("z1 = tensor * tensor", wk_mul(tensor, tensor));

  /* Single-element tensors */
  wk_tensor *agg = wk_sum(tensor);
  double agg_item;
  if (wk_item(agg, &agg_item) != WK_OK) goto fail;
  printf("agg.item() = %g (a C double)\n\n", agg_item);

  /* In place: names end with an underscore */
  wk_add_scalar_(tensor, 5);
  SHOW("tensor.add_(5)", tensor);

  /* Broadcasting: [3, 1] with [4] gives [3, 4] */
  wk_tensor *col = wk_reshape(wk_arange(0, 3, 1, (wk_options){0}), WK_SHAPE(3, 1));
  wk_tensor *row = wk_arange(0, 40, 10, (wk_options){0});
  SHOW("torch.arange(3.).reshape(3, 1) + torch.arange(0., 40., 10.)", wk_add(col, row));

  /* Views share storage: writing through a view changes the base */
  wk_tensor *base = wk_arange(0, 6, 1, (wk_options){0});
  wk_tensor *view = wk_view(base, WK_SHAPE(2, 3));
  wk_fill_(wk_select(view, 0, 1), -1);
  SHOW("base after view[0, 1] = -1", base);
  SHOW("view.t() (non-contiguous) then .contiguous()", wk_contiguous(wk_t(view)));

  /* Errors are values: the message names the op and the shapes */
  if (!wk_add(wk_ones(WK_SHAPE(2, 3), (wk_options){0}), wk_ones(WK_SHAPE(4), (wk_options){0}))) {
    printf("Expected error: %s\n", wk_last_error_message());
    wk_clear_error();
  }

  wk_scope_end();
  printf("\nlive tensors after the scope: %lld\n", (long long)wk_live_tensors());
  wk_shutdown();
  return 0;
fail:
  fprintf(stderr, "error: %s\n", wk_last_error_message());
  wk_scope_end();
  return 1;
}
