/* Wick ABI: the nn service (being written). */
#ifndef WICK_NN_H
#define WICK_NN_H
#include <wick/wick.h>
#endif
