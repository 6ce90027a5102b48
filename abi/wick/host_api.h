/* Wick ABI: the host API table handed to plugins. One slot per public call,
 * in a fixed order: a released list is never reordered; a new ABI minor appends
 * a new list (WK_HOST_API_1_1, ...). Slot types come from the declarations, so
 * a signature cannot drift from its header. */
#ifndef WICK_HOST_API_H
#define WICK_HOST_API_H

#include <wick/wick.h>

/* ABI 1.0 */
#define WK_HOST_API_1_0(X)                                                            \
  X(wk_version) X(wk_abi_version)                                                     \
  X(wk_last_error) X(wk_last_error_message) X(wk_clear_error) X(wk_status_name)       \
  X(wk_error) X(wk_error_replace)                                                     \
  X(wk_dtype_size) X(wk_dtype_name) X(wk_dtype_parse) X(wk_dtype_is_floating)          \
  X(wk_dtype_is_integral) X(wk_promote_types)                                          \
  X(wk_empty) X(wk_empty_like) X(wk_empty_strided) X(wk_tensor_from_data)             \
  X(wk_tensor_from_blob) X(wk_scalar_tensor)                                           \
  X(wk_retain) X(wk_release) X(wk_scope_begin) X(wk_scope_end) X(wk_scope_keep)        \
  X(wk_scope_escape) X(wk_live_tensors)                                               \
  X(wk_tensor_dim) X(wk_tensor_size) X(wk_tensor_stride) X(wk_tensor_sizes)            \
  X(wk_tensor_strides) X(wk_tensor_offset) X(wk_tensor_numel) X(wk_tensor_dtype)       \
  X(wk_tensor_device) X(wk_tensor_is_contiguous) X(wk_tensor_data)                     \
  X(wk_tensor_version) X(wk_tensor_bump_version) X(wk_tensor_same_storage)             \
  X(wk_tensor_storage_nbytes)                                                          \
  X(wk_item) X(wk_item_i64) X(wk_tensor_get) X(wk_tensor_set) X(wk_tensor_to_f64)      \
  X(wk_tensor_to_string) X(wk_print) X(wk_free)                                        \
  X(wk_device_type_register) X(wk_device_type_find) X(wk_device_type_name)             \
  X(wk_device_count) X(wk_device_type_status) X(wk_device_parse) X(wk_device_str)      \
  X(wk_device_equal) X(wk_device_synchronize) X(wk_device_alloc) X(wk_device_free)     \
  X(wk_device_copy)                                                                    \
  X(wk_op_declare) X(wk_op_find) X(wk_op_name) X(wk_op_schema) X(wk_op_tags)            \
  X(wk_op_num_args) X(wk_op_num_outs) X(wk_op_arg_name) X(wk_op_arg_index)             \
  X(wk_op_arg_type) X(wk_op_mutated_arg) X(wk_op_count) X(wk_op_at)                    \
  X(wk_kernel_register) X(wk_kernel_register_unboxed) X(wk_op_num_kernels)             \
  X(wk_op_kernel_info) X(wk_op_call) X(wk_call)                                        \
  X(wk_layer_register) X(wk_layer_find) X(wk_layer_set_enabled) X(wk_layer_exclude)    \
  X(wk_layer_redispatch)                                                               \
  X(wk_init) X(wk_shutdown) X(wk_num_threads) X(wk_set_num_threads)                    \
  X(wk_parallel_for) X(wk_in_parallel)                                                 \
  X(wk_manual_seed) X(wk_rng_reserve) X(wk_rng_get_state) X(wk_rng_set_state)          \
  X(wk_plugin_count) X(wk_plugin_at) X(wk_plugin_find) X(wk_plugin_name)               \
  X(wk_plugin_path) X(wk_plugin_version) X(wk_plugin_description)                      \
  X(wk_plugin_get_status) X(wk_plugin_reason) X(wk_plugin_search_path)                 \
  X(wk_plugin_load) X(wk_service_register) X(wk_service_get) X(wk_service_count)       \
  X(wk_service_info) X(wk_to_dlpack) X(wk_from_dlpack)                                 \
  X(wk_result_type) X(wk_tensor_set_requires_grad) X(wk_tensor_requires_grad)             \
  X(wk_tensor_is_leaf) X(wk_tensor_grad_fn_name) X(wk_tensor_grad) X(wk_tensor_set_grad)   \
  X(wk_tensor_zero_grad) X(wk_tensor_retain_grad) X(wk_detach) X(wk_backward)              \
  X(wk_backward_with) X(wk_grad) X(wk_grad_enabled) X(wk_set_grad_enabled)                 \
  X(wk_no_grad_begin) X(wk_no_grad_end) X(wk_inference_mode_begin) X(wk_inference_mode_end) \
  X(wk_is_inference_tensor) X(wk_tensor_register_hook)                                      \
  X(wk_tensor_register_post_accumulate_grad_hook) X(wk_set_anomaly_enabled) X(wk_anomaly_enabled)    \
  X(wk_backward_saved_arg) X(wk_backward_saved_out) X(wk_backward_arg) X(wk_backward_needs)    \
  X(wk_backward_set_grad) X(wk_op_register_derivative) X(wk_op_call_kernel) X(wk_op_arg_default)          \
  X(wk_state_dict_new) X(wk_state_dict_free) X(wk_state_dict_set) X(wk_state_dict_get)         \
  X(wk_state_dict_remove) X(wk_state_dict_size) X(wk_state_dict_key) X(wk_state_dict_value)    \
  X(wk_state_dict_set_meta) X(wk_state_dict_get_meta) X(wk_state_dict_meta_size)               \
  X(wk_state_dict_meta_key) X(wk_state_dict_meta_value)                                       \
  X(wk_module_new) X(wk_module_retain) X(wk_module_release) X(wk_module_state)                   \
  X(wk_module_class_name) X(wk_module_register_parameter) X(wk_module_register_buffer)           \
  X(wk_module_register_child) X(wk_module_param) X(wk_module_buffer) X(wk_module_child)          \
  X(wk_module_forward) X(wk_module_forward_n) X(wk_module_train) X(wk_module_is_training)        \
  X(wk_module_named_parameters) X(wk_module_named_buffers) X(wk_module_num_parameters)           \
  X(wk_module_zero_grad) X(wk_module_to) X(wk_module_state_dict) X(wk_load_report_clear)         \
  X(wk_module_load_state_dict) X(wk_module_to_string) X(wk_unref)

/* ABI 1.1: devices (current device, properties, streams, events, async copies,
 * pinned memory, memory statistics) */
#define WK_HOST_API_1_1(X)                                                            \
  X(wk_device_current) X(wk_device_set_current) X(wk_device_get_properties)           \
  X(wk_stream_create) X(wk_stream_destroy) X(wk_current_stream) X(wk_set_current_stream) \
  X(wk_stream_synchronize) X(wk_stream_query) X(wk_stream_wait_event)                  \
  X(wk_event_create) X(wk_event_destroy) X(wk_event_record) X(wk_event_synchronize)    \
  X(wk_event_query) X(wk_event_elapsed_time) X(wk_device_copy_async)                   \
  X(wk_pin_memory) X(wk_tensor_is_pinned) X(wk_to_non_blocking)                        \
  X(wk_device_memory_stats) X(wk_device_memory_allocated)                              \
  X(wk_device_max_memory_allocated) X(wk_device_memory_reserved)                       \
  X(wk_device_max_memory_reserved) X(wk_device_reset_peak_memory_stats)                \
  X(wk_device_empty_cache) X(wk_device_memory_summary) X(wk_tensor_storage_id)

/* ABI 1.2: meta functions and the meta device */
#define WK_HOST_API_1_2(X) X(wk_op_set_meta) X(wk_op_has_meta) X(wk_op_meta) \
  X(wk_module_register_forward_pre_hook) X(wk_module_register_forward_hook)                  \
  X(wk_module_remove_hook) X(wk_module_call_stack) X(wk_module_named_children) X(wk_module_summary) \
  X(wk_plugin_abi_version) X(wk_set_default_device) X(wk_default_device) X(wk_module_set_child)

/* ABI 1.3: error scoping (error.h), the allocator hook (tensor.h), graphs, tracing and replay (graph.h), quantized tensors (qtensor.h) */
#define WK_HOST_API_1_3(X) X(wk_error_new_call) X(wk_malloc) X(wk_calloc) X(wk_realloc)                \
  X(wk_graph_new) X(wk_graph_retain) X(wk_graph_release) X(wk_graph_copy) X(wk_graph_add_symbol)    \
  X(wk_graph_num_symbols) X(wk_graph_symbol_name) X(wk_graph_symbol_hint) X(wk_graph_add_input)     \
  X(wk_graph_add_param) X(wk_graph_add_const) X(wk_graph_add_node) X(wk_graph_set_outputs)          \
  X(wk_graph_num_nodes) X(wk_graph_node_at) X(wk_graph_node_op) X(wk_graph_node_module_path)        \
  X(wk_graph_node_num_args) X(wk_graph_node_args) X(wk_graph_node_num_outputs) X(wk_graph_node_output) \
  X(wk_graph_num_values) X(wk_graph_value_kind) X(wk_graph_value_name) X(wk_graph_value_dtype)      \
  X(wk_graph_value_device) X(wk_graph_value_ndim) X(wk_graph_value_dims) X(wk_graph_value_tensor)   \
  X(wk_graph_value_producer) X(wk_graph_value_num_uses) X(wk_graph_num_inputs) X(wk_graph_input)    \
  X(wk_graph_num_outputs) X(wk_graph_output) X(wk_graph_find_param) X(wk_graph_set_param)           \
  X(wk_symdim_str) X(wk_symdim_eval) X(wk_graph_to_string) X(wk_graph_validate)                     \
  X(wk_graph_replace_uses) X(wk_graph_erase_node) X(wk_graph_dce) X(wk_graph_cse)                   \
  X(wk_graph_fold_constants) X(wk_graph_propagate) X(wk_graph_num_guards) X(wk_graph_guard)         \
  X(wk_trace) X(wk_trace_module) X(wk_is_tracing) X(wk_graph_run) X(wk_trace_training) X(wk_autograd_queue_callback) \
  X(wk_dtype_is_quantized) X(wk_dtype_quantized_underlying) X(wk_dtype_qmin) X(wk_dtype_qmax) X(wk_qscheme_name) \
  X(wk_tensor_qscheme) X(wk_q_scale) X(wk_q_zero_point) X(wk_q_per_channel_scales) X(wk_q_per_channel_zero_points) \
  X(wk_q_per_channel_axis) X(wk_make_per_tensor_quantized) X(wk_make_per_channel_quantized) \
  X(wk_activation_checkpoint)

/* ABI 1.4: a parallel runtime supplied by a plugin (runtime.h), full backward hooks on modules (module.h),
   memory formats: channels_last (tensor.h, wk_module_to_memory_format in module.h), wk_module_requires_grad_ */
#define WK_HOST_API_1_4(X) X(wk_set_parallel_runtime) X(wk_parallel_runtime_name) \
  X(wk_module_register_full_backward_hook) X(wk_module_register_full_backward_pre_hook) \
  X(wk_memory_format_name) X(wk_is_contiguous_format) X(wk_suggest_memory_format) X(wk_format_strides) \
  X(wk_empty_format) X(wk_contiguous_format) X(wk_module_to_memory_format) X(wk_module_requires_grad_)

typedef struct wk_host_api {
  size_t struct_size;
  uint32_t abi_version;
#define WK__HOST_SLOT(fn) __typeof__(fn) *fn;
  WK_HOST_API_1_0(WK__HOST_SLOT)
  WK_HOST_API_1_1(WK__HOST_SLOT)
  WK_HOST_API_1_2(WK__HOST_SLOT)
  WK_HOST_API_1_3(WK__HOST_SLOT)
  WK_HOST_API_1_4(WK__HOST_SLOT)
#undef WK__HOST_SLOT
} wk_host_api;

#endif
