/* data plugin entry: registers the "data" service (datasets, readers, image
 * decoding, transforms, samplers, collate helpers, the DataLoader). */
#include "data.h"

static const wk_data_iface g_data = {
    .struct_size = sizeof(wk_data_iface),
    .dataset_new = dt_dataset_new,
    .dataset_free = dt_dataset_free,
    .dataset_len = dt_dataset_len_api,
    .dataset_get = dt_dataset_get_api,
    .tensor_dataset = dt_tensor_dataset,
    .subset = dt_subset,
    .concat = dt_concat,
    .random_split = dt_random_split,
    .map = dt_map,
    .mnist = dt_mnist,
    .cifar = dt_cifar,
    .channel_stats = dt_channel_stats,
    .csv = dt_csv,
    .transform_free = dt_transform_free,
    .transform_apply = dt_transform_apply_api,
    .to_tensor = dt_to_tensor,
    .normalize = dt_normalize,
    .random_crop = dt_random_crop,
    .random_hflip = dt_random_hflip,
    .center_crop = dt_center_crop,
    .compose = dt_compose,
    .lambda = dt_lambda,
    .sampler_free = dt_sampler_free,
    .sampler_len = dt_sampler_len,
    .sampler_set_epoch = dt_sampler_set_epoch,
    .sampler_indices = dt_sampler_indices,
    .sampler_sequential = dt_sampler_sequential,
    .sampler_random = dt_sampler_random,
    .sampler_subset_random = dt_sampler_subset_random,
    .sampler_weighted = dt_sampler_weighted,
    .sampler_distributed = dt_sampler_distributed,
    .dataloader_new = dt_loader_new,
    .dataloader_free = dt_loader_free,
    .dataloader_len = dt_loader_len,
    .dataloader_set_epoch = dt_loader_set_epoch,
    .dataloader_next = dt_loader_next,
    .iterable_new = dt_iterable_new,
    .image_decode = dt_image_decode,
    .image_read = dt_image_read,
    .image_folder = dt_image_folder,
    .image_folder_class = dt_image_folder_class,
    .resize = dt_resize,
    .random_resized_crop = dt_random_resized_crop,
    .color_jitter = dt_color_jitter,
    .collate_default = dt_collate_default,
    .pad_sequence = dt_pad_sequence,
};

const char *dt_shape_str(const int64_t *sizes, int n, char *buf, size_t cap) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}

static wk_status data_init(void) { return wk_service_register(WK_DATA_SERVICE, WK_DATA_SERVICE_VERSION, &g_data); }

WK_PLUGIN_DEFINE("data", "0.1.0", "datasets, readers, transforms, samplers and the DataLoader (the data service)",
                 data_init, NULL)
