/* Wick: PyTorch's way of working as a C library. This umbrella header is the
 * whole public API: include it, link with `pkg-config --libs wick`, call
 * wk_init(). Plugin authors include <wick/sdk.h> instead. */
#ifndef WICK_WICK_H
#define WICK_WICK_H

#include <wick/types.h>
#include <wick/version.h>
#include <wick/error.h>
#include <wick/tensor.h>
#include <wick/device.h>
#include <wick/dispatch.h>
#include <wick/runtime.h>
#include <wick/plugin.h>
#include <wick/dlpack.h>
#include <wick/autograd.h>
#include <wick/state_dict.h>
#include <wick/module.h>
#include <wick/qtensor.h>
#include <wick/graph.h>
/* In plugin builds <wick/sdk.h> includes the front end after routing calls
 * through the host table. */
#ifndef WK__SDK_REDIRECT
#include <wick/ops.h>
#endif

#endif
