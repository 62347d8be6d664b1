/* bench/xport_emit.h: how bench-xport's parts hand a figure to its table and JSON lines
 * (bench/xport.c): metric (e.g. "MiB/s"), the path measured, the message size, the value. */
#ifndef CASK_BENCH_XPORT_EMIT_H
#define CASK_BENCH_XPORT_EMIT_H

#include <stddef.h>

typedef void (*xport_emit_fn)(const char *metric, const char *path, size_t bytes, double value);

#endif
