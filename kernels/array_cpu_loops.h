/* kernels/array_cpu_loops.h: the typed tile loops of the CPU program interpreter, one
 * build per instruction set (array_cpu_loops.c), and the table the interpreter calls
 * them through. Internal. */
#ifndef CASK_KERNELS_ARRAY_CPU_LOOPS_H
#define CASK_KERNELS_ARRAY_CPU_LOOPS_H

#include <stdint.h>
#include "kernels/array_kernels.h"

/* dst = op(src), cnt elements of dtype dt; dst may be src. */
typedef void (*ak_unary_fn)(int op, int dt, const void *src, void *dst, int64_t cnt);
/* dst = op(src, b) (rev: op(b, src)); b an array of cnt elements, or NULL for the
 * immediate imm; tmp: a tile of scratch; dst may be src. */
typedef void (*ak_binary_fn)(int op, int dt, const void *src, const void *b, ak_scalar imm,
                             int rev, void *dst, int64_t cnt, void *tmp);
/* dst (dtype dd) = convert(src (dtype sd)). */
typedef void (*ak_cast_fn)(int sd, int dd, const void *src, void *dst, int64_t cnt);

typedef struct ak_loops {
    const char *isa;   /* "AVX-512", "AVX2" or "baseline" */
    ak_unary_fn unary;
    ak_binary_fn binary;
    ak_cast_fn cast;
} ak_loops;

/* The widest variant this CPU runs (chosen once; thread-safe). */
const ak_loops *ak_loops_pick(void);

#define AK_LOOPS_DECL(isa)                                                             \
    void ak_loop_unary_##isa(int op, int dt, const void *src, void *dst, int64_t cnt); \
    void ak_loop_binary_##isa(int op, int dt, const void *src, const void *b,          \
                              ak_scalar imm, int rev, void *dst, int64_t cnt, void *tmp); \
    void ak_loop_cast_##isa(int sd, int dd, const void *src, void *dst, int64_t cnt);
AK_LOOPS_DECL(base)
AK_LOOPS_DECL(avx2)
AK_LOOPS_DECL(avx512)
#undef AK_LOOPS_DECL

#endif
