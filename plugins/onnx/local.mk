# onnx plugin: ONNX export and import of graphs (the `onnx` service; included
# from Makefile.am). The protobuf-c message code is generated at build time
# from the onnx.proto configure found (Debian's libonnx-dev), never committed.
if BUILD_ONNX
plugins_LTLIBRARIES += plugins/onnx/onnx.la
plugins_onnx_onnx_la_SOURCES = plugins/onnx/onnx_int.h plugins/onnx/onnx_import.h plugins/onnx/plugin.c plugins/onnx/proto.c \
	plugins/onnx/export.c plugins/onnx/export_ops.c plugins/onnx/import.c plugins/onnx/import_ops.c
nodist_plugins_onnx_onnx_la_SOURCES = plugins/onnx/onnx.pb-c.c plugins/onnx/onnx.pb-c.h
plugins_onnx_onnx_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/plugins/onnx
plugins_onnx_onnx_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(PROTOBUF_C_CFLAGS)
plugins_onnx_onnx_la_LIBADD = $(PROTOBUF_C_LIBS) -lm
plugins_onnx_onnx_la_LDFLAGS = $(PLUGIN_LDFLAGS)
BUILT_SOURCES += plugins/onnx/onnx.pb-c.c plugins/onnx/onnx.pb-c.h
CLEANFILES += plugins/onnx/onnx.pb-c.c plugins/onnx/onnx.pb-c.h plugins/onnx/onnx.proto
# protoc-c names its output after the .proto, so copy it next to the output first.
plugins/onnx/onnx.pb-c.c: $(ONNX_PROTO)
	$(AM_V_GEN)mkdir -p plugins/onnx && cp $(ONNX_PROTO) plugins/onnx/onnx.proto && \
	  $(PROTOC_C) --proto_path=plugins/onnx --c_out=plugins/onnx plugins/onnx/onnx.proto
plugins/onnx/onnx.pb-c.h: plugins/onnx/onnx.pb-c.c
	@:
if HAVE_CHECK
check_PROGRAMS += tests/check_onnx tests/onnx_ref
TESTS += tests/check_onnx tests/onnx_export.sh tests/onnx_torch.sh tests/onnx_torch2.sh
tests_onnx_ref_SOURCES = tests/onnx_ref.c
tests_onnx_ref_LDADD = libwick.la
# the suite builds hostile models with the same generated messages
tests_check_onnx_SOURCES = tests/check_onnx.c tests/testutil.h
nodist_tests_check_onnx_SOURCES = plugins/onnx/onnx.pb-c.c plugins/onnx/onnx.pb-c.h
tests_check_onnx_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/plugins/onnx
tests_check_onnx_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) -DONNX_TESTDATA=\"/usr/share/libonnx-testdata/data\"
tests_check_onnx_LDADD = $(TEST_LDADD) $(PROTOBUF_C_LIBS)
endif
endif
if FUZZ
# libFuzzer target for the importer: tests/fuzz/run.sh fuzz_onnx
FUZZ_TARGETS += tests/fuzz/fuzz_onnx
tests_fuzz_fuzz_onnx_SOURCES = tests/fuzz/fuzz_onnx.c
tests_fuzz_fuzz_onnx_CFLAGS = $(FUZZER_CF)
tests_fuzz_fuzz_onnx_LDFLAGS = $(FUZZER_LD)
tests_fuzz_fuzz_onnx_LDADD = libwick.la
endif
wickinclude_HEADERS += abi/wick/onnx.h
# wick run MODEL.onnx: built always (it finds the onnx service at run time)
tools_wick_SOURCES += tools/run.c
EXTRA_DIST += tests/fuzz/fuzz_onnx.c plugins/onnx/local.mk tests/onnx_export.sh tests/onnx_ort.py tests/onnx_torch.sh tests/onnx_torch2.sh tests/onnx_torch.py tests/onnx_node_tests.md tests/onnx_node_report.py
