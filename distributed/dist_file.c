/* distributed/dist_file.c: one output file written by the ranks of a job, each its own
 * parts at their offsets (cask_dist_file_*, include/cask/distributed.h).
 *
 * Whether every rank sees the file: rank 0 (the lowest rank left, once ranks were lost:
 * the root) creates PATH.tmp.PID.TOKEN, TOKEN 64 random bits, and tells the others PID
 * and TOKEN (cask_dist_allreduce); each opens that name. No other file can bear it, so
 * a rank that opens it shares the root's file system, and
 * one that cannot (a node-local folder, another mount namespace) says why. Ranks of one
 * host pass as any other: nothing is assumed.
 *
 * Coverage: the caller cuts the file into units (its chunks) and marks each unit once
 * its bytes are written. An exchange ORs the ranks' marks (with who answered and who
 * vetoed) into the same bitmap on every rank; the commit renames the temporary file only
 * if every unit is marked. A rank lost before it reported leaves its units unmarked
 * unless a survivor wrote them again: the commit then names them, and the file never
 * appears with a hole.
 *
 * Durability: every rank that wrote into the file fdatasyncs it before the commit's
 * exchange (a failed sync vetoes), and the leader fsyncs the folder after the rename.
 *
 * Test hook (off unless set): CASK_DIST_TEST_KILL_WRITE (dist_testkill.c) kills a rank
 * in a chosen write, mark or commit. */
#include "distributed/dist_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/log.h"

struct cask_dist_file {
    cask_dist *dist;
    int rank, size;
    int root;                 /* made the file; writes everything when gathered */
    int in_place;
    int fd;                   /* -1 where this rank does not write */
    int leader;               /* the rank that renames or removes the file */
    int done;                 /* renamed or removed */
    char *path, *tmp;
    char note[512];
    char err[1024];
    pthread_mutex_t mu;       /* marks */
    uint64_t *marks;          /* this rank's */
    size_t nmarks;            /* words */
    uint64_t *all;            /* the last exchange's union (words of nunits bits) */
    int64_t nunits;
    struct receipt { int64_t unit, *seen; } *rc;  /* receipts gathered here: where */
    size_t nrc, caprc;
    /* CASK_DIST_TEST_KILL_WRITE */
    char kill_kind;           /* 'w', 'm', 'c' or 0 */
    long kill_at;
    _Atomic long nwrites, nmarked;
};

static void file_error(cask_dist_file *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void file_error(cask_dist_file *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err, sizeof f->err, fmt, ap);
    va_end(ap);
}

cask_status cask_dist_write_mode_parse(const char *s, cask_dist_write_mode *mode)
{
    if (!s || !mode)
        return CASK_ERR_INVALID;
    if (!strcmp(s, "auto"))
        *mode = CASK_DIST_WRITE_AUTO;
    else if (!strcmp(s, "inplace") || !strcmp(s, "in-place"))
        *mode = CASK_DIST_WRITE_IN_PLACE;
    else if (!strcmp(s, "gather"))
        *mode = CASK_DIST_WRITE_GATHER;
    else
        return CASK_ERR_INVALID;
    return CASK_OK;
}

/* 64 random bits, 62 of them used (a positive value below INT64_MAX). */
static int64_t token(void)
{
    uint64_t t = 0;
    if (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^
            (uint64_t)getpid() << 32;
    }
    return (int64_t)(t >> 2);
}

static cask_status tmp_name(cask_dist_file *f, int64_t pid, int64_t tok)
{
    size_t len = strlen(f->path) + 64;
    if (!(f->tmp = malloc(len)))
        return CASK_ERR_NOMEM;
    snprintf(f->tmp, len, "%s.tmp.%lld.%016llx", f->path, (long long)pid,
             (unsigned long long)tok);
    return CASK_OK;
}

/* The open's verdict (the same on every rank): f's message in dist's and the runtime's. */
static cask_status open_fail(cask_dist_file *f, cask_status st, const char *msg)
{
    dist_fail(f->dist, "%s", msg);
    log_error(f->dist->rt, st, "%s", msg);
    cask_dist_file_close(f);
    return st;
}

/* Every rank but the root opens the root's file; all learn who could. */
static cask_status check_shared(cask_dist_file *f, cask_dist_write_mode mode)
{
    const int P = f->size;
    int64_t *seen = calloc((size_t)P, sizeof *seen);
    if (!seen)
        return CASK_ERR_NOMEM;
    int e = 0;
    if (f->rank != f->root && (f->fd = open(f->tmp, O_RDWR | O_CLOEXEC)) < 0)
        e = errno;
    seen[f->rank] = f->fd >= 0 ? 1 : 2 + e;   /* each rank its own slot, 0 elsewhere */
    cask_status st = cask_dist_allreduce(f->dist, seen, (size_t)P, CASK_DIST_MAX);
    int bad = -1;
    for (int r = 0; !st && r < P && bad < 0; r++)   /* <= 0: no answer, a rank lost (now */
        if (seen[r] > 1)                            /* or before), which writes nothing */
            bad = r;
    if (!st && bad >= 0) {
        char why[256];
        snprintf(why, sizeof why, "rank %d cannot open %s (rank %d made it): %s", bad, f->tmp,
                 f->root, strerror((int)(seen[bad] - 2)));
        if (mode == CASK_DIST_WRITE_IN_PLACE) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s: written in place, every rank writes its own parts "
                     "into one file: %s (give a path on a file system every rank sees, or "
                     "gather the results to one rank)", f->path, why);
            free(seen);
            return open_fail(f, CASK_ERR_IO, msg);
        }
        snprintf(f->note, sizeof f->note, "%s", why);
        if (f->fd >= 0 && f->rank != f->root) {
            close(f->fd);
            f->fd = -1;
        }
    }
    f->in_place = !st && bad < 0;
    free(seen);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s: agreeing on where it is written: %s", f->path,
                 cask_dist_error(f->dist));
        return open_fail(f, st, msg);
    }
    return CASK_OK;
}

cask_status cask_dist_file_open(cask_dist *dist, const char *path, cask_dist_write_mode mode,
                                cask_dist_file **out)
{
    if (!dist || !path || !out || mode < CASK_DIST_WRITE_AUTO || mode > CASK_DIST_WRITE_GATHER)
        return CASK_ERR_INVALID;
    *out = NULL;
    cask_dist_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return CASK_ERR_NOMEM;
    }
    f->dist = dist;
    f->rank = cask_dist_rank(dist);
    f->size = cask_dist_size(dist);
    f->fd = -1;
    pthread_mutex_init(&f->mu, NULL);
    f->kill_kind = dist_testkill_file(f->rank, &f->kill_at);
    /* the root makes the file; the others learn its name, or why it could not */
    while (f->root < f->rank && cask_dist_rank_lost(dist, f->root))
        f->root++;
    int64_t v[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
    if (f->rank == f->root) {
        v[1] = (int64_t)getpid();
        v[2] = token();
        if (tmp_name(f, v[1], v[2]))
            v[0] = ENOMEM;
        else if ((f->fd = open(f->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0)
            v[0] = errno;
        else
            v[0] = 0;
        if (v[0]) {   /* not ours: not to be removed */
            free(f->tmp);
            f->tmp = NULL;
        }
    }
    cask_status st = CASK_OK;
    if (f->size > 1 && (st = cask_dist_allreduce(dist, v, 3, CASK_DIST_MIN))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s: agreeing on where it is written: %s", path,
                 cask_dist_error(dist));
        return open_fail(f, st, msg);
    }
    if (v[0]) {
        char msg[1024];
        if (v[0] == INT64_MAX)
            snprintf(msg, sizeof msg, "%s: rank %d, which makes it, was lost", path, f->root);
        else
            snprintf(msg, sizeof msg, "%s: rank %d cannot create %s.tmp.%lld.*: %s", path,
                     f->root, path, (long long)v[1], strerror((int)v[0]));
        return open_fail(f, CASK_ERR_IO, msg);
    }
    if (f->rank != f->root && tmp_name(f, v[1], v[2]))
        return open_fail(f, CASK_ERR_NOMEM, "out of memory");
    f->in_place = f->size == 1;
    if (f->size > 1 && mode != CASK_DIST_WRITE_GATHER && (st = check_shared(f, mode)))
        return st;
    if (!f->in_place && f->rank != f->root) {   /* only the root holds the file */
        free(f->tmp);
        f->tmp = NULL;
    }
    *out = f;
    return CASK_OK;
}

int cask_dist_file_root(const cask_dist_file *f)
{
    return f ? f->root : 0;
}

int cask_dist_file_in_place(const cask_dist_file *f)
{
    return f ? f->in_place : 0;
}

int cask_dist_file_fd(const cask_dist_file *f)
{
    return f ? f->fd : -1;
}

const char *cask_dist_file_temp_path(const cask_dist_file *f)
{
    return f && f->tmp ? f->tmp : "";
}

const char *cask_dist_file_note(const cask_dist_file *f)
{
    return f ? f->note : "";
}

const char *cask_dist_file_error(const cask_dist_file *f)
{
    return f ? f->err : "";
}

static cask_status write_all(int fd, const char *p, size_t len, uint64_t off, int *e)
{
    size_t done = 0;
    while (done < len) {
        ssize_t put = pwrite(fd, p + done, len - done, (off_t)(off + done));
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            *e = put < 0 ? errno : EIO;
            return CASK_ERR_IO;
        }
        done += (size_t)put;
    }
    return CASK_OK;
}

cask_status cask_dist_file_pwrite(cask_dist_file *f, const void *buf, size_t len,
                                  uint64_t off, char *err, size_t errlen)
{
    if (!f || f->fd < 0 || (!buf && len)) {
        if (err && errlen)
            snprintf(err, errlen, "%s: this rank does not write it", f ? f->path : "?");
        return CASK_ERR_INVALID;
    }
    int e = 0;
    cask_status st;
    if (f->kill_kind == 'w' && ++f->nwrites == f->kill_at) {
        /* test hook: half of the bytes, then gone (no close, no report) */
        write_all(f->fd, buf, len / 2, off, &e);
        raise(SIGKILL);
    }
    if ((st = write_all(f->fd, buf, len, off, &e)) && err && errlen)
        snprintf(err, errlen, "%s: write failed: %s", f->path, strerror(e));
    return st;
}

cask_status cask_dist_file_mark(cask_dist_file *f, int64_t unit)
{
    if (!f || unit < 0)
        return CASK_ERR_INVALID;
    if (f->kill_kind == 'm' && ++f->nmarked == f->kill_at)
        raise(SIGKILL);   /* test hook: its bytes are written, it is not reported */
    size_t w = (size_t)(unit / 64);
    cask_status st = CASK_OK;
    pthread_mutex_lock(&f->mu);
    if (w >= f->nmarks) {
        size_t n = f->nmarks ? f->nmarks : 16;
        while (n <= w)
            n *= 2;
        uint64_t *m = realloc(f->marks, n * sizeof *m);
        if (m) {
            memset(m + f->nmarks, 0, (n - f->nmarks) * sizeof *m);
            f->marks = m;
            f->nmarks = n;
        } else {
            st = CASK_ERR_NOMEM;
        }
    }
    if (!st)
        f->marks[w] |= 1ull << (unit % 64);
    pthread_mutex_unlock(&f->mu);
    return st;
}

cask_status cask_dist_file_gather_receipt(cask_dist_file *f, cask_dist_graph *g, cask_data *d,
                                          int64_t unit)
{
    int owner;
    if (!f || !f->in_place || f->size < 2 || unit < 0)
        return CASK_ERR_INVALID;
    cask_status st = cask_dist_owner(f->dist, d, &owner);
    if (st)
        return st;
    int witness = owner != 0 ? 0 : 1;
    if (f->rank != witness)
        return cask_dist_graph_gather(g, d, witness, NULL);
    if (f->nrc == f->caprc) {
        size_t cap = f->caprc ? 2 * f->caprc : 64;
        struct receipt *n = realloc(f->rc, cap * sizeof *n);
        if (!n)
            return CASK_ERR_NOMEM;
        f->rc = n;
        f->caprc = cap;
    }
    /* a block of its own: the array moves as it grows, a destination must not */
    int64_t *slot = malloc(sizeof *slot);
    if (!slot)
        return CASK_ERR_NOMEM;
    *slot = 0;
    if ((st = cask_dist_graph_gather(g, d, witness, slot))) {
        free(slot);
        return st;
    }
    f->rc[f->nrc++] = (struct receipt){unit, slot};
    return CASK_OK;
}

cask_status cask_dist_file_receipts(cask_dist_file *f)
{
    cask_status st = CASK_OK;
    for (size_t i = 0; f && i < f->nrc && !st; i++) {
        if (*f->rc[i].seen == f->rc[i].unit + 1)
            st = cask_dist_file_mark(f, f->rc[i].unit);
    }
    return st;
}

static int bit(const uint64_t *m, int64_t i)
{
    return (int)(m[i / 64] >> (i % 64) & 1);
}

/* The exchange: [who answered][who vetoed][units], OR-ed over the ranks. present and
 * veto get the first two parts (words of P bits). */
static cask_status exchange(cask_dist_file *f, int ok, int64_t nunits, uint64_t *present,
                            uint64_t *veto)
{
    const size_t pw = ((size_t)f->size + 63) / 64, uw = ((size_t)nunits + 63) / 64;
    int64_t *v = calloc(2 * pw + uw + 1, sizeof *v);
    uint64_t *all = calloc(uw + 1, sizeof *all);
    if (!v || !all) {
        free(v);
        free(all);
        file_error(f, "%s: out of memory", f->path);
        return CASK_ERR_NOMEM;
    }
    uint64_t *u = (uint64_t *)v;
    u[f->rank / 64] |= 1ull << (f->rank % 64);
    if (!ok)
        u[pw + (size_t)f->rank / 64] |= 1ull << (f->rank % 64);
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < uw && i < f->nmarks; i++)
        u[2 * pw + i] = f->marks[i];
    pthread_mutex_unlock(&f->mu);
    if (nunits % 64)   /* units past nunits do not count */
        u[2 * pw + uw - 1] &= (1ull << (nunits % 64)) - 1;
    cask_status st = CASK_OK;
    if (f->in_place && f->size > 1 &&
        (st = cask_dist_allreduce(f->dist, v, 2 * pw + uw, CASK_DIST_BOR))) {
        file_error(f, "%s: exchanging the parts written: %s", f->path,
                   cask_dist_error(f->dist));
    } else {
        memcpy(present, u, pw * sizeof *u);
        memcpy(veto, u + pw, pw * sizeof *u);
        memcpy(all, u + 2 * pw, uw * sizeof *u);
        free(f->all);
        f->all = all;
        all = NULL;
        f->nunits = nunits;
    }
    free(v);
    free(all);
    return st;
}

cask_status cask_dist_file_exchange(cask_dist_file *f, int ok, int64_t nunits)
{
    if (!f || nunits < 0)
        return CASK_ERR_INVALID;
    const size_t pw = ((size_t)f->size + 63) / 64;
    uint64_t *pv = calloc(2 * pw, sizeof *pv);
    if (!pv)
        return CASK_ERR_NOMEM;
    cask_status st = exchange(f, ok, nunits, pv, pv + pw);
    free(pv);
    return st;
}

int64_t cask_dist_file_missing(const cask_dist_file *f, int64_t from)
{
    for (int64_t u = from < 0 ? 0 : from; f && f->all && u < f->nunits; u++)
        if (!bit(f->all, u))
            return u;
    return -1;
}

/* Appends "a", "a-b" ranges of the set bits (want 1) or clear bits (want 0) of m over
 * [0, n) to buf, at most `most` ranges. */
static void ranges(char *buf, size_t len, const uint64_t *m, int64_t n, int want, int most)
{
    int shown = 0;
    for (int64_t i = 0; i < n; i++) {
        if (bit(m, i) != want)
            continue;
        int64_t j = i;
        while (j + 1 < n && bit(m, j + 1) == want)
            j++;
        size_t l = strlen(buf);
        if (shown++ == most) {
            snprintf(buf + l, len - l, ", ...");
            return;
        }
        if (j > i)
            snprintf(buf + l, len - l, "%s%lld-%lld", l ? ", " : "", (long long)i, (long long)j);
        else
            snprintf(buf + l, len - l, "%s%lld", l ? ", " : "", (long long)i);
        i = j;
    }
}

/* The rename itself made durable (best effort: the data already are). */
static void sync_folder(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

cask_status cask_dist_file_commit(cask_dist_file *f, int ok, int64_t nunits, int64_t size)
{
    if (!f || nunits < 0)
        return CASK_ERR_INVALID;
    if (f->kill_kind == 'c')
        raise(SIGKILL);   /* test hook: its parts are written, not reported */
    char why[512] = "";
    /* Durable when it appears: each rank that wrote into the file (every rank in place,
     * the root gathered) syncs its bytes to the disk before the verdict, so the leader's
     * rename never names a file whose data a crash could still lose. */
    if (ok && f->fd >= 0 && fdatasync(f->fd) != 0 && errno != EINVAL && errno != EROFS) {
        snprintf(why, sizeof why, "rank %d: fdatasync of %s: %s", f->rank, f->tmp,
                 strerror(errno));
        ok = 0;
    }
    if (f->in_place && f->fd >= 0) {
        if (close(f->fd) != 0) {
            snprintf(why, sizeof why, "rank %d: closing %s: %s", f->rank, f->tmp, strerror(errno));
            ok = 0;
        }
        f->fd = -1;
    }
    const size_t pw = ((size_t)f->size + 63) / 64;
    uint64_t *pv = calloc(2 * pw, sizeof *pv);
    if (!pv)
        return CASK_ERR_NOMEM;
    cask_status st = exchange(f, ok, nunits, pv, pv + pw);
    if (st) {
        free(pv);
        return st;   /* not renamed anywhere: cask_dist_file_close removes it */
    }
    /* the renamer: the lowest rank that answered */
    f->leader = 0;
    while (f->leader < f->size && !bit(pv, f->leader))
        f->leader++;
    char vetoed[256] = "", lost[256] = "", missing[512] = "";
    ranges(vetoed, sizeof vetoed, pv + pw, f->size, 1, 16);
    ranges(lost, sizeof lost, pv, f->size, 0, 16);
    ranges(missing, sizeof missing, f->all, nunits, 0, 16);
    free(pv);
    if (!f->in_place)
        lost[0] = '\0';   /* the others never write: no report is expected from them */
    int leader = f->rank == f->leader;
    if (vetoed[0]) {
        st = CASK_ERR_IO;
        file_error(f, "%s not written: rank(s) %s did not commit it%s%s", f->path, vetoed,
                   why[0] ? ": " : "", why);
    } else if (missing[0]) {
        st = CASK_ERR_IO;
        file_error(f, "%s not written: part(s) %s of %lld were written by no rank%s%s%s",
                   f->path, missing, (long long)nunits, lost[0] ? " (no report from rank(s) " : "",
                   lost, lost[0] ? ": lost)" : "");
    }
    int64_t renamed = 0;   /* the leader's: 1 renamed, 2 failed */
    if (!st && leader) {
        struct stat sb;
        if (size >= 0 && stat(f->tmp, &sb) != 0)
            file_error(f, "%s not written: %s: %s", f->path, f->tmp, strerror(errno));
        else if (size >= 0 && sb.st_size != (off_t)size)
            file_error(f, "%s not written: %s holds %lld bytes, %lld expected", f->path, f->tmp,
                       (long long)sb.st_size, (long long)size);
        else if (rename(f->tmp, f->path) != 0)
            file_error(f, "%s: cannot rename %s to it: %s", f->path, f->tmp, strerror(errno));
        else
            renamed = 1, sync_folder(f->path);
        if (!renamed) {
            renamed = 2;
            unlink(f->tmp);
        }
    } else if (st && leader) {
        unlink(f->tmp);
    }
    /* the leader tells the others what came of it: one verdict everywhere */
    if (!st && f->in_place && f->size > 1) {
        if ((st = cask_dist_allreduce(f->dist, &renamed, 1, CASK_DIST_MAX)))
            file_error(f, "%s: learning whether rank %d renamed it: %s", f->path, f->leader,
                       cask_dist_error(f->dist));
        else if (renamed == 0) {
            st = CASK_ERR_IO;
            file_error(f, "%s not written: rank %d was lost before it renamed %s to it",
                       f->path, f->leader, f->tmp);
            unlink(f->tmp);
        } else if (renamed == 2 && !leader) {
            st = CASK_ERR_IO;
            file_error(f, "%s not written: rank %d could not rename %s to it (its message "
                       "says why)", f->path, f->leader, f->tmp);
        }
    }
    if (renamed == 2)
        st = CASK_ERR_IO;
    f->done = 1;
    return st;
}

void cask_dist_file_close(cask_dist_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    /* not committed: the root made it, but any rank that writes it may be the one left */
    if (!f->done && f->tmp && (f->rank == f->root || f->in_place))
        unlink(f->tmp);
    pthread_mutex_destroy(&f->mu);
    for (size_t i = 0; i < f->nrc; i++)
        free(f->rc[i].seen);
    free(f->rc);
    free(f->marks);
    free(f->all);
    free(f->tmp);
    free(f->path);
    free(f);
}
