/* data plugin: private declarations (being written). */
#ifndef WICK_DATA_PLUGIN_H
#define WICK_DATA_PLUGIN_H
#include <wick/sdk.h>
#endif
