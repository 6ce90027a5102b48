/* examples/train --quantize ptq|qat: the trained float model made int8 with
 * the quant service (eager-mode PTQ or QAT, as PyTorch's tutorials do it),
 * and compared with float32 on accuracy, size and inference speed. */
#ifndef WICK_EXAMPLES_TRAIN_QUANT_H
#define WICK_EXAMPLES_TRAIN_QUANT_H

#include <stdbool.h>
#include <wick/data.h>
#include <wick/module.h>

#include "train.h"

/* Whether --quantize can run with c on device `cpu` (true: the CPU): cnn or
 * mlp, no --ddp, no --channels-last, and the quant plugin loaded. False with
 * the reason on stderr. */
bool train_quant_check(const train_config *c, bool cpu);

/* Quantizes the trained float32 model (on the CPU) as c->quantize says,
 * calibrating or fine-tuning on train_dl, measuring on test_dl, and writes
 * model_f32.safetensors and model_int8.safetensors (the quantized state dict
 * packed by wk_quant_state_dict_pack) into c->out. model is changed in place
 * (its layers fused and swapped for quantized ones): use it only to release
 * it afterwards. Prints the comparison; returns WK_OK or the error. */
wk_status train_quantize(const train_config *c, wk_module *model, wk_dataloader *train_dl, wk_dataloader *test_dl);

#endif
