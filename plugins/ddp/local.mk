# ddp plugin: DistributedDataParallel on the dist service (included from Makefile.am).
plugins_LTLIBRARIES += plugins/ddp/ddp.la
plugins_ddp_ddp_la_SOURCES = plugins/ddp/ddp.c
plugins_ddp_ddp_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_ddp_ddp_la_LDFLAGS = $(PLUGIN_LDFLAGS)
if HAVE_CHECK
# DDP against one process, features and dead ranks; run by tests/dist.sh (plugins/dist-mpi/local.mk).
check_PROGRAMS += tests/dist_ddp tests/check_dist_callback tests/dist_ddp_torch
TESTS += tests/check_dist_callback
tests_check_dist_callback_SOURCES = tests/check_dist_callback.c tests/testutil.h
tests_check_dist_callback_CFLAGS = $(TEST_CFLAGS)
tests_check_dist_callback_LDADD = $(TEST_LDADD)
tests_dist_ddp_SOURCES = tests/dist_ddp.c
tests_dist_ddp_LDADD = libwick.la -lm
# DDP against PyTorch's DDP (gloo, 2 processes): tests/torch_ref/gen_ddp_ref.py made the header.
tests_dist_ddp_torch_SOURCES = tests/dist_ddp_torch.c tests/torch_ref/ddp_ref.h
tests_dist_ddp_torch_LDADD = libwick.la -lm
endif
EXTRA_DIST += tests/torch_ref/gen_ddp_ref.py
