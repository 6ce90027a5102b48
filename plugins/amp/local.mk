# amp plugin: autocast regions through a dispatch layer above autograd, and
# GradScaler (included from Makefile.am).
plugins_LTLIBRARIES += plugins/amp/amp.la
plugins_amp_amp_la_SOURCES = plugins/amp/amp.c plugins/amp/scaler.h plugins/amp/scaler.c
plugins_amp_amp_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_amp_amp_la_LDFLAGS = $(PLUGIN_LDFLAGS)
wickinclude_HEADERS += abi/wick/amp.h
if HAVE_CHECK
check_PROGRAMS += tests/check_amp
TESTS += tests/check_amp
tests_check_amp_SOURCES = tests/check_amp.c tests/testutil.h
tests_check_amp_CFLAGS = $(TEST_CFLAGS)
tests_check_amp_LDADD = $(TEST_LDADD)
endif
