/* io plugin: private declarations (being written). */
#ifndef WICK_IO_PLUGIN_H
#define WICK_IO_PLUGIN_H
#include <wick/sdk.h>
#endif
