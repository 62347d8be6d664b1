/* deque.h: the Chase-Lev work-stealing deque with the C11 memory orders of Lê, Pop,
 * Cohen and Zappa Nardelli, "Correct and efficient work-stealing for weak memory
 * models" (PPoPP 2013). The owner pushes and takes at the bottom (LIFO); thieves steal
 * at the top (FIFO). Grows by doubling; old arrays are kept until destroy because a
 * thief may still be reading one. No lock anywhere. */
#ifndef CASK_SCHED_DEQUE_H
#define CASK_SCHED_DEQUE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct deque_array {
    int64_t cap;                 /* power of two */
    struct deque_array *older;   /* retired arrays, freed at destroy */
    _Atomic(void *) buf[];
} deque_array;

typedef struct sched_deque {
    _Alignas(64) _Atomic int64_t top;
    _Alignas(64) _Atomic int64_t bottom;
    _Atomic(deque_array *) array;
} sched_deque;

#define DEQUE_ABORT ((void *)1)   /* steal lost a race: try again or elsewhere */

static inline deque_array *deque_array_new(int64_t cap)
{
    deque_array *a = malloc(sizeof *a + (size_t)cap * sizeof(void *));
    if (a) {
        a->cap = cap;
        a->older = NULL;
    }
    return a;
}

static inline int deque_init(sched_deque *d, int64_t cap)
{
    atomic_init(&d->top, 0);
    atomic_init(&d->bottom, 0);
    deque_array *a = deque_array_new(cap);
    atomic_init(&d->array, a);
    return a ? 0 : -1;
}

static inline void deque_destroy(sched_deque *d)
{
    deque_array *a = atomic_load_explicit(&d->array, memory_order_relaxed);
    while (a) {
        deque_array *o = a->older;
        free(a);
        a = o;
    }
    atomic_store_explicit(&d->array, NULL, memory_order_relaxed);
}

/* Owner only. Returns 0, or -1 if growing failed (item not pushed). */
static inline int deque_push(sched_deque *d, void *x)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    deque_array *a = atomic_load_explicit(&d->array, memory_order_relaxed);
    if (b - t > a->cap - 1) {
        deque_array *n = deque_array_new(a->cap * 2);
        if (!n)
            return -1;
        for (int64_t i = t; i < b; i++)
            atomic_store_explicit(&n->buf[i & (n->cap - 1)],
                atomic_load_explicit(&a->buf[i & (a->cap - 1)], memory_order_relaxed),
                memory_order_relaxed);
        n->older = a;
        atomic_store_explicit(&d->array, n, memory_order_release);
        a = n;
    }
    atomic_store_explicit(&a->buf[b & (a->cap - 1)], x, memory_order_relaxed);
    /* the paper's release fence + relaxed store, as a release store: the same code on
     * x86 and ARM, and visible to ThreadSanitizer, which does not model fences */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
    return 0;
}

/* Owner only. NULL if empty. */
static inline void *deque_take(sched_deque *d)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
    deque_array *a = atomic_load_explicit(&d->array, memory_order_relaxed);
    /* a seq_cst store then load orders bottom before top as the paper's fence does
     * (an xchg on x86, cheaper than mfence) */
    atomic_store_explicit(&d->bottom, b, memory_order_seq_cst);
    int64_t t = atomic_load_explicit(&d->top, memory_order_seq_cst);
    void *x = NULL;
    if (t <= b) {
        x = atomic_load_explicit(&a->buf[b & (a->cap - 1)], memory_order_relaxed);
        if (t == b) {
            if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1,
                    memory_order_seq_cst, memory_order_relaxed))
                x = NULL;
            atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
        }
    } else {
        atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    }
    return x;
}

/* Any thread. NULL if empty, DEQUE_ABORT if it lost a race. */
static inline void *deque_steal(sched_deque *d)
{
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    atomic_thread_fence(memory_order_seq_cst);
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
    if (t >= b)
        return NULL;
    deque_array *a = atomic_load_explicit(&d->array, memory_order_acquire);
    void *x = atomic_load_explicit(&a->buf[t & (a->cap - 1)], memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1,
            memory_order_seq_cst, memory_order_relaxed))
        return DEQUE_ABORT;
    return x;
}

/* Approximate number of items (any thread). */
static inline int64_t deque_size(sched_deque *d)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
    return b > t ? b - t : 0;
}

#endif
