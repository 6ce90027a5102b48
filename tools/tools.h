/* The `wick` command line's subcommands that live in their own files. */
#ifndef WICK_TOOLS_H
#define WICK_TOOLS_H

/* wick summary ... (tools/summary.c); argv[1] is "summary". Returns the exit status. */
int wick_summary_cmd(int argc, char **argv);

/* wick doctor DIR [--clean] (tools/doctor.c); argv[1] is "doctor". Returns the exit status. */
int wick_doctor_cmd(int argc, char **argv);

/* wick launch --nproc-per-node N PROGRAM ARGS (tools/launch.c); argv[1] is "launch". Returns the exit
 * status when it cannot start the job (else it becomes mpirun). */
int wick_launch_cmd(int argc, char **argv);

#endif
