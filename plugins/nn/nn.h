/* nn plugin: private declarations shared by its files. Layers are wk_modules
 * built on the standard ops (so autograd works for free); forwards run inside
 * their own scope and hand the result to the caller's (nn_ret). */
#ifndef WICK_NN_PLUGIN_H
#define WICK_NN_PLUGIN_H
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/sdk.h>
#include <wick/nn.h>

/* ---- helpers (plugin.c) ---- */
/* malloc'd printf. */
char *nn_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Python's repr of a float ("0.1", "1e-05", "1.0") into buf (>= 32 bytes). */
const char *nn_pyfloat(double v, char *buf);
/* Copies an options struct of osize bytes into a zeroed struct of size full. */
void nn_opts(void *dst, size_t full, const void *src, size_t osize);
/* Ends the forward's scope, handing y (may be NULL) to the caller. */
wk_tensor *nn_ret(wk_tensor *y);
/* A forward gets exactly `want` inputs, none NULL; else an error naming cls. */
bool nn_check_inputs(const char *cls, wk_tensor *const *in, int n, int want);
/* Registers a fresh tensor (taken) as a parameter / buffer of m. */
wk_status nn_param(wk_module *m, const char *name, wk_tensor *t);
wk_status nn_buffer(wk_module *m, const char *name, wk_tensor *t);
/* Registers child (reference taken) under name. */
wk_status nn_child(wk_module *m, const char *name, wk_module *child);
/* Uniform(-b, b) / Normal(0, std) fills under no_grad. */
wk_status nn_fill_uniform(wk_tensor *t, double lo, double hi);
wk_status nn_fill_normal(wk_tensor *t, double mean, double std);
double nn_opt_or(double v, double dflt); /* 0 -> dflt, -0.0 -> 0 */
/* wk_module_new(cls, state) for a state from wk_malloc (freed with wk_free):
 * NULL state (out of memory) or a failed wk_module_new give NULL with the
 * error recorded, and the state is freed (wk_module_new leaves it to us). */
wk_module *nn_module_new(const wk_module_class *cls, void *state);

/* ---- layers.c ---- */
wk_module *nn_linear(int64_t in, int64_t out, bool bias);
wk_module *nn_activation(int kind, double arg);
wk_module *nn_relu_inplace(void); /* ReLU(inplace=True) for the zoo (computed out of place) */
wk_module *nn_flatten(int64_t start_dim, int64_t end_dim);
wk_module *nn_embedding(int64_t num, int64_t dim, const wk_embedding_opts *o, size_t osize);
wk_module *nn_sequential(wk_module *const *mods, int n);
wk_module *nn_module_list(wk_module *const *mods, int n);
wk_module *nn_module_dict(const char *const *names, wk_module *const *mods, int n);
wk_status nn_append(wk_module *container, const char *name, wk_module *mod);

/* ---- conv.c ---- */
wk_module *nn_conv2d(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize);
wk_module *nn_conv1d(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize);
wk_module *nn_conv_transpose2d(int64_t in, int64_t out, int64_t k, const wk_conv2d_opts *o, size_t osize);
wk_module *nn_max_pool2d(int64_t k, const wk_pool2d_opts *o, size_t osize);
wk_module *nn_avg_pool2d(int64_t k, const wk_pool2d_opts *o, size_t osize);
wk_module *nn_adaptive_avg_pool2d(int64_t oh, int64_t ow);

/* ---- norm.c ---- */
wk_module *nn_batch_norm(int dims, int64_t num_features, const wk_norm_opts *o, size_t osize);
wk_module *nn_layer_norm(const int64_t *shape, int nd, const wk_norm_opts *o, size_t osize);
wk_module *nn_group_norm(int64_t groups, int64_t channels, const wk_norm_opts *o, size_t osize);

/* ---- loss.c ---- */
wk_module *nn_loss_module(int kind, const wk_loss_opts *o, size_t osize);
wk_tensor *nn_loss(int kind, wk_tensor *input, wk_tensor *target, const wk_loss_opts *o, size_t osize);

/* ---- init.c ---- */
wk_status nn_init(int kind, wk_tensor *t, const wk_init_opts *o, size_t osize);
double nn_calculate_gain(const char *nonlinearity, double param);
/* PyTorch's default init of a Linear/Conv weight [out, in/g, ...] and bias. */
wk_status nn_init_default_weight_bias(wk_tensor *w, wk_tensor *b);

/* ---- attention.c ---- */
wk_module *nn_multihead_attention(int64_t embed_dim, int64_t num_heads, const wk_mha_opts *o, size_t osize);
wk_tensor *nn_mha_forward(wk_module *mha, wk_tensor *query, wk_tensor *key, wk_tensor *value, const wk_attn_masks *m,
                          size_t msize, wk_tensor **attn_weights);
wk_module *nn_transformer_layer(bool decoder, int64_t d_model, int64_t nhead, const wk_transformer_opts *o,
                                size_t osize);
wk_module *nn_transformer_encoder(wk_module *encoder_layer, int64_t num_layers, wk_module *norm);
wk_module *nn_transformer_decoder(wk_module *decoder_layer, int64_t num_layers, wk_module *norm);
wk_module *nn_transformer(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers,
                          const wk_transformer_opts *o, size_t osize);
wk_tensor *nn_transformer_model_forward(wk_module *m, wk_tensor *src, wk_tensor *tgt, const wk_attn_masks *masks,
                                        size_t msize);
wk_tensor *nn_transformer_forward(wk_module *m, wk_tensor *x, wk_tensor *memory, const wk_attn_masks *masks,
                                  size_t msize);
wk_module *nn_positional_encoding(int64_t d_model, int64_t max_len, double dropout, bool batch_first);

/* ---- rnn.c ---- */
wk_module *nn_rnn(int kind, int64_t input_size, int64_t hidden_size, const wk_rnn_opts *o, size_t osize);
wk_tensor *nn_rnn_forward(wk_module *rnn, wk_tensor *input, wk_tensor *h0, wk_tensor *c0, wk_tensor *lengths,
                          wk_tensor **h_n, wk_tensor **c_n);

/* ---- zoo.c ---- */
wk_module *nn_mlp(int64_t in, const int64_t *hidden, int nh, int64_t out);
wk_module *nn_lenet(void);
wk_module *nn_resnet(int depth, const wk_resnet_opts *o, size_t osize);

#endif
