/* The main job's configuration, shared by its parts (train.c, train_record.c). */
#ifndef WICK_EXAMPLES_TRAIN_H
#define WICK_EXAMPLES_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct train_config {
  const char *model, *data, *device, *out, *resume;
  int epochs, workers;
  int64_t batch, limit;
  double lr, momentum;
  uint64_t seed;
} train_config;

#endif
