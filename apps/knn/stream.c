/* stream.c: see stream.h. The run keeps nslots = read_ahead + 2 slots of window buffers
 * (stream_io.h): while the graph of window w runs on slot w % nslots, the reader fills
 * the slots of the windows after it and the writer empties those before it. The graph
 * of a slot is built once per window size (every window but maybe the last has the
 * same) and run again after its observations are replaced; knn_job_make_cold drops
 * device copies of the old observations. */
#include "stream.h"
#include "knn_clock.h"

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
#include "stream_io.h"

static int k_of(const knn_stream_cfg *c)
{
    return c->plan.k > 1 ? c->plan.k : 1;
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
static void samples_take(knn_stream_result *r, const stream_slot *sl, int64_t first, int64_t rows,
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

static void slot_free(stream_slot *sl, const knn_alloc *a)
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

/* A slot's buffers for window rows of the run (stream_io_cfg.slot_alloc): nonzero if
 * they cannot be had (what was had stays for slot_free). */
static int slot_alloc(void *ctx, stream_slot *sl)
{
    const knn_stream_cfg *c = ctx;
    int64_t n = c->nrows ? c->nrows : c->obs->n, W = c->window < n ? c->window : n;
    size_t K = (size_t)k_of(c);
    return knn_points_alloc(W, c->obs->f64, c->obs->degrees, c->alloc, &sl->obs) ||
           !(sl->index = alloc_bytes(c->alloc, (size_t)W * K * sizeof(int32_t))) ||
           !(sl->dist = alloc_bytes(c->alloc, (size_t)W * K * sizeof(float)));
}

/* Slots of window buffers for a run of nwin windows: read_ahead + 2 (the one searched,
 * the one written, the ones read ahead), no more than there are windows. read_ahead < 0
 * (the default): without an output 0 (the slot no write holds is the one read ahead),
 * with one 2, fewer where the slots would hold more than KNN_STREAM_AUTO_BYTES. Every
 * slot after the first is pinned by the reader while the search runs, and that slows
 * the search (H200, 2^30 x 2^16 auto, no output: 1.376 s with 2 slots, 1.467 with 3,
 * 1.623 with 4, the reads keeping up with each; a window of 2^24 rows with --k 16 holds
 * 2.1 GiB of results: 4 of them made the search 7.0 s, 2 of them 4.8). */
/* auto's choice (knn_auto_prune) for the first window of a file read by rows, from the
 * rows it would sample of that window, each read on its own: the same choice, without
 * waiting for the window. */
static cask_status auto_from_file(const knn_stream_cfg *c, int64_t rows, int k, int64_t *prune,
                                  double *fraction, char *err, size_t errlen)
{
    *prune = 0;
    *fraction = 1.0;
    if (!knn_auto_applies(rows, c->ref->n, c->pchunk))
        return CASK_OK;
    knn_points s, one;
    if (knn_points_alloc(KNN_AUTO_SAMPLE_OBS, c->obs->f64, c->obs->degrees, NULL, &s))
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "--method auto: out of memory");
    size_t row = 2 * knn_elem_bytes(&s);
    cask_status st = CASK_OK;
    for (int64_t i = 0; i < KNN_AUTO_SAMPLE_OBS && !st; i++) {
        one = s;
        one.data = (char *)s.data + (size_t)i * row;
        st = knn_obs_source_read(c->obs, c->first_row + knn_auto_sample_row(rows, i), 1, &one,
                                 err, errlen);
    }
    if (!st)
        *prune = knn_auto_prune_at(&s, 1, rows, c->ref, k, c->pchunk, fraction);
    knn_points_free(&s);
    return st;
}

static int slots_of(const knn_stream_cfg *c, int64_t nwin)
{
    int64_t n = c->nrows ? c->nrows : c->obs->n, W = c->window < n ? c->window : n;
    int64_t slot = W * ((c->obs->f64 ? 16 : 8) + (int64_t)k_of(c) * 8), ahead = c->read_ahead;
    if (ahead < 0)
        for (ahead = c->out || c->out_file ? 2 : 0;
             ahead > 0 && (ahead + 2) * slot > KNN_STREAM_AUTO_BYTES; ahead--)
            ;
    int64_t want = ahead + 2;
    if (want > KNN_STREAM_MAX_SLOTS)
        want = KNN_STREAM_MAX_SLOTS;
    return (int)(want < nwin ? want : nwin > 1 ? nwin : 1);
}

cask_status knn_stream_run(cask_runtime *rt, const cask_knn_kernels *k,
                           const knn_stream_cfg *c, knn_stream_result *res, char *err,
                           size_t errlen)
{
    stream_slot sl[KNN_STREAM_MAX_SLOTS];
    knn_refs *refs = NULL;
    stream_io *io = NULL;
    cask_status st = CASK_OK;
    int64_t n = rows_of_run(c), W = c->window < n ? c->window : n, base = c->first_row;
    int64_t out_rows = c->out_rows ? c->out_rows : n;
    int K = k_of(c), nslots = 0;
    knn_plan plan = c->plan;
    double t_start = knn_now_s();

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
    nslots = res->slots = slots_of(c, res->windows);
    if (samples_init(c, res)) {
        st = knn_errorf(CASK_ERR_NOMEM, err, errlen, "--check: out of memory");
        goto agree;
    }
    if (c->out && c->out_npy) {
        /* the header, where rows start: written by one run, measured by all */
        char hdr[KNN_NPY_HEADER_MAX];
        size_t hl = knn_out_npy_header(hdr, c->out_format, out_rows, K);
        if ((!c->header_elsewhere && fwrite(hdr, 1, hl, c->out) != hl) || fflush(c->out) != 0) {
            st = knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed: %s", c->out_name,
                            strerror(errno));
            goto agree;
        }
        /* rows go to their offsets, in parallel (knn_npy_pack and knn_compact_pack give
         * little-endian bytes on any host) */
        npy_off = (int64_t)hl;
    }
    if (c->out && !c->out_npy && fputs(K > 1 ? KNN_KCSV_HEADER : KNN_CSV_HEADER, c->out) == EOF) {
        st = knn_errorf(CASK_ERR_IO, err, errlen, "%s: write failed", c->out_name);
        goto agree;
    }
    t = knn_now_s();
    if (!c->obs->by_range && c->obs->window != W && c->obs->window < n) {
        st = knn_errorf(CASK_ERR_INVALID, err, errlen, "%s: scanned for windows of %lld rows, "
                        "not %lld", c->obs->name, (long long)c->obs->window, (long long)W);
        goto agree;
    }
    /* The reader starts now: it pins the first window's buffers and reads the window
     * (in parallel reads, like the others), then the windows ahead; meanwhile auto
     * decides and the references are prepared. (Each slot is pinned by the reader as it
     * first fills it: 0.12 s for a window of 2^24 rows on the H200, no longer before
     * the first read.) */
    stream_io_cfg ioc = {rt, c, sl, nslots, n, W, base, npy_off,
                         c->io_threads > 0 ? c->io_threads : 1, slot_alloc, (void *)c};
    if ((st = stream_io_start(&ioc, &io, err, errlen)))
        goto agree;
    /* auto: the first window stands for the file (as the whole input does in memory):
     * from its sample rows read on their own where the file reads by rows, else from
     * the window once read */
    t = knn_now_s();
    if (c->auto_prune && c->obs->by_range)
        st = auto_from_file(c, knn_rows_of(n, W, 0), K, &prune, &res->auto_fraction, err,
                            errlen);
    else if (c->auto_prune && !(st = stream_io_wait_read(io, 0, &res->t_first_load, err,
                                                          errlen)))
        prune = knn_auto_prune(&sl[0].obs, c->ref, K, c->pchunk, &res->auto_fraction);
    res->t_auto = knn_now_s() - t - res->t_first_load;
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
    t = knn_now_s();
    st = knn_refs_create(rt, k, c->ref, &plan, &refs, err, errlen);
    res->t_refs = knn_now_s() - t;
    if (st)
        goto done;

    int64_t next_sample = 0;
    for (int64_t w = 0; w < res->windows; w++) {
        stream_slot *cur = &sl[w % nslots];
        int64_t first = w * W, rows = knn_rows_of(n, W, w);
        if ((st = stream_io_wait_read(io, w, w ? &res->t_wait_read : &res->t_first_load,
                                      err, errlen)))
            goto done;
        t = knn_now_s();
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
            goto done;   /* the device copies of the slot's previous window must go */
        }
        res->t_jobs += knn_now_s() - t;
        t = knn_now_s();
        st = knn_job_run(cur->job, 0, err, errlen);
        res->t_compute += knn_now_s() - t;
        if (st)
            goto done;
        samples_take(res, cur, first, rows, K, &next_sample);
        stream_io_computed(io, w);
    }

done:
    t = knn_now_s();
    if (io) {
        char ioerr[KNN_ERRLEN];
        cask_status ist = stream_io_finish(io, st == CASK_OK, &res->t_wait_write, ioerr,
                                           sizeof ioerr);
        if (ist && !st)
            st = knn_errorf(ist, err, errlen, "%s", ioerr);
    }
    res->t_wait_io = res->t_wait_read + res->t_wait_write;
    for (int s = 0; s < nslots; s++)
        slot_free(&sl[s], c->alloc);
    knn_refs_destroy(refs);
    res->t_end = knn_now_s() - t;
    res->t_total = knn_now_s() - t_start;
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
