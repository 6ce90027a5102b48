/* optim plugin: private declarations (being written). */
#ifndef WICK_OPTIM_PLUGIN_H
#define WICK_OPTIM_PLUGIN_H
#include <wick/sdk.h>
#endif
