/* array/npy_dist.c: cask_array_to_npy across the ranks of a job (cask_array_ctx_set_dist).
 *
 * The array is cut into slabs along its first axis, one per chunk there (a 0-d array:
 * one slab), contiguous in the file; slab u goes to rank u * P / U, and each rank
 * computes its own slabs (slices of the same expression, computed together) on its
 * own. In place (cask_dist_file: the file on a file system every rank sees), each
 * writes them at their offsets and marks them; rank 0 writes the header, unit U. The
 * ranks then exchange what was written: the slabs of a rank lost meanwhile are shared
 * out among the ranks left, which compute and write them in turn, until none is
 * missing or a round leaves them missing with every rank still there. Gathered, the
 * slabs travel to rank 0 (a distributed graph of gathers), which writes them all and
 * tells the others how that went. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "array/array_internal.h"

typedef struct slabs {
    cask_array *a;
    cask_array_ctx *ctx;
    cask_dist *dist;
    int P, me;
    int root;              /* makes the file, and gathered writes it (cask_dist_file_root) */
    int *live, nlive;      /* the ranks left (all of them, but after a loss) */
    int64_t U;             /* slabs */
    int64_t c0, rows;      /* rows of axis 0 a slab (its chunk), of all */
    size_t row_bytes;      /* bytes of a row of axis 0 (the whole array if 0-d) */
    int64_t off;           /* the header's length: where row 0 starts */
} slabs;

static void slab_rows(const slabs *s, int64_t u, int64_t *r0, int64_t *r1)
{
    *r0 = u * s->c0;
    *r1 = *r0 + s->c0 < s->rows ? *r0 + s->c0 : s->rows;
}

static size_t slab_bytes(const slabs *s, int64_t u)
{
    int64_t r0, r1;
    slab_rows(s, u, &r0, &r1);
    return (size_t)(r1 - r0) * s->row_bytes;
}

/* Computes slabs us[0, n) into bufs (malloc'd here; the caller frees them). */
static cask_status compute(const slabs *s, const int64_t *us, int n, void **bufs)
{
    if (!n)
        return CASK_OK;
    cask_array **sl = calloc((size_t)n, sizeof *sl);
    size_t *bytes = calloc((size_t)n, sizeof *bytes);
    cask_status st = sl && bytes ? CASK_OK : CASK_ERR_NOMEM;
    int64_t start[CASK_ARRAY_MAX_DIMS] = {0}, stop[CASK_ARRAY_MAX_DIMS];
    for (int k = 0; k < s->a->ndim; k++)
        stop[k] = s->a->shape[k];
    for (int i = 0; i < n && !st; i++) {
        bytes[i] = slab_bytes(s, us[i]);
        if (!(bufs[i] = malloc(bytes[i] ? bytes[i] : 1))) {
            st = CASK_ERR_NOMEM;
            break;
        }
        if (s->a->ndim == 0) {
            sl[i] = cask_array_retain(s->a);
            continue;
        }
        slab_rows(s, us[i], &start[0], &stop[0]);
        st = cask_array_slice(s->a, start, stop, &sl[i]);
    }
    if (!st)
        st = cask_array_compute_many(s->ctx, n, sl, bufs, bytes);
    else if (!s->ctx->err[0])
        arr_error(s->ctx, st, "out of memory");
    for (int i = 0; sl && i < n; i++)
        cask_array_release(sl[i]);
    free(sl);
    free(bytes);
    return st;
}

/* Slab u's rank, contiguous runs of slabs to the ranks left; the header's the root's. */
static int owner_of(const slabs *s, int64_t u)
{
    return u < s->U ? s->live[u * s->nlive / s->U] : s->root;
}

/* The ranks left, in s->live (the same on every rank once they agreed on a loss). */
static void find_live(slabs *s)
{
    s->nlive = 0;
    for (int r = 0; r < s->P; r++)
        if (!cask_dist_rank_lost(s->dist, r))
            s->live[s->nlive++] = r;
}

/* In place: this rank's assigned units (those still to write), computed and written. */
static cask_status write_mine(const slabs *s, cask_dist_file *f, const int *assigned,
                              const uint8_t *todo)
{
    int64_t *us = malloc((size_t)(s->U + 1) * sizeof *us);
    void **bufs = calloc((size_t)(s->U + 1), sizeof *bufs);
    int n = 0;
    cask_status st = us && bufs ? CASK_OK : arr_error(s->ctx, CASK_ERR_NOMEM, "out of memory");
    for (int64_t u = 0; !st && u < s->U; u++)
        if (todo[u] && assigned[u] == s->me)
            us[n++] = u;
    if (!st)
        st = compute(s, us, n, bufs);
    char err[512];
    for (int i = 0; i < n && !st; i++) {
        int64_t r0, r1;
        slab_rows(s, us[i], &r0, &r1);
        if ((st = cask_dist_file_pwrite(f, bufs[i], slab_bytes(s, us[i]),
                                        (uint64_t)(s->off + r0 * (int64_t)s->row_bytes), err,
                                        sizeof err)))
            arr_error(s->ctx, st, "%s", err);
        else
            st = cask_dist_file_mark(f, us[i]);
    }
    if (!st && todo[s->U] && assigned[s->U] == s->me) {   /* the header, the file sized */
        char hdr[NPY_HEADER_MAX];
        size_t len = npy_header(hdr, s->a->dtype, s->a->ndim, s->a->shape);
        if ((st = cask_dist_file_pwrite(f, hdr, len, 0, err, sizeof err)))
            arr_error(s->ctx, st, "%s", err);
        else if (ftruncate(cask_dist_file_fd(f), (off_t)(s->off + s->rows * (int64_t)s->row_bytes)))
            st = arr_error(s->ctx, CASK_ERR_IO, "%s: %s", cask_dist_file_temp_path(f),
                           strerror(errno));
        else
            st = cask_dist_file_mark(f, s->U);
    }
    for (int i = 0; bufs && i < n; i++)
        free(bufs[i]);
    free(us);
    free(bufs);
    return st;
}

/* Names the units no rank wrote after f's last exchange, as rows of axis 0. */
static void name_missing(const slabs *s, const cask_dist_file *f, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int64_t u = cask_dist_file_missing(f, 0); u >= 0 && strlen(buf) + 64 < len;
         u = cask_dist_file_missing(f, u + 1)) {
        int64_t r0, r1;
        size_t l = strlen(buf);
        slab_rows(s, u, &r0, &r1);
        if (u == s->U)
            snprintf(buf + l, len - l, "%sthe header", l ? ", " : "");
        else
            snprintf(buf + l, len - l, "%srows %lld-%lld", l ? ", " : "", (long long)r0,
                     (long long)r1 - 1);
    }
}

static cask_status in_place(slabs *s, cask_dist_file *f)
{
    const int64_t nunits = s->U + 1;
    int *assigned = malloc((size_t)nunits * sizeof *assigned);
    uint8_t *todo = malloc((size_t)nunits);
    cask_status st = CASK_OK, mine = CASK_OK;
    char saved[512] = "";
    if (!assigned || !todo) {
        st = arr_error(s->ctx, CASK_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int64_t u = 0; u < nunits; u++) {
        assigned[u] = owner_of(s, u);
        todo[u] = 1;
    }
    /* rounds: a lost rank's units go to the ranks left; each round at least one rank
     * fewer, or the last */
    for (int round = 0; round < s->P; round++) {
        if (!mine && (mine = write_mine(s, f, assigned, todo)))
            snprintf(saved, sizeof saved, "%s", s->ctx->err);
        if ((st = cask_dist_file_exchange(f, mine == CASK_OK, nunits)))
            break;
        int64_t nmiss = 0;
        for (int64_t u = 0; u < nunits; u++)
            nmiss += todo[u] = cask_dist_file_missing(f, u) == u;
        find_live(s);
        if (!nmiss || !s->nlive)   /* (a rank that failed goes on with the rounds, vetoing) */
            break;
        for (int64_t u = 0, k = 0; u < nunits; u++)   /* the same on every rank */
            if (todo[u])
                assigned[u] = s->live[k++ % s->nlive];
    }
    if (st) {
        arr_error(s->ctx, st, "%s", cask_dist_file_error(f));
        goto out;
    }
    st = cask_dist_file_commit(f, mine == CASK_OK, nunits,
                               s->off + s->rows * (int64_t)s->row_bytes);
    if (st) {
        char what[384];
        name_missing(s, f, what, sizeof what);
        arr_error(s->ctx, st, "%s%s%s%s%s", saved, saved[0] ? ": " : "", what,
                  what[0] ? " of axis 0 written by no rank: " : "", cask_dist_file_error(f));
    }
out:
    free(assigned);
    free(todo);
    return st;
}

static cask_status gathered(const slabs *s, cask_dist_file *f)
{
    int64_t *us = malloc((size_t)s->U * sizeof *us);
    void **bufs = calloc((size_t)s->U, sizeof *bufs);     /* mine, computed */
    void **dest = calloc((size_t)s->U, sizeof *dest);     /* rank 0: every slab */
    cask_dist_graph *g = NULL;
    int n = 0;
    cask_status st = us && bufs && dest ? CASK_OK : CASK_ERR_NOMEM;
    for (int64_t u = 0; !st && u < s->U; u++)
        if (owner_of(s, u) == s->me)
            us[n++] = u;
    if (!st && (st = compute(s, us, n, bufs)))
        goto out;
    /* each slab a datum of its rank's (over its buffer), gathered to rank 0 */
    if (!st)
        st = cask_dist_graph_create(s->dist, &g);
    for (int64_t u = 0, i = 0; !st && u < s->U; u++) {
        int o = owner_of(s, u);
        cask_data *d;
        void *mem = o == s->me ? bufs[i++] : NULL;
        int root = s->me == s->root;
        if (root)
            dest[u] = o == s->root ? mem : malloc(slab_bytes(s, u) ? slab_bytes(s, u) : 1);
        if (root && !dest[u])
            st = CASK_ERR_NOMEM;
        else if (!(st = cask_dist_data_create(s->dist, slab_bytes(s, u), o, mem, &d)) &&
                 o != s->root)
            st = cask_dist_graph_gather(g, d, s->root, root ? dest[u] : NULL);
    }
    if (!st && (st = cask_dist_graph_compute(g))) {
        arr_error(s->ctx, st, "gathering the slabs to rank 0: %s", cask_dist_graph_error(g));
        goto out;
    }
    if (!st && s->me == s->root) {   /* the root writes everything */
        char hdr[NPY_HEADER_MAX], err[512];
        size_t len = npy_header(hdr, s->a->dtype, s->a->ndim, s->a->shape);
        st = cask_dist_file_pwrite(f, hdr, len, 0, err, sizeof err);
        for (int64_t u = 0; !st && u < s->U; u++) {
            int64_t r0, r1;
            slab_rows(s, u, &r0, &r1);
            st = cask_dist_file_pwrite(f, dest[u], slab_bytes(s, u),
                                       (uint64_t)(s->off + r0 * (int64_t)s->row_bytes), err,
                                       sizeof err);
        }
        if (st)
            arr_error(s->ctx, st, "%s", err);
        else if ((st = cask_dist_file_commit(f, 1, 0, s->off + s->rows * (int64_t)s->row_bytes)))
            arr_error(s->ctx, st, "%s", cask_dist_file_error(f));
    }
    if (g) {   /* every rank returns the root's verdict on its writes */
        int64_t v = s->me == s->root ? (int64_t)st : 0;
        cask_status rs = cask_dist_allreduce(s->dist, &v, 1, CASK_DIST_MAX);
        if (rs)
            st = arr_error(s->ctx, rs, "learning rank 0's verdict: %s", cask_dist_error(s->dist));
        else if (s->me != s->root && v)
            st = arr_error(s->ctx, (cask_status)v, "rank %d could not write the file (its "
                           "message says why)", s->root);
    }
out:
    if (st && !s->ctx->err[0])
        arr_error(s->ctx, st, "%s", cask_status_string(st));
    cask_dist_graph_destroy(g);
    /* The slabs' handles stay declared until cask_dist_finalize, which destroys them
     * without reading their memory (the host copy is the one there is): theirs to free. */
    for (int64_t u = 0; dest && s->me == s->root && u < s->U; u++)
        if (owner_of(s, u) != s->root)
            free(dest[u]);
    for (int i = 0; bufs && i < n; i++)
        free(bufs[i]);
    free(us);
    free(bufs);
    free(dest);
    return st;
}

cask_status npy_dist_write(cask_array *a, const char *path)
{
    cask_array_ctx *ctx = a->ctx;
    slabs s;
    memset(&s, 0, sizeof s);
    s.a = a;
    s.ctx = ctx;
    s.dist = ctx->dist;
    s.P = cask_dist_size(ctx->dist);
    s.me = cask_dist_rank(ctx->dist);
    s.U = s.c0 = s.rows = 1;   /* a 0-d array: one slab of one "row" */
    s.row_bytes = cask_dtype_size(a->dtype);
    if (a->ndim > 0) {
        s.rows = a->shape[0];
        s.c0 = a->chunk[0];
        s.U = (s.rows + s.c0 - 1) / s.c0;
        for (int k = 1; k < a->ndim; k++)
            s.row_bytes *= (size_t)a->shape[k];
    }
    char hdr[NPY_HEADER_MAX];
    s.off = (int64_t)npy_header(hdr, a->dtype, a->ndim, a->shape);
    if (!(s.live = malloc((size_t)s.P * sizeof *s.live)))
        return arr_error(ctx, CASK_ERR_NOMEM, "out of memory");
    find_live(&s);
    cask_dist_file *f;
    cask_status st = cask_dist_file_open(ctx->dist, path, (cask_dist_write_mode)ctx->write_mode, &f);
    if (st) {
        free(s.live);
        return arr_error(ctx, st, "%s", cask_dist_error(ctx->dist));
    }
    s.root = cask_dist_file_root(f);
    st = cask_dist_file_in_place(f) ? in_place(&s, f) : gathered(&s, f);
    const char *note = cask_dist_file_note(f);
    if (!st && note[0])   /* how it was written, when not as asked */
        snprintf(ctx->err, sizeof ctx->err, "%s: written by rank %d, gathered: %s", path, s.root,
                 note);
    cask_dist_file_close(f);
    free(s.live);
    return st;
}
