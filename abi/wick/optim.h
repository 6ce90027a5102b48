/* Wick ABI: the optim service (being written). */
#ifndef WICK_OPTIM_H
#define WICK_OPTIM_H
#include <wick/wick.h>
#endif
