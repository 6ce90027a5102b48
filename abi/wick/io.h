/* Wick ABI: the io service (being written). */
#ifndef WICK_IO_H
#define WICK_IO_H
#include <wick/wick.h>
#endif
