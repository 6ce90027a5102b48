/* The reproducibility record (run.json) written beside the weights: Wick
 * version and ABI, loaded plugins and their versions, device, compiler, seed,
 * full hyper-parameters and a checksum of the dataset files. */
#ifndef WICK_EXAMPLES_TRAIN_RECORD_H
#define WICK_EXAMPLES_TRAIN_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "train.h"

/* 64-bit FNV-1a over the bytes of the files paths[0..n) in order (continuing
 * one hash across them). false when a file cannot be read. */
bool record_fnv1a_files(const char *const *paths, int n, uint64_t *hash);
/* Writes path (run.json). dataset_files/n: the files checksummed. start_epoch:
 * first epoch run by this process (> 1 when resumed). */
bool record_write(const char *path, const train_config *c, const char *device_name, const char *const *dataset_files,
                  int nfiles, int start_epoch, int64_t nparams);

#endif
