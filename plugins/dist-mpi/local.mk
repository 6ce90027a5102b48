# dist-mpi plugin: torch.distributed's collectives on Open MPI for cpu tensors (included from Makefile.am).
wickinclude_HEADERS += abi/wick/dist.h
if BUILD_DIST_MPI
plugins_LTLIBRARIES += plugins/dist-mpi/dist-mpi.la
plugins_dist_mpi_dist_mpi_la_SOURCES = plugins/dist-mpi/dmpi.h plugins/dist-mpi/plugin.c plugins/dist-mpi/progress.c
plugins_dist_mpi_dist_mpi_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(MPI_CFLAGS)
plugins_dist_mpi_dist_mpi_la_LIBADD = $(MPI_LIBS) -lpthread
plugins_dist_mpi_dist_mpi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
endif
if HAVE_CHECK
# check_dist runs alone (a world of one) and, through tests/dist.sh, under mpirun with 2 and 3 ranks.
check_PROGRAMS += tests/check_dist
TESTS += tests/check_dist tests/dist.sh
EXTRA_DIST += tests/dist.sh
tests_check_dist_SOURCES = tests/check_dist.c tests/testutil.h
tests_check_dist_CFLAGS = $(TEST_CFLAGS)
tests_check_dist_LDADD = $(TEST_LDADD)
endif
# all_reduce latency/bandwidth (Wick and Open MPI directly) and DDP steps: mpirun -np 2 bench/bench_dist [--raw|--ddp];
# bench/dist_vs_torch.py runs it next to bench/dist_torch.py (PyTorch's gloo)
EXTRA_DIST += bench/dist_torch.py bench/dist_vs_torch.py
if BUILD_DIST_MPI
EXTRA_PROGRAMS += bench/bench_dist
bench_bench_dist_SOURCES = bench/bench_dist.c bench/bench_util.h
bench_bench_dist_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS) -DBENCH_DIST_RAW
bench_bench_dist_LDADD = libwick.la $(MPI_LIBS) -lm
CLEANFILES += bench/bench_dist$(EXEEXT)
endif
