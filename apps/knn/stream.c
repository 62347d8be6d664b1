/* stream.c: see stream.h. Two slots of window buffers alternate: while the graph of
 * window w runs on slot w%2, one I/O thread appends the results of window w-1 to the
 * output and then reads window w+1, both from/into the other slot. The graph of a slot
 * is built once per window size (every window but maybe the last has the same) and run
 * again after its observations are replaced; knn_job_make_cold drops device copies of
 * the old observations. */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "auto_method.h"
#include "knn_chunks.h"
#include "knn_out.h"
#include "kout.h"
#include "write_par.h"

typedef struct slot {
    knn_points obs;      /* room for `window` rows */
    int32_t *index;      /* window x k */
    float *dist;
    knn_job *job;
    int64_t job_rows;    /* rows the job was built for (0: none) */
} slot;

/* A window's reading and .npy writing are cut in IO_PARTS row ranges done by as many
 * threads (pread/pwrite at offsets); CSV text is appended in order by one. */
enum { IO_PARTS = 4 };

typedef struct io_work {
    cask_runtime *rt;
    const knn_stream_cfg *cfg;
    int64_t npy_data_off;              /* .npy output: where row 0 goes; -1 if not by offset */
    slot *sl;
    int64_t write_first, write_rows;   /* results to append (rows 0: none) */
    int64_t read_first, read_rows;     /* observations to read (rows 0: none) */
    cask_status st;
    char err[KNN_ERRLEN];
} io_work;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int k_of(const knn_stream_cfg *c)
{
    return c->plan.k > 1 ? c->plan.k : 1;
}

static cask_status write_results(cask_runtime *rt, const knn_stream_cfg *c, const slot *sl,
                                 int64_t first, int64_t rows, char *err, size_t errlen)
{
    int k = k_of(c);
    if (!c->out)
        return CASK_OK;
    if (c->out_npy)
        return k > 1 ? knn_knpy_write_rows(c->out, c->out_name, sl->index, sl->dist, rows, k,
                                           err, errlen)
                     : knn_npy_write_rows(c->out, c->out_name, sl->index, sl->dist, rows, err,
                                          errlen);
    if (k > 1)
        return knn_kcsv_write_rows(c->out, c->out_name, sl->index, sl->dist, first, rows, k,
                                   err, errlen);
    return knn_csv_write_tasks_at(rt, c->out, c->out_name, sl->index, sl->dist, first, rows,
                                  0, c->nworkers, err, errlen);
}

typedef struct io_part {
    io_work *w;
    int part;
    cask_status st;
    char err[KNN_ERRLEN];
} io_part;

/* Part p of [first, first + n): its start and length. */
static void part_range(int64_t n, int p, int64_t *r0, int64_t *rn)
{
    int64_t q = (n + IO_PARTS - 1) / IO_PARTS;
    *r0 = p * q < n ? p * q : n;
    *rn = *r0 + q < n ? q : n - *r0;
}

static void *io_part_main(void *arg)
{
    io_part *pt = arg;
    io_work *w = pt->w;
    int64_t r0, rn;
    pt->st = CASK_OK;
    part_range(w->write_rows, pt->part, &r0, &rn);
    if (rn > 0) {   /* .npy rows at their place in the output, in parallel */
        const knn_stream_cfg *c = w->cfg;
        int64_t K = k_of(c);
        knn_sink sink = {c->out_file, fileno(c->out), c->out_name};
        pt->st = knn_npy_put_rows(&sink, w->sl->index + r0 * K, w->sl->dist + r0 * K,
                                  w->write_first + r0, rn, (int)K, w->npy_data_off, pt->err,
                                  sizeof pt->err);
    }
    part_range(w->read_rows, pt->part, &r0, &rn);
    if (!w->cfg->obs->by_range) {   /* CSV: the whole window, by part 0 */
        r0 = 0;
        rn = pt->part == 0 ? w->read_rows : 0;
    }
    if (!pt->st && rn > 0) {
        size_t row = 2 * knn_elem_bytes(&w->sl->obs);
        knn_points view = w->sl->obs;
        view.data = (char *)w->sl->obs.data + (size_t)r0 * row;
        view.alloc = NULL;
        pt->st = knn_obs_source_read(w->cfg->obs, w->read_first + r0, rn, &view, pt->err,
                                     sizeof pt->err);
    }
    return NULL;
}

static void *io_main(void *arg)
{
    io_work *w = arg;
    w->st = CASK_OK;
    if (w->npy_data_off < 0 || !w->cfg->out) {   /* CSV (in order), or no output */
        if (w->write_rows &&
            (w->st = write_results(w->rt, w->cfg, w->sl, w->write_first, w->write_rows,
                                   w->err, sizeof w->err)))
            return NULL;
        w->write_rows = 0;   /* done: the parts only read */
    }
    io_part parts[IO_PARTS];
    pthread_t th[IO_PARTS];
    int started[IO_PARTS] = {0};
    for (int p = 0; p < IO_PARTS; p++) {
        parts[p] = (io_part){w, p, CASK_OK, {0}};
        started[p] = p > 0 && pthread_create(&th[p], NULL, io_part_main, &parts[p]) == 0;
        if (p > 0 && !started[p])
            io_part_main(&parts[p]);
    }
    io_part_main(&parts[0]);
    for (int p = 0; p < IO_PARTS; p++) {
        if (started[p])
            pthread_join(th[p], NULL);
    }
    for (int p = 0; p < IO_PARTS && !w->st; p++)   /* the lowest rows' failure is told */
        if (parts[p].st) {
            w->st = parts[p].st;
            snprintf(w->err, sizeof w->err, "%s", parts[p].err);
        }
    if (!w->st && w->read_rows)
        w->sl->obs.n = w->read_rows;
    return NULL;
}

/* Row of sample s of k among n, as knn_check picks them. */
static int64_t sample_row(int64_t s, int64_t k, int64_t n)
{
    return k == 1 ? 0 : (int64_t)((double)s * (double)(n - 1) / (double)(k - 1) + 0.5);
}

static int64_t rows_of_run(const knn_stream_cfg *c)
{
    return c->nrows ? c->nrows : c->obs->n;
}

static cask_status samples_init(const knn_stream_cfg *c, knn_stream_result *r)
{
    int64_t n = rows_of_run(c), k = c->check < n ? c->check : n;
    if (k <= 0)
        return CASK_OK;
    if (knn_points_alloc(k, c->obs->f64, c->obs->degrees, NULL, &r->sample_obs))
        return CASK_ERR_NOMEM;
    size_t K = (size_t)k_of(c);
    r->sample_index = malloc((size_t)k * K * sizeof *r->sample_index);
    r->sample_dist = malloc((size_t)k * K * sizeof *r->sample_dist);
    r->sample_rows = malloc((size_t)k * sizeof *r->sample_rows);
    if (!r->sample_index || !r->sample_dist || !r->sample_rows)
        return CASK_ERR_NOMEM;
    for (int64_t s = 0; s < k; s++)
        r->sample_rows[s] = sample_row(s, k, n);
    r->nsamples = k;
    return CASK_OK;
}

/* Copies the samples that fall in rows [first, first + rows) out of the slot (k results
 * each). */
static void samples_take(knn_stream_result *r, const slot *sl, int64_t first, int64_t rows,
                         int k, int64_t *next)
{
    size_t row = 2 * knn_elem_bytes(&sl->obs);
    for (; *next < r->nsamples && r->sample_rows[*next] < first + rows; (*next)++) {
        int64_t i = r->sample_rows[*next] - first, s = *next;
        memcpy((char *)r->sample_obs.data + (size_t)s * row,
               (const char *)sl->obs.data + (size_t)i * row, row);
        memcpy(r->sample_index + s * k, sl->index + i * k, (size_t)k * sizeof *sl->index);
        memcpy(r->sample_dist + s * k, sl->dist + i * k, (size_t)k * sizeof *sl->dist);
    }
}

static void slot_free(slot *sl, const knn_alloc *a)
{
    knn_job_destroy(sl->job);
    sl->job = NULL;
    knn_points_free(&sl->obs);
    if (a) {
        a->free(a->ctx, sl->index);
        a->free(a->ctx, sl->dist);
    } else {
        free(sl->index);
        free(sl->dist);
    }
}

static void *alloc_bytes(const knn_alloc *a, size_t n)
{
    return a ? a->alloc(a->ctx, n) : malloc(n);
}

cask_status knn_stream_run(cask_runtime *rt, const cask_knn_kernels *k,
                           const knn_stream_cfg *c, knn_stream_result *res, char *err,
                           size_t errlen)
{
    slot sl[2];
    knn_refs *refs = NULL;
    cask_status st = CASK_OK;
    int64_t n = rows_of_run(c), W = c->window < n ? c->window : n, base = c->first_row;
    int64_t out_rows = c->out_rows ? c->out_rows : n;
    int f64 = c->obs->f64, K = k_of(c);
    knn_plan plan = c->plan;
    double t_start = now_s();

    memset(res, 0, sizeof *res);
    memset(sl, 0, sizeof sl);
    res->auto_fraction = -1;
    int64_t prune = plan.prune, npy_off = -1;
    double t;
    if (W <= 0)
        st = knn_errorf(CASK_ERR_INVALID, err, errlen, "stream: bad window");
    else if ((base || c->header_elsewhere) && (!c->obs->by_range || (c->out && !c->out_npy)))
        st = knn_errorf(CASK_ERR_INVALID, err, errlen, "stream: a share of the rows needs "
                        ".npy observations and output");
    if (st)
        goto agree;
    res->windows = (n + W - 1) / W;
    for (int s = 0; s < 2 && s < res->windows; s++) {
        if (knn_points_alloc(W, f64, c->obs->degrees, c->alloc, &sl[s].obs) ||
            !(sl[s].index = alloc_bytes(c->alloc, (size_t)W * K * sizeof(int32_t))) ||
            !(sl[s].dist = alloc_bytes(c->alloc, (size_t)W * K * sizeof(float)))) {
            st = knn_errorf(CASK_ERR_NOMEM, err, errlen,
                            "%s: out of memory for two windows of %lld rows", c->obs->name,
                            (long long)W);
            goto agree;
        }
    }
    if (samples_init(c, res)) {
        st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "--check: out of memory");
        goto agree;
    }
    if (c->out && c->out_npy) {
        /* the header, where rows start: written by one run, measured by all */
        char hdr[KNN_NPY_HEADER_MAX];
        size_t hl = knn_out_header(hdr, 1, out_rows, K);
        if ((!c->header_elsewhere && fwrite(hdr, 1, hl, c->out) != hl) || fflush(c->out) != 0) {
            st = knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", c->out_name,
                            strerror(errno));
            goto agree;
        }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        npy_off = (int64_t)hl;   /* rows go to their offsets, in parallel */
#endif
        if (npy_off < 0 && (base || c->header_elsewhere)) {
            st = knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: rows by offset need a "
                            "little-endian host", c->out_name);
            goto agree;
        }
    }
    if (c->out && !c->out_npy && fputs(K > 1 ? KNN_KCSV_HEADER : KNN_CSV_HEADER, c->out) == EOF) {
        st = knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed", c->out_name);
        goto agree;
    }
    t = now_s();
    if (!c->obs->by_range && c->obs->window != W && c->obs->window < n) {
        st = knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: scanned for windows of %lld rows, "
                        "not %lld", c->obs->name, (long long)c->obs->window, (long long)W);
        goto agree;
    }
    if ((st = knn_obs_source_read(c->obs, base, W, &sl[0].obs, err, errlen)))
        goto agree;
    res->t_first_load = now_s() - t;
    /* auto: the first window stands for the file (as the whole input does in memory) */
    if (c->auto_prune)
        prune = knn_auto_prune(&sl[0].obs, c->ref, K, c->pchunk, &res->auto_fraction);
agree:
    /* Ranks meet here on every path, failed or not, so that none waits for one that
     * left: they learn whether one failed and prune only if every one would, as in
     * memory (the bytes are the same either way). After this, no rank waits for another
     * until the caller's end. */
    if (c->agree && c->agree(c->agree_ctx, st != CASK_OK, &prune) && !st)
        st = knn_errorf(CASK_ERR_PEER, err, errlen, "another rank failed before the search");
    if (st)
        goto done;
    if (c->auto_prune && prune) {
        plan.prune = 1;
        plan.chunk = c->pchunk;
    } else if (c->auto_prune && K == 1) {
        plan.ref_chunk = c->brute_ref_chunk;
    }
    res->prune = plan.prune;
    if ((st = knn_refs_create(rt, k, c->ref, &plan, &refs, err, errlen)))
        goto done;

    int64_t next_sample = 0;
    for (int64_t w = 0; w < res->windows; w++) {
        slot *cur = &sl[w & 1], *other = &sl[(w + 1) & 1];
        int64_t first = w * W, rows = knn_rows_of(n, W, w);
        if (cur->job && cur->job_rows != rows) {
            knn_job_destroy(cur->job);
            cur->job = NULL;
        }
        if (!cur->job) {
            knn_points view = cur->obs;
            view.n = rows;
            view.alloc = NULL;
            if ((st = knn_job_create_on(rt, k, &view, c->ref, refs, cur->index, cur->dist,
                                        &plan, &cur->job, err, errlen)))
                goto done;
            cur->job_rows = rows;
            if (w == 0)
                knn_job_shape(cur->job, &res->obs_chunks, &res->ref_chunks, &res->ntasks);
        } else if ((st = knn_job_make_cold(cur->job, err, errlen))) {
            goto done;   /* the device copies of the previous window must go */
        }
        io_work io = {rt, c, npy_off, other, 0, 0, 0, 0, CASK_OK, {0}};
        if (w > 0) {
            io.write_first = base + first - W;
            io.write_rows = W;
        }
        if (w + 1 < res->windows) {
            io.read_first = base + first + rows;
            io.read_rows = knn_rows_of(n, W, w + 1);
        }
        pthread_t th;
        int threaded = (io.write_rows || io.read_rows) && pthread_create(&th, NULL, io_main, &io) == 0;
        if (!threaded && (io.write_rows || io.read_rows))
            io_main(&io);   /* no thread to be had: do it here, serially */
        t = now_s();
        st = knn_job_run(cur->job, 0, err, errlen);
        res->t_compute += now_s() - t;
        t = now_s();
        if (threaded)
            pthread_join(th, NULL);
        res->t_wait_io += now_s() - t;
        if (st)
            goto done;
        if (io.st) {
            st = io.st;
            knn_errorf(st, err, errlen, "%s", io.err);
            goto done;
        }
        samples_take(res, cur, first, rows, K, &next_sample);
    }
    t = now_s();
    {
        int64_t w = res->windows - 1;
        io_work io = {rt, c, npy_off, &sl[w & 1], base + w * W, knn_rows_of(n, W, w), 0, 0,
                      CASK_OK, {0}};
        io_main(&io);
        if ((st = io.st))
            knn_errorf(st, err, errlen, "%s", io.err);
    }
    res->t_wait_io += now_s() - t;

done:
    for (int s = 0; s < 2; s++)
        slot_free(&sl[s], c->alloc);
    knn_refs_destroy(refs);
    res->t_total = now_s() - t_start;
    return st;
}

void knn_stream_result_free(knn_stream_result *res)
{
    knn_points_free(&res->sample_obs);
    free(res->sample_index);
    free(res->sample_dist);
    free(res->sample_rows);
    memset(res, 0, sizeof *res);
}

/* ---- observation sources ---- */

cask_status knn_obs_source_open(const char *name, const knn_read_opts *opts, int64_t window,
                                knn_obs_source *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->npy.fd = -1;
    s->name = name;
    s->opts = *opts;
    cask_status st;
    if (knn_file_has_npy_magic(name)) {
        if ((st = knn_npy_source_open(name, opts, &s->npy, err, errlen)))
            return st;
        s->n = s->npy.h.n;
        s->f64 = s->npy.h.item == 8;
        s->by_range = 1;
    } else {
        if (knn_path_is_npy(name))
            return knn_errorf(CASK_ERR_FORMAT, err, errlen, "%s: not a .npy file (it does "
                              "not start with the \\x93NUMPY magic)", name);
        s->csv = fopen(name, "rb");
        if (!s->csv)
            return knn_errorf(CASK_ERR_IO, err, errlen, "%s: cannot open: %s", name,
                              strerror(errno));
        if ((st = knn_csv_scan(s->csv, name, opts, window, &s->idx, err, errlen))) {
            fclose(s->csv);
            s->csv = NULL;
            return st;
        }
        s->n = s->idx.n;
        s->f64 = 1;
        s->window = window;
    }
    s->degrees = opts->degrees;
    return CASK_OK;
}

cask_status knn_obs_source_read(knn_obs_source *s, int64_t first, int64_t n,
                                knn_points *dst, char *err, size_t errlen)
{
    if (s->by_range)
        return knn_npy_source_read(&s->npy, first, n, dst, err, errlen);
    if (first % s->window != 0 || !dst->f64)
        return knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: not a window start", s->name);
    cask_status st = knn_csv_read_window(s->csv, s->name, &s->opts, &s->idx,
                                         first / s->window, n, dst->data, err, errlen);
    if (!st) {
        dst->n = n;
        dst->degrees = s->degrees;
    }
    return st;
}

void knn_obs_source_close(knn_obs_source *s)
{
    knn_npy_source_close(&s->npy);
    if (s->csv)
        fclose(s->csv);
    s->csv = NULL;
    knn_csv_index_free(&s->idx);
}
