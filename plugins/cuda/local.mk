# cuda plugin: device type `cuda`, caching allocator, cuBLAS/cuDNN and own kernels
# (included from Makefile.am).
if BUILD_CUDA
endif
