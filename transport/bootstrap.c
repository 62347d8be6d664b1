/* transport/bootstrap.c: rank, size and blob exchange for a job: chooses how (the
 * launcher's PMIx server, bootstrap_pmix.c; files in a shared folder, bootstrap_file.c;
 * or a job of one process when there is no launcher) and runs the collectives through
 * it. See bootstrap.h. */
#include "transport/bootstrap_impl.h"
#include "runtime/deadline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

cask_status boot_fail(xport_boot *b, cask_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    return st;
}

int boot_env_int(const char *name, int dflt)
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
        n = boot_env_int("SLURM_STEP_NUM_TASKS", 0);
        *slurm = n > 1;
        if (n > 1) return n;
    }
    n = boot_env_int("OMPI_COMM_WORLD_SIZE", 0);
    if (n > 1) return n;
    n = boot_env_int("PMI_SIZE", 0);
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
    b->notify_fd = -1;
    b->timeout_s = boot_env_int("CASK_BOOT_TIMEOUT", BOOT_DEFAULT_TIMEOUT_S);
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
        st = boot_file_start(b, dir);
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
        st = boot_pmix_start(b);
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
    if (b->notify_fd >= 0)
        close(b->notify_fd);
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
        if ((st = boot_file_put(b, name, mine, len)) || (st = boot_file_wait(b, name, -1)))
            goto fail;
        for (int r = 0; r < b->size; r++)
            if ((st = boot_file_get(b, name, r, &bl[r], &ln[r])))
                goto fail;
    }
#ifdef CASK_HAVE_PMIX
    else {
        char pkey[64];
        boot_pmix_key(pkey, sizeof pkey, seq, key);
        if ((st = boot_pmix_put(b, pkey, mine, len)))
            goto fail;
        if ((st = boot_pmix_fence(b, 1, key)))
            goto fail;
        for (int r = 0; r < b->size; r++)
            if ((st = boot_pmix_get_blob(b, pkey, r, &bl[r], &ln[r])))
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
            return boot_file_put(b, name, buf, len);
        if ((st = boot_file_wait(b, name, root)) ||
            (st = boot_file_get(b, name, root, &got, &glen)))
            return st;
        goto check;
    }
#ifdef CASK_HAVE_PMIX
    char pkey[64];
    boot_pmix_key(pkey, sizeof pkey, seq, key);
    if (b->rank == root && (st = boot_pmix_put(b, pkey, buf, len)))
        return st;
    if ((st = boot_pmix_fence(b, 1, key)))
        return st;
    if (b->rank == root)
        return CASK_OK;
    if ((st = boot_pmix_get_blob(b, pkey, root, &got, &glen)))
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
        cask_status st = boot_file_put(b, name, NULL, 0);
        return st ? st : boot_file_wait(b, name, -1);
    }
    (void)seq;
#ifdef CASK_HAVE_PMIX
    return boot_pmix_fence(b, 0, "barrier");
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
