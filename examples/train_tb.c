/* TensorBoard event-file writer (see train_tb.h). */
#include "train_tb.h"

#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

uint32_t tb_crc32c(const void *data, size_t n) {
  static uint32_t table[256];
  static bool ready;
  if (!ready) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  const uint8_t *p = data;
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t tb_masked_crc32c(const void *data, size_t n) {
  uint32_t crc = tb_crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* A small bounded protobuf writer. */
typedef struct {
  uint8_t *p;
  size_t n, cap;
  bool overflow;
} pb;

static void pb_byte(pb *b, uint8_t v) {
  if (b->n < b->cap)
    b->p[b->n] = v;
  else
    b->overflow = true;
  b->n++;
}
static void pb_varint(pb *b, uint64_t v) {
  do {
    pb_byte(b, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v);
}
static void pb_fixed(pb *b, uint64_t v, int nbytes) {
  for (int i = 0; i < nbytes; i++) pb_byte(b, (uint8_t)(v >> (8 * i)));
}
static void pb_bytes(pb *b, int field, const void *data, size_t n) {
  pb_varint(b, (uint64_t)field << 3 | 2);
  pb_varint(b, n);
  for (size_t i = 0; i < n; i++) pb_byte(b, ((const uint8_t *)data)[i]);
}

size_t tb_encode_event(uint8_t *buf, size_t cap, double wall_time, int64_t step, const char *file_version,
                       const char *tag, float value) {
  pb b = {buf, 0, cap, false};
  uint64_t bits;
  memcpy(&bits, &wall_time, 8);
  pb_varint(&b, 1 << 3 | 1); /* wall_time: double */
  pb_fixed(&b, bits, 8);
  if (step) { /* step: int64 varint (proto3 omits 0) */
    pb_varint(&b, 2 << 3 | 0);
    pb_varint(&b, (uint64_t)step);
  }
  if (file_version) pb_bytes(&b, 3, file_version, strlen(file_version));
  if (tag) {
    /* Summary.Value { tag = 1, simple_value = 2 } inside Summary { value = 1 }. */
    uint8_t val[512], sum[600];
    pb v = {val, 0, sizeof val, false}, s = {sum, 0, sizeof sum, false};
    pb_bytes(&v, 1, tag, strlen(tag));
    uint32_t fbits;
    memcpy(&fbits, &value, 4);
    pb_varint(&v, 2 << 3 | 5);
    pb_fixed(&v, fbits, 4);
    if (v.overflow) return 0;
    pb_bytes(&s, 1, val, v.n);
    if (s.overflow) return 0;
    pb_bytes(&b, 5, sum, s.n);
  }
  return b.overflow ? 0 : b.n;
}

static double wall_now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static bool write_record(tb_writer *w, const uint8_t *data, size_t n) {
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
  uint32_t lc = tb_masked_crc32c(len, 8), dc = tb_masked_crc32c(data, n);
  uint8_t lcb[4], dcb[4];
  for (int i = 0; i < 4; i++) {
    lcb[i] = (uint8_t)(lc >> (8 * i));
    dcb[i] = (uint8_t)(dc >> (8 * i));
  }
  return fwrite(len, 1, 8, w->f) == 8 && fwrite(lcb, 1, 4, w->f) == 4 && fwrite(data, 1, n, w->f) == n &&
         fwrite(dcb, 1, 4, w->f) == 4;
}

bool tb_open(tb_writer *w, const char *dir) {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s", dir, (long long)time(NULL), host);
  w->f = fopen(w->path, "wb");
  if (!w->f) return false;
  uint8_t buf[128];
  size_t n = tb_encode_event(buf, sizeof buf, wall_now(), 0, "brain.Event:2", NULL, 0);
  if (!n || !write_record(w, buf, n) || fflush(w->f)) {
    fclose(w->f);
    w->f = NULL;
    return false;
  }
  return true;
}

bool tb_scalar(tb_writer *w, const char *tag, int64_t step, double value) {
  if (!w->f) return false;
  uint8_t buf[1024];
  size_t n = tb_encode_event(buf, sizeof buf, wall_now(), step, NULL, tag, (float)value);
  return n && write_record(w, buf, n);
}

bool tb_flush(tb_writer *w) {
  return w->f && fflush(w->f) == 0;
}

void tb_close(tb_writer *w) {
  if (w->f) fclose(w->f);
  w->f = NULL;
}
