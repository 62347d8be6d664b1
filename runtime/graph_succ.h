/* graph_succ.h (internal): a task's successor list, as building appends to it. Up to one
 * successor sits inline (succ1); from the second, an arena array of 4, 8, 16, ... (succv).
 * The paths that every edge takes are inline here, without a branch on the successor
 * count; growing an array, and taking an edge back, are in graph_succ.c. Callers are a
 * graph's one builder (or hold its lock), never a running graph's workers. */
#ifndef CASK_RUNTIME_GRAPH_SUCC_H
#define CASK_RUNTIME_GRAPH_SUCC_H

#include <stdint.h>
#include "runtime/graph.h"

/* pred's successors are full (one inline, or an array of 4, 8, 16, ...): the next array,
 * from arena a. 0, or -1 out of memory. */
int succ_grow(arena *a, cask_task *pred) __attribute__((noinline));
/* Takes succ off the end of pred's successors if it is there (an edge just pushed that
 * must go; its array, if one was made for it, stays in the arena). */
void succ_unpush(cask_task *pred, const cask_task *succ) __attribute__((noinline, cold));
/* push_succ, with the note of a big fan-out (g NULL: a subflow's, none); 0, or -1 out of
 * memory. */
int succ_push_slow(cask_graph *g, arena *a, cask_task *pred, cask_task *succ)
    __attribute__((noinline));

/* c ? x : y as a conditional move. The successor paths choose by a task's successor
 * count without a branch: on graphs whose counts vary (a random DAG) such a branch is a
 * mispredict on most edges, and compilers turn plain selects on it back into branches. */
static inline uintptr_t succ_sel(int c, uintptr_t x, uintptr_t y)
{
#if defined(__x86_64__)
    __asm__("test %1, %1\n\tcmovnz %2, %0" : "+r"(y) : "r"(c), "r"(x) : "cc");
    return y;
#else
    uintptr_t m = (uintptr_t)0 - (uintptr_t)(c != 0);
    return (x & m) | (y & ~m);
#endif
}

/* Where pred's last successor is, of n (its inline slot, NULL, while it has none). */
static inline cask_task **succ_last_slot(cask_task *pred, int32_t n)
{
    uintptr_t last = (uintptr_t)pred->succv + (uintptr_t)(n - 1) * sizeof(cask_task *);
    return (cask_task **)succ_sel(n > 1, last, (uintptr_t)&pred->succ1);
}

/* Whether succ is already pred's last successor (a repeated edge). */
static inline int succ_is_last(cask_task *pred, const cask_task *succ)
{
    return *succ_last_slot(pred, pred->nsucc) == succ;
}

/* Appends succ to pred's successors where that needs no call: room in the list, or a
 * second successor (its array of 4 taken from a here), without a branch on which. n is
 * pred->nsucc. 0, or -1 when succ_push_slow must do it (a list of 4, 8, ... full, less
 * than an array of 4 left in a's block). */
static inline int push_succ_quick_n(arena *a, cask_task *pred, cask_task *succ, int32_t n)
{
    cask_task **inl = &pred->succ1;
    /* (read before the store below) */
    cask_task **sv = (cask_task **)succ_sel(n > 1, (uintptr_t)pred->succv, (uintptr_t)inl);
    if (__builtin_expect(((n >= 4) & ((n & (n - 1)) == 0)) |
                         ((size_t)(a->end - a->cur) < 4 * sizeof(cask_task *)), 0))
        return -1;
    int second = n == 1;   /* a second successor, the most common growth */
    cask_task **fresh = (cask_task **)a->cur;
    fresh[0] = *inl;       /* (written in a's free room when not taken) */
    a->cur += (size_t)second * 4 * sizeof *fresh;
    sv = (cask_task **)succ_sel(second, (uintptr_t)fresh, (uintptr_t)sv);
    pred->succv = sv;      /* (n 0: the inline slot, written over just below) */
    sv[n] = succ;
    pred->nsucc = n + 1;
    return 0;
}

static inline int push_succ_quick(arena *a, cask_task *pred, cask_task *succ)
{
    return push_succ_quick_n(a, pred, succ, pred->nsucc);
}

/* A repeat check and push_succ_quick in one: 1 if succ is already pred's last successor,
 * else as push_succ_quick. */
static inline int succ_add_quick(arena *a, cask_task *pred, cask_task *succ)
{
    int32_t n = pred->nsucc;
    if (*succ_last_slot(pred, n) == succ)
        return 1;
    return push_succ_quick_n(a, pred, succ, n);
}

/* Appends succ to pred's successors, growing the array where it is full; 0, or -1 out of
 * memory. */
static inline int push_succ(arena *a, cask_task *pred, cask_task *succ)
{
    int32_t n = pred->nsucc;
    /* the first successor inline (succ1); then arrays of 4, 8, 16, ... */
    if (__builtin_expect(n == 1 || (n >= 4 && (n & (n - 1)) == 0), 0) && succ_grow(a, pred))
        return -1;
    (n ? pred->succv : &pred->succ1)[n] = succ;   /* (n 1: the array just made) */
    pred->nsucc = n + 1;
    return 0;
}

#endif
