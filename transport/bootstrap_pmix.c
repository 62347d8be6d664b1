/* transport/bootstrap_pmix.c: the bootstrap through the launcher's PMIx server: rank,
 * size and places from PMIx_Get, blobs by Put + Commit + a collecting fence, each wait
 * bounded by PMIX_TIMEOUT and polled with the watch, so that a rank lost elsewhere ends
 * it. See bootstrap.h. */
#include "transport/bootstrap_impl.h"
#include "runtime/deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

cask_status boot_pmix_start(xport_boot *b)
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

/* One fence or get in flight: shared by the waiting thread and PMIx's callback, which
 * may come after the wait gave up (a loss seen by the watch); the last of the two frees
 * it. The info array lives here until then, as PMIx may read it until the callback; a
 * get's blob is copied here by the callback (PMIx frees its value when it returns). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, done, ninfo, bad;
    pmix_status_t rc;
    pmix_info_t info[2];
    void *blob;          /* a get's bytes past the tag, malloc'd; len of them */
    size_t len;
} pmix_op;

static pmix_op *op_new(void)
{
    pmix_op *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->refs = 2;   /* the wait and the callback */
    return f;
}

static void op_put(pmix_op *f)
{
    pthread_mutex_lock(&f->mu);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&f->mu);
    if (!last)
        return;
    for (int i = 0; i < f->ninfo; i++)
        PMIX_INFO_DESTRUCT(&f->info[i]);
    free(f->blob);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static void op_end(pmix_op *f, pmix_status_t status, void *blob, size_t len, int bad)
{
    pthread_mutex_lock(&f->mu);
    f->rc = status;
    f->blob = blob;
    f->len = len;
    f->bad = bad;
    f->done = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    op_put(f);
}

static void fence_done(pmix_status_t status, void *cbdata)
{
    op_end(cbdata, status, NULL, 0, 0);
}

static void get_done(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    void *blob = NULL;
    size_t len = 0;
    int bad = 0;
    if (status == PMIX_SUCCESS) {
        if (!kv || kv->type != PMIX_BYTE_OBJECT || kv->data.bo.size < 1 ||
            (unsigned char)kv->data.bo.bytes[0] != BOOT_BLOB_TAG) {
            bad = 1;
        } else {
            len = kv->data.bo.size - 1;
            blob = malloc(len ? len : 1);
            if (!blob)
                status = PMIX_ERR_NOMEM;
            else if (len)
                memcpy(blob, kv->data.bo.bytes + 1, len);
        }
    }
    op_end(cbdata, status, blob, len, bad);
}

/* Waits for f in steps of OP_TICK_MS, asking the watch between them, and at most the
 * bootstrap's timeout and a grace (PMIx's own PMIX_TIMEOUT does not always end a get
 * for a key a dead rank never put). 1: done (f->rc says how); 0: given up, why says
 * why. Drops the wait's reference only after the caller has read f: op_put then. */
enum { OP_TICK_MS = 10, OP_GRACE_S = 5 };
static int op_wait(xport_boot *b, pmix_op *f, char *why, size_t whylen)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int lost = 0;
    pthread_mutex_lock(&f->mu);
    while (!f->done) {
        pthread_mutex_unlock(&f->mu);
        lost = b->watch && b->watch(b->watch_arg, why, whylen);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!lost && b->timeout_s > 0 && now.tv_sec - t0.tv_sec > b->timeout_s + OP_GRACE_S) {
            snprintf(why, whylen, "no answer in %d s (a rank died or never arrived?)",
                     b->timeout_s + OP_GRACE_S);
            lost = 1;
        }
        pthread_mutex_lock(&f->mu);
        if (lost)
            break;
        struct timespec until;
        deadline_in(&until, OP_TICK_MS);
        if (!f->done)
            pthread_cond_timedwait(&f->cv, &f->mu, &until);
    }
    int done = f->done;
    pthread_mutex_unlock(&f->mu);
    return done;
}

/* PMIx_Fence_nb, waited for by op_wait: a fence blocks in the launcher's server, which
 * may not fail it when a rank died before it began (it then waits out PMIX_TIMEOUT). */
cask_status boot_pmix_fence(xport_boot *b, int collect, const char *what)
{
    pmix_op *f = op_new();
    if (!f)
        return boot_fail(b, CASK_ERR_NOMEM, "PMIx_Fence (%s) on rank %d: out of memory",
                         what, b->rank);
    fence_info(f->info, &f->ninfo, b, collect);
    pmix_status_t rc = PMIx_Fence_nb(&b->all, 1, f->info, (size_t)f->ninfo, fence_done, f);
    if (rc != PMIX_SUCCESS) {   /* no callback will come */
        f->refs = 1;
        op_put(f);
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Fence_nb (%s) on rank %d of %d: %s", what,
                         b->rank, b->size, PMIx_Error_string(rc));
    }
    char why[400];
    int done = op_wait(b, f, why, sizeof why);
    rc = f->rc;
    op_put(f);
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

void boot_pmix_key(char *out, size_t n, unsigned long seq, const char *key)
{
    snprintf(out, n, "cask.%lu.%s", seq, key);
}

cask_status boot_pmix_put(xport_boot *b, const char *pkey, const void *mine, size_t len)
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

/* Fetches rank r's blob under pkey into a fresh malloc'd buffer: PMIx_Get_nb, waited for
 * by op_wait. A blocking PMIx_Get for a key that a rank lost before its put never wrote
 * outlived its PMIX_TIMEOUT (CI, a rank killed while joining: the job killed at 95 s). */
cask_status boot_pmix_get_blob(xport_boot *b, const char *pkey, int r, void **out,
                                 size_t *len)
{
    pmix_proc_t p;
    memset(&p, 0, sizeof p);
    memcpy(p.nspace, b->me.nspace, sizeof p.nspace);
    p.rank = (pmix_rank_t)r;
    pmix_op *f = op_new();
    if (!f)
        return boot_fail(b, CASK_ERR_NOMEM, "PMIx_Get(%s) on rank %d: out of memory", pkey,
                         b->rank);
    int t = b->timeout_s;
    if (t > 0)
        PMIX_INFO_LOAD(&f->info[f->ninfo++], PMIX_TIMEOUT, &t, PMIX_INT);
    pmix_status_t rc = PMIx_Get_nb(&p, pkey, f->ninfo ? f->info : NULL, (size_t)f->ninfo,
                                   get_done, f);
    if (rc != PMIX_SUCCESS) {   /* no callback will come */
        f->refs = 1;
        op_put(f);
        return boot_fail(b, CASK_ERR_PEER, "PMIx_Get_nb(%s) of rank %d on rank %d: %s", pkey,
                         r, b->rank, PMIx_Error_string(rc));
    }
    char why[400];
    int done = op_wait(b, f, why, sizeof why);
    cask_status st = CASK_OK;
    pthread_mutex_lock(&f->mu);   /* (done: the callback has ended its writes) */
    if (!done)
        st = boot_fail(b, CASK_ERR_PEER, "PMIx_Get(%s) of rank %d on rank %d: %s", pkey, r,
                       b->rank, why);
    else if (f->rc != PMIX_SUCCESS)   /* (NOMEM: the callback's copy of the blob) */
        st = boot_fail(b, f->rc == PMIX_ERR_NOMEM ? CASK_ERR_NOMEM : CASK_ERR_PEER,
                       "PMIx_Get(%s) of rank %d on rank %d: %s", pkey, r, b->rank,
                       PMIx_Error_string(f->rc));
    else if (f->bad)
        st = boot_fail(b, CASK_ERR_FORMAT, "PMIx_Get(%s) of rank %d: not a cask blob", pkey, r);
    if (done && !st) {
        *out = f->blob;
        *len = f->len;
        f->blob = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    op_put(f);
    return st;
}

#endif /* CASK_HAVE_PMIX */
