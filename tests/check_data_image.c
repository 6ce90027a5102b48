/* check_data_image: PNG/JPEG decoding (files written here with libpng and
 * libjpeg: every PNG colour type, palette with transparency, 1- and 16-bit,
 * interlaced; gray, RGB, progressive and CMYK JPEG), corrupt and truncated
 * files, a fuzz loop of truncated and bit-flipped images, and ImageFolder
 * (class order, file order, labels, errors, through a loader). */
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
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
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
static uint8_t luma(const uint8_t *s) {
  return (uint8_t)((s[0] * 19595 + s[1] * 38470 + s[2] * 7471 + 0x8000) >> 16);
}

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
  for (int i = 0; i < JH * JW * 3; i++)
    ck_assert_int_le(abs((int)p[i] - (int)rgb[i]), 8); /* quality 100, chroma subsampled */
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
      if (kind == 1)
        b[at] ^= (uint8_t)(1u << (int)(tu_uniform(&seed) * 8));
      else
        b[at] = (uint8_t)(tu_uniform(&seed) * 256);
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
  /* symlink cycles (two of them: 2^depth paths without cycle detection) add nothing */
  ck_assert_int_eq(symlink(".", path_of("root/cat/sub/loop")), 0);
  ck_assert_int_eq(symlink("..", path_of("root/cat/sub/deeper/back")), 0);
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

static Suite *make_suite(void) {
  Suite *s = suite_create("data_image");
  struct {
    const char *name;
    const TTest *t;
  } tests[] = {{"decode", test_image_png_formats},
               {"decode", test_image_jpeg},
               {"decode", test_image_corrupt},
               {"decode", test_image_fuzz},
               {"folder", test_image_folder}};
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
