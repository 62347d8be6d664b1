/* knn_dist_out.c: see knn_dist_out.h. */
#include "knn_dist_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "knn_chunks.h"
#include "points.h"

/* Fan-in of the offsets tree: 14 inputs and the output of a sum task, and a write task
 * reads its text, one group per level and its receipt (up to 14 levels: 14^14 chunks). */
enum { FAN = 14, MAXLEV = 14 };

typedef struct out_args {
    cask_dist_file *file;      /* this rank's */
    int64_t first, rows;       /* the chunk's rows */
    int64_t data_off;          /* .npy: row 0's offset; CSV: the header's length */
    int64_t unit;
    int64_t n, samples, s0, s1;   /* its --check samples: s0 <= s < s1 */
    int32_t k, nlev;           /* CSV write: levels of the tree */
    int32_t npy, pad;
    int32_t member[MAXLEV];    /* CSV write: the chunk's place in its group, per level */
} out_args;

typedef struct sum_args {
    int32_t nmem;
    int32_t total_at;          /* where a member holds its total: 0 (a length), FAN (a group) */
} sum_args;

struct knn_out_job {
    knn_cluster *c;
    const knn_out *o;
    int64_t nobs, chunk, samples;
    int64_t *s0;               /* nobs + 1: chunk i's samples are [s0[i], s0[i + 1]) */
    cask_data **done;          /* nobs + 1: the unit number + 1, written by the writing
                                * task (unit nobs: the header's) */
    cask_data **rcpt;          /* nobs: the samples (8 bytes if none) */
    cask_data **text, **len;   /* CSV */
    cask_data **grp[MAXLEV];   /* CSV: the tree's groups per level */
    int64_t ngrp[MAXLEV];
    int nlev;
    char *rbuf;                /* rank 0: the samples gathered, chunk i's at s0[i] * k * 8 */
    int32_t *sidx;             /* rank 0: samples x k, out of rbuf */
    float *sdist;
};

/* ---- kernels ---- */

/* Chunk a's sampled rows' results into buffer rc: their k indexes, then k distances. */
static void take_samples(void *rc, const int32_t *idx, const float *d, const out_args *a)
{
    int64_t ns = a->s1 - a->s0, K = a->k;
    int32_t *ri = rc;
    float *rd = (float *)(ri + ns * K);
    for (int64_t s = a->s0; s < a->s1; s++) {
        int64_t row = knn_check_row(a->n, a->samples, s) - a->first, at = (s - a->s0) * K;
        memcpy(ri + at, idx + row * K, (size_t)K * sizeof *ri);
        memcpy(rd + at, d + row * K, (size_t)K * sizeof *rd);
    }
}

static cask_status write_fail(cask_task_ctx *ctx, cask_status st, const char *msg)
{
    return st == CASK_ERR_NOMEM ? cask_task_fail(ctx, "out of memory")
                                : cask_task_fail(ctx, "%s", msg);
}

/* "knn_out_npy": [0] R index, [1] R dist, [2] W samples, [3] W done. */
static cask_status out_npy_cpu(cask_task_ctx *ctx)
{
    const out_args *a = cask_task_args(ctx, NULL);
    const int32_t *idx = cask_task_buffer(ctx, 0);
    const float *d = cask_task_buffer(ctx, 1);
    knn_sink s = {a->file, -1, cask_dist_file_temp_path(a->file)};
    char err[KNN_ERRLEN];
    cask_status st = knn_npy_put_rows(&s, idx, d, a->first, a->rows, a->k, a->data_off, err,
                                      sizeof err);
    if (!st)
        st = cask_dist_file_mark(a->file, a->unit);
    if (st)
        return write_fail(ctx, st, err);
    take_samples(cask_task_buffer(ctx, 2), idx, d, a);
    *(int64_t *)cask_task_buffer(ctx, 3) = a->unit + 1;
    return CASK_OK;
}

/* "knn_out_head": [0] W done. The header, and a .npy file sized to its rows. */
static cask_status out_head_cpu(cask_task_ctx *ctx)
{
    const out_args *a = cask_task_args(ctx, NULL);
    char hdr[KNN_NPY_HEADER_MAX], err[KNN_ERRLEN];
    size_t len = knn_out_header(hdr, a->npy, a->n, a->k);
    knn_sink s = {a->file, -1, cask_dist_file_temp_path(a->file)};
    cask_status st = knn_sink_write(&s, hdr, len, 0, err, sizeof err);
    if (!st && a->npy &&
        ftruncate(cask_dist_file_fd(a->file), (off_t)(len + (size_t)(a->n * a->k) * 16)))
        st = knn_errorf(CASK_ERR_IO, err, sizeof err, "%s: cannot size it: %s", s.name,
                        strerror(errno));
    if (!st)
        st = cask_dist_file_mark(a->file, a->unit);
    if (st)
        return write_fail(ctx, st, err);
    *(int64_t *)cask_task_buffer(ctx, 0) = a->unit + 1;
    return CASK_OK;
}

/* "knn_out_format": [0] R index, [1] R dist, [2] W text (its length, 8 bytes, then the
 * rows), [3] W length, [4] W samples. */
static cask_status out_format_cpu(cask_task_ctx *ctx)
{
    const out_args *a = cask_task_args(ctx, NULL);
    const int32_t *idx = cask_task_buffer(ctx, 0);
    const float *d = cask_task_buffer(ctx, 1);
    char *text = cask_task_buffer(ctx, 2);
    int64_t len = (int64_t)knn_out_csv_format(text + 8, a->first, idx, d, a->rows, a->k);
    memcpy(text, &len, sizeof len);
    memcpy(cask_task_buffer(ctx, 3), &len, sizeof len);
    take_samples(cask_task_buffer(ctx, 4), idx, d, a);
    return CASK_OK;
}

/* "knn_out_sum": [0, nmem) R members, [nmem] W group: FAN prefix sums, then the total. */
static cask_status out_sum_cpu(cask_task_ctx *ctx)
{
    const sum_args *a = cask_task_args(ctx, NULL);
    int64_t *grp = cask_task_buffer(ctx, a->nmem), at = 0;
    memset(grp, 0, (FAN + 1) * sizeof *grp);
    for (int m = 0; m < a->nmem; m++) {
        grp[m] = at;
        at += ((const int64_t *)cask_task_buffer(ctx, m))[a->total_at];
    }
    grp[FAN] = at;
    return CASK_OK;
}

/* "knn_out_csv": [0] R text, [1, nlev] R groups, [nlev + 1] W done. */
static cask_status out_csv_cpu(cask_task_ctx *ctx)
{
    const out_args *a = cask_task_args(ctx, NULL);
    const char *text = cask_task_buffer(ctx, 0);
    int64_t len, off = a->data_off;
    memcpy(&len, text, sizeof len);
    for (int l = 0; l < a->nlev; l++)
        off += ((const int64_t *)cask_task_buffer(ctx, 1 + l))[a->member[l]];
    knn_sink s = {a->file, -1, cask_dist_file_temp_path(a->file)};
    char err[KNN_ERRLEN];
    cask_status st = knn_sink_write(&s, text + 8, (size_t)len, off, err, sizeof err);
    if (!st)
        st = cask_dist_file_mark(a->file, a->unit);
    if (st)
        return write_fail(ctx, st, err);
    *(int64_t *)cask_task_buffer(ctx, a->nlev + 1) = a->unit + 1;
    return CASK_OK;
}

cask_status knn_out_kernels_register(knn_cluster *c)
{
    static const struct { const char *name; cask_kernel_fn fn; } ks[] = {
        {"knn_out_npy", out_npy_cpu}, {"knn_out_format", out_format_cpu},
        {"knn_out_sum", out_sum_cpu}, {"knn_out_csv", out_csv_cpu}, {"knn_out_head", out_head_cpu}};
    cask_kernel **to[] = {&c->out_npy, &c->out_format, &c->out_sum, &c->out_csv, &c->out_head};
    cask_status st = CASK_OK;
    for (int i = 0; i < 5 && !st; i++) {
        cask_kernel_desc kd = {0};
        kd.name = ks[i].name;
        kd.cpu = ks[i].fn;
        st = cask_kernel_register(c->rt, &kd, to[i]);
    }
    return st;
}

/* ---- the job ---- */

static cask_status declare(knn_out_job *w, size_t bytes, int owner, void *p, cask_data **out)
{
    return cask_dist_data_create(w->c->dist, bytes, owner, owner == w->c->rank ? p : NULL, out);
}

static cask_status add_task(cask_dist_graph *g, cask_kernel *k, const cask_access *acc, int nacc,
                            const void *args, size_t size)
{
    cask_task_desc d = {.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = k,
                        .access = acc, .naccess = nacc, .args = args, .args_size = size,
                        .where = CASK_WHERE_CPU};
    return cask_dist_graph_add_task(g, &d, NULL);
}

static int64_t rows_of(const knn_out_job *w, int64_t i)
{
    return knn_rows_of(w->o->n, w->chunk, i);
}

cask_status knn_out_job_create(knn_cluster *c, const knn_out *o, int64_t nobs, int64_t chunk,
                               int64_t samples, knn_out_job **out)
{
    const int P = c->size, K = o->k > 1 ? o->k : 1;
    knn_out_job *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w)
        return CASK_ERR_NOMEM;
    w->c = c;
    w->o = o;
    w->nobs = nobs;
    w->chunk = chunk;
    w->samples = samples < o->n ? samples : o->n;
    w->s0 = calloc((size_t)nobs + 1, sizeof *w->s0);
    w->rcpt = calloc((size_t)nobs, sizeof *w->rcpt);
    w->done = calloc((size_t)nobs + 1, sizeof *w->done);
    cask_status st = CASK_ERR_NOMEM;
    if (!w->s0 || !w->rcpt || !w->done)
        goto fail;
    /* chunk i's samples: those whose row falls in it (knn_check_row grows with s) */
    for (int64_t i = 0, s = 0; i < nobs; i++) {
        w->s0[i] = s;
        while (s < w->samples && knn_check_row(o->n, w->samples, s) < i * chunk + rows_of(w, i))
            s++;
        w->s0[i + 1] = s;
    }
    if (c->rank == 0 && w->samples &&
        (!(w->rbuf = malloc((size_t)(w->samples * K) * 8)) ||
         !(w->sidx = malloc((size_t)(w->samples * K) * sizeof *w->sidx)) ||
         !(w->sdist = malloc((size_t)(w->samples * K) * sizeof *w->sdist))))
        goto fail;
    for (int64_t i = 0; i < nobs; i++) {
        int64_t ns = w->s0[i + 1] - w->s0[i];
        if ((st = declare(w, ns ? (size_t)(ns * K) * 8 : 8, (int)(i % P), NULL, &w->rcpt[i])) ||
            (st = declare(w, 8, (int)(i % P), NULL, &w->done[i])))
            goto fail;
    }
    if ((st = declare(w, 8, 0, NULL, &w->done[nobs])))   /* the header's: rank 0 writes it */
        goto fail;
    if (o->npy) {
        *out = w;
        return CASK_OK;
    }
    st = CASK_ERR_NOMEM;
    w->text = calloc((size_t)nobs, sizeof *w->text);
    w->len = calloc((size_t)nobs, sizeof *w->len);
    if (!w->text || !w->len)
        goto fail;
    for (int64_t i = 0; i < nobs; i++) {
        int o_ = (int)(i % P);
        if ((st = declare(w, 8 + (size_t)(rows_of(w, i) * K) * KNN_CSV_ROW_MAX, o_, NULL,
                          &w->text[i])) ||
            (st = declare(w, 8, o_, NULL, &w->len[i])))
            goto fail;
    }
    /* the tree: level l groups FAN nodes of level l - 1 (level 0: the chunks) */
    int64_t below = nobs, span = 1;
    do {
        if (w->nlev == MAXLEV) {
            st = CASK_ERR_INVALID;
            goto fail;
        }
        int l = w->nlev++;
        span *= FAN;
        w->ngrp[l] = (below + FAN - 1) / FAN;
        if (!(w->grp[l] = calloc((size_t)w->ngrp[l], sizeof **w->grp))) {
            st = CASK_ERR_NOMEM;
            goto fail;
        }
        for (int64_t j = 0; j < w->ngrp[l]; j++)   /* owned where its first chunk is */
            if ((st = declare(w, (FAN + 1) * sizeof(int64_t), (int)(j * span % P), NULL,
                              &w->grp[l][j])))
                goto fail;
        below = w->ngrp[l];
    } while (below > 1);
    *out = w;
    return CASK_OK;
fail:
    knn_out_job_destroy(w);
    return st;
}

static out_args chunk_args(const knn_out_job *w, int64_t i)
{
    out_args a;
    memset(&a, 0, sizeof a);
    a.file = w->o->file;
    a.first = i * w->chunk;
    a.rows = rows_of(w, i);
    a.data_off = w->o->data_off;
    a.unit = i;
    a.n = w->o->n;
    a.samples = w->samples;
    a.s0 = w->s0[i];
    a.s1 = w->s0[i + 1];
    a.k = w->o->k > 1 ? w->o->k : 1;
    a.npy = w->o->npy;
    return a;
}

static cask_status gather_done(knn_out_job *w, cask_dist_graph *g, int64_t u)
{
    return cask_dist_file_gather_receipt(w->o->file, g, w->done[u], u);
}

cask_status knn_out_job_add_chunk(knn_out_job *w, cask_dist_graph *g, int64_t i,
                                  cask_data *index, cask_data *dist)
{
    knn_cluster *c = w->c;
    out_args a = chunk_args(w, i);
    cask_status st;
    if (w->o->npy) {
        cask_access acc[4] = {{index, CASK_READ}, {dist, CASK_READ}, {w->rcpt[i], CASK_WRITE},
                              {w->done[i], CASK_WRITE}};
        st = add_task(g, c->out_npy, acc, 4, &a, sizeof a);
        if (!st)
            st = gather_done(w, g, i);
    } else {
        cask_access acc[5] = {{index, CASK_READ}, {dist, CASK_READ}, {w->text[i], CASK_WRITE},
                              {w->len[i], CASK_WRITE}, {w->rcpt[i], CASK_WRITE}};
        st = add_task(g, c->out_format, acc, 5, &a, sizeof a);
    }
    if (!st && a.s1 > a.s0 && i % c->size != 0)   /* rank 0's own are in place */
        st = cask_dist_graph_gather(g, w->rcpt[i], 0,
                                    c->rank == 0 ? w->rbuf + a.s0 * a.k * 8 : NULL);
    return st;
}

cask_status knn_out_job_finish(knn_out_job *w, cask_dist_graph *g)
{
    /* the header: a task of rank 0's, so that a survivor writes it again too */
    out_args h = chunk_args(w, 0);
    h.unit = w->nobs;
    cask_access hacc = {w->done[w->nobs], CASK_WRITE};
    cask_status st = add_task(g, w->c->out_head, &hacc, 1, &h, sizeof h);
    if (!st)
        st = gather_done(w, g, w->nobs);
    if (w->o->npy || st)
        return st;
    for (int l = 0; l < w->nlev && !st; l++) {
        int64_t below = l ? w->ngrp[l - 1] : w->nobs;
        for (int64_t j = 0; j < w->ngrp[l] && !st; j++) {
            cask_access acc[FAN + 1];
            sum_args a = {0, l ? FAN : 0};
            for (int64_t m = j * FAN; m < below && m < (j + 1) * FAN; m++)
                acc[a.nmem++] = (cask_access){l ? w->grp[l - 1][m] : w->len[m], CASK_READ};
            acc[a.nmem] = (cask_access){w->grp[l][j], CASK_WRITE};
            st = add_task(g, w->c->out_sum, acc, a.nmem + 1, &a, sizeof a);
        }
    }
    for (int64_t i = 0; i < w->nobs && !st; i++) {
        out_args a = chunk_args(w, i);
        cask_access acc[MAXLEV + 2];
        acc[0] = (cask_access){w->text[i], CASK_READ};
        a.nlev = w->nlev;
        for (int l = 0, at = 0; l < w->nlev; l++) {
            int64_t below = i;   /* the chunk's node at level l, and its group's */
            for (int u = 0; u < l; u++)
                below /= FAN;
            a.member[l] = (int32_t)(below % FAN);
            acc[++at] = (cask_access){w->grp[l][below / FAN], CASK_READ};
        }
        acc[w->nlev + 1] = (cask_access){w->done[i], CASK_WRITE};
        st = add_task(g, w->c->out_csv, acc, w->nlev + 2, &a, sizeof a);
        if (!st)
            st = gather_done(w, g, i);
    }
    return st;
}

cask_status knn_out_job_samples(knn_out_job *w, const int32_t **index, const float **dist)
{
    const int64_t K = w->o->k > 1 ? w->o->k : 1;
    for (int64_t i = 0; i < w->nobs; i++) {
        int64_t ns = w->s0[i + 1] - w->s0[i], at = w->s0[i] * K;
        int own = i % w->c->size == 0;   /* rank 0's own receipt: its handle */
        void *p = w->rbuf + at * 8;
        cask_status st;
        if (!ns)
            continue;
        if (own && (st = cask_data_acquire(w->rcpt[i], CASK_READ, &p)))
            return st;
        memcpy(w->sidx + at, p, (size_t)(ns * K) * sizeof *w->sidx);
        memcpy(w->sdist + at, (const int32_t *)p + ns * K, (size_t)(ns * K) * sizeof *w->sdist);
        if (own && (st = cask_data_release(w->rcpt[i])))
            return st;
    }
    *index = w->sidx;
    *dist = w->sdist;
    return CASK_OK;
}

void knn_out_job_destroy(knn_out_job *w)
{
    if (!w)
        return;
    free(w->s0);
    free(w->rcpt);
    free(w->done);
    free(w->text);
    free(w->len);
    for (int l = 0; l < MAXLEV; l++)
        free(w->grp[l]);
    free(w->rbuf);
    free(w->sidx);
    free(w->sdist);
    free(w);
}
