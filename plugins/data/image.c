/* data plugin: PNG and JPEG decoding (libpng, libjpeg) into uint8 [H, W, C]
 * tensors, from memory or from a file. Both libraries report fatal errors
 * through a callback that must not return: ours longjmps back into the
 * decoder's frame, which frees what it allocated and returns an error value,
 * so a corrupt file can never exit() or abort() the process. Corrupt-data
 * warnings (a truncated JPEG that libjpeg would pad with grey) are errors too,
 * as in PIL without LOAD_TRUNCATED_IMAGES. */
#include "data.h" /* first: jpeglib.h needs size_t and FILE declared */

#include <errno.h>
#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>

/* PIL's decompression-bomb limit (2 * MAX_IMAGE_PIXELS): a corrupt header
 * must not make us allocate gigabytes before the data runs out. */
#define DT_MAX_PIXELS ((uint64_t)178956970)
#define DT_MAX_IMAGE_FILE ((size_t)1 << 31)

/* What every decoder fills: native pixels, 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA) channels. */
typedef struct {
  uint8_t *px;
  uint32_t h, w;
  int nc;
  bool unsupported; /* a valid file we do not decode (not corrupt) */
  char msg[JMSG_LENGTH_MAX + 64];
} dec;

static bool size_ok(dec *d, uint64_t w, uint64_t h) {
  if (w == 0 || h == 0) {
    snprintf(d->msg, sizeof d->msg, "image size %llu x %llu is empty", (unsigned long long)w, (unsigned long long)h);
    return false;
  }
  if (w * h > DT_MAX_PIXELS) {
    snprintf(d->msg, sizeof d->msg,
             "image size %llu x %llu exceeds the limit of %llu pixels (corrupt header or a "
             "decompression bomb)",
             (unsigned long long)w, (unsigned long long)h, (unsigned long long)DT_MAX_PIXELS);
    return false;
  }
  return true;
}

/* ---- PNG ------------------------------------------------------------------------------------------ */
typedef struct {
  dec *d;
  const uint8_t *p;
  size_t n, off;
  png_bytep *rows;
} png_job;

static void png_fail(png_structp png, png_const_charp msg) {
  png_job *j = png_get_error_ptr(png);
  if (!j->d->msg[0]) snprintf(j->d->msg, sizeof j->d->msg, "%s", msg);
  png_longjmp(png, 1);
}
/* Warnings are recoverable by definition (a bad ancillary chunk is dropped): keep quiet. */
static void png_quiet(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}
static void png_read_mem(png_structp png, png_bytep out, size_t len) {
  png_job *j = png_get_io_ptr(png);
  if (len > j->n - j->off) {
    snprintf(j->d->msg, sizeof j->d->msg, "truncated: unexpected end of file after %zu bytes", j->n);
    png_longjmp(png, 1);
  }
  memcpy(out, j->p + j->off, len);
  j->off += len;
}

/* Palette -> RGB(A), tRNS -> alpha, 1/2/4-bit gray -> 8 bits, 16 bits -> the
 * high byte (PIL's reading of 16-bit RGB), interlacing undone. */
static bool png_decode(const uint8_t *p, size_t n, dec *d) {
  png_job *j = wk_calloc(1, sizeof *j); /* on the heap: its fields change between setjmp and longjmp */
  if (!j) {
    snprintf(d->msg, sizeof d->msg, "out of memory");
    return false;
  }
  j->d = d;
  j->p = p;
  j->n = n;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, png_fail, png_quiet);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
    wk_free(j);
    snprintf(d->msg, sizeof d->msg, "out of memory");
    return false;
  }
  volatile bool ok = false;
  if (setjmp(png_jmpbuf(png)) == 0) {
    png_set_read_fn(png, j, png_read_mem);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int ct = png_get_color_type(png, info), bits = png_get_bit_depth(png, info);
    if (!size_ok(d, w, h)) png_longjmp(png, 1);
    if (ct == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ct == PNG_COLOR_TYPE_GRAY && bits < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (bits == 16) png_set_strip_16(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int nc = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (nc < 1 || nc > 4 || png_get_bit_depth(png, info) != 8 || rowbytes != (size_t)w * (size_t)nc) {
      snprintf(d->msg, sizeof d->msg, "colour type %d with bit depth %d", ct, bits);
      d->unsupported = true;
      png_longjmp(png, 1);
    }
    d->px = wk_malloc((size_t)w * h * (size_t)nc);
    j->rows = wk_malloc(sizeof *j->rows * h);
    if (!d->px || !j->rows) {
      snprintf(d->msg, sizeof d->msg, "out of memory for a %u x %u image", (unsigned)w, (unsigned)h);
      png_longjmp(png, 1);
    }
    for (png_uint_32 r = 0; r < h; r++) j->rows[r] = d->px + (size_t)r * rowbytes;
    png_read_image(png, j->rows);
    png_read_end(png, NULL); /* checks the chunks after the image data, up to IEND */
    d->w = w;
    d->h = h;
    d->nc = nc;
    ok = true;
  }
  png_destroy_read_struct(&png, &info, NULL);
  wk_free(j->rows);
  wk_free(j);
  if (!ok) {
    wk_free(d->px);
    d->px = NULL;
  }
  return ok;
}

/* ---- JPEG ----------------------------------------------------------------------------------------- */
typedef struct {
  struct jpeg_error_mgr mgr; /* first: libjpeg hands us a pointer to it */
  jmp_buf jb;
  dec *d;
} jpeg_err;

static void jpeg_fail(j_common_ptr ci) {
  jpeg_err *e = (jpeg_err *)ci->err;
  if (!e->d->msg[0]) ci->err->format_message(ci, e->d->msg);
  longjmp(e->jb, 1);
}
/* Level -1 is a corrupt-data warning (truncated or damaged entropy data):
 * an error for us. Trace messages (level >= 0) are ignored. */
static void jpeg_emit(j_common_ptr ci, int level) {
  if (level < 0) jpeg_fail(ci);
}
static void jpeg_silent(j_common_ptr ci) {
  (void)ci;
}

static bool jpeg_decode(const uint8_t *p, size_t n, dec *d) {
  struct jpeg_decompress_struct *ci = wk_calloc(1, sizeof *ci);
  jpeg_err *e = wk_calloc(1, sizeof *e);
  if (!ci || !e) {
    wk_free(ci);
    wk_free(e);
    snprintf(d->msg, sizeof d->msg, "out of memory");
    return false;
  }
  ci->err = jpeg_std_error(&e->mgr);
  e->mgr.error_exit = jpeg_fail;
  e->mgr.emit_message = jpeg_emit;
  e->mgr.output_message = jpeg_silent;
  e->d = d;
  volatile bool ok = false;
  if (setjmp(e->jb) == 0) {
    jpeg_create_decompress(ci);
    jpeg_mem_src(ci, (const unsigned char *)p, (unsigned long)n);
    jpeg_read_header(ci, TRUE);
    if (ci->num_components == 1) {
      ci->out_color_space = JCS_GRAYSCALE;
    } else if (ci->num_components == 3 && (ci->jpeg_color_space == JCS_YCbCr || ci->jpeg_color_space == JCS_RGB)) {
      ci->out_color_space = JCS_RGB;
    } else {
      snprintf(d->msg, sizeof d->msg, "%s colour space (%d components); gray and RGB/YCbCr are supported",
               ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK ? "CMYK" : "unknown",
               ci->num_components);
      d->unsupported = true;
      longjmp(e->jb, 1);
    }
    if (!size_ok(d, ci->image_width, ci->image_height)) longjmp(e->jb, 1);
    jpeg_start_decompress(ci);
    size_t row = (size_t)ci->output_width * (size_t)ci->output_components;
    d->px = wk_malloc(row * ci->output_height);
    if (!d->px) {
      snprintf(d->msg, sizeof d->msg, "out of memory for a %u x %u image", ci->output_width, ci->output_height);
      longjmp(e->jb, 1);
    }
    while (ci->output_scanline < ci->output_height) {
      JSAMPROW r = d->px + row * ci->output_scanline;
      if (jpeg_read_scanlines(ci, &r, 1) != 1) {
        snprintf(d->msg, sizeof d->msg, "truncated: no data for row %u", ci->output_scanline);
        longjmp(e->jb, 1);
      }
    }
    jpeg_finish_decompress(ci);
    d->w = ci->output_width;
    d->h = ci->output_height;
    d->nc = ci->output_components;
    ok = true;
  }
  jpeg_destroy_decompress(ci); /* safe on a zeroed struct: it only frees what was made */
  wk_free(ci);
  wk_free(e);
  if (!ok) {
    wk_free(d->px);
    d->px = NULL;
  }
  return ok;
}

/* ---- Channel conversion (PIL's Image.convert) ---------------------------------------------------- */
/* L = R * 299/1000 + G * 587/1000 + B * 114/1000, with PIL's rounding. */
static uint8_t luma(const uint8_t *s) {
  return (uint8_t)((s[0] * 19595 + s[1] * 38470 + s[2] * 7471 + 0x8000) >> 16);
}

static wk_tensor *to_tensor_hwc(const dec *d, int want) {
  int C = want ? want : d->nc;
  wk_tensor *t = wk_empty(WK_SHAPE(d->h, d->w, C), (wk_options){.dtype = WK_U8});
  if (!t) return NULL;
  uint8_t *o = wk_tensor_data(t);
  size_t npx = (size_t)d->h * d->w;
  if (C == d->nc) {
    memcpy(o, d->px, npx * (size_t)C);
    return t;
  }
  for (size_t i = 0; i < npx; i++, o += C) {
    const uint8_t *s = d->px + i * (size_t)d->nc;
    bool gray = d->nc <= 2;
    uint8_t alpha = d->nc == 2 ? s[1] : d->nc == 4 ? s[3] : 255;
    if (C == 1) {
      o[0] = gray ? s[0] : luma(s);
    } else { /* 3 or 4: gray is replicated, alpha dropped (not composited) or set opaque */
      for (int k = 0; k < 3; k++) o[k] = gray ? s[0] : s[k];
      if (C == 4) o[3] = alpha;
    }
  }
  return t;
}

/* ---- Entry points --------------------------------------------------------------------------------- */
wk_tensor *dt_image_decode_named(const void *data, size_t n, int channels, const char *fn, const char *name) {
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4) {
    wk_error(WK_ERR_INVALID_ARG, "%s: channels must be 0 (as stored), 1 (gray), 3 (RGB) or 4 (RGBA), got %d", fn,
             channels);
    return NULL;
  }
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const uint8_t *p = data;
  dec d = {0};
  bool is_png = n >= 8 && memcmp(p, png_sig, 8) == 0, is_jpeg = n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF;
  if (!is_png && !is_jpeg) {
    char head[3 * 8 + 1] = "";
    for (size_t i = 0, k = 0; i < n && i < 8; i++)
      k += (size_t)snprintf(head + k, sizeof head - k, "%s%02x", i ? " " : "", p[i]);
    wk_error(WK_ERR_IO, "%s: '%s': not a PNG or JPEG file (%zu bytes%s%s)", fn, name, n, n ? ", starting " : "", head);
    return NULL;
  }
  if (!(is_png ? png_decode(p, n, &d) : jpeg_decode(p, n, &d))) {
    wk_error(WK_ERR_IO, "%s: '%s': %s %s: %s", fn, name, d.unsupported ? "unsupported" : "corrupt",
             is_png ? "PNG" : "JPEG", d.msg[0] ? d.msg : "unknown error");
    return NULL;
  }
  wk_tensor *t = to_tensor_hwc(&d, channels);
  wk_free(d.px);
  return t;
}

wk_tensor *dt_image_decode(const void *data, size_t n, int channels) {
  if (!data && n) {
    wk_error(WK_ERR_NULL, "image_decode: argument 'data' is NULL");
    return NULL;
  }
  return dt_image_decode_named(data ? data : "", n, channels, "image_decode", "<memory>");
}

/* Reads `path` whole (at most DT_MAX_IMAGE_FILE bytes) into a malloc'd buffer. */
wk_status dt_read_file(const char *fn, const char *path, uint8_t **buf, size_t *n) {
  *buf = NULL;
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return wk_error(WK_ERR_IO, "%s: cannot open '%s': %s", fn, path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  uint8_t *b = wk_malloc(cap);
  wk_status st = b ? WK_OK : wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s'", fn, path);
  while (st == WK_OK) {
    if (len == cap) {
      uint8_t *nb = cap < DT_MAX_IMAGE_FILE ? wk_realloc(b, cap * 2) : NULL;
      if (!nb) {
        st = cap < DT_MAX_IMAGE_FILE
                 ? wk_error(WK_ERR_NO_MEMORY, "%s: out of memory reading '%s'", fn, path)
                 : wk_error(WK_ERR_IO, "%s: '%s' is larger than %zu bytes", fn, path, DT_MAX_IMAGE_FILE);
        break;
      }
      b = nb;
      cap *= 2;
    }
    size_t got = fread(b + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f))
        st = wk_error(WK_ERR_IO, "%s: reading '%s' failed after %zu bytes: %s", fn, path, len, strerror(errno));
      break;
    }
  }
  fclose(f);
  if (st != WK_OK) {
    wk_free(b);
    return st;
  }
  *buf = b;
  *n = len;
  return WK_OK;
}

wk_tensor *dt_image_read(const char *path, int channels) {
  if (!path) {
    wk_error(WK_ERR_NULL, "image_read: argument 'path' is NULL");
    return NULL;
  }
  uint8_t *b;
  size_t n;
  if (dt_read_file("image_read", path, &b, &n) != WK_OK) return NULL;
  wk_tensor *t = dt_image_decode_named(b, n, channels, "image_read", path);
  wk_free(b);
  return t;
}
