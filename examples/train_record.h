/* The reproducibility record (run.json) written beside the weights: Wick
 * version and ABI, loaded plugins and their versions, device, compiler, seed,
 * full hyper-parameters and a checksum of the dataset files. */
#ifndef WICK_EXAMPLES_TRAIN_RECORD_H
#define WICK_EXAMPLES_TRAIN_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "train.h"
#include "train_data.h"

/* 64-bit FNV-1a over the bytes of the files paths[0..n) in order (continuing
 * one hash across them). false when a file cannot be read. */
bool record_fnv1a_files(const char *const *paths, int n, uint64_t *hash);
/* Writes path (run.json). d: the dataset (its files are checksummed, its
 * normalisation recorded). start_epoch: first epoch run by this process (> 1
 * when resumed). */
bool record_write(const char *path, const train_config *c, const char *device_name, const train_data *d,
                  int start_epoch, int64_t nparams);

#endif
