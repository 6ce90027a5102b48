/* TensorBoard scalar event files, hand-encoded: TFRecord framing (uint64
 * length, masked CRC32C of the length, data, masked CRC32C of the data) around
 * Event protobufs (wall_time = 1 double, step = 2 int64, file_version = 3
 * string, summary = 5 { value = 1 { tag = 1 string, simple_value = 2 float } }).
 * No protobuf library needed. */
#ifndef WICK_EXAMPLES_TRAIN_TB_H
#define WICK_EXAMPLES_TRAIN_TB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tb_writer {
  FILE *f;
  char path[1024];
} tb_writer;

/* CRC-32C (Castagnoli), and TFRecord's mask ((crc >> 15 | crc << 17) + 0xa282ead8). */
uint32_t tb_crc32c(const void *data, size_t n);
uint32_t tb_masked_crc32c(const void *data, size_t n);
/* Creates DIR/events.out.tfevents.<unix time>.<host> and writes the first
 * event (file_version "brain.Event:2"). false with errno set on failure. */
bool tb_open(tb_writer *w, const char *dir);
/* Appends one scalar event (tag, step, value) stamped with the current time. */
bool tb_scalar(tb_writer *w, const char *tag, int64_t step, double value);
/* Flushes the file (the events become visible to TensorBoard). */
bool tb_flush(tb_writer *w);
void tb_close(tb_writer *w);
/* Encodes one Event into buf (cap bytes); returns its length, or 0 when it
 * does not fit. tag NULL: a file_version event with no summary. */
size_t tb_encode_event(uint8_t *buf, size_t cap, double wall_time, int64_t step, const char *file_version,
                       const char *tag, float value);

#endif
