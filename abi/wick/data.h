/* Wick ABI: the data service (being written). */
#ifndef WICK_DATA_H
#define WICK_DATA_H
#include <wick/wick.h>
#endif
