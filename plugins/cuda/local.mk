# cuda plugin: device type `cuda`, caching allocator, cuBLAS/cuDNN and own kernels
# (included from Makefile.am). Builds without a GPU; `.cu` files go through
# nvcc into libtool objects (sm_80, sm_90 and PTX for newer GPUs).
#
# Adding an op family `foo`: write plugins/cuda/foo_ops.c (boxed kernels and
# `wk_status cuda_register_foo(void)`) and plugins/cuda/foo.cu (the device
# code, extern "C" launchers declared in cuda_plugin.h), add X(foo) to
# CUDA_OP_FAMILIES in cuda_plugin.h, then append foo_ops.c to
# cuda_host_sources and foo.cu to cuda_kernel_sources below. (The host file
# is foo_ops.c, not foo.c: both would make foo.lo, and make's suffix rules
# would then compile foo.c twice instead of foo.cu.)

# Device code, one file per op family (the kernel developer appends here).
cuda_kernel_sources = plugins/cuda/copy.cu plugins/cuda/elementwise.cu \
	plugins/cuda/unary.cu plugins/cuda/reduce.cu plugins/cuda/softmax.cu plugins/cuda/index.cu plugins/cuda/rng.cu \
	plugins/cuda/optim_update.cu plugins/cuda/scan.cu plugins/cuda/layernorm.cu \
	plugins/cuda/amp.cu

# Host side of the plugin (C11).
cuda_host_sources = plugins/cuda/cuda_plugin.h plugins/cuda/plugin.c plugins/cuda/runtime.c plugins/cuda/cublas_lazy.c \
	plugins/cuda/memory.c plugins/cuda/cuda_alloc.h plugins/cuda/cuda_alloc.c \
	plugins/cuda/copy_ops.c plugins/cuda/elementwise_ops.c \
	plugins/cuda/cuda_kernels.h plugins/cuda/cuda_device.h plugins/cuda/kernel_util.c plugins/cuda/unary_ops.c \
	plugins/cuda/reduce_ops.c plugins/cuda/softmax_ops.c plugins/cuda/index_ops.c plugins/cuda/rng_ops.c \
	plugins/cuda/optim_update_ops.c plugins/cuda/scan_ops.c plugins/cuda/remap_ops.c \
	plugins/cuda/layernorm_ops.c plugins/cuda/host_ops.c plugins/cuda/amp_ops.c

# Library-backed kernels (cuBLAS, cuDNN) and their pooling/batch-norm helpers.
cuda_kernel_sources += plugins/cuda/pool.cu plugins/cuda/bn.cu
cuda_host_sources += plugins/cuda/cuda_libs.h plugins/cuda/handles.c plugins/cuda/blas_ops.c \
	plugins/cuda/dnn_ops.c plugins/cuda/bn_ops.c plugins/cuda/pool_ops.c
plugins/cuda/pool.lo plugins/cuda/bn.lo: $(top_srcdir)/plugins/cuda/cuda_libs.h

# Everything a tarball needs, whether or not this machine builds the plugin.
EXTRA_DIST += $(cuda_kernel_sources) plugins/cuda/nvcc-lt tests/gpu/run

# nvcc needs a host compiler it supports (CUDA 13: gcc <= 15); override with
# `make CUDA_CCBIN=g++-12`.
CUDA_CCBIN = g++
CUDA_ARCH_FLAGS = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
CUDA_NVCCFLAGS = -ccbin $(CUDA_CCBIN) -std=c++17 -O3 $(CUDA_ARCH_FLAGS) --compiler-options=-fvisibility=hidden \
	-I$(top_builddir) -I$(top_srcdir)/abi -I$(top_srcdir)/sdk -I$(top_srcdir)/plugins/cuda $(CUDA_CFLAGS)

if BUILD_CUDA
cuda_kernel_objects = $(cuda_kernel_sources:.cu=.lo)

# .cu -> libtool object (a PIC .o in .libs/ plus the .lo that names it).
.cu.lo:
	@$(MKDIR_P) $(@D)
	$(AM_V_GEN)$(LIBTOOL) $(AM_V_lt) --tag=CC $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) --mode=compile \
	  $(SHELL) $(top_srcdir)/plugins/cuda/nvcc-lt $(NVCC) $(CUDA_NVCCFLAGS) $(NVCCFLAGS) -c -o $@ $<
# nvcc writes no dependency files for automake: every kernel file depends on the shared header.
$(cuda_kernel_objects): $(top_srcdir)/plugins/cuda/cuda_plugin.h $(top_srcdir)/plugins/cuda/cuda_kernels.h $(top_srcdir)/abi/wick/op_list.h $(top_srcdir)/sdk/wick/sdk/unary.h $(top_srcdir)/sdk/wick/sdk/binary.h \
	$(top_srcdir)/plugins/cuda/cuda_device.h

plugins_LTLIBRARIES += plugins/cuda/cuda.la
plugins_cuda_cuda_la_SOURCES = $(cuda_host_sources)
plugins_cuda_cuda_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(CUDA_CFLAGS)
plugins_cuda_cuda_la_LIBADD = $(cuda_kernel_objects) $(CUDA_LIBS) -lstdc++ -lm
plugins_cuda_cuda_la_LDFLAGS = $(PLUGIN_LDFLAGS)
endif

# ResNet-18 training step on cuda next to PyTorch (bench/resnet_cuda.py); `make bench/bench_resnet_cuda`.
EXTRA_PROGRAMS += bench/bench_resnet_cuda
bench_bench_resnet_cuda_SOURCES = bench/bench_resnet_cuda.c bench/bench_util.h
bench_bench_resnet_cuda_LDADD = libwick.la
EXTRA_DIST += bench/resnet_cuda.py

# ---- tests ----------------------------------------------------------------------------
if HAVE_CHECK
# The core's ABI 1.1 device calls, with fake device types (no CUDA needed).
TEST_SUITES += tests/check_device
tests_check_device_SOURCES = tests/check_device.c tests/testutil.h
tests_check_device_CFLAGS = $(TEST_CFLAGS)
tests_check_device_LDADD = $(TEST_LDADD)
# The caching allocator's bookkeeping over a fake backing allocator (no CUDA needed).
TEST_SUITES += tests/check_cuda_alloc
tests_check_cuda_alloc_SOURCES = tests/check_cuda_alloc.c plugins/cuda/cuda_alloc.c plugins/cuda/cuda_alloc.h
tests_check_cuda_alloc_CFLAGS = $(TEST_CFLAGS)
tests_check_cuda_alloc_LDADD = $(CHECK_LIBS) -lpthread
if BUILD_CUDA
# Runtime tests through the public API; exit 77 (skip) with the driver's reason without a GPU.
TEST_SUITES += tests/check_cuda
tests_check_cuda_SOURCES = tests/check_cuda.c tests/testutil.h
tests_check_cuda_CFLAGS = $(TEST_CFLAGS)
tests_check_cuda_LDADD = $(TEST_LDADD)
# cuBLAS/cuDNN/pooling kernels against the cpu ones, forward and gradients; skips (77) without a GPU.
TEST_SUITES += tests/check_cuda_nn
tests_check_cuda_nn_SOURCES = tests/check_cuda_nn.c tests/cuda_twin.h tests/testutil.h
tests_check_cuda_nn_CFLAGS = $(TEST_CFLAGS)
tests_check_cuda_nn_LDADD = $(TEST_LDADD)
# The plugin's own kernels (pointwise, reductions, indexing, RNG, losses, optim) against the cpu ones,
# forward and gradients, and every cuda op vs cpu on sampled arguments; skips (77) without a GPU.
TEST_SUITES += tests/check_cuda_ops
tests_check_cuda_ops_SOURCES = tests/check_cuda_ops.c tests/cuda_twin.h tests/testutil.h
tests_check_cuda_ops_CFLAGS = $(TEST_CFLAGS)
tests_check_cuda_ops_LDADD = $(TEST_LDADD)
endif
endif
