/* The main job's configuration, shared by its parts (train.c, train_record.c). */
#ifndef WICK_EXAMPLES_TRAIN_H
#define WICK_EXAMPLES_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct train_config {
  const char *model, *dataset, *data, *device, *out, *resume;
  const char *optimizer; /* sgd | adam | adamw */
  const char *scheduler; /* cosine | step | onecycle | none */
  int epochs, workers;
  int stop_after; /* --stop-after N: end this run after epoch N (a preempted job), 0: run all */
  int64_t batch, limit;
  int64_t image_size; /* --image-size: side of the images the model sees (imagefolder) */
  double lr, momentum, weight_decay;
  uint64_t seed;
  bool amp;     /* --amp [bf16|f16]: mixed precision (needs the amp plugin) */
  bool amp_f16; /* --amp f16: float16 autocast with a GradScaler (bfloat16 otherwise) */
  bool ddp; /* --ddp: DistributedDataParallel over the launcher's world (wick launch, mpirun) */
  const char *export_onnx; /* --export-onnx PATH: the trained model as ONNX (needs the onnx plugin) */
  bool phases; /* --phases: where each epoch's time went (data, forward, backward, step, metrics, logging) */
  bool channels_last; /* --channels-last: 4-D weights and images in NHWC order (torch.channels_last) */
  const char *quantize; /* --quantize ptq|qat: int8 after training (train_quant.c); NULL: none */
  int64_t calib_batches; /* --calib-batches N: PTQ calibration batches (32) */
  int qat_epochs;        /* --qat-epochs N: QAT fine-tuning epochs after the float ones (1) */
  double qat_lr;         /* --qat-lr X: QAT fine-tuning learning rate (0: a tenth of --lr) */
} train_config;

#endif
