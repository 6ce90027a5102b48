/* nn plugin: private declarations (being written). */
#ifndef WICK_NN_PLUGIN_H
#define WICK_NN_PLUGIN_H
#include <wick/sdk.h>
#endif
