/* check_data: the data service: datasets, IDX/CIFAR readers (generated files,
 * corrupt ones, the real Fashion-MNIST when installed), the DataLoader
 * (ordering, determinism across workers, shuffling, errors, early close),
 * transforms, samplers, gzip bombs and malformed gzip streams, and a fuzz
 * loop over mutated IDX headers. */
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <wick/data.h>

#include "testutil.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

static char g_dir[256];
static void dir_setup(void) {
  tu_setup();
  snprintf(g_dir, sizeof g_dir, "/tmp/check_data_%d", (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
  ck_assert_int_eq(system(cmd), 0);
}
static void dir_teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", g_dir);
}
static const char *path_of(const char *name) {
  static char p[4][320];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
  return p[k];
}

/* ---- File writers: raw bytes, gzip (stored deflate blocks, CRC-32 by hand) ----------------------- */
static void write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}
static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}
/* gzip bytes of p[0..n) into a malloc'd buffer (*out_n bytes). */
static uint8_t *gzip_of(const uint8_t *p, size_t n, size_t *out_n) {
  size_t blocks = n / 65535 + 1, cap = 18 + n + 5 * blocks, k = 0;
  uint8_t *o = malloc(cap);
  const uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  memcpy(o, hdr, 10);
  k = 10;
  size_t off = 0;
  do {
    size_t m = n - off > 65535 ? 65535 : n - off;
    o[k++] = off + m == n ? 1 : 0;
    o[k++] = (uint8_t)m, o[k++] = (uint8_t)(m >> 8), o[k++] = (uint8_t)~m, o[k++] = (uint8_t)(~m >> 8);
    memcpy(o + k, p + off, m);
    k += m;
    off += m;
  } while (off < n);
  uint32_t c = crc32_of(p, n);
  for (int i = 0; i < 4; i++) o[k++] = (uint8_t)(c >> (8 * i));
  for (int i = 0; i < 4; i++) o[k++] = (uint8_t)(n >> (8 * i));
  *out_n = k;
  return o;
}
/* An IDX file of unsigned bytes: dims[0..nd), then data. Returns its bytes. */
static uint8_t *idx_bytes(int nd, const uint32_t *dims, const uint8_t *data, size_t *n) {
  size_t cnt = 1;
  for (int d = 0; d < nd; d++) cnt *= dims[d];
  *n = 4 + 4 * (size_t)nd + cnt;
  uint8_t *b = malloc(*n);
  b[0] = b[1] = 0, b[2] = 8, b[3] = (uint8_t)nd;
  for (int d = 0; d < nd; d++)
    for (int k = 0; k < 4; k++) b[4 + 4 * d + k] = (uint8_t)(dims[d] >> (24 - 8 * k));
  memcpy(b + 4 + 4 * nd, data, cnt);
  return b;
}
/* A small MNIST pair: N images H x W with pixel (i, r, c) = i*7 + r*W + c, labels i % 10. */
enum { N = 25, H = 4, W = 3 };
static void write_mnist(const char *img, const char *lbl, bool gz) {
  uint8_t px[N * H * W], lb[N];
  for (int i = 0; i < N * H * W; i++) px[i] = (uint8_t)((i / (H * W)) * 7 + i % (H * W));
  for (int i = 0; i < N; i++) lb[i] = (uint8_t)(i % 10);
  size_t ni, nl, gi, gl;
  uint8_t *bi = idx_bytes(3, (uint32_t[]){N, H, W}, px, &ni), *bl = idx_bytes(1, (uint32_t[]){N}, lb, &nl);
  if (gz) {
    uint8_t *zi = gzip_of(bi, ni, &gi), *zl = gzip_of(bl, nl, &gl);
    write_bytes(img, zi, gi);
    write_bytes(lbl, zl, gl);
    free(zi);
    free(zl);
  } else {
    write_bytes(img, bi, ni);
    write_bytes(lbl, bl, nl);
  }
  free(bi);
  free(bl);
}

static double item(wk_tensor *t) {
  double v = NAN;
  TU_OK(wk_item(t, &v));
  return v;
}

/* ---- Service, TensorDataset, Subset, Concat, random_split, user datasets ---------------------------- */
START_TEST(test_data_service) {
  const wk_data_iface *d = wk_service_get(WK_DATA_SERVICE, WK_DATA_SERVICE_VERSION);
  TU_NOTNULL(d);
  ck_assert_uint_eq(d->struct_size, sizeof(wk_data_iface));
  ck_assert_ptr_null(wk_service_get(WK_DATA_SERVICE, WK_DATA_SERVICE_VERSION + 1));
  TU_FAILS_WITH(WK_ERR_NOT_FOUND, "data");
}
END_TEST

START_TEST(test_data_tensor_dataset) {
  int64_t live = wk_live_tensors();
  wk_tensor *x = wk_arange(0, 30, 1, WK_OPTS(.dtype = WK_F32)), *x2 = wk_reshape(x, WK_SHAPE(10, 3));
  wk_tensor *y = wk_arange_int(100, 110, 1, WK_OPTS(.dtype = WK_I64));
  wk_dataset *ds = wk_tensor_dataset((wk_tensor *[]){x2, y}, 2);
  TU_NOTNULL(ds);
  ck_assert_int_eq(wk_dataset_len(ds), 10);
  wk_sample s;
  TU_OK(wk_dataset_get(ds, 3, NULL, &s));
  ck_assert_int_eq(s.n, 2);
  TU_EQ_VALS(s.t[0], 9, 10, 11);
  ck_assert_double_eq(item(s.t[1]), 103);
  wk_sample_clear(&s);
  TU_OK(wk_dataset_get(ds, -1, NULL, &s));
  ck_assert_double_eq(item(s.t[1]), 109);
  wk_sample_clear(&s);
  ck_assert_int_eq(wk_dataset_get(ds, 10, NULL, &s), WK_ERR_INDEX);
  ck_assert_int_eq(s.n, 0);
  TU_FAILS_WITH(WK_ERR_INDEX, "index 10 is out of range for a dataset of 10 samples");
  wk_tensor *bad = wk_zeros(WK_SHAPE(9), WK_OPTS());
  ck_assert_ptr_null(wk_tensor_dataset((wk_tensor *[]){x2, bad}, 2));
  TU_FAILS_WITH(WK_ERR_SHAPE, "size mismatch between tensors");
  /* Subset and Concat */
  wk_dataset *sub = wk_subset(ds, (int64_t[]){7, -10, 2}, 3);
  TU_NOTNULL(sub);
  ck_assert_ptr_null(wk_subset(ds, (int64_t[]){10}, 1));
  TU_FAILS_WITH(WK_ERR_INDEX, "index 10 (position 0) is out of range");
  wk_dataset *cat = wk_concat_dataset((wk_dataset *[]){sub, ds}, 2);
  ck_assert_int_eq(wk_dataset_len(cat), 13);
  const double want[] = {107, 100, 102, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109};
  for (int i = 0; i < 13; i++) {
    TU_OK(wk_dataset_get(cat, i, NULL, &s));
    ck_assert_double_eq(item(s.t[1]), want[i]);
    wk_sample_clear(&s);
  }
  /* random_split: a seeded partition */
  wk_dataset *parts[3], *again[3];
  TU_OK(wk_random_split(ds, (int64_t[]){5, 3, 2}, 3, 42, parts));
  TU_OK(wk_random_split(ds, (int64_t[]){5, 3, 2}, 3, 42, again));
  int seen[10] = {0};
  for (int p = 0; p < 3; p++)
    for (int64_t i = 0; i < wk_dataset_len(parts[p]); i++) {
      wk_sample a, b;
      TU_OK(wk_dataset_get(parts[p], i, NULL, &a));
      TU_OK(wk_dataset_get(again[p], i, NULL, &b));
      ck_assert_double_eq(item(a.t[1]), item(b.t[1]));
      seen[(int)item(a.t[1]) - 100]++;
      wk_sample_clear(&a);
      wk_sample_clear(&b);
    }
  for (int i = 0; i < 10; i++) ck_assert_int_eq(seen[i], 1);
  wk_dataset *none[2];
  ck_assert_int_eq(wk_random_split(ds, (int64_t[]){5, 3}, 2, 1, none), WK_ERR_INVALID_ARG);
  ck_assert(!none[0] && !none[1]);
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "sum of input lengths (8) does not equal the length of the input dataset (10)");
  for (int p = 0; p < 3; p++) wk_dataset_free(parts[p]), wk_dataset_free(again[p]);
  wk_release(x), wk_release(x2), wk_release(y), wk_release(bad);
  wk_dataset_free(ds); /* sub and cat still hold it */
  TU_OK(wk_dataset_get(sub, 0, NULL, &s));
  ck_assert_double_eq(item(s.t[1]), 107);
  wk_sample_clear(&s);
  wk_dataset_free(cat);
  wk_dataset_free(sub);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* A user dataset: sample i = (float [2] of values drawn from the sample's
 * stream, int64 i); fails at index `fail_at`; counts frees. */
typedef struct {
  int64_t n, fail_at;
  int freed;
  int delay_us;
} user_ds;
static int64_t user_len(void *p) { return ((user_ds *)p)->n; }
static wk_status user_get(void *p, int64_t i, const wk_sample_ctx *ctx, wk_sample *out) {
  user_ds *u = p;
  if (u->delay_us) usleep((useconds_t)u->delay_us);
  if (i == u->fail_at) return wk_error(WK_ERR_IO, "user_get: record %lld is unreadable", (long long)i);
  uint64_t s = ctx->seed | 1;
  out->t[0] = wk_empty(WK_SHAPE(2), WK_OPTS());
  if (!out->t[0]) return wk_last_error(); /* out of memory (tests/fault_sweep.sh) */
  float *v = wk_tensor_data(out->t[0]);
  v[0] = (float)tu_uniform(&s), v[1] = (float)tu_uniform(&s);
  out->t[1] = wk_scalar_tensor((double)i, WK_I64);
  out->n = 2;
  return WK_OK;
}
static void user_free(void *p) { ((user_ds *)p)->freed++; }
static wk_dataset *user_dataset(user_ds *u) {
  return wk_dataset_new(&(wk_dataset_impl){.struct_size = sizeof(wk_dataset_impl), .len = user_len, .get = user_get,
                                           .free = user_free}, u);
}

START_TEST(test_data_user_dataset) {
  user_ds u = {.n = 5, .fail_at = 3};
  wk_dataset *ds = user_dataset(&u);
  TU_NOTNULL(ds);
  wk_sample a, b;
  TU_OK(wk_dataset_get(ds, 1, NULL, &a));
  wk_sample_ctx ctx = {.struct_size = sizeof ctx, .seed = wk_data_sample_seed(0, 0, 1), .index = 1};
  TU_OK(wk_dataset_get(ds, 1, &ctx, &b));
  double *bv = tu_values(b.t[0]);
  TU_CLOSE(a.t[0], bv, 2, 0, 0); /* the default ctx is (seed 0, epoch 0, index) */
  free(bv);
  wk_sample_clear(&a);
  wk_sample_clear(&b);
  ck_assert_int_eq(wk_dataset_get(ds, 3, NULL, &a), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "record 3 is unreadable");
  ck_assert_ptr_null(wk_dataset_new(&(wk_dataset_impl){.struct_size = sizeof(wk_dataset_impl), .len = user_len}, &u));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "len and get");
  wk_dataset_free(ds);
  ck_assert_int_eq(u.freed, 1);
}
END_TEST

/* ---- Readers -------------------------------------------------------------------------------------- */
static void check_small_mnist(wk_dataset *ds) {
  TU_NOTNULL(ds);
  ck_assert_int_eq(wk_dataset_len(ds), N);
  for (int i = 0; i < N; i += 6) {
    wk_sample s;
    TU_OK(wk_dataset_get(ds, i, NULL, &s));
    ck_assert_int_eq(wk_tensor_dtype(s.t[0]), WK_U8);
    ck_assert_int_eq(wk_tensor_dim(s.t[0]), 3);
    ck_assert_int_eq(wk_tensor_size(s.t[0], 0), 1);
    ck_assert_int_eq(wk_tensor_size(s.t[0], 1), H);
    ck_assert_int_eq(wk_tensor_size(s.t[0], 2), W);
    double ref[H * W];
    for (int k = 0; k < H * W; k++) ref[k] = (uint8_t)(i * 7 + k);
    TU_CLOSE(s.t[0], ref, H * W, 0, 0);
    ck_assert_int_eq(wk_tensor_dtype(s.t[1]), WK_I64);
    ck_assert_double_eq(item(s.t[1]), i % 10);
    wk_sample_clear(&s);
  }
}

START_TEST(test_data_mnist_small) {
  int64_t live = wk_live_tensors();
  write_mnist(path_of("i"), path_of("l"), false);
  wk_dataset *ds = wk_dataset_mnist(path_of("i"), path_of("l"));
  check_small_mnist(ds);
  wk_dataset_free(ds);
  write_mnist(path_of("i.gz"), path_of("l.gz"), true);
  ds = wk_dataset_mnist(path_of("i.gz"), path_of("l.gz"));
  check_small_mnist(ds);
  wk_dataset_free(ds);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Writes `b` (n bytes) as the images file with a good labels file, and asserts the load fails with `needle`. */
static void expect_bad(const uint8_t *b, size_t n, bool images, const char *needle) {
  write_mnist(path_of("gi"), path_of("gl"), false);
  write_bytes(path_of(images ? "gi" : "gl"), b, n);
  ck_assert_ptr_null(wk_dataset_mnist(path_of("gi"), path_of("gl")));
  ck_assert_msg(strstr(wk_last_error_message(), path_of(images ? "gi" : "gl")) != NULL, "no file name in '%s'",
                wk_last_error_message());
  TU_FAILS_WITH(WK_ERR_IO, needle);
}

START_TEST(test_data_mnist_corrupt) {
  uint8_t px[N * H * W] = {0}, lb[N] = {0};
  size_t n;
  uint8_t *good = idx_bytes(3, (uint32_t[]){N, H, W}, px, &n);
  uint8_t *b = malloc(n + 8);
  memcpy(b, good, n);
  b[0] = 0x1f;
  expect_bad(b, n, true, "bad magic number 0x1f000803");
  memcpy(b, good, n), b[2] = 0x07;
  expect_bad(b, n, true, "unknown element type 0x07");
  memcpy(b, good, n), b[2] = 0x0D;
  expect_bad(b, n, true, "element type 0x0d, expected 0x08");
  expect_bad(good, n - 5, true, "295 bytes follow: record 24 is incomplete");
  expect_bad(good, 2, true, "truncated: 2 bytes");
  expect_bad(good, 10, true, "truncated header: 10 bytes");
  memcpy(b, good, n), b[n] = 1;
  expect_bad(b, n + 1, true, "1 trailing bytes after the 25 records");
  memcpy(b, good, n), b[11] = 0;
  expect_bad(b, n, true, "dimension 1 is 0");
  size_t nl;
  uint8_t *lbl = idx_bytes(1, (uint32_t[]){N}, lb, &nl);
  expect_bad(lbl, nl, true, "declares 1 dimensions, images files have 3 (is this a labels file?)");
  expect_bad(good, n, false, "declares 3 dimensions, labels files have 1 (is this an images file?)");
  lbl[8 + 17] = 12;
  expect_bad(lbl, nl, false, "record 17: label 12 is out of range [0, 9]");
  uint8_t *lbl2 = idx_bytes(1, (uint32_t[]){N - 1}, lb, &nl);
  expect_bad(lbl2, nl, false, "has 25 records but labels file");
  /* gzip: truncated stream, corrupt stream */
  size_t gn;
  uint8_t *gz = gzip_of(good, n, &gn);
  expect_bad(gz, gn - 30, true, "corrupt or truncated gzip data");
  gz[12] ^= 0xff; /* the stored block's LEN no longer matches NLEN */
  expect_bad(gz, gn, true, "corrupt or truncated gzip data");
  ck_assert_ptr_null(wk_dataset_mnist(path_of("nope"), path_of("gl")));
  TU_FAILS_WITH(WK_ERR_IO, "cannot open");
  free(good), free(b), free(lbl), free(lbl2), free(gz);
}
END_TEST

/* ---- gzip bombs and malformed gzip streams -------------------------------------------------------- */
/* A deflate bit writer: fixed-Huffman blocks only, enough to emit a long run of
 * zeros as length-258 distance-1 matches (13 bits per 258 bytes). */
typedef struct {
  uint8_t *o;
  size_t k;
  uint32_t acc;
  int nb;
} bitw;
static void bw_bits(bitw *w, uint32_t v, int n) { /* deflate packs values LSB first */
  w->acc |= v << w->nb;
  w->nb += n;
  for (; w->nb >= 8; w->nb -= 8, w->acc >>= 8) w->o[w->k++] = (uint8_t)w->acc;
}
static void bw_code(bitw *w, uint32_t code, int n) { /* ... and Huffman codes MSB first */
  uint32_t r = 0;
  for (int i = 0; i < n; i++) r |= ((code >> i) & 1) << (n - 1 - i);
  bw_bits(w, r, n);
}
static void bw_literal(bitw *w, uint8_t b) {
  if (b < 144)
    bw_code(w, 0x30 + b, 8);
  else
    bw_code(w, 0x190 + b - 144, 9);
}
/* A gzip member holding p[0..n) followed by 1 + 258 * runs zero bytes. The
 * trailer's length is right; its CRC too with `crc`, else 0 (a reader must
 * refuse the stream long before the trailer: computing it would be slow). */
static uint8_t *gzip_bomb(const uint8_t *p, size_t n, size_t runs, bool crc, size_t *out_n) {
  bitw w = {.o = malloc(32 + 2 * n + runs * 13 / 8 + 8)};
  ck_assert_ptr_nonnull(w.o);
  const uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  memcpy(w.o, hdr, 10);
  w.k = 10;
  bw_bits(&w, 1, 1); /* BFINAL */
  bw_bits(&w, 1, 2); /* BTYPE = fixed Huffman */
  for (size_t i = 0; i < n; i++) bw_literal(&w, p[i]);
  bw_literal(&w, 0);
  for (size_t r = 0; r < runs; r++) {
    bw_code(&w, 0xC5, 8); /* length code 285: 258 bytes */
    bw_bits(&w, 0, 5);    /* distance code 0: distance 1 */
  }
  bw_code(&w, 0, 7); /* end of block */
  if (w.nb) bw_bits(&w, 0, 8 - w.nb);
  uint64_t total = n + 1 + 258 * (uint64_t)runs;
  uint32_t c = 0;
  if (crc) {
    uint8_t *all = calloc(1, (size_t)total);
    ck_assert_ptr_nonnull(all);
    memcpy(all, p, n);
    c = crc32_of(all, (size_t)total);
    free(all);
  }
  for (int i = 0; i < 4; i++) w.o[w.k++] = (uint8_t)(c >> (8 * i));
  for (int i = 0; i < 4; i++) w.o[w.k++] = (uint8_t)(total >> (8 * i));
  *out_n = w.k;
  return w.o;
}
static long peak_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

START_TEST(test_data_mnist_gzip_bomb) {
  /* A valid 2-image 28x28 header, then 512 MiB of zeros in a 3.4 MB gzip member. */
  const size_t runs = ((size_t)512 << 20) / 258;
  size_t hn, gn;
  uint8_t zeros[2 * 28 * 28] = {0};
  uint8_t *hdr = idx_bytes(3, (uint32_t[]){2, 28, 28}, zeros, &hn);
  hn = 16; /* the header only: the zeros follow */
  uint8_t *bomb = gzip_bomb(hdr, hn, runs, false, &gn);
  write_mnist(path_of("bi"), path_of("bl"), false);
  write_bytes(path_of("bi"), bomb, gn);
  free(bomb);
  ck_assert_uint_lt(gn, (size_t)4 << 20);
  long before = peak_rss_kb();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_ptr_null(wk_dataset_mnist(path_of("bi"), path_of("bl")));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long grew = peak_rss_kb() - before;
  double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  ck_assert_msg(strstr(wk_last_error_message(), path_of("bi")) != NULL, "no file name in '%s'", wk_last_error_message());
  TU_FAILS_WITH(WK_ERR_IO, "goes on past the 2 records (1568 bytes) the header declares: at least");
  ck_assert_msg(grew < 64 * 1024, "peak RSS grew by %ld KiB rejecting a gzip bomb", grew);
  ck_assert_msg(secs < 1.0, "rejecting a gzip bomb took %.2f s", secs);
  /* Declaring 2^20 images over 2 MiB of data: memory follows the data actually read */
  hdr[5] = 0x10; /* dims[0] = 0x00100002 */
  bomb = gzip_bomb(hdr, hn, ((size_t)2 << 20) / 258, true, &gn);
  write_bytes(path_of("bi"), bomb, gn);
  free(bomb);
  ck_assert_ptr_null(wk_dataset_mnist(path_of("bi"), path_of("bl")));
  TU_FAILS_WITH(WK_ERR_IO, "truncated: the header declares 1048578 records of 784 bytes");
  /* A header declaring more than can be held is refused before anything is read */
  memset(hdr + 4, 0xff, 12);
  write_bytes(path_of("bi"), hdr, hn);
  ck_assert_ptr_null(wk_dataset_mnist(path_of("bi"), path_of("bl")));
  TU_FAILS_WITH(WK_ERR_IO, "records of more than 4294967296 bytes are too large");
  hdr[8] = hdr[9] = hdr[10] = 0, hdr[12] = hdr[13] = hdr[14] = 0; /* 2^32-1 images of 255 x 255 */
  write_bytes(path_of("bi"), hdr, hn);
  ck_assert_ptr_null(wk_dataset_mnist(path_of("bi"), path_of("bl")));
  TU_FAILS_WITH(WK_ERR_IO, "more than the 17179869184-byte limit");
  free(hdr);
}
END_TEST

START_TEST(test_data_mnist_gzip_streams) {
  uint8_t px[N * H * W];
  for (int i = 0; i < N * H * W; i++) px[i] = (uint8_t)((i / (H * W)) * 7 + i % (H * W));
  size_t n, g1, g2;
  uint8_t *good = idx_bytes(3, (uint32_t[]){N, H, W}, px, &n);
  /* Two gzip members, as `cat a.gz b.gz` gives: read as one stream, like gunzip */
  uint8_t *z1 = gzip_of(good, 100, &g1), *z2 = gzip_of(good + 100, n - 100, &g2);
  uint8_t *cat = malloc(g1 + g2 + 16);
  memcpy(cat, z1, g1), memcpy(cat + g1, z2, g2);
  write_mnist(path_of("gi"), path_of("gl"), false);
  write_bytes(path_of("gi"), cat, g1 + g2);
  wk_dataset *ds = wk_dataset_mnist(path_of("gi"), path_of("gl"));
  check_small_mnist(ds);
  wk_dataset_free(ds);
  /* Garbage after the last member */
  memcpy(cat + g1 + g2, "junk", 4);
  expect_bad(cat, g1 + g2 + 4, true, "trailing garbage after the gzip stream (316 bytes inflated)");
  cat[g1 + g2] = 0x1f; /* a lone first magic byte is garbage too */
  expect_bad(cat, g1 + g2 + 1, true, "trailing garbage after the gzip stream");
  /* The members inflate to one byte more than the header declares */
  uint8_t *big = malloc(n + 1);
  memcpy(big, good, n), big[n] = 9;
  free(z2);
  z2 = gzip_of(big + 100, n + 1 - 100, &g2);
  memcpy(cat + g1, z2, g2);
  expect_bad(cat, g1 + g2, true, "1 trailing bytes after the 25 records");
  /* Truncated inside the deflate data, inside the trailer, and short of the declared size */
  expect_bad(z1, g1 - 40, true, "corrupt or truncated gzip data after");
  expect_bad(z1, g1 - 3, true, "unexpected end of file");
  expect_bad(z1, g1, true, "truncated: the header declares 25 records of 12 bytes (300 bytes) but 84 bytes follow");
  /* A bad CRC is caught even though the data fills the declared size exactly */
  free(z2);
  z2 = gzip_of(good, n, &g2);
  z2[g2 - 8] ^= 1;
  expect_bad(z2, g2, true, "incorrect data check");
  free(good), free(big), free(z1), free(z2), free(cat);
}
END_TEST

START_TEST(test_data_cifar) {
  int64_t live = wk_live_tensors();
  for (int classes = 10; classes <= 100; classes += 90) {
    size_t nlab = classes == 10 ? 1 : 2, rec = nlab + 3072;
    uint8_t *b = malloc(rec * 3);
    for (int r = 0; r < 3; r++) {
      if (classes == 100) b[r * rec] = (uint8_t)(r + 5); /* coarse */
      b[r * rec + nlab - 1] = (uint8_t)(classes - 1 - r);
      for (int k = 0; k < 3072; k++) b[r * rec + nlab + k] = (uint8_t)(k * 3 + r);
    }
    write_bytes(path_of("c1"), b, rec * 3);
    write_bytes(path_of("c2"), b, rec * 2);
    wk_dataset *ds = wk_dataset_cifar((const char *[]){path_of("c1"), path_of("c2")}, 2, classes);
    TU_NOTNULL(ds);
    ck_assert_int_eq(wk_dataset_len(ds), 5);
    wk_sample s;
    TU_OK(wk_dataset_get(ds, 4, NULL, &s)); /* record 1 of the second file */
    ck_assert_double_eq(item(s.t[1]), classes - 2);
    ck_assert_int_eq(wk_tensor_size(s.t[0], 0), 3);
    int64_t idx[3] = {2, 31, 30}; /* channel 2, row 31, col 30 -> k = 2*1024 + 31*32 + 30 */
    double v;
    TU_OK(wk_tensor_get(s.t[0], idx, &v));
    ck_assert_double_eq(v, (uint8_t)((2 * 1024 + 31 * 32 + 30) * 3 + 1));
    wk_sample_clear(&s);
    wk_dataset_free(ds);
    size_t gn; /* gzip, inflated record by record; then truncated */
    uint8_t *gz = gzip_of(b, rec * 3, &gn);
    write_bytes(path_of("c3.gz"), gz, gn);
    ds = wk_dataset_cifar((const char *[]){path_of("c3.gz")}, 1, classes);
    TU_NOTNULL(ds);
    ck_assert_int_eq(wk_dataset_len(ds), 3);
    wk_dataset_free(ds);
    write_bytes(path_of("c3.gz"), gz, gn - 100);
    ck_assert_ptr_null(wk_dataset_cifar((const char *[]){path_of("c3.gz")}, 1, classes));
    TU_FAILS_WITH(WK_ERR_IO, "corrupt or truncated gzip data");
    free(gz);
    write_bytes(path_of("c2"), b, rec * 2 - 1);
    ck_assert_ptr_null(wk_dataset_cifar((const char *[]){path_of("c1"), path_of("c2")}, 2, classes));
    TU_FAILS_WITH(WK_ERR_IO, "record 1 has");
    b[2 * rec + nlab - 1] = (uint8_t)classes;
    write_bytes(path_of("c1"), b, rec * 3);
    ck_assert_ptr_null(wk_dataset_cifar((const char *[]){path_of("c1")}, 1, classes));
    TU_FAILS_WITH(WK_ERR_IO, "record 2: ");
    free(b);
  }
  ck_assert_ptr_null(wk_dataset_cifar((const char *[]){path_of("c1")}, 1, 7));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "classes must be 10 or 100");
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_data_csv) {
  int64_t live = wk_live_tensors();
  const char *good = "a,b,label\r\n1.5, 2,3\n\n-4,5e-1,0\n";
  write_bytes(path_of("g.csv"), good, strlen(good));
  wk_dataset *ds = wk_dataset_csv(path_of("g.csv"), true, 2);
  TU_NOTNULL(ds);
  ck_assert_int_eq(wk_dataset_len(ds), 2);
  wk_sample s;
  TU_OK(wk_dataset_get(ds, 1, NULL, &s));
  TU_EQ_VALS(s.t[0], -4, 0.5);
  ck_assert_double_eq(item(s.t[1]), 0);
  wk_sample_clear(&s);
  wk_dataset_free(ds);
  ds = wk_dataset_csv(path_of("g.csv"), true, -1);
  TU_OK(wk_dataset_get(ds, 0, NULL, &s));
  ck_assert_int_eq(s.n, 1);
  TU_EQ_VALS(s.t[0], 1.5, 2, 3);
  wk_sample_clear(&s);
  wk_dataset_free(ds);
  const char *bad[][2] = {{"1,2\n3\n", "line 2 has 1 fields, expected 2"},
                          {"1,2\n3,x7\n", "line 2, field 2: 'x7' is not a number"},
                          {"1,2\n3,1.5\n", "line 2: label '1.5' is not a non-negative integer"}};
  for (int i = 0; i < 3; i++) {
    write_bytes(path_of("b.csv"), bad[i][0], strlen(bad[i][0]));
    ck_assert_ptr_null(wk_dataset_csv(path_of("b.csv"), false, 1));
    TU_FAILS_WITH(WK_ERR_IO, bad[i][1]);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_data_fashion_mnist) {
  if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK) != 0) {
    fprintf(stderr, "check_data: %s not installed, skipping the real-data test\n", FMNIST);
    return;
  }
  int64_t live = wk_live_tensors();
  /* Expected values from /usr/bin/python3 reading the same files (gzip, struct). */
  const char *split[2] = {"train", "t10k"};
  const int64_t count[2] = {60000, 10000};
  const uint64_t fnv[2] = {0x1fdf72590541338ull, 0xcb45b7589f1b853bull};
  const int64_t first_sum[2] = {76247, 33456};
  for (int k = 0; k < 2; k++) {
    char im[256], lb[256];
    snprintf(im, sizeof im, FMNIST "/%s-images-idx3-ubyte.gz", split[k]);
    snprintf(lb, sizeof lb, FMNIST "/%s-labels-idx1-ubyte.gz", split[k]);
    wk_dataset *ds = wk_dataset_mnist(im, lb);
    TU_NOTNULL(ds);
    ck_assert_int_eq(wk_dataset_len(ds), count[k]);
    wk_sample s;
    TU_OK(wk_dataset_get(ds, 0, NULL, &s));
    const uint8_t *p = wk_tensor_data(s.t[0]);
    uint64_t h = 0xcbf29ce484222325ull;
    int64_t sum = 0;
    for (int i = 0; i < 784; i++) h = (h ^ p[i]) * 0x100000001b3ull, sum += p[i];
    ck_assert_uint_eq(h, fnv[k]);
    ck_assert_int_eq(sum, first_sum[k]);
    ck_assert_double_eq(item(s.t[1]), 9);
    wk_sample_clear(&s);
    /* label histogram through a loader with workers */
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 2000, .num_workers = 2));
    int64_t hist[10] = {0}, seen = 0;
    wk_sample b;
    while (wk_dataloader_next(dl, &b) == WK_OK && b.n) {
      const int64_t *l = wk_tensor_data(b.t[1]);
      for (int64_t i = 0; i < wk_tensor_size(b.t[1], 0); i++) hist[l[i]]++;
      seen += wk_tensor_size(b.t[0], 0);
      wk_sample_clear(&b);
    }
    ck_assert_int_eq(wk_last_error(), WK_OK);
    ck_assert_int_eq(seen, count[k]);
    for (int c = 0; c < 10; c++) ck_assert_int_eq(hist[c], count[k] / 10);
    wk_dataloader_free(dl);
    wk_dataset_free(ds);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Mutated IDX headers and lengths: every load succeeds or fails with WK_ERR_IO; no crash. */
START_TEST(test_data_fuzz_idx) {
  uint8_t px[N * H * W];
  for (int i = 0; i < N * H * W; i++) px[i] = (uint8_t)i;
  size_t n;
  uint8_t *good = idx_bytes(3, (uint32_t[]){N, H, W}, px, &n);
  uint8_t *b = malloc(n + 64);
  uint64_t rs = 12345;
  write_mnist(path_of("fi"), path_of("fl"), false);
  int ok = 0, bad = 0;
  for (int it = 0; it < 300; it++) {
    memcpy(b, good, n);
    size_t len = n;
    int muts = 1 + (int)(tu_uniform(&rs) * 4);
    for (int m = 0; m < muts; m++) b[(size_t)(tu_uniform(&rs) * 16)] = (uint8_t)(tu_uniform(&rs) * 256);
    if (tu_uniform(&rs) < 0.3) len = (size_t)(tu_uniform(&rs) * (double)(n + 40));
    if (len > n) memset(b + n, 0xAB, len - n);
    write_bytes(path_of("fi"), b, len);
    wk_dataset *ds = wk_dataset_mnist(path_of("fi"), path_of("fl"));
    if (ds) {
      ok++;
      int64_t L = wk_dataset_len(ds);
      wk_sample s;
      if (L > 0 && wk_dataset_get(ds, L - 1, NULL, &s) == WK_OK) wk_sample_clear(&s);
      wk_dataset_free(ds);
    } else {
      bad++;
      ck_assert_int_eq(wk_last_error(), WK_ERR_IO);
      wk_clear_error();
    }
  }
  ck_assert_int_gt(bad, 200);
  free(good);
  free(b);
}
END_TEST

/* ---- DataLoader ------------------------------------------------------------------------------------------ */
/* Runs one epoch and returns (malloc'd) the concatenated labels and first values; counts batches. */
static int64_t *run_epoch(wk_dataloader *dl, int64_t *nout, float **vals, int64_t *nbatches) {
  int64_t cap = 1024, n = 0;
  int64_t *idx = malloc(sizeof *idx * (size_t)cap);
  *vals = malloc(sizeof(float) * 2 * (size_t)cap);
  *nbatches = 0;
  wk_sample b;
  while (true) {
    TU_OK(wk_dataloader_next(dl, &b));
    if (!b.n) break;
    (*nbatches)++;
    int64_t m = wk_tensor_size(b.t[1], 0);
    ck_assert_int_le(n + m, cap);
    memcpy(idx + n, wk_tensor_data(b.t[1]), sizeof(int64_t) * (size_t)m);
    memcpy(*vals + 2 * n, wk_tensor_data(b.t[0]), sizeof(float) * 2 * (size_t)m);
    n += m;
    wk_sample_clear(&b);
  }
  *nout = n;
  return idx;
}

START_TEST(test_data_loader_workers) {
  int64_t live = wk_live_tensors();
  user_ds u = {.n = 103, .fail_at = -1};
  wk_dataset *ds = user_dataset(&u);
  int64_t *ref_idx = NULL;
  float *ref_vals = NULL;
  const int workers[] = {0, 1, 4};
  for (int shuffle = 0; shuffle < 2; shuffle++) {
    for (int w = 0; w < 3; w++) {
      wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 10, .shuffle = shuffle, .num_workers = workers[w],
                                                               .seed = 7, .prefetch_factor = 1 + w));
      TU_NOTNULL(dl);
      ck_assert_int_eq(wk_dataloader_len(dl), 11);
      int64_t n, nb;
      float *vals;
      int64_t *idx = run_epoch(dl, &n, &vals, &nb);
      ck_assert_int_eq(n, 103);
      ck_assert_int_eq(nb, 11);
      if (!shuffle)
        for (int64_t i = 0; i < n; i++) ck_assert_int_eq(idx[i], i);
      if (w == 0) {
        ref_idx = idx, ref_vals = vals;
        int seen[103] = {0};
        for (int64_t i = 0; i < n; i++) seen[idx[i]]++;
        for (int i = 0; i < 103; i++) ck_assert_int_eq(seen[i], 1);
        if (shuffle) ck_assert_int_ne(memcmp(idx, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 80), 0);
      } else { /* bit-identical whatever the number of workers */
        ck_assert_int_eq(memcmp(idx, ref_idx, sizeof(int64_t) * 103), 0);
        ck_assert_int_eq(memcmp(vals, ref_vals, sizeof(float) * 2 * 103), 0);
        free(idx), free(vals);
      }
      /* the next epoch: same order unshuffled, a different one shuffled; values differ (new epoch stream) */
      int64_t *idx2 = run_epoch(dl, &n, &vals, &nb);
      ck_assert_int_eq(memcmp(idx2, ref_idx, sizeof(int64_t) * 103) != 0, shuffle);
      ck_assert_int_ne(memcmp(vals, ref_vals, sizeof(float) * 2 * 103), 0);
      free(idx2), free(vals);
      /* set_epoch(0) replays epoch 0 exactly */
      TU_OK(wk_dataloader_set_epoch(dl, 0));
      idx2 = run_epoch(dl, &n, &vals, &nb);
      ck_assert_int_eq(memcmp(idx2, ref_idx, sizeof(int64_t) * 103), 0);
      ck_assert_int_eq(memcmp(vals, ref_vals, sizeof(float) * 2 * 103), 0);
      free(idx2), free(vals);
      wk_dataloader_free(dl);
    }
    free(ref_idx), free(ref_vals);
  }
  /* drop_last, batch size 1 default */
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 10, .drop_last = true, .num_workers = 2));
  ck_assert_int_eq(wk_dataloader_len(dl), 10);
  int64_t n, nb;
  float *vals;
  free(run_epoch(dl, &n, &vals, &nb));
  free(vals);
  ck_assert_int_eq(n, 100);
  ck_assert_int_eq(nb, 10);
  wk_dataloader_free(dl);
  dl = wk_dataloader_new(ds, NULL);
  ck_assert_int_eq(wk_dataloader_len(dl), 103);
  wk_dataloader_free(dl);
  wk_sampler *sm = wk_sampler_sequential(103);
  ck_assert_ptr_null(wk_dataloader_new(ds, WK_LOADER_OPTS(.shuffle = true, .sampler = sm)));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "mutually exclusive");
  wk_sampler_free(sm);
  wk_dataset_free(ds);
  ck_assert_int_eq(u.freed, 1);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static wk_status bad_collate(void *user, const wk_sample *samples, int64_t n, wk_sample *out) {
  return wk_error(WK_ERR_SHAPE, "bad_collate: no");
}

START_TEST(test_data_loader_errors) {
  int64_t live = wk_live_tensors();
  user_ds u = {.n = 100, .fail_at = 37};
  wk_dataset *ds = user_dataset(&u);
  for (int w = 0; w <= 4; w += 4) {
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 8, .num_workers = w));
    wk_sample b;
    for (int i = 0; i < 4; i++) { /* batches 0..3 (samples 0..31) are fine */
      TU_OK(wk_dataloader_next(dl, &b));
      ck_assert_int_eq(b.n, 2);
      wk_sample_clear(&b);
    }
    ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_IO);
    ck_assert_int_eq(b.n, 0);
    TU_FAILS_WITH(WK_ERR_IO, "dataloader: sample 37 (batch 4 of epoch 0) failed: user_get: record 37 is unreadable");
    /* the iteration is over; the next call starts epoch 1 from the start */
    TU_OK(wk_dataloader_next(dl, &b));
    double first;
    int64_t zero[1] = {0};
    TU_OK(wk_tensor_get(b.t[1], zero, &first));
    ck_assert_double_eq(first, 0);
    wk_sample_clear(&b);
    wk_dataloader_free(dl);
  }
  /* a failing collate_fn: the error names the batch and its samples */
  u.fail_at = -1;
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 8, .num_workers = 2, .collate = bad_collate));
  wk_sample b;
  ck_assert_int_eq(wk_dataloader_next(dl, &b), WK_ERR_SHAPE);
  TU_FAILS_WITH(WK_ERR_SHAPE, "dataloader: collating batch 0 (samples 0..7): bad_collate: no");
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_data_loader_close) {
  int64_t live = wk_live_tensors();
  user_ds u = {.n = 400, .fail_at = -1, .delay_us = 200};
  wk_dataset *ds = user_dataset(&u);
  for (int rep = 0; rep < 3; rep++) {
    wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = 4, .shuffle = true));
    wk_sample b;
    for (int i = 0; i < rep; i++) {
      TU_OK(wk_dataloader_next(dl, &b));
      wk_sample_clear(&b);
    }
    if (rep == 2) TU_OK(wk_dataloader_set_epoch(dl, 5)); /* abandons the iteration mid-epoch */
    wk_dataloader_free(dl);                              /* joins every worker */
  }
  /* batches are owned by a scope open in the caller's thread */
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 4, .num_workers = 2));
  wk_scope_begin();
  wk_sample b;
  TU_OK(wk_dataloader_next(dl, &b));
  ck_assert_int_eq(b.n, 2);
  TU_OK(wk_scope_end());
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  ck_assert_int_eq(u.freed, 1);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- Transforms ------------------------------------------------------------------------------------------ */
START_TEST(test_data_transforms) {
  int64_t live = wk_live_tensors();
  /* ToTensor: CHW and HWC uint8 */
  wk_tensor *img = TU_T(WK_U8, (2, 2, 3), 0, 51, 102, 153, 204, 255, 1, 2, 3, 4, 5, 6);
  wk_transform *tt = wk_transform_to_tensor(false), *th = wk_transform_to_tensor(true);
  wk_tensor *y = wk_transform_apply(tt, img, 0);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_F32);
  double ref[12];
  for (int i = 0; i < 12; i++) ref[i] = (double)(float)((double[]){0, 51, 102, 153, 204, 255, 1, 2, 3, 4, 5, 6}[i] / 255.0);
  TU_CLOSE(y, ref, 12, 1e-7, 0);
  wk_release(y);
  y = wk_transform_apply(th, img, 0); /* [H=2, W=2, C=3] -> [3, 2, 2] */
  ck_assert_int_eq(wk_tensor_size(y, 0), 3);
  const double hwc[12] = {0, 153, 1, 4, 51, 204, 2, 5, 102, 255, 3, 6};
  for (int i = 0; i < 12; i++) ref[i] = (double)(float)(hwc[i] / 255.0);
  TU_CLOSE(y, ref, 12, 1e-7, 0);
  /* Normalize per channel */
  wk_transform *nm = wk_transform_normalize((double[]){0.5, 0.25, 0}, (double[]){0.5, 2, 1}, 3);
  wk_tensor *z = wk_transform_apply(nm, y, 0);
  for (int i = 0; i < 12; i++) {
    int c = i / 4;
    ref[i] = ((double)(float)(hwc[i] / 255.0) - (double[]){0.5, 0.25, 0}[c]) / (double[]){0.5, 2, 1}[c];
  }
  TU_CLOSE(z, ref, 12, 1e-6, 1e-7);
  wk_release(z);
  ck_assert_ptr_null(wk_transform_apply(nm, img, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "normalize: expects a float32 or float64 tensor");
  ck_assert_ptr_null(wk_transform_normalize((double[]){0}, (double[]){0}, 1));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "std evaluated to zero");
  /* RandomCrop(3, 3, padding 1): the window of the padded image at a random offset; all 9 offsets occur */
  wk_tensor *sq = TU_T(WK_F32, (1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
  wk_transform *rc = wk_transform_random_crop(3, 3, 1, -1, 99);
  int offsets[9] = {0};
  for (uint64_t s = 0; s < 200; s++) {
    wk_tensor *o = wk_transform_apply(rc, sq, s), *o2 = wk_transform_apply(rc, sq, s);
    double *v = tu_values(o);
    TU_CLOSE(o2, v, 9, 0, 0); /* same seed, same crop */
    int found = -1;
    for (int t = 0; t < 3 && found < 0; t++)
      for (int l = 0; l < 3 && found < 0; l++) {
        bool match = true;
        for (int r = 0; r < 3; r++)
          for (int c = 0; c < 3; c++) {
            int sr = t + r - 1, sc = l + c - 1;
            double want = sr < 0 || sr > 2 || sc < 0 || sc > 2 ? -1 : 1 + sr * 3 + sc;
            match = match && v[r * 3 + c] == want;
          }
        if (match) found = t * 3 + l;
      }
    ck_assert_int_ge(found, 0);
    offsets[found]++;
    free(v);
    wk_release(o), wk_release(o2);
  }
  for (int k = 0; k < 9; k++) ck_assert_int_gt(offsets[k], 5);
  wk_transform *rbig = wk_transform_random_crop(6, 6, 1, 0, 0);
  ck_assert_ptr_null(wk_transform_apply(rbig, sq, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "required crop size (6, 6) is larger than the (padded) input image size (5, 5)");
  /* CenterCrop: torchvision's rounding (round half to even), zero padding when larger */
  wk_transform *cc = wk_transform_center_crop(2, 2), *cbig = wk_transform_center_crop(4, 5);
  z = wk_transform_apply(cc, sq, 0); /* top = round(0.5) = 0 */
  TU_EQ_VALS(z, 1, 2, 4, 5);
  wk_release(z);
  z = wk_transform_apply(cbig, sq, 0); /* pad top 0 / left 1 */
  TU_EQ_VALS(z, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 7, 8, 9, 0, 0, 0, 0, 0, 0);
  wk_release(z);
  /* RandomHorizontalFlip: p = 1 flips, p = 0 keeps, p = 0.5 about half */
  wk_transform *f1 = wk_transform_random_hflip(1, 0), *f0 = wk_transform_random_hflip(0, 0), *fh = wk_transform_random_hflip(0.5, 3);
  z = wk_transform_apply(f1, sq, 0);
  TU_EQ_VALS(z, 3, 2, 1, 6, 5, 4, 9, 8, 7);
  wk_release(z);
  z = wk_transform_apply(f0, sq, 0);
  TU_EQ_VALS(z, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  wk_release(z);
  int flips = 0;
  for (uint64_t s = 0; s < 2000; s++) {
    z = wk_transform_apply(fh, sq, s);
    double v0;
    TU_OK(wk_tensor_get(z, (int64_t[]){0, 0, 0}, &v0));
    flips += v0 == 3;
    wk_release(z);
  }
  ck_assert_msg(flips > 900 && flips < 1100, "%d flips of 2000", flips);
  ck_assert_ptr_null(wk_transform_random_hflip(1.5, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "probability 1.5");
  /* Compose(ToTensor, Normalize) on a dataset, and channel statistics */
  wk_transform *comp = wk_transform_compose((wk_transform *[]){tt, nm}, 2);
  wk_tensor *imgs = tu_rand(WK_SHAPE(6, 3, 4, 5), WK_U8, 0, 256, 5), *labels = wk_zeros(WK_SHAPE(6), WK_OPTS(.dtype = WK_I64));
  wk_dataset *ds = wk_tensor_dataset((wk_tensor *[]){imgs, labels}, 2), *mapped = wk_dataset_map(ds, 0, comp);
  wk_sample s;
  TU_OK(wk_dataset_get(mapped, 2, NULL, &s));
  double *raw = tu_values(imgs), want[60];
  for (int i = 0; i < 60; i++) {
    int c = i / 20;
    want[i] = ((double)(float)(raw[2 * 60 + i] / 255.0) - (double[]){0.5, 0.25, 0}[c]) / (double[]){0.5, 2, 1}[c];
  }
  TU_CLOSE(s.t[0], want, 60, 1e-6, 1e-6);
  wk_sample_clear(&s);
  double mean[3], std[3];
  TU_OK(wk_dataset_channel_stats(ds, 0, mean, std, 3));
  for (int c = 0; c < 3; c++) {
    double m = 0, q = 0;
    for (int k = 0; k < 6; k++)
      for (int i = 0; i < 20; i++) m += raw[k * 60 + c * 20 + i] / 255.0;
    m /= 120;
    for (int k = 0; k < 6; k++)
      for (int i = 0; i < 20; i++) q += pow(raw[k * 60 + c * 20 + i] / 255.0 - m, 2);
    ck_assert_double_eq_tol(mean[c], m, 1e-12);
    ck_assert_double_eq_tol(std[c], sqrt(q / 120), 1e-9);
  }
  free(raw);
  wk_dataset_free(mapped), wk_dataset_free(ds);
  wk_transform *all[] = {tt, th, nm, rc, rbig, cc, cbig, f1, f0, fh, comp};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) wk_transform_free(all[i]);
  wk_release(img), wk_release(y), wk_release(sq), wk_release(imgs), wk_release(labels);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- Samplers --------------------------------------------------------------------------------------------- */
static int64_t *indices_of(wk_sampler *s, int64_t *n) {
  TU_NOTNULL(s);
  *n = wk_sampler_len(s);
  ck_assert_int_ge(*n, 0);
  int64_t *b = malloc(sizeof *b * (size_t)(*n + 1));
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(wk_sampler_indices(s, b, *n), *n);
  return b;
}

START_TEST(test_data_samplers) {
  int64_t n, m;
  wk_sampler *sq = wk_sampler_sequential(5);
  int64_t *a = indices_of(sq, &n);
  ck_assert_int_eq(n, 5);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(a[i], i);
  free(a);
  /* Random: a permutation, reproducible, different per epoch */
  wk_sampler *r = wk_sampler_random(50, false, 0, 3), *r2 = wk_sampler_random(50, false, 0, 3);
  a = indices_of(r, &n);
  int64_t *b = indices_of(r2, &m);
  ck_assert_int_eq(memcmp(a, b, sizeof *a * 50), 0);
  int seen[50] = {0};
  for (int i = 0; i < 50; i++) seen[a[i]]++;
  for (int i = 0; i < 50; i++) ck_assert_int_eq(seen[i], 1);
  wk_sampler_set_epoch(r2, 1);
  free(b);
  b = indices_of(r2, &m);
  ck_assert_int_ne(memcmp(a, b, sizeof *a * 50), 0);
  free(a), free(b);
  wk_sampler *rl = wk_sampler_random(10, false, 25, 1); /* num_samples > n: whole permutations, then part of one */
  a = indices_of(rl, &n);
  ck_assert_int_eq(n, 25);
  int cnt[10] = {0};
  for (int i = 0; i < 25; i++) cnt[a[i]]++;
  for (int i = 0; i < 10; i++) ck_assert(cnt[i] == 2 || cnt[i] == 3);
  free(a);
  /* with replacement: uniform */
  wk_sampler *rr = wk_sampler_random(4, true, 40000, 9);
  a = indices_of(rr, &n);
  int h4[4] = {0};
  for (int i = 0; i < n; i++) h4[a[i]]++;
  for (int i = 0; i < 4; i++) ck_assert_msg(abs(h4[i] - 10000) < 400, "bucket %d: %d", i, h4[i]);
  free(a);
  /* SubsetRandom */
  wk_sampler *sr = wk_sampler_subset_random((int64_t[]){10, 20, 30}, 3, 5);
  a = indices_of(sr, &n);
  ck_assert_int_eq(a[0] + a[1] + a[2], 60);
  ck_assert(a[0] != a[1] && a[1] != a[2] && a[0] != a[2]);
  free(a);
  /* WeightedRandom: frequencies follow the weights; zero weights never drawn */
  wk_sampler *wr = wk_sampler_weighted((double[]){1, 2, 0, 4, 3}, 5, 50000, true, 11);
  a = indices_of(wr, &n);
  int h5[5] = {0};
  for (int i = 0; i < n; i++) h5[a[i]]++;
  const double p[5] = {0.1, 0.2, 0, 0.4, 0.3};
  for (int i = 0; i < 5; i++) ck_assert_msg(fabs(h5[i] / 50000.0 - p[i]) < 0.01, "index %d: %d", i, h5[i]);
  free(a);
  wk_sampler *wn = wk_sampler_weighted((double[]){1, 0, 1000, 1}, 4, 3, false, 2);
  a = indices_of(wn, &n);
  ck_assert(a[0] == 2); /* overwhelmingly likely first */
  for (int i = 0; i < 3; i++) ck_assert_int_ne(a[i], 1);
  free(a);
  ck_assert_ptr_null(wk_sampler_weighted((double[]){1, 0}, 2, 2, false, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "without replacement from 1 non-zero weights");
  ck_assert_ptr_null(wk_sampler_weighted((double[]){1, -1}, 2, 2, true, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "weight 1 is -1");
  /* Distributed: ranks partition a shared order (padded / truncated), set_epoch reshuffles */
  for (int drop = 0; drop < 2; drop++) {
    int counts[10] = {0};
    int64_t total = 0;
    for (int rank = 0; rank < 3; rank++) {
      wk_sampler *d = wk_sampler_distributed(10, 3, rank, true, 4, drop);
      a = indices_of(d, &n);
      ck_assert_int_eq(n, drop ? 3 : 4);
      for (int i = 0; i < n; i++) counts[a[i]]++;
      total += n;
      wk_sampler_set_epoch(d, 1);
      b = indices_of(d, &m);
      ck_assert_int_ne(memcmp(a, b, sizeof *a * (size_t)n), 0);
      free(a), free(b);
      wk_sampler_free(d);
    }
    ck_assert_int_eq(total, drop ? 9 : 12);
    int twice = 0, zero = 0;
    for (int i = 0; i < 10; i++) twice += counts[i] == 2, zero += counts[i] == 0;
    ck_assert_int_eq(twice, drop ? 0 : 2);
    ck_assert_int_eq(zero, drop ? 1 : 0);
  }
  wk_sampler *dn = wk_sampler_distributed(7, 2, 1, false, 0, false);
  a = indices_of(dn, &n);
  ck_assert_int_eq(n, 4);
  ck_assert(a[0] == 1 && a[1] == 3 && a[2] == 5 && a[3] == 0);
  free(a);
  ck_assert_ptr_null(wk_sampler_distributed(7, 2, 2, false, 0, false));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "invalid rank 2");
  /* a sampler drives a loader */
  wk_tensor *x = wk_arange_int(0, 7, 1, WK_OPTS(.dtype = WK_I64));
  wk_dataset *ds = wk_tensor_dataset(&x, 1);
  wk_dataloader *dl = wk_dataloader_new(ds, WK_LOADER_OPTS(.batch_size = 3, .sampler = dn, .num_workers = 2));
  wk_sample s;
  TU_OK(wk_dataloader_next(dl, &s));
  TU_EQ_VALS(s.t[0], 1, 3, 5);
  wk_sample_clear(&s);
  TU_OK(wk_dataloader_next(dl, &s));
  TU_EQ_VALS(s.t[0], 0);
  wk_sample_clear(&s);
  wk_dataloader_free(dl);
  wk_dataset_free(ds);
  wk_release(x);
  wk_sampler *all[] = {sq, r, r2, rl, rr, sr, wr, wn, dn};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) wk_sampler_free(all[i]);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("data");
  struct {
    const char *name;
    const TTest *t;
  } tests[] = {{"service", test_data_service},         {"datasets", test_data_tensor_dataset},
               {"datasets", test_data_user_dataset},   {"readers", test_data_mnist_small},
               {"readers", test_data_mnist_corrupt},   {"readers", test_data_mnist_gzip_bomb},
               {"readers", test_data_mnist_gzip_streams},   {"readers", test_data_cifar},
               {"readers", test_data_csv},             {"readers", test_data_fashion_mnist},   {"readers", test_data_fuzz_idx},
               {"loader", test_data_loader_workers},   {"loader", test_data_loader_errors},
               {"loader", test_data_loader_close},     {"transforms", test_data_transforms},
               {"samplers", test_data_samplers}};
  TCase *tc = NULL;
  const char *cur = "";
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    if (strcmp(cur, tests[i].name) != 0) {
      cur = tests[i].name;
      tc = tcase_create(cur);
      tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
      tcase_set_timeout(tc, 30);
      suite_add_tcase(s, tc);
    }
    tcase_add_test(tc, tests[i].t);
  }
  return s;
}
TU_MAIN(make_suite)
