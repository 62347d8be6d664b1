/* transport/bootstrap.c: rank, size and blob exchange through the launcher's PMIx
 * server, or a job of one process when there is no launcher. See bootstrap.h. */
#include "transport/bootstrap.h"
#include "runtime/deadline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef CASK_HAVE_PMIX
#include <pmix.h>
#include <pthread.h>
#endif

#define BOOT_DEFAULT_TIMEOUT_S 120
/* Every blob travels with this leading byte, so that an empty blob is still a value
 * PMIx can store and a stale value of another layout is recognised. */
#define BOOT_BLOB_TAG 0xCA

struct xport_boot {
    int kind;
    int rank, size;
    int local_rank, local_size;
    int timeout_s;
    unsigned long seq;         /* collectives so far: makes every PMIx key unique */
    char job[256];
    char err[512];
    char dir[1024];            /* XPORT_BOOT_FILE: the shared folder */
    xport_boot_watch_fn watch; /* waits: a loss seen elsewhere ends them */
    void *watch_arg;
#ifdef CASK_HAVE_PMIX
    pmix_proc_t me;
    pmix_proc_t all;           /* {namespace, PMIX_RANK_WILDCARD} */
#endif
};

static cask_status boot_fail(xport_boot *b, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cask_status boot_fail(xport_boot *b, cask_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    return st;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end || x < 0 || x > 1000000) ? dflt : (int)x;
}

/* The job size that a launcher other than a PMIx one announces (0 if none): used to
 * refuse running N copies of a program that each believe they are alone. *slurm is set
 * when it is Slurm's srun that started them (its own message names the fix). */
static int foreign_launcher_size(int *slurm)
{
    int n;
    *slurm = 0;
    if (getenv("SLURM_PROCID")) {
        /* a task of a job step (srun --mpi=none or pmi2: PMI_SIZE too); the batch
         * script itself has no SLURM_STEP_NUM_TASKS, and runs alone */
        n = env_int("SLURM_STEP_NUM_TASKS", 0);
        *slurm = n > 1;
        if (n > 1) return n;
    }
    n = env_int("OMPI_COMM_WORLD_SIZE", 0);
    if (n > 1) return n;
    n = env_int("PMI_SIZE", 0);
    if (n > 1) return n;
    return 0;
}

/* The refusal of a multi-process launch cask cannot join, naming the fix. */
static cask_status foreign_launch_fail(xport_boot *b, int n, int slurm, int have_pmix)
{
    if (slurm && have_pmix)
        return boot_fail(b, CASK_ERR_LAUNCH,
                         "srun started %d tasks without PMIx (srun --mpi=none or pmi2, or "
                         "the site's MpiDefault): run srun --mpi=pmix", n);
    if (have_pmix)
        return boot_fail(b, CASK_ERR_LAUNCH,
                         "launched as one of %d processes without PMIx: use a PMIx launcher "
                         "(mpirun of Open MPI >= 4, srun --mpi=pmix)", n);
    return boot_fail(b, CASK_ERR_LAUNCH,
                     "launched as one of %d processes, but cask was built without PMIx "
                     "(install libpmix-dev and rebuild)", n);
}

static void become_single(xport_boot *b)
{
    b->kind = XPORT_BOOT_SINGLE;
    b->rank = 0;
    b->size = 1;
    b->local_rank = 0;
    b->local_size = 1;
    snprintf(b->job, sizeof b->job, "single");
}

#ifdef CASK_HAVE_PMIX

static int value_to_int(const pmix_value_t *v, long *out)
{
    switch (v->type) {
    case PMIX_UINT32: *out = (long)v->data.uint32; return 1;
    case PMIX_UINT16: *out = (long)v->data.uint16; return 1;
    case PMIX_INT:    *out = (long)v->data.integer; return 1;
    case PMIX_UINT:   *out = (long)v->data.uint; return 1;
    case PMIX_INT32:  *out = (long)v->data.int32; return 1;
    case PMIX_UINT64: *out = (long)v->data.uint64; return 1;
    case PMIX_SIZE:   *out = (long)v->data.size; return 1;
    case PMIX_PROC_RANK: *out = (long)v->data.rank; return 1;
    default: return 0;
    }
}

static pmix_status_t get_int(const pmix_proc_t *p, const char *key, long *out)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(p, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS)
        return rc;
    if (!value_to_int(v, out))
        rc = PMIX_ERR_TYPE_MISMATCH;
    PMIX_VALUE_RELEASE(v);
    return rc;
}

static cask_status pmix_start(xport_boot *b)
{
    pmix_status_t rc = PMIx_Init(&b->me, NULL, 0);
    if (rc != PMIX_SUCCESS)
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Init: %s", PMIx_Error_string(rc));
    b->kind = XPORT_BOOT_PMIX;
    b->rank = (int)b->me.rank;
    memset(&b->all, 0, sizeof b->all);
    memcpy(b->all.nspace, b->me.nspace, sizeof b->all.nspace);
    b->all.rank = PMIX_RANK_WILDCARD;
    snprintf(b->job, sizeof b->job, "%s", b->me.nspace);

    long size = 0;
    rc = get_int(&b->all, PMIX_JOB_SIZE, &size);
    if (rc != PMIX_SUCCESS || size < 1) {
        PMIx_Finalize(NULL, 0);
        b->kind = XPORT_BOOT_SINGLE;
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Get(%s) on rank %d: %s", PMIX_JOB_SIZE,
                         b->rank, rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "size < 1");
    }
    b->size = (int)size;
    long v;
    b->local_rank = get_int(&b->me, PMIX_LOCAL_RANK, &v) == PMIX_SUCCESS ? (int)v : 0;
    b->local_size = get_int(&b->all, PMIX_LOCAL_SIZE, &v) == PMIX_SUCCESS ? (int)v : 1;
    if (b->local_size < 1) b->local_size = 1;
    return CASK_OK;
}

static void fence_info(pmix_info_t *info, int *n, const xport_boot *b, int collect)
{
    bool yes = true;
    int t = b->timeout_s;
    *n = 0;
    if (collect)
        PMIX_INFO_LOAD(&info[(*n)++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if (t > 0)
        PMIX_INFO_LOAD(&info[(*n)++], PMIX_TIMEOUT, &t, PMIX_INT);
}

/* One fence in flight: shared by the waiting thread and PMIx's callback, which may
 * come after the wait gave up (a loss seen by the watch); the last of the two frees it.
 * The info array lives here until then, as PMIx may read it until the callback. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, done, ninfo;
    pmix_status_t rc;
    pmix_info_t info[2];
} fence_op;

static void fence_op_put(fence_op *f)
{
    pthread_mutex_lock(&f->mu);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&f->mu);
    if (!last)
        return;
    for (int i = 0; i < f->ninfo; i++)
        PMIX_INFO_DESTRUCT(&f->info[i]);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static void fence_done(pmix_status_t status, void *cbdata)
{
    fence_op *f = cbdata;
    pthread_mutex_lock(&f->mu);
    f->rc = status;
    f->done = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    fence_op_put(f);
}

/* PMIx_Fence_nb, waited for in steps of FENCE_TICK_MS so that the watch is asked between
 * them: a fence blocks in the launcher's server, which may not fail it when a rank died
 * before it began (it then waits out PMIX_TIMEOUT). */
enum { FENCE_TICK_MS = 10 };
static cask_status pmix_fence(xport_boot *b, int collect, const char *what)
{
    fence_op *f = calloc(1, sizeof *f);
    if (!f)
        return boot_fail(b, CASK_ERR_NOMEM, "PMIx_Fence (%s) on rank %d: out of memory",
                         what, b->rank);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->refs = 2;   /* this wait and the callback */
    fence_info(f->info, &f->ninfo, b, collect);
    pmix_status_t rc = PMIx_Fence_nb(&b->all, 1, f->info, (size_t)f->ninfo, fence_done, f);
    if (rc != PMIX_SUCCESS) {   /* no callback will come */
        f->refs = 1;
        fence_op_put(f);
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Fence_nb (%s) on rank %d of %d: %s", what,
                         b->rank, b->size, PMIx_Error_string(rc));
    }
    char why[400];
    int lost = 0;
    pthread_mutex_lock(&f->mu);
    while (!f->done) {
        pthread_mutex_unlock(&f->mu);
        lost = b->watch && b->watch(b->watch_arg, why, sizeof why);
        pthread_mutex_lock(&f->mu);
        if (lost)
            break;
        struct timespec until;
        deadline_in(&until, FENCE_TICK_MS);
        if (!f->done)
            pthread_cond_timedwait(&f->cv, &f->mu, &until);
    }
    int done = f->done;
    rc = f->rc;
    pthread_mutex_unlock(&f->mu);
    fence_op_put(f);
    if (!done)
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Fence (%s) on rank %d of %d: %s", what,
                         b->rank, b->size, why);
    if (rc != PMIX_SUCCESS)
        return boot_fail(b, CASK_ERR_PEER,
                         "PMIx_Fence (%s) on rank %d of %d: %s%s", what, b->rank, b->size,
                         PMIx_Error_string(rc),
                         rc == PMIX_ERR_TIMEOUT ? " (a rank died or never arrived?)" : "");
    return CASK_OK;
}

static void make_key(char *out, size_t n, unsigned long seq, const char *key)
{
    snprintf(out, n, "cask.%lu.%s", seq, key);
}

static cask_status pmix_put(xport_boot *b, const char *pkey, const void *mine, size_t len)
{
    char *buf = malloc(len + 1);
    if (!buf)
        return boot_fail(b, CASK_ERR_NOMEM, "bootstrap: no memory for a %zu byte blob", len);
    buf[0] = (char)BOOT_BLOB_TAG;
    if (len)
        memcpy(buf + 1, mine, len);
    pmix_value_t val;
    memset(&val, 0, sizeof val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = buf;
    val.data.bo.size = len + 1;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, pkey, &val);   /* copies the value */
    free(buf);
    if (rc != PMIX_SUCCESS)
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Put(%s) on rank %d: %s", pkey, b->rank,
                         PMIx_Error_string(rc));
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS)
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Commit on rank %d: %s", b->rank,
                         PMIx_Error_string(rc));
    return CASK_OK;
}

/* Fetches rank r's blob under pkey into a fresh malloc'd buffer. */
static cask_status pmix_get_blob(xport_boot *b, const char *pkey, int r, void **out,
                                 size_t *len)
{
    pmix_proc_t p;
    memset(&p, 0, sizeof p);
    memcpy(p.nspace, b->me.nspace, sizeof p.nspace);
    p.rank = (pmix_rank_t)r;
    pmix_info_t info[1];
    int t = b->timeout_s, n = 0;
    if (t > 0)
        PMIX_INFO_LOAD(&info[n++], PMIX_TIMEOUT, &t, PMIX_INT);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&p, pkey, n ? info : NULL, (size_t)n, &v);
    for (int i = 0; i < n; i++)
        PMIX_INFO_DESTRUCT(&info[i]);
    if (rc != PMIX_SUCCESS)
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Get(%s) of rank %d on rank %d: %s", pkey,
                         r, b->rank, PMIx_Error_string(rc));
    cask_status st = CASK_OK;
    if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size < 1 ||
        (unsigned char)v->data.bo.bytes[0] != BOOT_BLOB_TAG) {
        st = boot_fail(b, CASK_ERR_FORMAT, "PMIx_Get(%s) of rank %d: not a cask blob",
                       pkey, r);
    } else {
        *len = v->data.bo.size - 1;
        *out = malloc(*len ? *len : 1);
        if (!*out)
            st = boot_fail(b, CASK_ERR_NOMEM, "bootstrap: no memory for rank %d's blob", r);
        else if (*len)
            memcpy(*out, v->data.bo.bytes + 1, *len);
    }
    PMIX_VALUE_RELEASE(v);
    return st;
}

#endif /* CASK_HAVE_PMIX */

/* ---- files in a shared folder (XPORT_BOOT_FILE) ---- */

static cask_status file_start(xport_boot *b, const char *dir)
{
    int rank = env_int("CASK_RANK", -1), size = env_int("CASK_SIZE", -1);
    if (size < 1 || rank < 0 || rank >= size)
        return boot_fail(b, CASK_ERR_INVALID, "CASK_BOOT_DIR is set, but CASK_RANK=%s and "
                         "CASK_SIZE=%s are not a rank and a size", getenv("CASK_RANK") ?
                         getenv("CASK_RANK") : "(unset)", getenv("CASK_SIZE") ?
                         getenv("CASK_SIZE") : "(unset)");
    if (strlen(dir) + 80 > sizeof b->dir)
        return boot_fail(b, CASK_ERR_INVALID, "CASK_BOOT_DIR is too long");
    b->kind = XPORT_BOOT_FILE;
    b->rank = rank;
    b->size = size;
    b->local_rank = env_int("CASK_LOCAL_RANK", rank);
    b->local_size = env_int("CASK_LOCAL_SIZE", size);
    if (b->local_size < 1 || b->local_rank >= b->local_size) {
        b->local_rank = rank;
        b->local_size = size;
    }
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    snprintf(b->job, sizeof b->job, "file:%.240s", dir);
    return CASK_OK;
}

static cask_status file_put(xport_boot *b, const char *name, const void *mine, size_t len)
{
    char path[1200], tmp[1300];
    snprintf(path, sizeof path, "%s/%s.%d", b->dir, name, b->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    unsigned char tag = BOOT_BLOB_TAG;
    int ok = f && fwrite(&tag, 1, 1, f) == 1 && (!len || fwrite(mine, 1, len, f) == len);
    if (f && fclose(f))
        ok = 0;
    if (!ok || rename(tmp, path))   /* the rename makes the blob appear whole */
        return boot_fail(b, CASK_ERR_IO, "bootstrap: writing %s: %s", path, strerror(errno));
    return CASK_OK;
}

/* Waits until rank r's file of name exists (r < 0: every rank's). */
static cask_status file_wait(xport_boot *b, const char *name, int r)
{
    char path[1200];
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int next = r < 0 ? 0 : r, last = r < 0 ? b->size - 1 : r;
    for (long us = 50; next <= last;) {
        snprintf(path, sizeof path, "%s/%s.%d", b->dir, name, next);
        if (access(path, R_OK) == 0) {
            next++;
            continue;
        }
        char why[400];
        if (b->watch && b->watch(b->watch_arg, why, sizeof why))
            return boot_fail(b, CASK_ERR_PEER, "bootstrap (%s) on rank %d, waiting for rank "
                             "%d: %s", name, b->rank, next, why);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (b->timeout_s > 0 && now.tv_sec - t0.tv_sec > b->timeout_s)
            return boot_fail(b, CASK_ERR_PEER, "bootstrap (%s) on rank %d: rank %d did not "
                             "arrive within %d s (CASK_BOOT_TIMEOUT)", name, b->rank, next,
                             b->timeout_s);
        struct timespec ts = { 0, us * 1000L };
        nanosleep(&ts, NULL);
        if (us < 10000)
            us *= 2;
    }
    return CASK_OK;
}

static cask_status file_get(xport_boot *b, const char *name, int r, void **out, size_t *len)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.%d", b->dir, name, r);
    FILE *f = fopen(path, "rb");
    if (!f)
        return boot_fail(b, CASK_ERR_IO, "bootstrap: reading %s: %s", path, strerror(errno));
    cask_status st = CASK_OK;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    rewind(f);
    unsigned char tag = 0;
    if (size < 1 || fread(&tag, 1, 1, f) != 1 || tag != BOOT_BLOB_TAG) {
        st = boot_fail(b, CASK_ERR_FORMAT, "bootstrap: %s is not a cask blob", path);
    } else {
        *len = (size_t)size - 1;
        *out = malloc(*len ? *len : 1);
        if (!*out)
            st = boot_fail(b, CASK_ERR_NOMEM, "bootstrap: out of memory");
        else if (*len && fread(*out, 1, *len, f) != *len) {
            free(*out);
            *out = NULL;
            st = boot_fail(b, CASK_ERR_IO, "bootstrap: reading %s: short file", path);
        }
    }
    fclose(f);
    return st;
}

cask_status xport_boot_init(const xport_boot_config *cfg, xport_boot **out, char *err,
                            size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out)
        return CASK_ERR_INVALID;
    *out = NULL;
    xport_boot *b = calloc(1, sizeof *b);
    if (!b) {
        if (err) snprintf(err, errlen, "bootstrap: out of memory");
        return CASK_ERR_NOMEM;
    }
    b->timeout_s = env_int("CASK_BOOT_TIMEOUT", BOOT_DEFAULT_TIMEOUT_S);
    if (cfg && (cfg->field_mask & XPORT_BOOT_TIMEOUT))
        b->timeout_s = cfg->timeout_s;
    int force_single = cfg && (cfg->field_mask & XPORT_BOOT_FORCE_SINGLE) &&
                       cfg->force_single;
    become_single(b);
    if (force_single) {
        *out = b;
        return CASK_OK;
    }

    int launched = getenv("PMIX_RANK") && getenv("PMIX_NAMESPACE");
    int slurm;
    int foreign = foreign_launcher_size(&slurm);
    const char *dir = getenv("CASK_BOOT_DIR");
    cask_status st = CASK_OK;
    if (dir && *dir) {
        st = file_start(b, dir);
        if (st) {
            if (err) snprintf(err, errlen, "%s", b->err);
            free(b);
            return st;
        }
        *out = b;
        return CASK_OK;
    }
#ifdef CASK_HAVE_PMIX
    if (launched) {
        st = pmix_start(b);
        if (st && foreign <= 1) {
            /* A PMIx environment we cannot join and no sign of a multi-process job:
             * run alone, and say why in xport_boot_error. */
            char why[sizeof b->err];
            snprintf(why, sizeof why, "%s", b->err);
            become_single(b);
            snprintf(b->err, sizeof b->err, "%.440s: running as a single process", why);
            st = CASK_OK;
        }
    } else if (foreign > 1) {
        st = foreign_launch_fail(b, foreign, slurm, 1);
    }
#else
    (void)launched;
    if (foreign > 1)
        st = foreign_launch_fail(b, foreign, slurm, 0);
#endif
    if (st) {
        if (err) snprintf(err, errlen, "%s", b->err);
        free(b);
        return st;
    }
    *out = b;
    return CASK_OK;
}

void xport_boot_finalize(xport_boot *b)
{
    if (!b)
        return;
#ifdef CASK_HAVE_PMIX
    if (b->kind == XPORT_BOOT_PMIX)
        PMIx_Finalize(NULL, 0);
#endif
    free(b);
}

int xport_boot_rank(const xport_boot *b) { return b->rank; }
int xport_boot_size(const xport_boot *b) { return b->size; }
int xport_boot_local_rank(const xport_boot *b) { return b->local_rank; }
int xport_boot_local_size(const xport_boot *b) { return b->local_size; }
int xport_boot_kind(const xport_boot *b) { return b->kind; }
const char *xport_boot_job(const xport_boot *b) { return b->job; }
const char *xport_boot_error(const xport_boot *b) { return b->err; }

void xport_boot_set_watch(xport_boot *b, xport_boot_watch_fn fn, void *arg)
{
    if (!b)
        return;
    b->watch = fn;
    b->watch_arg = arg;
}

void xport_boot_free_blobs(const xport_boot *b, void **blobs, size_t *lens)
{
    if (blobs)
        for (int r = 0; r < b->size; r++)
            free(blobs[r]);
    free(blobs);
    free(lens);
}

static int key_ok(const char *key)
{
    return key && *key && strlen(key) <= 40;
}

cask_status xport_boot_allgather(xport_boot *b, const char *key, const void *mine,
                                 size_t len, void ***blobs, size_t **lens)
{
    if (!b || !key_ok(key) || (len && !mine) || !blobs || !lens)
        return CASK_ERR_INVALID;
    b->err[0] = 0;
    unsigned long seq = b->seq++;
    void **bl = calloc((size_t)b->size, sizeof *bl);
    size_t *ln = calloc((size_t)b->size, sizeof *ln);
    cask_status st = CASK_OK;
    if (!bl || !ln) {
        st = boot_fail(b, CASK_ERR_NOMEM, "bootstrap: out of memory");
        goto fail;
    }
    if (b->kind == XPORT_BOOT_SINGLE) {
        bl[0] = malloc(len ? len : 1);
        if (!bl[0]) {
            st = boot_fail(b, CASK_ERR_NOMEM, "bootstrap: out of memory");
            goto fail;
        }
        if (len)
            memcpy(bl[0], mine, len);
        ln[0] = len;
    }
    else if (b->kind == XPORT_BOOT_FILE) {
        char name[80];
        snprintf(name, sizeof name, "cask.%lu.%s", seq, key);
        if ((st = file_put(b, name, mine, len)) || (st = file_wait(b, name, -1)))
            goto fail;
        for (int r = 0; r < b->size; r++)
            if ((st = file_get(b, name, r, &bl[r], &ln[r])))
                goto fail;
    }
#ifdef CASK_HAVE_PMIX
    else {
        char pkey[64];
        make_key(pkey, sizeof pkey, seq, key);
        if ((st = pmix_put(b, pkey, mine, len)))
            goto fail;
        if ((st = pmix_fence(b, 1, key)))
            goto fail;
        for (int r = 0; r < b->size; r++)
            if ((st = pmix_get_blob(b, pkey, r, &bl[r], &ln[r])))
                goto fail;
    }
#endif
    (void)seq;
    *blobs = bl;
    *lens = ln;
    return CASK_OK;
fail:
    if (bl)
        for (int r = 0; r < b->size; r++)
            free(bl[r]);
    free(bl);
    free(ln);
    return st;
}

cask_status xport_boot_bcast(xport_boot *b, const char *key, int root, void *buf,
                             size_t len)
{
    if (!b || !key_ok(key) || !buf || !len || root < 0 || root >= b->size)
        return CASK_ERR_INVALID;
    b->err[0] = 0;
    unsigned long seq = b->seq++;
    if (b->kind == XPORT_BOOT_SINGLE)
        return CASK_OK;
    void *got = NULL;
    size_t glen = 0;
    cask_status st;
    if (b->kind == XPORT_BOOT_FILE) {
        char name[80];
        snprintf(name, sizeof name, "cask.%lu.%s", seq, key);
        if (b->rank == root)
            return file_put(b, name, buf, len);
        if ((st = file_wait(b, name, root)) || (st = file_get(b, name, root, &got, &glen)))
            return st;
        goto check;
    }
#ifdef CASK_HAVE_PMIX
    char pkey[64];
    make_key(pkey, sizeof pkey, seq, key);
    if (b->rank == root && (st = pmix_put(b, pkey, buf, len)))
        return st;
    if ((st = pmix_fence(b, 1, key)))
        return st;
    if (b->rank == root)
        return CASK_OK;
    if ((st = pmix_get_blob(b, pkey, root, &got, &glen)))
        return st;
#else
    return CASK_ERR_INTERNAL;
#endif
check:
    if (glen != len) {
        free(got);
        return boot_fail(b, CASK_ERR_FORMAT, "bootstrap bcast %s: rank %d sent %zu bytes, "
                         "rank %d expected %zu", key, root, glen, b->rank, len);
    }
    memcpy(buf, got, len);
    free(got);
    return CASK_OK;
}

cask_status xport_boot_barrier(xport_boot *b)
{
    if (!b)
        return CASK_ERR_INVALID;
    b->err[0] = 0;
    unsigned long seq = b->seq++;
    if (b->kind == XPORT_BOOT_SINGLE)
        return CASK_OK;
    if (b->kind == XPORT_BOOT_FILE) {
        char name[80];
        snprintf(name, sizeof name, "cask.%lu.barrier", seq);
        cask_status st = file_put(b, name, NULL, 0);
        return st ? st : file_wait(b, name, -1);
    }
    (void)seq;
#ifdef CASK_HAVE_PMIX
    return pmix_fence(b, 0, "barrier");
#else
    return CASK_ERR_INTERNAL;
#endif
}

void xport_boot_host_id(char *out, size_t n)
{
    memset(out, 0, n);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(out, (int)n, f))
            out[0] = 0;
        fclose(f);
    }
    out[strcspn(out, "\n")] = 0;
}
