# dist-nccl plugin: torch.distributed's collectives on NCCL for cuda tensors, bootstrapped through dist.mpi
# (included from Makefile.am). libnccl is opened on first use, so nothing is linked but libdl.
if BUILD_DIST_NCCL
plugins_LTLIBRARIES += plugins/dist-nccl/dist-nccl.la
plugins_dist_nccl_dist_nccl_la_SOURCES = plugins/dist-nccl/nccl.c
plugins_dist_nccl_dist_nccl_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CUDA_CFLAGS)
plugins_dist_nccl_dist_nccl_la_LIBADD = -ldl
plugins_dist_nccl_dist_nccl_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if HAVE_CHECK
check_PROGRAMS += tests/check_dist_nccl
TESTS += tests/check_dist_nccl
tests_check_dist_nccl_SOURCES = tests/check_dist_nccl.c tests/testutil.h
tests_check_dist_nccl_CFLAGS = $(TEST_CFLAGS)
tests_check_dist_nccl_LDADD = $(TEST_LDADD)
endif
endif
