/* write_par.c: parallel formatting of the CSV result as cask tasks (see write_par.h).
 * Two slots of T text buffers alternate: while the tasks of wave w fill one slot, the
 * main thread writes the slot of wave w-1. Each text buffer starts with its length
 * (8 bytes), then the rows. Index and distance slices are registered per wave. */
#include "write_par.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "points.h"

enum { ROWS = 8192, HDR = 8 };

typedef struct fmt_args {
    int64_t first, n;
} fmt_args;

static cask_status fmt_cpu(cask_task_ctx *ctx)
{
    size_t size;
    const fmt_args *a = cask_task_args(ctx, &size);
    const int32_t *idx = cask_task_buffer(ctx, 0);
    const float *d = cask_task_buffer(ctx, 1);
    char *out = cask_task_buffer(ctx, 2);
    if (size != sizeof *a || !idx || !d || !out ||
        cask_task_buffer_size(ctx, 2) < HDR + (size_t)a->n * KNN_CSV_ROW_MAX)
        return cask_task_fail(ctx, "bad arguments");
    uint64_t len = knn_csv_format(out + HDR, a->first, idx, d, a->n);
    memcpy(out, &len, sizeof len);
    return CASK_OK;
}

typedef struct wave {
    cask_graph *g;
    cask_data **text;     /* T handles over bufs */
    char **bufs;
    cask_data **in;       /* 2 per task, registered per wave */
    int ntasks;           /* tasks of the wave (0: none) */
    int running;          /* submitted and not yet waited for */
} wave;

static void wave_clear(wave *w)
{
    cask_graph_destroy(w->g);
    w->g = NULL;
    for (int t = 0; t < 2 * w->ntasks; t++) {
        cask_data_destroy(w->in[t]);
        w->in[t] = NULL;
    }
    w->ntasks = 0;
}

/* Writes the text of a finished wave. */
static int wave_write(wave *w, FILE *f)
{
    for (int t = 0; t < w->ntasks; t++) {
        void *p;
        if (cask_data_acquire(w->text[t], CASK_READ, &p))
            return -1;
        uint64_t len;
        memcpy(&len, p, sizeof len);
        size_t put = fwrite((char *)p + HDR, 1, (size_t)len, f);
        cask_data_release(w->text[t]);
        if (put != len)
            return 1;
    }
    return 0;
}

cask_status knn_csv_write_tasks(cask_runtime *rt, FILE *f, const char *name,
                                const int32_t *index, const float *dist, int64_t n,
                                int nworkers, char *err, size_t errlen)
{
    return knn_csv_write_tasks_at(rt, f, name, index, dist, 0, n, 1, nworkers, err, errlen);
}

cask_status knn_csv_write_tasks_at(cask_runtime *rt, FILE *f, const char *name,
                                   const int32_t *index, const float *dist, int64_t first,
                                   int64_t n, int header, int nworkers, char *err,
                                   size_t errlen)
{
    int T = 4 * (nworkers > 0 ? nworkers : 1);
    if (T > 128)
        T = 128;
    size_t bufsize = HDR + (size_t)ROWS * KNN_CSV_ROW_MAX;
    wave w[2];
    cask_kernel_desc kd = {0};
    cask_kernel *kern;
    cask_status st = CASK_OK;
    int io_error = 0, io_errno = 0, have_msg = 0;

    memset(w, 0, sizeof w);
    for (int s = 0; s < 2; s++) {
        w[s].text = calloc((size_t)T, sizeof *w[s].text);
        w[s].bufs = calloc((size_t)T, sizeof *w[s].bufs);
        w[s].in = calloc((size_t)(2 * T), sizeof *w[s].in);
        if (!w[s].text || !w[s].bufs || !w[s].in) {
            st = CASK_ERR_NOMEM;
            goto done;
        }
        for (int t = 0; t < T; t++) {
            if (!(w[s].bufs[t] = malloc(bufsize))) {
                st = CASK_ERR_NOMEM;
                goto done;
            }
            if ((st = cask_data_register(rt, w[s].bufs[t], bufsize, &w[s].text[t])))
                goto done;
        }
    }
    kd.name = "knn_csv_format";
    kd.cpu = fmt_cpu;
    if ((st = cask_kernel_register(rt, &kd, &kern)))
        goto done;
    if (header && fputs(KNN_CSV_HEADER, f) == EOF) {
        io_error = 1;
        io_errno = errno;
        goto done;
    }

    int cur = 0;
    for (int64_t row = 0; row < n || w[1 - cur].ntasks; cur = 1 - cur) {
        wave *now = &w[cur], *prev = &w[1 - cur];
        /* start formatting the next rows ... */
        if (row < n) {
            if ((st = cask_graph_create(rt, &now->g)))
                goto done;
            for (int t = 0; t < T && row < n; t++, row += ROWS) {
                fmt_args a = {first + row, n - row < ROWS ? n - row : ROWS};
                cask_data **in = &now->in[2 * t];
                now->ntasks = t + 1;
                if ((st = cask_data_register(rt, (void *)(index + row),
                                             (size_t)a.n * sizeof *index, &in[0])) ||
                    (st = cask_data_register(rt, (void *)(dist + row),
                                             (size_t)a.n * sizeof *dist, &in[1])))
                    goto done;
                cask_access acc[3] = {{in[0], CASK_READ}, {in[1], CASK_READ},
                                      {now->text[t], CASK_WRITE}};
                cask_task_desc d = {0};
                d.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE;
                d.kernel = kern;
                d.access = acc;
                d.naccess = 3;
                d.args = &a;
                d.args_size = sizeof a;
                d.where = CASK_WHERE_CPU;
                if ((st = cask_graph_add_task(now->g, &d, NULL)))
                    goto done;
            }
            if ((st = cask_graph_submit(now->g)))
                goto done;
            now->running = 1;
        }
        /* ... while writing the previous wave */
        if (prev->ntasks) {
            int r = wave_write(prev, f);
            if (r) {
                io_error = r > 0;
                io_errno = errno;
                st = r > 0 ? CASK_ERR_IO : CASK_ERR_INTERNAL;
            }
            wave_clear(prev);
        }
        if (now->running) {
            cask_status ws = cask_graph_wait(now->g);
            now->running = 0;
            if (ws && !st) {
                st = ws;
                have_msg = 1;
                knn_errorf(st, err, errlen, "%s: formatting: %s: %s", name,
                           cask_status_string(st), cask_graph_error(now->g));
            }
        }
        if (st)
            goto done;
    }

done:
    for (int s = 0; s < 2; s++) {
        if (w[s].running)
            cask_graph_wait(w[s].g);
        wave_clear(&w[s]);
        for (int t = 0; t < T && w[s].text; t++)
            cask_data_destroy(w[s].text[t]);
        for (int t = 0; t < T && w[s].bufs; t++)
            free(w[s].bufs[t]);
        free(w[s].text);
        free(w[s].bufs);
        free(w[s].in);
    }
    if (io_error)
        return knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", name,
                          strerror(io_errno));
    if (st && !have_msg)
        knn_errorf(st, err, errlen, "%s: formatting: %s", name, cask_status_string(st));
    return st;
}
