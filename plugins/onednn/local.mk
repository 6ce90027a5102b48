# onednn plugin: oneDNN 2.x kernels for the cpu device (included from Makefile.am).
if BUILD_ONEDNN
endif
