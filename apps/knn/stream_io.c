/* stream_io.c: see stream_io.h. One mutex and one condition variable order the three
 * threads through three counters, windows being read, searched and written in order:
 * read (windows 0 .. read-1 are in their slots), computed, written. The reader may fill
 * slot w % nslots once written > w - nslots; the search may run window w once read > w;
 * the writer may write window w once computed > w. */
#include "stream_io.h"
#include "knn_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knn_chunks.h"
#include "knn_out.h"
#include "kout.h"
#include "write_par.h"

struct stream_io {
    stream_io_cfg cfg;
    int64_t nwin;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t read, computed, written;
    int stop;                  /* finish without ok, or a failure: threads leave */
    cask_status st;            /* the first failure */
    char err[KNN_ERRLEN];
    pthread_t reader, writer;
    int reader_started, writer_started;
};

static int k_of(const knn_stream_cfg *c)
{
    return c->plan.k > 1 ? c->plan.k : 1;
}

static void fail(stream_io *io, cask_status st, const char *msg)
{
    pthread_mutex_lock(&io->mu);
    if (!io->st) {
        io->st = st;
        snprintf(io->err, sizeof io->err, "%s", msg);
    }
    io->stop = 1;
    pthread_cond_broadcast(&io->cv);
    pthread_mutex_unlock(&io->mu);
}

/* Waits until *counter > target or the run stops; 1 if it may go on. */
static int wait_past(stream_io *io, const int64_t *counter, int64_t target)
{
    pthread_mutex_lock(&io->mu);
    while (*counter <= target && !io->stop)
        pthread_cond_wait(&io->cv, &io->mu);
    int go = !io->stop;
    pthread_mutex_unlock(&io->mu);
    return go;
}

static void advance(stream_io *io, int64_t *counter)
{
    pthread_mutex_lock(&io->mu);
    (*counter)++;
    pthread_cond_broadcast(&io->cv);
    pthread_mutex_unlock(&io->mu);
}

/* ---- one window's parts, in parallel ---- */

typedef struct part {
    stream_io *io;
    int64_t w;
    int p, nparts;
    int write;                 /* 1: write results, 0: read observations */
    cask_status st;
    char err[KNN_ERRLEN];
} part;

/* Part p of nparts of n rows: its start and length. */
static void part_range(int64_t n, int p, int nparts, int64_t *r0, int64_t *rn)
{
    int64_t q = (n + nparts - 1) / nparts;
    *r0 = p * q < n ? p * q : n;
    *rn = *r0 + q < n ? q : n - *r0;
}

static void *part_main(void *arg)
{
    part *pt = arg;
    stream_io *io = pt->io;
    const knn_stream_cfg *c = io->cfg.c;
    stream_slot *sl = &io->cfg.slots[pt->w % io->cfg.nslots];
    int64_t rows = knn_rows_of(io->cfg.rows, io->cfg.window, pt->w);
    int64_t first = io->cfg.base + pt->w * io->cfg.window, r0, rn;
    part_range(rows, pt->p, pt->nparts, &r0, &rn);
    pt->st = CASK_OK;
    if (rn <= 0)
        return NULL;
    if (pt->write) {
        int64_t K = k_of(c);
        knn_sink sink = {c->out_file, fileno(c->out), c->out_name};
        pt->st = knn_rows_put(&sink, c->out_format, sl->index + r0 * K, sl->dist + r0 * K,
                              first + r0, rn, (int)K, io->cfg.npy_off, pt->err,
                              sizeof pt->err);
    } else {
        size_t row = 2 * knn_elem_bytes(&sl->obs);
        knn_points view = sl->obs;
        view.data = (char *)sl->obs.data + (size_t)r0 * row;
        view.alloc = NULL;
        pt->st = knn_obs_source_read(c->obs, first + r0, rn, &view, pt->err, sizeof pt->err);
    }
    return NULL;
}

/* Window w's parts (nparts of them, this thread doing the first); the lowest rows'
 * failure into st/err. */
static cask_status run_parts(stream_io *io, int64_t w, int write, int nparts, char *err,
                             size_t errlen)
{
    enum { MAX_PARTS = 64 };
    part parts[MAX_PARTS];
    pthread_t th[MAX_PARTS];
    int started[MAX_PARTS] = {0};
    nparts = nparts < 1 ? 1 : nparts > MAX_PARTS ? MAX_PARTS : nparts;
    for (int p = 0; p < nparts; p++) {
        parts[p] = (part){io, w, p, nparts, write, CASK_OK, {0}};
        started[p] = p > 0 && pthread_create(&th[p], NULL, part_main, &parts[p]) == 0;
        if (p > 0 && !started[p])
            part_main(&parts[p]);   /* no thread to be had: here, serially */
    }
    part_main(&parts[0]);
    for (int p = 0; p < nparts; p++)
        if (started[p])
            pthread_join(th[p], NULL);
    for (int p = 0; p < nparts; p++)
        if (parts[p].st) {
            snprintf(err, errlen, "%s", parts[p].err);
            return parts[p].st;
        }
    return CASK_OK;
}

/* ---- the reader ---- */

/* Asks the kernel to read window w of a .npy source ahead (a no-op once cached). */
static void advise(stream_io *io, int64_t w)
{
    const knn_obs_source *s = io->cfg.c->obs;
    if (!s->by_range || s->npy.fd < 0 || w >= io->nwin || s->npy.h.fortran)
        return;
    int64_t rowb = 2 * (int64_t)s->npy.h.item;
    int64_t first = io->cfg.base + w * io->cfg.window;
    (void)posix_fadvise(s->npy.fd, (off_t)(s->npy.h.data_offset + first * rowb),
                        (off_t)(knn_rows_of(io->cfg.rows, io->cfg.window, w) * rowb),
                        POSIX_FADV_WILLNEED);
}

static void *reader_main(void *arg)
{
    stream_io *io = arg;
    const knn_obs_source *s = io->cfg.c->obs;
    for (int64_t w = 0; w < io->nwin; w++) {
        if (!wait_past(io, &io->written, w - io->cfg.nslots))
            return NULL;   /* its slot's previous window is written: the slot is free */
        advise(io, w + 1);
        char err[KNN_ERRLEN];
        stream_slot *sl = &io->cfg.slots[w % io->cfg.nslots];
        if (!sl->obs.data && io->cfg.slot_alloc(io->cfg.slot_ctx, sl)) {
            snprintf(err, sizeof err, "%s: out of memory for %d windows of %lld rows "
                     "(--read-ahead %d, --window)", s->name, io->cfg.nslots,
                     (long long)io->cfg.window, io->cfg.nslots - 2);
            fail(io, CASK_ERR_NOMEM, err);
            return NULL;
        }
        /* CSV is read a whole window at a time, in order: one part */
        cask_status st = run_parts(io, w, 0, s->by_range ? io->cfg.threads : 1, err,
                                   sizeof err);
        if (st) {
            fail(io, st, err);
            return NULL;
        }
        sl->obs.n = knn_rows_of(io->cfg.rows, io->cfg.window, w);
        advance(io, &io->read);
    }
    return NULL;
}

/* ---- the writer ---- */

/* The CSV rows of window w, appended in order (the .npy header went first). */
static cask_status write_in_order(stream_io *io, int64_t w, char *err, size_t errlen)
{
    const knn_stream_cfg *c = io->cfg.c;
    const stream_slot *sl = &io->cfg.slots[w % io->cfg.nslots];
    int64_t first = io->cfg.base + w * io->cfg.window;
    int64_t rows = knn_rows_of(io->cfg.rows, io->cfg.window, w);
    int k = k_of(c);
    if (k > 1)
        return knn_kcsv_write_rows(c->out, c->out_name, sl->index, sl->dist, first, rows, k,
                                   err, errlen);
    return knn_csv_write_tasks_at(io->cfg.rt, c->out, c->out_name, sl->index, sl->dist,
                                  first, rows, 0, c->nworkers, err, errlen);
}

/* The disk's writeback of window w's bytes: started (wait 0), or waited for. A hint and
 * a bound on dirty pages; errors show at the final fdatasync. */
static void writeback(stream_io *io, int64_t w, int wait)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (w < 0 || io->cfg.npy_off < 0)
        return;
    const knn_stream_cfg *c = io->cfg.c;
    int64_t rowb = (int64_t)knn_out_row_bytes(c->out_format, k_of(c));
    int64_t first = io->cfg.base + w * io->cfg.window;
    int64_t rows = knn_rows_of(io->cfg.rows, io->cfg.window, w);
    unsigned flags = wait ? SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER
                          : SYNC_FILE_RANGE_WRITE;
    (void)sync_file_range(fileno(c->out), (off_t)(io->cfg.npy_off + first * rowb),
                          (off_t)(rows * rowb), flags);
#else
    (void)io;
    (void)w;
    (void)wait;
#endif
}

static void *writer_main(void *arg)
{
    stream_io *io = arg;
    const knn_stream_cfg *c = io->cfg.c;
    for (int64_t w = 0; w < io->nwin; w++) {
        if (!wait_past(io, &io->computed, w))
            return NULL;
        if (c->out) {
            char err[KNN_ERRLEN];
            cask_status st = io->cfg.npy_off >= 0
                             ? run_parts(io, w, 1, io->cfg.threads, err, sizeof err)
                             : write_in_order(io, w, err, sizeof err);
            if (st) {
                fail(io, st, err);
                return NULL;
            }
            writeback(io, w, 0);
            writeback(io, w - 2, 1);
        }
        advance(io, &io->written);
    }
    return NULL;
}

/* ---- the search's side ---- */

cask_status stream_io_start(const stream_io_cfg *cfg, stream_io **out, char *err,
                            size_t errlen)
{
    stream_io *io = calloc(1, sizeof *io);
    if (!io)
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "stream: out of memory");
    io->cfg = *cfg;
    if (io->cfg.threads < 1)
        io->cfg.threads = 1;
    io->nwin = (cfg->rows + cfg->window - 1) / cfg->window;
    pthread_mutex_init(&io->mu, NULL);
    pthread_cond_init(&io->cv, NULL);
    io->reader_started = pthread_create(&io->reader, NULL, reader_main, io) == 0;
    io->writer_started = io->reader_started &&
                         pthread_create(&io->writer, NULL, writer_main, io) == 0;
    if (!io->writer_started) {
        char e[8];
        stream_io_finish(io, 0, NULL, e, sizeof e);
        return knn_errorf(CASK_ERR_NOMEM, err, errlen, "stream: cannot start the I/O "
                          "threads");
    }
    *out = io;
    return CASK_OK;
}

cask_status stream_io_wait_read(stream_io *io, int64_t w, double *waited, char *err,
                                size_t errlen)
{
    double t = knn_now_s();
    pthread_mutex_lock(&io->mu);
    while (io->read <= w && !io->st)
        pthread_cond_wait(&io->cv, &io->mu);
    cask_status st = io->st;
    if (st)
        snprintf(err, errlen, "%s", io->err);
    pthread_mutex_unlock(&io->mu);
    if (waited)
        *waited += knn_now_s() - t;
    return st;
}

void stream_io_computed(stream_io *io, int64_t w)
{
    (void)w;   /* in order: the count says which */
    advance(io, &io->computed);
}

cask_status stream_io_finish(stream_io *io, int ok, double *waited, char *err, size_t errlen)
{
    double t = knn_now_s();
    pthread_mutex_lock(&io->mu);
    if (!ok)
        io->stop = 1;
    pthread_cond_broadcast(&io->cv);
    pthread_mutex_unlock(&io->mu);
    if (io->writer_started)
        pthread_join(io->writer, NULL);   /* with ok: after the last window handed over */
    pthread_mutex_lock(&io->mu);
    io->stop = 1;                         /* a reader still waiting for a slot leaves */
    pthread_cond_broadcast(&io->cv);
    pthread_mutex_unlock(&io->mu);
    if (io->reader_started)
        pthread_join(io->reader, NULL);
    if (waited)
        *waited += knn_now_s() - t;
    cask_status st = io->st;
    if (st)
        snprintf(err, errlen, "%s", io->err);
    pthread_mutex_destroy(&io->mu);
    pthread_cond_destroy(&io->cv);
    free(io);
    return st;
}
