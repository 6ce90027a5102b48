/* check_data_image: PNG/JPEG decoding (files written here with libpng and
 * libjpeg: every PNG colour type, palette with transparency, 1- and 16-bit,
 * interlaced; gray and RGB JPEG), corrupt and truncated files, a fuzz loop of
 * truncated and bit-flipped images, ImageFolder (class order, file order,
 * labels, errors), and the resampling and colour transforms (Resize against
 * hand-computed PyTorch values and a float64 reference, RandomResizedCrop's
 * sampling and fallback, ColorJitter's blend formulas). */
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wick/data.h>

#include <jpeglib.h>
#include <png.h>

#include "testutil.h"

static char g_dir[128];
static void dir_setup(void) {
  tu_setup();
  snprintf(g_dir, sizeof g_dir, "/tmp/check_data_image_%d", (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", g_dir, g_dir);
  ck_assert_int_eq(system(cmd), 0);
}
static void dir_teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", g_dir);
}
static const char *path_of(const char *name) {
  static char p[4][400];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
  return p[k];
}
static void mkdirs(const char *rel) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s'", g_dir, rel);
  ck_assert_int_eq(system(cmd), 0);
}

/* ---- Writers: libpng and libjpeg -------------------------------------------------------------------- */
typedef struct {
  int w, h, color, bits;
  const uint8_t *rows; /* packed rows as libpng takes them (16-bit: big-endian) */
  const png_color *pal;
  int npal;
  const uint8_t *trns;
  int ntrns;
  bool interlace;
} png_spec;
static void write_png(const char *path, const png_spec *s) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  ck_assert(png && info);
  ck_assert_int_eq(setjmp(png_jmpbuf(png)), 0);
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)s->w, (png_uint_32)s->h, s->bits, s->color,
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (s->pal) png_set_PLTE(png, info, s->pal, s->npal);
  if (s->trns) png_set_tRNS(png, info, s->trns, s->ntrns, NULL);
  png_write_info(png, info);
  size_t rowbytes = png_get_rowbytes(png, info);
  png_bytep rows[64];
  ck_assert_int_le(s->h, 64);
  for (int r = 0; r < s->h; r++) rows[r] = (png_bytep)s->rows + (size_t)r * rowbytes;
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  fclose(f);
}
/* comps 1 (gray), 3 (RGB) or 4 (CMYK); quality < 0: progressive at -quality. */
static void write_jpeg(const char *path, int w, int h, int comps, const uint8_t *px, int quality) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = comps;
  c.in_color_space = comps == 1 ? JCS_GRAYSCALE : comps == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality < 0 ? -quality : quality, TRUE);
  if (quality < 0) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = (JSAMPROW)px + (size_t)c.next_scanline * (size_t)w * (size_t)comps;
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  fclose(f);
}
/* The reference decode: libjpeg with its defaults, as the reader uses. */
static uint8_t *ref_jpeg(const char *path, int *comps) {
  FILE *f = fopen(path, "rb");
  struct jpeg_decompress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_decompress(&c);
  jpeg_stdio_src(&c, f);
  jpeg_read_header(&c, TRUE);
  jpeg_start_decompress(&c);
  size_t row = (size_t)c.output_width * (size_t)c.output_components;
  uint8_t *px = malloc(row * c.output_height);
  while (c.output_scanline < c.output_height) {
    JSAMPROW r = px + row * c.output_scanline;
    jpeg_read_scanlines(&c, &r, 1);
  }
  *comps = c.output_components;
  jpeg_finish_decompress(&c);
  jpeg_destroy_decompress(&c);
  fclose(f);
  return px;
}
static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*n ? *n : 1);
  ck_assert_uint_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}
static void spill(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* Asserts t is uint8 [h, w, c] with bytes `want`. */
static void assert_image(wk_tensor *t, int h, int w, int c, const uint8_t *want, int line) {
  ck_assert_msg(t != NULL, "line %d: decode failed: %s", line, wk_last_error_message());
  ck_assert_msg(wk_tensor_dtype(t) == WK_U8 && wk_tensor_dim(t) == 3, "line %d: not a uint8 [H, W, C] tensor", line);
  ck_assert_msg(wk_tensor_size(t, 0) == h && wk_tensor_size(t, 1) == w && wk_tensor_size(t, 2) == c,
                "line %d: shape [%lld, %lld, %lld], expected [%d, %d, %d]", line, (long long)wk_tensor_size(t, 0),
                (long long)wk_tensor_size(t, 1), (long long)wk_tensor_size(t, 2), h, w, c);
  const uint8_t *p = wk_tensor_data(t);
  for (int i = 0; i < h * w * c; i++)
    ck_assert_msg(p[i] == want[i], "line %d: byte %d is %u, expected %u", line, i, p[i], want[i]);
}
#define ASSERT_IMAGE(t, h, w, c, ...) assert_image(t, h, w, c, (const uint8_t[]){__VA_ARGS__}, __LINE__)

/* A 3 x 2 RGB image (and its variants) used across the PNG tests. */
static const uint8_t RGB6[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 200, 100, 50, 7, 7, 7};
static uint8_t luma(const uint8_t *s) { return (uint8_t)((s[0] * 19595 + s[1] * 38470 + s[2] * 7471 + 0x8000) >> 16); }

START_TEST(test_image_png_formats) {
  int64_t live = wk_live_tensors();
  /* RGB 8-bit, 2 rows of 3 */
  write_png(path_of("rgb.png"), &(png_spec){3, 2, PNG_COLOR_TYPE_RGB, 8, RGB6});
  wk_tensor *t = wk_image_read(path_of("rgb.png"), 0);
  assert_image(t, 2, 3, 3, RGB6, __LINE__);
  wk_release(t);
  uint8_t gray[6], rgba[24];
  for (int i = 0; i < 6; i++) {
    gray[i] = luma(RGB6 + 3 * i);
    memcpy(rgba + 4 * i, RGB6 + 3 * i, 3);
    rgba[4 * i + 3] = 255;
  }
  t = wk_image_read(path_of("rgb.png"), 1);
  assert_image(t, 2, 3, 1, gray, __LINE__);
  ck_assert_uint_eq(gray[0], 76); /* PIL: Image.new('RGB', (1, 1), (255, 0, 0)).convert('L') is 76 */
  ck_assert_uint_eq(gray[1], 150);
  ck_assert_uint_eq(gray[2], 29);
  wk_release(t);
  t = wk_image_read(path_of("rgb.png"), 4);
  assert_image(t, 2, 3, 4, rgba, __LINE__);
  wk_release(t);
  /* gray 8-bit -> 1 / 3 channels */
  const uint8_t g4[] = {0, 85, 170, 255};
  write_png(path_of("g.png"), &(png_spec){2, 2, PNG_COLOR_TYPE_GRAY, 8, g4});
  t = wk_image_read(path_of("g.png"), 0);
  ASSERT_IMAGE(t, 2, 2, 1, 0, 85, 170, 255);
  wk_release(t);
  t = wk_image_read(path_of("g.png"), 3);
  ASSERT_IMAGE(t, 2, 2, 3, 0, 0, 0, 85, 85, 85, 170, 170, 170, 255, 255, 255);
  wk_release(t);
  /* gray 1-bit: packed bits 1010 / 0110 */
  const uint8_t bits[] = {0xA0, 0x60};
  write_png(path_of("g1.png"), &(png_spec){4, 2, PNG_COLOR_TYPE_GRAY, 1, bits});
  t = wk_image_read(path_of("g1.png"), 0);
  ASSERT_IMAGE(t, 2, 4, 1, 255, 0, 255, 0, 0, 255, 255, 0);
  wk_release(t);
  /* gray+alpha -> as stored, RGB (alpha dropped), RGBA */
  const uint8_t ga[] = {10, 200, 20, 100};
  write_png(path_of("ga.png"), &(png_spec){2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, ga});
  t = wk_image_read(path_of("ga.png"), 0);
  ASSERT_IMAGE(t, 1, 2, 2, 10, 200, 20, 100);
  wk_release(t);
  t = wk_image_read(path_of("ga.png"), 3);
  ASSERT_IMAGE(t, 1, 2, 3, 10, 10, 10, 20, 20, 20);
  wk_release(t);
  t = wk_image_read(path_of("ga.png"), 4);
  ASSERT_IMAGE(t, 1, 2, 4, 10, 10, 10, 200, 20, 20, 20, 100);
  wk_release(t);
  /* RGBA -> RGB drops alpha, gray uses RGB only */
  const uint8_t ra[] = {100, 150, 200, 0, 1, 2, 3, 255};
  write_png(path_of("rgba.png"), &(png_spec){2, 1, PNG_COLOR_TYPE_RGB_ALPHA, 8, ra});
  t = wk_image_read(path_of("rgba.png"), 3);
  ASSERT_IMAGE(t, 1, 2, 3, 100, 150, 200, 1, 2, 3);
  wk_release(t);
  t = wk_image_read(path_of("rgba.png"), 0);
  assert_image(t, 1, 2, 4, ra, __LINE__);
  wk_release(t);
  /* palette with transparency on entry 1 -> RGBA; without tRNS -> RGB */
  const png_color pal[] = {{255, 0, 0}, {0, 255, 0}, {1, 2, 3}};
  const uint8_t idx[] = {0, 1, 2, 1}, trns[] = {255, 17};
  write_png(path_of("pal.png"), &(png_spec){4, 1, PNG_COLOR_TYPE_PALETTE, 8, idx, pal, 3, trns, 2});
  t = wk_image_read(path_of("pal.png"), 0);
  ASSERT_IMAGE(t, 1, 4, 4, 255, 0, 0, 255, 0, 255, 0, 17, 1, 2, 3, 255, 0, 255, 0, 17);
  wk_release(t);
  write_png(path_of("pal3.png"), &(png_spec){4, 1, PNG_COLOR_TYPE_PALETTE, 8, idx, pal, 3});
  t = wk_image_read(path_of("pal3.png"), 0);
  ASSERT_IMAGE(t, 1, 4, 3, 255, 0, 0, 0, 255, 0, 1, 2, 3, 0, 255, 0);
  wk_release(t);
  /* 16-bit RGB: the high byte */
  const uint8_t w16[] = {0x12, 0x34, 0xAB, 0xCD, 0xFF, 0xFF, 0x00, 0xFF, 0x80, 0x00, 0x7F, 0xFF};
  write_png(path_of("rgb16.png"), &(png_spec){2, 1, PNG_COLOR_TYPE_RGB, 16, w16});
  t = wk_image_read(path_of("rgb16.png"), 0);
  ASSERT_IMAGE(t, 1, 2, 3, 0x12, 0xAB, 0xFF, 0x00, 0x80, 0x7F);
  wk_release(t);
  /* interlaced (Adam7) 5 x 5 gray */
  uint8_t g25[25];
  for (int i = 0; i < 25; i++) g25[i] = (uint8_t)(i * 10);
  write_png(path_of("adam7.png"), &(png_spec){5, 5, PNG_COLOR_TYPE_GRAY, 8, g25, .interlace = true});
  t = wk_image_read(path_of("adam7.png"), 0);
  assert_image(t, 5, 5, 1, g25, __LINE__);
  wk_release(t);
  /* from memory too */
  size_t n;
  uint8_t *b = slurp(path_of("rgb.png"), &n);
  t = wk_image_decode(b, n, 0);
  assert_image(t, 2, 3, 3, RGB6, __LINE__);
  wk_release(t);
  free(b);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_image_jpeg) {
  enum { JW = 16, JH = 12 };
  uint8_t rgb[JH * JW * 3], g[JH * JW];
  for (int r = 0; r < JH; r++)
    for (int c = 0; c < JW; c++) {
      uint8_t *p = rgb + (r * JW + c) * 3;
      p[0] = (uint8_t)(40 + 8 * c), p[1] = (uint8_t)(60 + 10 * r), p[2] = 128;
      g[r * JW + c] = (uint8_t)(30 + 5 * r + 6 * c);
    }
  write_jpeg(path_of("rgb.jpg"), JW, JH, 3, rgb, 100);
  write_jpeg(path_of("g.JPEG"), JW, JH, 1, g, 100);
  int comps;
  uint8_t *ref = ref_jpeg(path_of("rgb.jpg"), &comps);
  ck_assert_int_eq(comps, 3);
  wk_tensor *t = wk_image_read(path_of("rgb.jpg"), 0);
  assert_image(t, JH, JW, 3, ref, __LINE__); /* bit-identical to libjpeg's own decode */
  const uint8_t *p = wk_tensor_data(t);
  for (int i = 0; i < JH * JW * 3; i++) ck_assert_int_le(abs((int)p[i] - (int)rgb[i]), 8); /* quality 100, chroma subsampled */
  wk_release(t);
  free(ref);
  ref = ref_jpeg(path_of("g.JPEG"), &comps);
  ck_assert_int_eq(comps, 1);
  t = wk_image_read(path_of("g.JPEG"), 0);
  assert_image(t, JH, JW, 1, ref, __LINE__);
  wk_release(t);
  t = wk_image_read(path_of("g.JPEG"), 3);
  uint8_t *ref3 = malloc(JH * JW * 3);
  for (int i = 0; i < JH * JW; i++) ref3[3 * i] = ref3[3 * i + 1] = ref3[3 * i + 2] = ref[i];
  assert_image(t, JH, JW, 3, ref3, __LINE__);
  wk_release(t);
  free(ref3);
  free(ref);
  /* progressive */
  write_jpeg(path_of("prog.jpg"), JW, JH, 3, rgb, -90);
  ref = ref_jpeg(path_of("prog.jpg"), &comps);
  t = wk_image_read(path_of("prog.jpg"), 0);
  assert_image(t, JH, JW, 3, ref, __LINE__);
  wk_release(t);
  free(ref);
  /* CMYK is refused by name */
  uint8_t cmyk[4 * 4 * 4] = {0};
  write_jpeg(path_of("cmyk.jpg"), 4, 4, 4, cmyk, 90);
  ck_assert_ptr_null(wk_image_read(path_of("cmyk.jpg"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "cmyk.jpg': unsupported JPEG: CMYK colour space (4 components)");
}
END_TEST

START_TEST(test_image_corrupt) {
  int64_t live = wk_live_tensors();
  write_png(path_of("ok.png"), &(png_spec){3, 2, PNG_COLOR_TYPE_RGB, 8, RGB6});
  size_t n;
  uint8_t *b = slurp(path_of("ok.png"), &n);
  /* truncated in the image data */
  spill(path_of("trunc.png"), b, n - 20);
  ck_assert_ptr_null(wk_image_read(path_of("trunc.png"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "trunc.png': corrupt PNG: truncated");
  /* a flipped byte in the header chunk: its CRC no longer matches */
  uint8_t *c = malloc(n);
  memcpy(c, b, n);
  c[17] ^= 0x01; /* IHDR width's low byte */
  spill(path_of("crc.png"), c, n);
  ck_assert_ptr_null(wk_image_read(path_of("crc.png"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "crc.png': corrupt PNG: IHDR: CRC error");
  free(c);
  /* not an image, empty, missing, bad channels, NULL */
  spill(path_of("text.png"), "hello, world", 12);
  ck_assert_ptr_null(wk_image_read(path_of("text.png"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "text.png': not a PNG or JPEG file (12 bytes, starting 68 65 6c 6c 6f 2c 20 77)");
  spill(path_of("empty.jpg"), "", 0);
  ck_assert_ptr_null(wk_image_read(path_of("empty.jpg"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "empty.jpg': not a PNG or JPEG file (0 bytes)");
  ck_assert_ptr_null(wk_image_read(path_of("missing.png"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "cannot open");
  ck_assert_ptr_null(wk_image_read(path_of("ok.png"), 2));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "channels must be 0 (as stored), 1 (gray), 3 (RGB) or 4 (RGBA), got 2");
  ck_assert_ptr_null(wk_image_read(NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "path");
  ck_assert_ptr_null(wk_image_decode(NULL, 5, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "data");
  free(b);
  /* JPEG: truncated (libjpeg would pad with grey and warn: an error for us) */
  uint8_t px[8 * 8 * 3];
  for (int i = 0; i < (int)sizeof px; i++) px[i] = (uint8_t)(i * 37);
  write_jpeg(path_of("ok.jpg"), 8, 8, 3, px, 90);
  b = slurp(path_of("ok.jpg"), &n);
  spill(path_of("trunc.jpg"), b, n - 30);
  ck_assert_ptr_null(wk_image_read(path_of("trunc.jpg"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "trunc.jpg': corrupt JPEG: Premature end of JPEG file");
  spill(path_of("hdr.jpg"), b, 40); /* ends inside the headers */
  ck_assert_ptr_null(wk_image_read(path_of("hdr.jpg"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "hdr.jpg': corrupt JPEG:");
  /* a huge declared size is refused before any allocation: SOF0 height/width */
  c = malloc(n);
  memcpy(c, b, n);
  for (size_t i = 2; i + 9 < n; i++)
    if (c[i] == 0xFF && c[i + 1] == 0xC0) {
      c[i + 5] = c[i + 7] = 0x75, c[i + 6] = c[i + 8] = 0x30; /* 30000 x 30000 */
      break;
    }
  ck_assert_ptr_null(wk_image_decode(c, n, 0));
  TU_FAILS_WITH(WK_ERR_IO, "image size 30000 x 30000 exceeds the limit of 178956970 pixels");
  free(c);
  free(b);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* Truncations and bit flips of valid PNG and JPEG files: each decode either
 * succeeds or fails with WK_ERR_IO; never a crash, a hang or a leak. */
static void fuzz(const uint8_t *orig, size_t n, uint64_t seed, int rounds) {
  uint8_t *b = malloc(n);
  int ok = 0, bad = 0;
  for (int k = 0; k < rounds; k++) {
    memcpy(b, orig, n);
    size_t m = n;
    int kind = k % 3;
    if (kind == 0) m = (size_t)(tu_uniform(&seed) * (double)n);
    int flips = kind == 0 ? 0 : 1 + (int)(tu_uniform(&seed) * 4);
    for (int f = 0; f < flips; f++) {
      size_t at = (size_t)(tu_uniform(&seed) * (double)n);
      if (kind == 1) b[at] ^= (uint8_t)(1u << (int)(tu_uniform(&seed) * 8));
      else b[at] = (uint8_t)(tu_uniform(&seed) * 256);
    }
    wk_tensor *t = wk_image_decode(b, m, k % 2 ? 3 : 0);
    if (t) {
      ok++;
      ck_assert_int_eq(wk_tensor_dim(t), 3);
      wk_release(t);
    } else {
      bad++;
      ck_assert_msg(wk_last_error() == WK_ERR_IO, "round %d: %s", k, wk_last_error_message());
      wk_clear_error();
    }
  }
  ck_assert_int_gt(bad, 0);
  free(b);
}
START_TEST(test_image_fuzz) {
  int64_t live = wk_live_tensors();
  uint8_t px[16 * 16 * 4];
  for (int i = 0; i < (int)sizeof px; i++) px[i] = (uint8_t)(i * 7 + i / 64);
  write_png(path_of("f.png"), &(png_spec){16, 16, PNG_COLOR_TYPE_RGB_ALPHA, 8, px});
  write_png(path_of("fi.png"), &(png_spec){16, 8, PNG_COLOR_TYPE_RGB_ALPHA, 8, px, .interlace = true});
  write_jpeg(path_of("f.jpg"), 16, 16, 3, px, 75);
  const char *files[] = {"f.png", "fi.png", "f.jpg"};
  for (int i = 0; i < 3; i++) {
    size_t n;
    uint8_t *b = slurp(path_of(files[i]), &n);
    fuzz(b, n, 1234 + (uint64_t)i, 400);
    free(b);
  }
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- ImageFolder ------------------------------------------------------------------------------------------ */
static void solid_png(const char *rel, uint8_t v) {
  uint8_t px[2 * 3 * 3];
  for (int i = 0; i < (int)sizeof px; i++) px[i] = (uint8_t)(v + i);
  write_png(path_of(rel), &(png_spec){3, 2, PNG_COLOR_TYPE_RGB, 8, px});
}
START_TEST(test_image_folder) {
  int64_t live = wk_live_tensors();
  /* classes sort by bytes: "Zebra" < "bird" < "cat" */
  mkdirs("root/cat/sub/deeper");
  mkdirs("root/bird");
  mkdirs("root/Zebra");
  solid_png("root/cat/b.png", 30);
  solid_png("root/cat/a.PNG", 20);
  solid_png("root/cat/sub/c.png", 40);
  solid_png("root/cat/sub/deeper/d.png", 50);
  solid_png("root/cat/sub-x.png", 45); /* a folder's files come before its subfolders' (sorted os.walk) */
  solid_png("root/bird/z.png", 60);
  solid_png("root/Zebra/one.png", 70);
  uint8_t px[4 * 4];
  for (int i = 0; i < 16; i++) px[i] = (uint8_t)(i * 16);
  write_jpeg(path_of("root/bird/a.jpeg"), 4, 4, 1, px, 100);
  spill(path_of("root/cat/notes.txt"), "x", 1);
  spill(path_of("root/readme.png"), "not a class", 11); /* a file in root is not a class */
  wk_dataset *ds = wk_dataset_image_folder(path_of("root"), 3);
  TU_NOTNULL(ds);
  ck_assert_int_eq(wk_dataset_len(ds), 8);
  ck_assert_str_eq(wk_image_folder_class(ds, 0), "Zebra");
  ck_assert_str_eq(wk_image_folder_class(ds, 1), "bird");
  ck_assert_str_eq(wk_image_folder_class(ds, 2), "cat");
  ck_assert_ptr_null(wk_image_folder_class(ds, 3));
  TU_FAILS_WITH(WK_ERR_INDEX, "class 3 is out of range (3 classes)");
  /* (first pixel value, label) in torchvision's order */
  const int want[][2] = {{70, 0}, {-1, 1}, {60, 1}, {20, 2}, {30, 2}, {45, 2}, {40, 2}, {50, 2}};
  for (int i = 0; i < 8; i++) {
    wk_sample s;
    TU_OK(wk_dataset_get(ds, i, NULL, &s));
    ck_assert_int_eq(s.n, 2);
    ck_assert_int_eq(wk_tensor_dtype(s.t[0]), WK_U8);
    double lab;
    TU_OK(wk_item(s.t[1], &lab));
    ck_assert_int_eq((int)lab, want[i][1]);
    const uint8_t *p = wk_tensor_data(s.t[0]);
    if (want[i][0] >= 0) {
      ck_assert_int_eq(wk_tensor_size(s.t[0], 0), 2);
      ck_assert_int_eq(wk_tensor_size(s.t[0], 2), 3);
      ck_assert_int_eq(p[0], want[i][0]);
    } else { /* the gray JPEG, converted to RGB */
      ck_assert_int_eq(wk_tensor_size(s.t[0], 0), 4);
      ck_assert_int_eq(p[0], p[1]);
      ck_assert_int_le(abs(p[3 * 15] - 240), 3);
    }
    wk_sample_clear(&s);
  }
  /* through a loader with ToTensor(hwc) and Resize to one size */
  wk_transform *tfs[] = {wk_transform_to_tensor(true), wk_transform_resize(4, 4)};
  wk_transform *tf = wk_transform_compose(tfs, 2);
  wk_dataset *mapped = wk_dataset_map(ds, 0, tf);
  wk_dataloader *dl = wk_dataloader_new(mapped, WK_LOADER_OPTS(.batch_size = 3, .num_workers = 2));
  wk_sample b;
  int batches = 0;
  while (wk_dataloader_next(dl, &b) == WK_OK && b.n) {
    ck_assert_int_eq(wk_tensor_dim(b.t[0]), 4);
    ck_assert_int_eq(wk_tensor_size(b.t[0], 1), 3);
    ck_assert_int_eq(wk_tensor_size(b.t[0], 3), 4);
    batches++;
    wk_sample_clear(&b);
  }
  ck_assert_int_eq(batches, 3);
  wk_dataloader_free(dl);
  wk_dataset_free(mapped);
  wk_transform_free(tf);
  wk_transform_free(tfs[0]);
  wk_transform_free(tfs[1]);
  /* a corrupt file fails its sample, naming the file */
  spill(path_of("root/cat/b.png"), "\x89PNG\r\n\x1a\n", 8);
  wk_sample s;
  ck_assert_int_eq(wk_dataset_get(ds, 4, NULL, &s), WK_ERR_IO);
  TU_FAILS_WITH(WK_ERR_IO, "root/cat/b.png': corrupt PNG: truncated");
  wk_dataset_free(ds);
  /* errors: an empty class, no class at all, a missing root, NULL, not a folder dataset */
  mkdirs("root/empty");
  ck_assert_ptr_null(wk_dataset_image_folder(path_of("root"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "found no valid file for the class 'empty'");
  mkdirs("flat");
  solid_png("flat/x.png", 1);
  ck_assert_ptr_null(wk_dataset_image_folder(path_of("flat"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "couldn't find any class folder in");
  ck_assert_ptr_null(wk_dataset_image_folder(path_of("nowhere"), 0));
  TU_FAILS_WITH(WK_ERR_IO, "cannot open folder");
  ck_assert_ptr_null(wk_dataset_image_folder(NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "root");
  ck_assert_ptr_null(wk_dataset_image_folder(path_of("root"), 5));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "channels");
  wk_tensor *x = wk_zeros(WK_SHAPE(2, 1), WK_OPTS());
  wk_dataset *td = wk_tensor_dataset(&x, 1);
  ck_assert_ptr_null(wk_image_folder_class(td, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "not an ImageFolder");
  ck_assert_ptr_null(wk_image_folder_class(NULL, 0));
  TU_FAILS_WITH(WK_ERR_NULL, "ds");
  wk_dataset_free(td);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* ---- Transforms ------------------------------------------------------------------------------------------- */
/* float64 reference of bilinear resampling (align_corners=False, no
 * antialias) of the window (top, left, h, w) of each H x W plane. */
static void ref_resample(const double *x, int planes, int H, int W, int top, int left, int h, int w, int oh, int ow,
                         double *out) {
  for (int p = 0; p < planes; p++)
    for (int r = 0; r < oh; r++)
      for (int q = 0; q < ow; q++) {
        double sr = fmax(0, (double)h / oh * (r + 0.5) - 0.5), sc = fmax(0, (double)w / ow * (q + 0.5) - 0.5);
        int r0 = (int)sr, c0 = (int)sc, r1 = r0 + (r0 < h - 1), c1 = c0 + (c0 < w - 1);
        double lr = sr - r0, lc = sc - c0;
        const double *b = x + (size_t)p * H * W + (size_t)top * W + left;
        out[((size_t)p * oh + r) * ow + q] = (1 - lr) * ((1 - lc) * b[r0 * W + c0] + lc * b[r0 * W + c1]) +
                                             lr * ((1 - lc) * b[r1 * W + c0] + lc * b[r1 * W + c1]);
      }
}
static wk_tensor *apply(wk_transform *tf, wk_tensor *x, uint64_t seed) {
  wk_tensor *y = wk_transform_apply(tf, x, seed);
  ck_assert_msg(y != NULL, "transform failed: %s", wk_last_error_message());
  return y;
}

START_TEST(test_image_resize) {
  int64_t live = wk_live_tensors();
  /* hand-computed (PyTorch: F.interpolate(x, size=(4, 4), mode='bilinear', align_corners=False)) */
  wk_tensor *x = TU_T(WK_F32, (1, 2, 2), 0, 1, 2, 3);
  wk_transform *up = wk_transform_resize(4, 4);
  wk_tensor *y = apply(up, x, 0);
  TU_EQ_VALS(y, 0, .25, .75, 1, .5, .75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3);
  wk_release(y);
  wk_release(x);
  /* uint8: computed in float, rounded half to even (2.5 -> 2, 7.5 -> 8) */
  x = TU_T(WK_U8, (2, 2), 0, 10, 20, 30);
  y = apply(up, x, 0);
  ck_assert_int_eq(wk_tensor_dtype(y), WK_U8);
  TU_EQ_VALS(y, 0, 2, 8, 10, 5, 8, 12, 15, 15, 18, 22, 25, 20, 22, 28, 30);
  wk_release(y);
  wk_release(x);
  /* downscale by 2: the mean of each 2 x 2 block */
  x = wk_arange(0, 16, 1, WK_OPTS(.dtype = WK_F64));
  wk_tensor *x44 = wk_reshape(x, WK_SHAPE(4, 4));
  wk_transform *down = wk_transform_resize(2, 2);
  y = apply(down, x44, 0);
  TU_EQ_VALS(y, 2.5, 4.5, 10.5, 12.5);
  wk_release(y);
  wk_release(x44);
  wk_release(x);
  /* values printed by PyTorch 1.13 (F.interpolate(x, size, mode='bilinear', align_corners=False); uint8 as
   * torchvision: float32, round, cast) for x[i] = (i * 37 % 101) / 101 and u[i] = i * 37 % 256, 5 x 7 */
  float xv[35];
  uint8_t uv[35];
  for (int i = 0; i < 35; i++) xv[i] = (float)(i * 37 % 101) / 101.0f, uv[i] = (uint8_t)(i * 37 % 256);
  x = wk_tensor_from_data(xv, WK_F32, WK_SHAPE(5, 7));
  wk_transform *r34 = wk_transform_resize(3, 4), *r49 = wk_transform_resize(4, 9);
  y = apply(r34, x, 0);
  TU_CLOSE(y, ((double[]){0.325495034, 0.549917519, 0.316006631, 0.498762369, 0.266089141, 0.782178164, 0.548267305,
                          0.564356446, 0.415016502, 0.764438927, 0.530528009, 0.463283867}), 12, 6e-7, 0);
  wk_release(y);
  wk_release(x);
  x = wk_tensor_from_data(uv, WK_U8, WK_SHAPE(5, 7));
  y = apply(r49, x, 0);
  TU_EQ_VALS(y, 0, 25, 54, 83, 111, 140, 169, 198, 222, 4, 29, 58, 86, 115, 144, 173, 201, 226, 8, 33, 61, 90, 119, 148,
             176, 205, 230, 12, 36, 65, 94, 123, 151, 180, 209, 234);
  wk_release(y);
  wk_release(x);
  wk_transform_free(r34);
  wk_transform_free(r49);
  /* odd ratios, up and down, several planes, against the float64 reference */
  const int sizes[][2] = {{3, 4}, {9, 11}, {5, 2}, {1, 1}, {13, 7}};
  for (int k = 0; k < 5; k++) {
    int oh = sizes[k][0], ow = sizes[k][1];
    wk_transform *tf = wk_transform_resize(oh, ow);
    for (int d = 0; d < 3; d++) {
      wk_dtype dt = d == 0 ? WK_F32 : d == 1 ? WK_F64 : WK_U8;
      x = tu_rand(WK_SHAPE(3, 5, 7), dt, 0, dt == WK_U8 ? 256 : 1, 40 + (uint64_t)k);
      wk_tensor *xn = tu_noncontig(x);
      double *v = tu_values(x), *ref = malloc(sizeof(double) * 3 * (size_t)(oh * ow));
      ref_resample(v, 3, 5, 7, 0, 0, 5, 7, oh, ow, ref);
      y = apply(tf, xn, 0);
      ck_assert_int_eq(wk_tensor_size(y, 1), oh);
      ck_assert_int_eq(wk_tensor_size(y, 2), ow);
      if (dt == WK_U8) {
        for (int i = 0; i < 3 * oh * ow; i++) ref[i] = nearbyint(ref[i]);
        TU_CLOSE(y, ref, 3 * oh * ow, 0, 1); /* a tie may round either way between float and double */
      } else {
        TU_CLOSE(y, ref, 3 * oh * ow, dt == WK_F32 ? 1e-5 : 1e-12, dt == WK_F32 ? 1e-6 : 1e-12);
      }
      free(v);
      free(ref);
      wk_release(y);
      wk_release(xn);
      wk_release(x);
    }
    wk_transform_free(tf);
  }
  /* w 0: the smaller edge becomes h, the other int(h * long / short) */
  wk_transform *edge = wk_transform_resize(4, 0);
  x = wk_zeros(WK_SHAPE(1, 6, 9), WK_OPTS());
  y = apply(edge, x, 0);
  ck_assert_int_eq(wk_tensor_size(y, 1), 4);
  ck_assert_int_eq(wk_tensor_size(y, 2), 6);
  wk_release(y);
  wk_release(x);
  x = wk_zeros(WK_SHAPE(7, 5), WK_OPTS());
  y = apply(edge, x, 0);
  ck_assert_int_eq(wk_tensor_size(y, 0), 5); /* int(4 * 7 / 5) = 5 */
  ck_assert_int_eq(wk_tensor_size(y, 1), 4);
  wk_release(y);
  wk_release(x);
  /* errors */
  x = wk_zeros(WK_SHAPE(4, 4), WK_OPTS(.dtype = WK_I32));
  ck_assert_ptr_null(wk_transform_apply(up, x, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "resize: expects a uint8, float32 or float64 image, got");
  wk_release(x);
  x = wk_zeros(WK_SHAPE(4), WK_OPTS());
  ck_assert_ptr_null(wk_transform_apply(up, x, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "resize: expects a [..., H, W] image");
  wk_release(x);
  ck_assert_ptr_null(wk_transform_resize(0, 3));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "resize: size (0, 3) must be positive");
  wk_transform_free(up);
  wk_transform_free(down);
  wk_transform_free(edge);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

START_TEST(test_image_random_resized_crop) {
  int64_t live = wk_live_tensors();
  /* fallback: no try fits (area 4x the image), so the centre crop clamped to
   * ratio 1 of an 8 x 4 image: rows 2..5, all columns; resized 4 x 4 = itself */
  wk_tensor *x = wk_arange(0, 32, 1, WK_OPTS(.dtype = WK_F32)), *x84 = wk_reshape(x, WK_SHAPE(1, 8, 4));
  wk_transform *fb = wk_transform_random_resized_crop(4, 4, (const double[]){4, 4}, (const double[]){1, 1}, 7);
  for (uint64_t seed = 0; seed < 5; seed++) {
    wk_tensor *y = apply(fb, x84, seed);
    TU_EQ_VALS(y, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23);
    wk_release(y);
  }
  /* ratio out of reach of a wide image: w = round(h * max ratio) */
  wk_tensor *x48 = wk_reshape(x, WK_SHAPE(1, 4, 8));
  wk_transform *fb2 = wk_transform_random_resized_crop(4, 4, (const double[]){4, 4}, (const double[]){0.5, 1}, 7);
  wk_tensor *y = apply(fb2, x48, 3); /* window 4 x 4 at column (8 - 4) / 2 = 2 */
  TU_EQ_VALS(y, 2, 3, 4, 5, 10, 11, 12, 13, 18, 19, 20, 21, 26, 27, 28, 29);
  wk_release(y);
  wk_release(x48);
  wk_release(x84);
  wk_release(x);
  /* sampling: area 1/4 and ratio 1 of 16 x 16 is always an 8 x 8 window at a
   * uniform position; resized to 8 x 8 it is copied, so its first value gives
   * the position */
  x = wk_arange(0, 256, 1, WK_OPTS(.dtype = WK_F64));
  wk_tensor *x16 = wk_reshape(x, WK_SHAPE(16, 16));
  wk_transform *tf = wk_transform_random_resized_crop(8, 8, (const double[]){0.25, 0.25}, (const double[]){1, 1}, 99);
  int seen[9][9] = {{0}};
  for (uint64_t seed = 0; seed < 400; seed++) {
    y = apply(tf, x16, seed);
    double *v = tu_values(y);
    int top = (int)v[0] / 16, left = (int)v[0] % 16;
    ck_assert_int_le(top, 8);
    ck_assert_int_le(left, 8);
    for (int r = 0; r < 8; r++)
      for (int c = 0; c < 8; c++) ck_assert_double_eq(v[r * 8 + c], (top + r) * 16 + left + c);
    seen[top][left]++;
    wk_tensor *again = apply(tf, x16, seed); /* the same stream, the same window */
    TU_CLOSE(again, v, 64, 0, 0);
    wk_release(again);
    free(v);
    wk_release(y);
  }
  int rows_seen = 0, cols_seen = 0;
  for (int i = 0; i < 9; i++) {
    int r = 0, c = 0;
    for (int j = 0; j < 9; j++) r += seen[i][j], c += seen[j][i];
    rows_seen += r > 0, cols_seen += c > 0;
  }
  ck_assert_int_eq(rows_seen, 9);
  ck_assert_int_eq(cols_seen, 9);
  /* defaults: the output is always the asked size, uint8 stays uint8 */
  wk_transform *def = wk_transform_random_resized_crop(5, 6, NULL, NULL, 1);
  wk_tensor *u = tu_rand(WK_SHAPE(3, 20, 30), WK_U8, 0, 256, 5);
  for (uint64_t seed = 0; seed < 20; seed++) {
    y = apply(def, u, seed);
    ck_assert_int_eq(wk_tensor_dtype(y), WK_U8);
    ck_assert_int_eq(wk_tensor_size(y, 0), 3);
    ck_assert_int_eq(wk_tensor_size(y, 1), 5);
    ck_assert_int_eq(wk_tensor_size(y, 2), 6);
    wk_release(y);
  }
  ck_assert_ptr_null(wk_transform_random_resized_crop(5, 5, (const double[]){0.9, 0.1}, NULL, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "scale (0.9, 0.1) and ratio (0.75, 1.33333) must be positive, finite and ordered");
  ck_assert_ptr_null(wk_transform_random_resized_crop(0, 5, NULL, NULL, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "size (0, 5) must be positive");
  wk_transform_free(def);
  wk_transform_free(tf);
  wk_transform_free(fb);
  wk_transform_free(fb2);
  wk_release(u);
  wk_release(x16);
  wk_release(x);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

/* torchvision's blends, in float32 as it computes them. */
static float clampf(float v, float hi) { return v < 0 ? 0 : v > hi ? hi : v; }
static void ref_brightness(float *v, int n, float f, float hi) {
  for (int i = 0; i < n; i++) v[i] = clampf(f * v[i], hi);
}
static void ref_contrast(float *v, int hw, float f, bool u8) {
  double sum = 0;
  for (int i = 0; i < hw; i++) {
    float g = 0.2989f * v[i] + 0.587f * v[hw + i] + 0.114f * v[2 * hw + i];
    sum += u8 ? (float)(uint8_t)g : g;
  }
  float m = (float)(sum / hw);
  for (int i = 0; i < 3 * hw; i++) v[i] = clampf(f * v[i] + (1 - f) * m, u8 ? 255 : 1);
}
static void to_u8(float *v, int n) {
  for (int i = 0; i < n; i++) v[i] = (float)(uint8_t)v[i];
}

START_TEST(test_image_color_jitter) {
  int64_t live = wk_live_tensors();
  enum { HW = 20 };
  wk_tensor *xf = tu_rand(WK_SHAPE(3, 4, 5), WK_F32, 0, 1, 3), *xu = tu_rand(WK_SHAPE(3, 4, 5), WK_U8, 0, 256, 4);
  double *vf = tu_values(xf), *vu = tu_values(xu), ref[3 * HW];
  float a[3 * HW], b2[3 * HW];
  /* brightness 1.5 exactly: clamp(1.5 x); uint8 truncates */
  wk_transform *br = wk_transform_color_jitter_range((const double[]){1.5, 1.5}, NULL, 1);
  wk_tensor *y = apply(br, xf, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vf[i];
  ref_brightness(a, 3 * HW, 1.5f, 1);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 0, 0);
  wk_release(y);
  y = apply(br, xu, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vu[i];
  ref_brightness(a, 3 * HW, 1.5f, 255);
  to_u8(a, 3 * HW);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 0, 0);
  wk_release(y);
  /* contrast 0.5: a blend with the grayscale mean */
  wk_transform *ct = wk_transform_color_jitter_range(NULL, (const double[]){0.5, 0.5}, 1);
  y = apply(ct, xu, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vu[i];
  ref_contrast(a, HW, 0.5f, true);
  to_u8(a, 3 * HW);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 0, 1);
  wk_release(y);
  y = apply(ct, xf, 0);
  for (int i = 0; i < 3 * HW; i++) a[i] = (float)vf[i];
  ref_contrast(a, HW, 0.5f, false);
  for (int i = 0; i < 3 * HW; i++) ref[i] = a[i];
  TU_CLOSE(y, ref, 3 * HW, 1e-6, 1e-7);
  wk_release(y);
  /* one channel (float64): the mean of the image itself */
  wk_tensor *g = TU_T(WK_F64, (1, 1, 4), 0.1, 0.2, 0.3, 1.0);
  y = apply(ct, g, 0);
  TU_CLOSE(y, ((double[]){0.05 + 0.2, 0.1 + 0.2, 0.15 + 0.2, 0.5 + 0.2}), 4, 1e-12, 1e-12);
  wk_release(y);
  wk_release(g);
  /* both: the order is random per sample; each result is one of the two orders */
  wk_transform *both = wk_transform_color_jitter_range((const double[]){1.5, 1.5}, (const double[]){0.5, 0.5}, 2);
  for (int i = 0; i < 3 * HW; i++) a[i] = b2[i] = (float)vf[i];
  ref_brightness(a, 3 * HW, 1.5f, 1), ref_contrast(a, HW, 0.5f, false);
  ref_contrast(b2, HW, 0.5f, false), ref_brightness(b2, 3 * HW, 1.5f, 1);
  int orders[2] = {0, 0};
  for (uint64_t seed = 0; seed < 40; seed++) {
    y = apply(both, xf, seed);
    double *v = tu_values(y);
    bool is_a = true, is_b = true;
    for (int i = 0; i < 3 * HW; i++) {
      is_a = is_a && fabs(v[i] - a[i]) < 1e-6;
      is_b = is_b && fabs(v[i] - b2[i]) < 1e-6;
    }
    ck_assert_msg(is_a != is_b, "seed %llu: neither order (or both) matches", (unsigned long long)seed);
    orders[is_a]++;
    free(v);
    wk_release(y);
  }
  ck_assert_int_gt(orders[0], 5);
  ck_assert_int_gt(orders[1], 5);
  /* ColorJitter(brightness=0.4): one factor in [0.6, 1.4] per sample, deterministic per seed */
  wk_transform *cj = wk_transform_color_jitter(0.4, 0, 3);
  wk_tensor *half = wk_full(WK_SHAPE(3, 2, 2), 0.5, WK_OPTS());
  double lo = 2, hi = 0;
  for (uint64_t seed = 0; seed < 50; seed++) {
    y = apply(cj, half, seed);
    double *v = tu_values(y), f = v[0] / 0.5;
    for (int i = 1; i < 12; i++) ck_assert_double_eq_tol(v[i], v[0], 1e-7);
    ck_assert(f >= 0.6 - 1e-6 && f <= 1.4 + 1e-6);
    lo = fmin(lo, f), hi = fmax(hi, f);
    wk_tensor *again = apply(cj, half, seed);
    TU_CLOSE(again, v, 12, 0, 0);
    wk_release(again);
    free(v);
    wk_release(y);
  }
  ck_assert(lo < 0.75 && hi > 1.25);
  /* errors */
  wk_tensor *two = wk_zeros(WK_SHAPE(2, 2, 2), WK_OPTS());
  ck_assert_ptr_null(wk_transform_apply(ct, two, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "color_jitter: contrast needs 1 or 3 channels, the image has 2");
  wk_tensor *flat = wk_zeros(WK_SHAPE(2, 2), WK_OPTS());
  ck_assert_ptr_null(wk_transform_apply(br, flat, 0));
  TU_FAILS_WITH(WK_ERR_SHAPE, "color_jitter: expects a [C, H, W] image");
  wk_tensor *i32 = wk_zeros(WK_SHAPE(3, 2, 2), WK_OPTS(.dtype = WK_I32));
  ck_assert_ptr_null(wk_transform_apply(br, i32, 0));
  TU_FAILS_WITH(WK_ERR_DTYPE, "color_jitter: expects a uint8, float32 or float64 image");
  ck_assert_ptr_null(wk_transform_color_jitter(-0.5, 0, 0));
  TU_FAILS_WITH(WK_ERR_INVALID_ARG, "color_jitter: brightness (1.5, 0.5)");
  wk_release(two);
  wk_release(flat);
  wk_release(i32);
  wk_release(half);
  wk_transform_free(cj);
  wk_transform_free(both);
  wk_transform_free(br);
  wk_transform_free(ct);
  free(vf);
  free(vu);
  wk_release(xf);
  wk_release(xu);
  ck_assert_int_eq(wk_live_tensors(), live);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("data_image");
  struct {
    const char *name;
    const TTest *t;
  } tests[] = {{"decode", test_image_png_formats}, {"decode", test_image_jpeg},
               {"decode", test_image_corrupt},     {"decode", test_image_fuzz},
               {"folder", test_image_folder},      {"transforms", test_image_resize},
               {"transforms", test_image_random_resized_crop}, {"transforms", test_image_color_jitter}};
  TCase *tc = NULL;
  const char *cur = "";
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    if (strcmp(cur, tests[i].name) != 0) {
      cur = tests[i].name;
      tc = tcase_create(cur);
      tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
      tcase_set_timeout(tc, 60);
      suite_add_tcase(s, tc);
    }
    tcase_add_test(tc, tests[i].t);
  }
  return s;
}
TU_MAIN(make_suite)
