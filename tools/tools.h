/* The `wick` command line's subcommands that live in their own files. */
#ifndef WICK_TOOLS_H
#define WICK_TOOLS_H

/* wick summary ... (tools/summary.c); argv[1] is "summary". Returns the exit status. */
int wick_summary_cmd(int argc, char **argv);

/* Shared by the model subcommands (tools/summary.c): "1x3x224x224" -> sizes,
 * the number of dims or -1 when malformed; a zoo model built on dev (NULL:
 * *known says whether the name was unknown or building failed). */
#include <stdbool.h>
#include <stdint.h>
#include <wick/wick.h>
#define WICK_ZOO_NAMES "resnet18, resnet34, resnet50, lenet, mlp"
int wick_parse_shape(const char *text, int64_t *sizes);
wk_module *wick_zoo_model(const char *name, wk_device dev, bool *known);

/* wick graph MODEL ... (tools/graph.c); argv[1] is "graph". Returns the exit status. */
int wick_graph_cmd(int argc, char **argv);

/* wick doctor DIR [--clean] (tools/doctor.c); argv[1] is "doctor". Returns the exit status. */
int wick_doctor_cmd(int argc, char **argv);

/* wick info --probe (tools/probe.c): each plugin candidate loaded in a child
 * process; 1 when one crashed, aborted, exited or hung. */
int wick_probe_cmd(void);

/* wick launch --nproc-per-node N PROGRAM ARGS (tools/launch.c); argv[1] is "launch". Returns the exit
 * status when it cannot start the job (else it becomes mpirun). */
int wick_launch_cmd(int argc, char **argv);

/* wick run MODEL.onnx ... (tools/run.c): an ONNX model through the onnx plugin; argv[1] is "run". */
int wick_run_cmd(int argc, char **argv);

#endif
