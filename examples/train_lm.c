/* The second real job: a character-level Transformer language model (GPT-style,
 * decoder-only: token and position embeddings, pre-norm TransformerEncoder
 * layers under a causal mask, a final LayerNorm and a linear head) trained on
 * real English text that a Debian package ships, then sampled from.
 *
 *   train_lm [--data PATH] [--steps 300] [--batch-size 32] [--block 128] [--d-model 128]
 *            [--heads 4] [--layers 4] [--ff 0] [--dropout 0] [--lr 2e-3] [--clip 1.0]
 *            [--seed 0] [--log-every 25] [--eval-every 100] [--eval-batches 16]
 *            [--sample 300] [--prompt TEXT] [--temperature 0.8]
 *            [--save-init PATH] [--init PATH] [--save PATH] [--bench]
 *
 * --data is a file or a directory (every regular file in it, by name, except
 * fortune's *.dat indexes and symlinks, concatenated). The default is
 * /usr/share/games/fortunes from Debian's `fortunes` package (about 2.6 MB of
 * quotations, poems and jokes; scripts/install-deps installs it). Tokens are
 * bytes: the vocabulary is the distinct bytes of the text, in byte order.
 * The first 90% is the training split, the rest the validation split. Batches
 * are windows at offsets drawn by splitmix64 from --seed, so bench/lm.py (the
 * same model in PyTorch) sees exactly the same batches; --save-init writes the
 * initial weights (safetensors, PyTorch's state-dict keys) that bench/lm.py
 * --init loads, so the two loss curves can be compared step by step.
 * Optimiser: AdamW (betas 0.9/0.999, weight decay 0.01), gradient norm
 * clipped to --clip. Loss is the mean cross-entropy in nats; bits per
 * character = loss / ln 2. Throughput is tokens (batch x block) per second of
 * the median training step. --bench also prints key/value lines for bench/run. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <wick/io.h>
#include <wick/nn.h>
#include <wick/optim.h>
#include <wick/wick.h>

#define LM_DEFAULT_DATA "/usr/share/games/fortunes"

typedef struct {
  const char *data, *prompt, *save_init, *init, *save;
  int64_t steps, batch, block, d_model, heads, layers, ff, log_every, eval_every, eval_batches, sample;
  double dropout, lr, clip, temperature;
  uint64_t seed;
  bool bench;
} lm_config;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const char *what) {
  fprintf(stderr, "train_lm: %s: %s\n", what, wk_last_error_message());
  return 1;
}

/* splitmix64: the batch offsets and the sampler (bench/lm.py has the same). */
static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ---- the text ---- */
typedef struct {
  unsigned char *bytes;
  size_t n;
} text_buf;

static bool append_file(text_buf *t, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "train_lm: cannot open %s\n", path);
    return false;
  }
  bool ok = fseek(f, 0, SEEK_END) == 0;
  long len = ok ? ftell(f) : -1;
  ok = ok && len >= 0 && fseek(f, 0, SEEK_SET) == 0;
  unsigned char *nb = ok ? realloc(t->bytes, t->n + (size_t)len + 1) : NULL;
  if (nb) t->bytes = nb;
  ok = nb && fread(t->bytes + t->n, 1, (size_t)len, f) == (size_t)len;
  fclose(f);
  if (!ok) {
    fprintf(stderr, "train_lm: cannot read %s\n", path);
    return false;
  }
  t->n += (size_t)len;
  return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A file, or a directory's regular files by name (not *.dat, not symlinks). */
static bool load_text(const char *path, text_buf *t) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "train_lm: %s not found (install Debian's fortunes package: scripts/install-deps)\n", path);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) return append_file(t, path);
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "train_lm: cannot list %s\n", path);
    return false;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  bool ok = true;
  struct dirent *e;
  while (ok && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || (len > 4 && !strcmp(e->d_name + len - 4, ".dat"))) continue;
    char *full = malloc(strlen(path) + len + 2);
    if (!full) {
      ok = false;
      break;
    }
    sprintf(full, "%s/%s", path, e->d_name);
    struct stat ls;
    if (lstat(full, &ls) != 0 || !S_ISREG(ls.st_mode)) {
      free(full);
      continue;
    }
    if (n == cap) {
      char **nn = realloc(names, sizeof *nn * (cap = cap ? 2 * cap : 64));
      if (!nn) {
        free(full);
        ok = false;
        break;
      }
      names = nn;
    }
    names[n++] = full;
  }
  closedir(d);
  if (ok && n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    if (ok) ok = append_file(t, names[i]);
    free(names[i]);
  }
  free(names);
  if (ok && t->n == 0) {
    fprintf(stderr, "train_lm: no text in %s\n", path);
    ok = false;
  }
  return ok;
}

/* ---- the model (bench/lm.py's CharTransformer) ---- */
typedef struct {
  int64_t block;
} lm_state;

/* idx (B, T) int64 -> logits (B, T, V). */
static wk_tensor *lm_forward(wk_module *self, wk_tensor *const *in, int n) {
  const lm_state *s = wk_module_state(self);
  if (n != 1 || !in[0] || wk_tensor_dim(in[0]) != 2 || wk_tensor_size(in[0], 1) > s->block) {
    wk_error(WK_ERR_SHAPE, "CharTransformer: expected one (batch, time) index tensor with time <= %lld",
             (long long)s->block);
    return NULL;
  }
  int64_t T = wk_tensor_size(in[0], 1);
  wk_scope_begin();
  /* the causal mask: -inf above the diagonal (nn.Transformer.generate_square_subsequent_mask) */
  float *mask = malloc(sizeof(float) * (size_t)(T * T));
  wk_tensor *am = NULL;
  if (mask) {
    for (int64_t i = 0; i < T; i++)
      for (int64_t j = 0; j < T; j++) mask[i * T + j] = j > i ? -INFINITY : 0.0f;
    am = wk_tensor_from_data(mask, WK_F32, WK_SHAPE(T, T));
    free(mask);
  } else {
    wk_error(WK_ERR_NO_MEMORY, "CharTransformer: out of memory");
  }
  wk_tensor *pos = wk_arange_int(0, T, 1, (wk_options){.dtype = WK_I64});
  wk_tensor *x = wk_add(wk_module_forward(wk_module_child(self, "tok_emb"), in[0]),
                        wk_module_forward(wk_module_child(self, "pos_emb"), pos));
  wk_tensor *h = am ? wk_nn_transformer_forward(wk_module_child(self, "encoder"), x, NULL,
                                                &(wk_attn_masks){.attn_mask = am})
                    : NULL;
  wk_tensor *y = wk_module_forward(wk_module_child(self, "head"), h);
  wk_scope_escape(y);
  wk_scope_end();
  return y;
}

static const wk_module_class LM = {sizeof(wk_module_class), "CharTransformer", lm_forward, free, NULL};

static wk_module *lm_model(const lm_config *c, int64_t vocab) {
  lm_state *s = malloc(sizeof *s);
  if (!s) {
    wk_error(WK_ERR_NO_MEMORY, "CharTransformer: out of memory");
    return NULL;
  }
  s->block = c->block;
  wk_module *m = wk_module_new(&LM, s);
  if (!m) {
    free(s);
    return NULL;
  }
  wk_transformer_opts to = {.dim_feedforward = c->ff ? c->ff : 4 * c->d_model,
                            .dropout = c->dropout > 0 ? c->dropout : WK_NN_ZERO,
                            .activation = "gelu",
                            .batch_first = true,
                            .norm_first = true};
  wk_module *layer = wk_nn_transformer_encoder_layer(c->d_model, c->heads, to);
  wk_module *kids[4] = {wk_nn_embedding(vocab, c->d_model, (wk_embedding_opts){0}),
                        wk_nn_embedding(c->block, c->d_model, (wk_embedding_opts){0}),
                        layer ? wk_nn_transformer_encoder(layer, c->layers,
                                                          wk_nn_layer_norm(&c->d_model, 1, (wk_norm_opts){0}))
                              : NULL,
                        wk_nn_linear(c->d_model, vocab, true)};
  static const char *const names[4] = {"tok_emb", "pos_emb", "encoder", "head"};
  wk_module_release(layer);
  bool ok = true;
  for (int i = 0; i < 4; i++) {
    if (ok && (!kids[i] || wk_module_register_child(m, names[i], kids[i]))) ok = false;
    wk_module_release(kids[i]);
  }
  if (!ok) {
    wk_module_release(m);
    return NULL;
  }
  return m;
}

/* ---- batches ---- */
/* B windows of T + 1 tokens from ids[lo, hi) at splitmix64 offsets: x (B, T), y shifted by one. */
static bool make_batch(const int64_t *ids, size_t lo, size_t hi, int64_t B, int64_t T, uint64_t *rng, wk_tensor **x,
                       wk_tensor **y) {
  int64_t *bx = malloc(sizeof(int64_t) * (size_t)(B * T)), *by = malloc(sizeof(int64_t) * (size_t)(B * T));
  if (!bx || !by) {
    free(bx);
    free(by);
    wk_error(WK_ERR_NO_MEMORY, "train_lm: out of memory for a batch");
    return false;
  }
  uint64_t span = (uint64_t)(hi - lo) - (uint64_t)T;
  for (int64_t b = 0; b < B; b++) {
    size_t off = lo + (size_t)(splitmix64(rng) % span);
    memcpy(bx + b * T, ids + off, sizeof(int64_t) * (size_t)T);
    memcpy(by + b * T, ids + off + 1, sizeof(int64_t) * (size_t)T);
  }
  *x = wk_tensor_from_data(bx, WK_I64, WK_SHAPE(B, T));
  *y = wk_tensor_from_data(by, WK_I64, WK_SHAPE(B * T));
  free(bx);
  free(by);
  return *x && *y;
}

/* Mean cross-entropy of the model on (x, y); a new reference in the current scope. */
static wk_tensor *lm_loss(wk_module *m, wk_tensor *x, wk_tensor *y, int64_t vocab) {
  wk_tensor *logits = wk_module_forward(m, x);
  return wk_cross_entropy(wk_reshape(logits, WK_SHAPE(-1, vocab)), y);
}

/* Mean validation loss over eval_batches fixed batches (the same every call). */
static bool evaluate(wk_module *m, const lm_config *c, const int64_t *ids, size_t lo, size_t hi, int64_t vocab,
                     double *out) {
  uint64_t rng = c->seed ^ 0x5EED5EED5EED5EEDull;
  double sum = 0;
  wk_module_train(m, false);
  wk_no_grad_begin();
  bool ok = true;
  for (int64_t i = 0; i < c->eval_batches && ok; i++) {
    wk_scope_begin();
    wk_tensor *x = NULL, *y = NULL;
    double v;
    ok = make_batch(ids, lo, hi, c->batch, c->block, &rng, &x, &y) && !wk_item(lm_loss(m, x, y, vocab), &v);
    sum += ok ? v : 0;
    wk_scope_end();
  }
  wk_no_grad_end();
  wk_module_train(m, true);
  *out = sum / (double)c->eval_batches;
  return ok;
}

/* Samples n bytes after the prompt (temperature-scaled softmax of the last
 * position's logits, on the last `block` tokens) and prints them. */
static bool sample(wk_module *m, const lm_config *c, const unsigned char *itos, const int *stoi, int64_t vocab) {
  size_t cap = strlen(c->prompt) + (size_t)c->sample + 1, len = 0;
  int64_t *ctx = malloc(sizeof(int64_t) * cap);
  double *logits = malloc(sizeof(double) * (size_t)vocab);
  char *out = malloc(cap + 1);
  if (!ctx || !logits || !out) {
    free(ctx);
    free(logits);
    free(out);
    wk_error(WK_ERR_NO_MEMORY, "train_lm: out of memory for sampling");
    return false;
  }
  size_t olen = 0;
  for (const unsigned char *p = (const unsigned char *)c->prompt; *p; p++)
    if (stoi[*p] >= 0) {
      ctx[len++] = stoi[*p];
      out[olen++] = (char)*p;
    }
  if (len == 0) ctx[len++] = stoi['\n'] >= 0 ? stoi['\n'] : 0;
  uint64_t rng = c->seed ^ 0xC0FFEEull;
  bool ok = true;
  wk_module_train(m, false);
  wk_no_grad_begin();
  for (int64_t i = 0; i < c->sample && ok; i++) {
    size_t t = len < (size_t)c->block ? len : (size_t)c->block;
    wk_scope_begin();
    wk_tensor *x = wk_tensor_from_data(ctx + len - t, WK_I64, WK_SHAPE(1, (int64_t)t));
    wk_tensor *last = wk_select(wk_select(wk_module_forward(m, x), 0, 0), 0, (int64_t)t - 1);
    ok = last && !wk_tensor_to_f64(last, logits, vocab);
    wk_scope_end();
    if (!ok) break;
    double mx = -INFINITY, z = 0;
    for (int64_t v = 0; v < vocab; v++) mx = fmax(mx, logits[v]);
    for (int64_t v = 0; v < vocab; v++) z += logits[v] = exp((logits[v] - mx) / c->temperature);
    double u = (double)(splitmix64(&rng) >> 11) * 0x1.0p-53 * z;
    int64_t pick = vocab - 1;
    for (int64_t v = 0; v < vocab; v++)
      if ((u -= logits[v]) < 0) {
        pick = v;
        break;
      }
    ctx[len++] = pick;
    out[olen++] = (char)itos[pick];
  }
  wk_no_grad_end();
  wk_module_train(m, true);
  out[olen] = 0;
  if (ok) printf("---- sample (temperature %g) ----\n%s\n---- end of sample ----\n", c->temperature, out);
  free(ctx);
  free(logits);
  free(out);
  return ok;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int usage(void) {
  fprintf(stderr,
          "usage: train_lm [--data PATH] [--steps N] [--batch-size N] [--block N] [--d-model N] [--heads N]\n"
          "                [--layers N] [--ff N] [--dropout X] [--lr X] [--clip X] [--seed N] [--log-every N]\n"
          "                [--eval-every N] [--eval-batches N] [--sample N] [--prompt TEXT] [--temperature X]\n"
          "                [--save-init PATH] [--init PATH] [--save PATH] [--bench]\n"
          "defaults: %s, 300 steps, batch 32, block 128, d_model 128, 4 heads, 4 layers, ff 4 x d_model,\n"
          "          AdamW lr 2e-3, clip 1.0\n",
          LM_DEFAULT_DATA);
  return 2;
}

static bool parse(int argc, char **argv, lm_config *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return false;
    if (!strcmp(a, "--bench")) {
      c->bench = true;
      continue;
    }
    if (!v) {
      fprintf(stderr, "train_lm: option %s needs a value\n", a);
      return false;
    }
    char *end = NULL;
    static const struct {
      const char *name;
      size_t off;
    } ints[] = {{"--steps", offsetof(lm_config, steps)},           {"--batch-size", offsetof(lm_config, batch)},
                {"--block", offsetof(lm_config, block)},           {"--d-model", offsetof(lm_config, d_model)},
                {"--heads", offsetof(lm_config, heads)},           {"--layers", offsetof(lm_config, layers)},
                {"--ff", offsetof(lm_config, ff)},                 {"--log-every", offsetof(lm_config, log_every)},
                {"--eval-every", offsetof(lm_config, eval_every)}, {"--eval-batches", offsetof(lm_config, eval_batches)},
                {"--sample", offsetof(lm_config, sample)}};
    static const struct {
      const char *name;
      size_t off;
    } dbls[] = {{"--dropout", offsetof(lm_config, dropout)},
                {"--lr", offsetof(lm_config, lr)},
                {"--clip", offsetof(lm_config, clip)},
                {"--temperature", offsetof(lm_config, temperature)}};
    bool found = false;
    for (size_t k = 0; k < sizeof ints / sizeof *ints && !found; k++)
      if (!strcmp(a, ints[k].name)) {
        *(int64_t *)((char *)c + ints[k].off) = strtoll(v, &end, 10);
        found = true;
      }
    for (size_t k = 0; k < sizeof dbls / sizeof *dbls && !found; k++)
      if (!strcmp(a, dbls[k].name)) {
        *(double *)((char *)c + dbls[k].off) = strtod(v, &end);
        found = true;
      }
    if (found) {
    } else if (!strcmp(a, "--data")) c->data = v;
    else if (!strcmp(a, "--prompt")) c->prompt = v;
    else if (!strcmp(a, "--save-init")) c->save_init = v;
    else if (!strcmp(a, "--init")) c->init = v;
    else if (!strcmp(a, "--save")) c->save = v;
    else if (!strcmp(a, "--seed")) c->seed = strtoull(v, &end, 10);
    else {
      fprintf(stderr, "train_lm: unknown option %s\n", a);
      return false;
    }
    if (end && *end) {
      fprintf(stderr, "train_lm: %s: '%s' is not a number\n", a, v);
      return false;
    }
    i++;
  }
  if (c->steps < 1 || c->batch < 1 || c->block < 2 || c->d_model < 1 || c->heads < 1 || c->layers < 1 ||
      c->ff < 0 || c->log_every < 1 || c->eval_every < 1 || c->eval_batches < 1 || c->sample < 0 ||
      !(c->lr > 0) || !(c->clip >= 0) || !(c->temperature > 0) || !(c->dropout >= 0 && c->dropout < 1)) {
    fprintf(stderr, "train_lm: steps, batch, block (>= 2), sizes, log/eval intervals and lr must be positive, "
                    "temperature > 0, clip >= 0, dropout in [0, 1)\n");
    return false;
  }
  if (c->d_model % c->heads) {
    fprintf(stderr, "train_lm: --d-model %lld is not divisible by --heads %lld\n", (long long)c->d_model,
            (long long)c->heads);
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  lm_config c = {.data = LM_DEFAULT_DATA, .prompt = "The ", .steps = 300, .batch = 32, .block = 128,
                 .d_model = 128, .heads = 4, .layers = 4, .log_every = 25, .eval_every = 100, .eval_batches = 16,
                 .sample = 300, .lr = 2e-3, .clip = 1.0, .temperature = 0.8};
  if (!parse(argc, argv, &c)) return usage();
  text_buf text = {0};
  if (!load_text(c.data, &text)) return 1;
  /* the vocabulary: the distinct bytes, in byte order */
  int stoi[256];
  unsigned char itos[256];
  int64_t vocab = 0;
  bool seen[256] = {0};
  for (size_t i = 0; i < text.n; i++) seen[text.bytes[i]] = true;
  for (int b = 0; b < 256; b++) {
    stoi[b] = seen[b] ? (int)vocab : -1;
    if (seen[b]) itos[vocab++] = (unsigned char)b;
  }
  size_t n_train = text.n * 9 / 10;
  if (n_train <= (size_t)c.block + 1 || text.n - n_train <= (size_t)c.block + 1) {
    fprintf(stderr, "train_lm: %s has %zu bytes: too little for --block %lld\n", c.data, text.n, (long long)c.block);
    free(text.bytes);
    return 1;
  }
  int64_t *ids = malloc(sizeof(int64_t) * text.n);
  if (!ids) {
    free(text.bytes);
    fprintf(stderr, "train_lm: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < text.n; i++) ids[i] = stoi[text.bytes[i]];
  free(text.bytes);

  if (wk_init() != WK_OK) return die("init");
  wk_manual_seed(c.seed);
  wk_module *model = lm_model(&c, vocab);
  if (!model) return die("model");
  if (c.init) {
    wk_state_dict *sd = NULL;
    if (wk_load_safetensors(c.init, &sd, NULL) || wk_module_load_state_dict(model, sd, true, NULL)) return die(c.init);
    wk_state_dict_free(sd);
  }
  if (c.save_init) {
    wk_state_dict *sd = wk_module_state_dict(model);
    if (!sd || wk_save_safetensors(sd, c.save_init)) return die(c.save_init);
    wk_state_dict_free(sd);
  }
  int np = wk_module_named_parameters(model, NULL, NULL, 0);
  wk_tensor **ps = malloc(sizeof *ps * (size_t)np);
  if (!ps) return die("parameters");
  wk_module_named_parameters(model, NULL, ps, np);
  wk_optimizer *opt = wk_optim_adamw(ps, np, (wk_adam_opts){.lr = c.lr});
  if (!opt) return die("optimizer");
  printf("text: %s, %zu bytes (train %zu, val %zu), vocabulary %lld\n", c.data, text.n, n_train, text.n - n_train,
         (long long)vocab);
  printf("model: CharTransformer d_model %lld, %lld heads, %lld layers, ff %lld, block %lld: %lld parameters\n",
         (long long)c.d_model, (long long)c.heads, (long long)c.layers, (long long)(c.ff ? c.ff : 4 * c.d_model),
         (long long)c.block, (long long)wk_module_num_parameters(model, false));
  printf("training: %lld steps of %lld x %lld tokens, AdamW lr %g, clip %g, dropout %g, seed %llu\n",
         (long long)c.steps, (long long)c.batch, (long long)c.block, c.lr, c.clip, c.dropout,
         (unsigned long long)c.seed);
  fflush(stdout);

  double *times = malloc(sizeof(double) * (size_t)c.steps);
  if (!times) return die("timings");
  uint64_t rng = c.seed;
  double run_loss = 0, t_start = now(), val = NAN;
  int64_t run_n = 0;
  for (int64_t step = 1; step <= c.steps; step++) {
    double t0 = now(), lv = NAN;
    wk_scope_begin();
    wk_tensor *x = NULL, *y = NULL;
    bool ok = make_batch(ids, 0, n_train, c.batch, c.block, &rng, &x, &y);
    wk_tensor *loss = ok ? lm_loss(model, x, y, vocab) : NULL;
    ok = loss && !wk_backward(loss) && (c.clip == 0 || wk_clip_grad_norm_(ps, np, c.clip, 2.0, false)) &&
         !wk_optim_step(opt) && !wk_optim_zero_grad(opt, true) && !wk_item(loss, &lv);
    wk_scope_end();
    if (!ok) return die("training step");
    times[step - 1] = now() - t0;
    run_loss += lv;
    run_n++;
    if (step % c.log_every == 0 || step == c.steps || step == 1) {
      double tok_s = (double)(c.batch * c.block) / times[step - 1];
      printf("step %lld: loss %.4f (%.3f bits/char) | %.0f tok/s\n", (long long)step, run_loss / (double)run_n,
             run_loss / (double)run_n / M_LN2, tok_s);
      run_loss = 0;
      run_n = 0;
      fflush(stdout);
    }
    if (step % c.eval_every == 0 || step == c.steps) {
      if (!evaluate(model, &c, ids, n_train, text.n, vocab, &val)) return die("evaluation");
      printf("step %lld: val loss %.4f (%.3f bits/char)\n", (long long)step, val, val / M_LN2);
      fflush(stdout);
    }
  }
  double wall = now() - t_start;
  qsort(times, (size_t)c.steps, sizeof *times, cmp_dbl);
  double med = times[c.steps / 2], tok_s = (double)(c.batch * c.block) / med;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("final: val loss %.4f, %.3f bits/char | %.0f tok/s (median step %.1f ms) | %.1f s in all | peak RSS %.0f MB\n",
         val, val / M_LN2, tok_s, med * 1e3, wall, (double)ru.ru_maxrss / 1024.0);
  if (c.bench) {
    printf("lm_train_tok_s %.1f\n", tok_s);
    printf("lm_final_val_loss %.4f\n", val);
    printf("lm_final_val_bpc %.4f\n", val / M_LN2);
    printf("lm_peak_rss_mb %.1f\n", (double)ru.ru_maxrss / 1024.0);
  }
  if (c.save) {
    wk_state_dict *sd = wk_module_state_dict(model);
    if (!sd || wk_save_safetensors(sd, c.save)) return die(c.save);
    wk_state_dict_free(sd);
  }
  if (c.sample > 0 && !sample(model, &c, itos, stoi, vocab)) return die("sampling");
  free(times);
  free(ids);
  free(ps);
  wk_optimizer_free(opt);
  wk_module_release(model);
  wk_shutdown();
  return 0;
}
