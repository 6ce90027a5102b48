/* dist-mpi plugin: private declarations shared by its files. Every MPI call
 * after start-up runs on one progress thread (progress.c), which runs the
 * operations in submission order while the caller's threads compute. */
#ifndef WICK_DIST_MPI_H
#define WICK_DIST_MPI_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <wick/sdk.h> /* first: it routes the wk_* calls of the headers below */
#include <wick/dist.h>

typedef struct dmpi_group {
  wk_dist_group base;
  MPI_Comm comm;    /* MPI_COMM_NULL on ranks outside the group */
  int rank, size;   /* rank -1 outside */
  int *world_ranks; /* world rank of each group rank (size entries) */
  double timeout_s;
  bool is_world;
  char name[48]; /* "the world group", "group 2" */
} dmpi_group;

typedef enum {
  DMPI_ALL_REDUCE = 1,
  DMPI_BROADCAST,
  DMPI_ALL_GATHER,
  DMPI_REDUCE_SCATTER,
  DMPI_BARRIER,
  DMPI_SEND,
  DMPI_RECV,
  DMPI_SPLIT,     /* new_group: MPI_Comm_split over the parent */
  DMPI_COMM_FREE, /* group_free */
} dmpi_kind;

typedef enum { W_QUEUED = 0, W_STARTED, W_DONE, W_FAILED } dmpi_state;

typedef struct dmpi_work {
  wk_dist_work base;
  dmpi_kind kind;
  dmpi_group *g;
  wk_tensor *t0, *t1; /* retained until the work is freed (t0 written, t1 read) */
  void *buf0, *buf1;
  int count; /* elements per rank block */
  wk_dtype dtype;
  MPI_Datatype mdt;
  MPI_Op mop;
  wk_reduce_op rop;
  int peer, tag;
  int color, key;    /* DMPI_SPLIT */
  MPI_Comm comm_out; /* DMPI_SPLIT result, DMPI_COMM_FREE argument */
  MPI_Request req;
  dmpi_state state; /* guarded by the progress lock */
  bool orphan;      /* freed by its owner while running: the progress thread frees it */
  double t_start, t_end;
  char err[320];
  struct dmpi_work *next;
} dmpi_work;

/* progress.c */
/* Starts the progress thread, which initialises MPI; fills the world's rank
 * and size and the peers' pids and hosts. WK_OK or an error recorded. */
wk_status dmpi_start(double timeout_s, int *rank, int *size);
/* Queues w (state W_QUEUED); the progress thread starts it in order. */
void dmpi_submit(dmpi_work *w);
/* Waits for w at most timeout_s; on timeout records an error naming the
 * operation and any dead or stopped peer, and marks the process broken. */
wk_status dmpi_wait(dmpi_work *w, double timeout_s);
bool dmpi_done(dmpi_work *w);
/* Frees w, or hands it to the progress thread when it still runs. */
void dmpi_work_release(dmpi_work *w);
/* Drains the queue (bounded), finalises MPI unless the process is broken,
 * and ends the thread. */
void dmpi_stop(void);
bool dmpi_started(void);
/* The world's communicator after dmpi_start: MPI_COMM_WORLD, or the nodes' joined one (WICK_DIST_NNODES > 1). */
MPI_Comm dmpi_world_comm(void);
/* Short description of an operation ("all_reduce of 1024 float32 on the world group"). */
void dmpi_describe(const dmpi_work *w, char *buf, size_t n);
double dmpi_now(void);
/* The MPI reduction for a dtype (float16/bfloat16: the plugin's own ops; AVG: SUM, divided after). */
MPI_Op dmpi_pick_op(wk_dtype dt, wk_reduce_op op);

#endif
