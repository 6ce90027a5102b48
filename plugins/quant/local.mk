# quant plugin: observers, qconfigs, fuse/prepare/convert and the quantized
# modules of eager-mode int8 (the `quant` service; included from Makefile.am).
plugins_LTLIBRARIES += plugins/quant/quant.la
plugins_quant_quant_la_SOURCES = plugins/quant/quant.h plugins/quant/plugin.c plugins/quant/observer.c \
	plugins/quant/modules.c plugins/quant/workflow.c plugins/quant/state.c plugins/quant/qat.c \
	plugins/quant/functional.c plugins/quant/qops.c
plugins_quant_quant_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_quant_quant_la_LIBADD = -lm
plugins_quant_quant_la_LDFLAGS = $(PLUGIN_LDFLAGS)
wickinclude_HEADERS += abi/wick/quant.h
if HAVE_CHECK
check_PROGRAMS += tests/check_quant
TESTS += tests/check_quant
tests_check_quant_SOURCES = tests/check_quant.c tests/testutil.h
tests_check_quant_CFLAGS = $(TEST_CFLAGS)
tests_check_quant_LDADD = $(TEST_LDADD)
# PTQ against PyTorch 2.x's x86 engine (reference numbers in tests/quant_ref/x86_ref.h)
check_PROGRAMS += tests/check_quant_torch
TESTS += tests/check_quant_torch
tests_check_quant_torch_SOURCES = tests/check_quant_torch.c tests/testutil.h tests/quant_ref/x86_ref.h
tests_check_quant_torch_CFLAGS = $(TEST_CFLAGS)
tests_check_quant_torch_LDADD = $(TEST_LDADD)
endif
EXTRA_DIST += tests/quant_ref/histogram_observer_ref.py tests/quant_ref/gen_x86_ref.py
# int8 vs f32 ResNet-18 inference (bench/run --only quant; PyTorch 2.15 twin: bench/quant_resnet.py)
EXTRA_PROGRAMS += bench/bench_quant
bench_bench_quant_SOURCES = bench/bench_quant.c bench/bench_util.h
bench_bench_quant_LDADD = libwick.la
bench_binaries += bench/bench_quant$(EXEEXT)
EXTRA_DIST += bench/quant_resnet.py
