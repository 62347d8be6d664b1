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

/* The bytes of a second successor's array (of 4): push_succ_quick_n needs them free. */
#define SUCC_ROOM (4 * sizeof(cask_task *))

/* pred's successors, of n = pred->nsucc: the array they sit in (succv when n > 1, else
 * the inline slot), and in *last the slot of the last one (the inline slot, NULL, when n
 * is 0). Without a branch on n: on graphs whose counts vary (a random DAG) such a branch
 * is a mispredict on most edges, and compilers turn selects on it back into branches, so
 * on x86-64 it is one compare and two conditional moves. */
static inline cask_task **succ_slots(cask_task *pred, int32_t n, cask_task ***last)
{
    uintptr_t inl = (uintptr_t)&pred->succ1, v = (uintptr_t)pred->succv;
    uintptr_t lv = v + (uintptr_t)((intptr_t)n - 1) * sizeof(cask_task *);
#if defined(__x86_64__)
    uintptr_t b = inl, l = inl;
    __asm__("cmpl $1, %[n]\n\tcmovg %[v], %[b]\n\tcmovg %[lv], %[l]"
            : [b] "+r"(b), [l] "+r"(l)
            : [n] "r"(n), [v] "r"(v), [lv] "r"(lv)
            : "cc");
#else
    uintptr_t m = (uintptr_t)0 - (uintptr_t)(n > 1);
    uintptr_t b = (v & m) | (inl & ~m), l = (lv & m) | (inl & ~m);
#endif
    *last = (cask_task **)l;
    return (cask_task **)b;
}

/* Whether succ is already pred's last successor (a repeated edge). */
static inline int succ_is_last(cask_task *pred, const cask_task *succ)
{
    cask_task **last;
    succ_slots(pred, pred->nsucc, &last);
    return *last == succ;
}

/* Whether pred's successors, n of them, fill their array (4, 8, 16, ...): the next push
 * needs succ_push_slow. */
static inline int succ_full(int32_t n)
{
    /* n at least 4 and a power of two, as one value tested once: (u - 4) >> 31 is 1
     * below 4 (u is below 2^31) */
    uint32_t u = (uint32_t)n;
    return ((u & (u - 1)) | ((u - 4) >> 31)) == 0;
}

/* Appends succ to pred's successors, base and n as succ_slots gave them, the list not
 * full (succ_full), where an array of 4 is free at cur: a second successor takes it,
 * without a branch on which. The free pointer after it. */
static inline char *succ_push_room(char *cur, cask_task *pred, cask_task **base,
                                   cask_task *succ, int32_t n)
{
    uintptr_t fresh = (uintptr_t)cur, b = (uintptr_t)base, next = fresh + SUCC_ROOM;
    ((cask_task **)fresh)[0] = pred->succ1;   /* (in the free room when not taken) */
#if defined(__x86_64__)
    __asm__("cmpl $1, %[n]\n\tcmove %[f], %[b]\n\tcmove %[nx], %[c]"
            : [b] "+r"(b), [c] "+r"(fresh)
            : [n] "r"(n), [f] "r"(fresh), [nx] "r"(next)
            : "cc");
#else
    uintptr_t m = (uintptr_t)0 - (uintptr_t)(n == 1);
    b = (fresh & m) | (b & ~m);
    fresh = (next & m) | (fresh & ~m);
#endif
    base = (cask_task **)b;
    pred->succv = base;   /* (n 0: the inline slot, written over just below) */
    base[n] = succ;
    pred->nsucc = n + 1;
    return (char *)fresh;
}

/* Appends succ to pred's successors where that needs no call: room in the list, or a
 * second successor (its array of 4 taken from a). base and n as succ_slots gave them.
 * 0, or -1 when succ_push_slow must do it (a full list, less than an array of 4 left in
 * a's block). */
static inline int push_succ_quick_n(arena *a, cask_task *pred, cask_task **base,
                                    cask_task *succ, int32_t n)
{
    if (__builtin_expect(succ_full(n) | ((size_t)(a->end - a->cur) < SUCC_ROOM), 0))
        return -1;
    a->cur = succ_push_room(a->cur, pred, base, succ, n);
    return 0;
}

/* Appends t, the newest task (each of its deps named in turn), to pred's successors
 * unless it is their last already (a dep named twice), every case (a list to grow, a
 * block without room): 1 appended, 0 named twice, -1 out of memory. */
static inline int succ_push_new(cask_graph *g, arena *a, cask_task *pred, cask_task *t)
{
    int32_t n = pred->nsucc;
    cask_task **last, **base = succ_slots(pred, n, &last);
    if (*last == t)
        return 0;
    if (push_succ_quick_n(a, pred, base, t, n) && succ_push_slow(g, a, pred, t))
        return -1;
    return 1;
}

/* Appends succ to pred's successors, growing the array where it is full; 0, or -1 out of
 * memory. */
static inline int push_succ(arena *a, cask_task *pred, cask_task *succ)
{
    int32_t n = pred->nsucc;
    /* the first successor inline (succ1); then arrays of 4, 8, 16, ... */
    if (__builtin_expect(n == 1 || succ_full(n), 0) && succ_grow(a, pred))
        return -1;
    (n ? pred->succv : &pred->succ1)[n] = succ;   /* (n 1: the array just made) */
    pred->nsucc = n + 1;
    return 0;
}

#endif
