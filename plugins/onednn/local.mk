# onednn plugin: oneDNN 2.x kernels for the cpu device (included from Makefile.am).
# libdnnl is not linked: plugin.c dlopens it after setting OpenMP's environment.
EXTRA_DIST += tests/onednn_suites.sh
if BUILD_ONEDNN
plugins_LTLIBRARIES += plugins/onednn/onednn.la
plugins_onednn_onednn_la_SOURCES = plugins/onednn/onednn.h plugins/onednn/plugin.c plugins/onednn/cache.c \
	plugins/onednn/mem.c plugins/onednn/conv.c plugins/onednn/conv_point.h plugins/onednn/conv_point.c plugins/onednn/norm.c plugins/onednn/pool.c \
	plugins/onednn/eltwise.c plugins/onednn/softmax.c plugins/onednn/matmul.c \
	plugins/onednn/wcache.c plugins/onednn/qconv.c plugins/onednn/conv_wgrad.c plugins/onednn/nhwc.c
plugins_onednn_onednn_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_onednn_onednn_la_LIBADD = -ldl -lpthread -lm
plugins_onednn_onednn_la_LDFLAGS = $(PLUGIN_LDFLAGS)

# Tests: the onednn kernels against the cpu ones, and the op suites once more
# with the plugin disabled (the plain runs of those suites have it enabled).
if HAVE_CHECK
check_PROGRAMS += tests/check_onednn
TESTS += tests/check_onednn tests/onednn_suites.sh
tests_check_onednn_SOURCES = tests/check_onednn.c tests/testutil.h
tests_check_onednn_CFLAGS = $(TEST_CFLAGS)
tests_check_onednn_LDADD = $(TEST_LDADD)
# the int8 kernels (qconv.c) against the cpu plugin's reference ones: same integers
check_PROGRAMS += tests/check_onednn_int8
TESTS += tests/check_onednn_int8
tests_check_onednn_int8_SOURCES = tests/check_onednn_int8.c tests/testutil.h
tests_check_onednn_int8_CFLAGS = $(TEST_CFLAGS)
tests_check_onednn_int8_LDADD = $(TEST_LDADD)
endif
endif
