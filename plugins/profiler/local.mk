# profiler plugin: per-op CPU time through a dispatch layer (included from Makefile.am).
plugins_LTLIBRARIES += plugins/profiler/profiler.la
plugins_profiler_profiler_la_SOURCES = plugins/profiler/profiler.c
plugins_profiler_profiler_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
plugins_profiler_profiler_la_LDFLAGS = $(PLUGIN_LDFLAGS)
wickinclude_HEADERS += abi/wick/profiler.h
EXTRA_DIST += tests/profile_env.sh
if HAVE_CHECK
TESTS += tests/profile_env.sh
check_PROGRAMS += tests/check_profiler
TESTS += tests/check_profiler
tests_check_profiler_SOURCES = tests/check_profiler.c tests/testutil.h
tests_check_profiler_CFLAGS = $(TEST_CFLAGS)
tests_check_profiler_LDADD = $(TEST_LDADD)
endif
