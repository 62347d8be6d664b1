/* apps/jacobi/jacobi_out.c: see jacobi_out.h. */
#include "jacobi_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out_args {
    cask_dist_file *f;     /* this rank's */
    int64_t off, unit;
} out_args;

/* "jacobi.out": [0] R a block's values, [1] W its receipt (unit + 1): the block's rows
 * at their place in the file. */
static cask_status out_cpu(cask_task_ctx *ctx)
{
    const out_args *a = cask_task_args(ctx, NULL);
    char err[512];
    cask_status st = cask_dist_file_pwrite(a->f, cask_task_buffer(ctx, 0),
                                           cask_task_buffer_size(ctx, 0), (uint64_t)a->off,
                                           err, sizeof err);
    if (!st)
        st = cask_dist_file_mark(a->f, a->unit);
    if (st)
        return cask_task_fail(ctx, "%s", st == CASK_ERR_IO ? err : cask_status_string(st));
    *(int64_t *)cask_task_buffer(ctx, 1) = a->unit + 1;
    return CASK_OK;
}

/* The rank that speaks for the job: rank 0, or the lowest one left. */
static int speaker(cask_dist *dist)
{
    int r = 0;
    while (r < cask_dist_rank(dist) && cask_dist_rank_lost(dist, r))
        r++;
    return r;
}

static int commit(cask_dist *dist, cask_dist_file *f, const jacobi_out_block *b, int nb,
                  int64_t n, int ok)
{
    cask_status st = cask_dist_file_commit(f, ok, nb, (n - 2) * n * (int64_t)sizeof(float));
    if (!st)
        return 0;
    if (!dist || cask_dist_rank(dist) == speaker(dist)) {
        char rows[256] = "";
        for (int64_t u = cask_dist_file_missing(f, 0); u >= 0 && strlen(rows) < 200;
             u = cask_dist_file_missing(f, u + 1)) {
            size_t l = strlen(rows);
            snprintf(rows + l, sizeof rows - l, "%s%lld-%lld", l ? ", " : "",
                     (long long)b[u].row0 - 1, (long long)(b[u].row0 + b[u].rows) - 2);
        }
        if (rows[0])
            fprintf(stderr, "cask-jacobi: rows %s of --out written by no rank\n", rows);
        fprintf(stderr, "cask-jacobi: %s\n", cask_dist_file_error(f));
    }
    return 1;
}

int jacobi_out_in_place(cask_runtime *rt, cask_dist *dist, cask_dist_file *f,
                        const jacobi_out_block *b, int nb, int64_t n, int ok)
{
    cask_kernel_desc kd = {0};
    cask_kernel *kout;
    cask_dist_graph *g = NULL;
    cask_data **done = calloc((size_t)nb, sizeof *done);
    const char *what = "";
    cask_status st = CASK_ERR_NOMEM;
    if (!done)
        goto out;
    kd.name = "jacobi.out";
    kd.cpu = out_cpu;
    what = "registering kernels";
    if ((st = cask_kernel_register(rt, &kd, &kout)))
        goto out;
    what = "building the graph of writes";
    if ((st = cask_dist_graph_create(dist, &g)))
        goto out;
    for (int k = 0; k < nb; k++) {
        int owner;   /* where the block is now (a survivor adopted a lost rank's) */
        out_args oa = {f, (b[k].row0 - 1) * n * (int64_t)sizeof(float), k};
        cask_access acc[2];
        if ((st = cask_dist_owner(dist, b[k].u, &owner)) ||
            (st = cask_dist_data_create(dist, sizeof(int64_t), owner, NULL, &done[k])) ||
            /* its loader makes the zero grid the sweeps start from, not these values:
             * lost now, it is lost (only the sweeps since the start make it again) */
            (st = cask_dist_data_set_loader(dist, b[k].u, NULL, NULL, 0)))
            goto out;
        acc[0] = (cask_access){b[k].u, CASK_READ};
        acc[1] = (cask_access){done[k], CASK_WRITE};
        cask_task_desc d = {.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = kout,
                            .access = acc, .naccess = 2, .args = &oa, .args_size = sizeof oa,
                            .where = CASK_WHERE_CPU};
        if ((st = cask_dist_graph_add_task(g, &d, NULL)) ||
            (st = cask_dist_file_gather_receipt(f, g, done[k], k)))
            goto out;
    }
    what = "writing";
    if ((st = cask_dist_graph_compute(g)) == CASK_OK)
        st = cask_dist_file_receipts(f);
    else if (cask_dist_rank(dist) == speaker(dist))
        fprintf(stderr, "cask-jacobi: writing --out: %s: %s\n", cask_status_string(st),
                cask_dist_graph_error(g));
    st = CASK_OK;   /* what was written is the commit's to judge */
out:
    if (st)
        fprintf(stderr, "cask-jacobi: rank %d: %s: %s\n", cask_dist_rank(dist), what,
                cask_status_string(st));
    cask_dist_graph_destroy(g);
    free(done);
    return commit(dist, f, b, nb, n, ok && !st);
}

int jacobi_out_write_all(cask_dist_file *f, const jacobi_out_block *b, const float *const *rows,
                         int nb, int64_t n)
{
    char err[512] = "out of memory";
    for (int k = 0; k < nb; k++)
        if (cask_dist_file_pwrite(f, rows[k], (size_t)(b[k].rows * n) * sizeof(float),
                                  (uint64_t)((b[k].row0 - 1) * n) * sizeof(float), err,
                                  sizeof err) ||
            cask_dist_file_mark(f, k)) {
            fprintf(stderr, "cask-jacobi: %s\n", err);
            return 1;
        }
    return commit(NULL, f, b, nb, n, 1);
}
