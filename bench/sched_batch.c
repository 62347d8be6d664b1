/* bench/sched_batch.c: bench-sched's shapes as arrays for cask_graph_add_batch (--edges
 * batch): each task's predecessors as offsets and indexes, as a program holding its graph
 * as a table (a Dask graph) has them. The arrays are made once, before the timed builds,
 * as the random DAG is: they are the program's description of its graph; reading them is
 * part of each build. */
#include <stdio.h>
#include <stdlib.h>

#include "sched_bench.h"

int bench_batch_make(enum shape s, const options *o, const dag *d, batch_arrays *ba)
{
    long T = o->tasks;
    size_t n, ne;
    switch (s) {
    case INDEPENDENT: n = (size_t)T; ne = 0; break;
    case FANOUT: n = (size_t)T + 2; ne = 2 * (size_t)T; break;
    case CHAINS: n = (size_t)(T / o->chains) * (size_t)o->chains; ne = n; break;
    default: n = (size_t)d->n; ne = 3 * n; break;
    }
    ba->n = n;
    ba->ds = NULL;
    ba->di = NULL;
    if (s == INDEPENDENT)
        return 0;
    ba->ds = malloc((n + 1) * sizeof *ba->ds);
    ba->di = malloc((ne ? ne : 1) * sizeof *ba->di);
    if (!ba->ds || !ba->di)
        return -1;
    uint32_t *ds = ba->ds, *di = ba->di, e = 0;
    switch (s) {
    case FANOUT:   /* the root, T children of it, the sink of them all (as with deps) */
        ds[0] = 0;
        for (size_t i = 1; i <= (size_t)T; i++) {
            ds[i] = e;
            di[e++] = 0;
        }
        ds[T + 1] = e;
        for (size_t i = 1; i <= (size_t)T; i++)
            di[e++] = (uint32_t)i;
        break;
    case CHAINS: {
        size_t len = n / (size_t)o->chains;
        for (size_t i = 0; i < n; i++) {
            ds[i] = e;
            if (i % len)
                di[e++] = (uint32_t)(i - 1);
        }
        break;
    }
    default:
        for (size_t i = 0; i < n; i++) {
            ds[i] = e;
            for (int j = 0; j < d->npred[i]; j++)
                di[e++] = (uint32_t)d->preds[i][j];
        }
        break;
    }
    ds[n] = e;
    return 0;
}

void bench_batch_free(batch_arrays *ba)
{
    free(ba->ds);
    free(ba->di);
}

cask_graph *bench_build_batch(cask_runtime *rt, cask_kernel *k, const batch_arrays *ba)
{
    cask_graph *g;
    cask_task_batch b = { .ntasks = ba->n, .kernel = k, .dep_start = ba->ds,
                          .dep_index = ba->di };
    cask_status st = cask_graph_create(rt, &g);
    if (!st)
        st = cask_graph_add_batch(g, &b, NULL);
    if (st) {
        fprintf(stderr, "bench-sched: cask_graph_add_batch: %s\n", cask_status_string(st));
        exit(1);
    }
    return g;
}
