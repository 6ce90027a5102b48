/* The main job's datasets (train_data.c): --dataset NAME [--data DIR]. */
#ifndef WICK_EXAMPLES_TRAIN_DATA_H
#define WICK_EXAMPLES_TRAIN_DATA_H

#include <stdbool.h>
#include <stdint.h>
#include <wick/data.h>

#include "train.h"

#define TRAIN_FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define TRAIN_DATA_MAX_FILES 8

typedef struct train_data {
  wk_dataset *train, *test;              /* samples (float image [C, H, W], int64 label) */
  int64_t channels, height, width, classes; /* what the model sees */
  bool rgb_from_grey;                    /* grey images repeated to 3 channels */
  double mean[3], std[3];                /* Normalize's statistics */
  int nstats;
  const char *files[TRAIN_DATA_MAX_FILES]; /* checksummed into run.json */
  char filebuf[TRAIN_DATA_MAX_FILES][1100];
  int nfiles;
} train_data;

/* Loads c->dataset; false with the error recorded (wk_last_error_message). */
bool train_data_load(const train_config *c, train_data *d);
void train_data_free(train_data *d);

#endif
