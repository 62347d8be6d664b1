/* spill.c: see spill.h. The run's folder, the LRU of counted host replicas, the I/O
 * threads that write victims out, and the spill files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "runtime/spill.h"
#include "runtime/graph.h"
#include "runtime/log.h"
#include "runtime/deadline.h"
#include "runtime/sched.h"

#define SPILL_THREADS 2
#define SPILL_PREFIX "cask-spill-"
#define ROOM_WAIT_MAX_NS (10ull * 1000000000ull)   /* an allocation waits at most this */

/* A task that waits for inputs to be read back (spill_defer), then for its first
 * preparation (spill_undefer), with the inputs read for it pinned meanwhile. */
typedef struct spill_load {
    struct spill_load *next;
    cask_task *task;
    int npinned;
    cask_data *pinned[];
} spill_load;

struct spill_state {
    cask_runtime *rt;
    pthread_mutex_t lock;
    pthread_cond_t work;          /* I/O threads: over the limit, or stop */
    pthread_cond_t room;          /* allocators: memory was freed, or nothing can be */
    size_t limit, used, peak;
    replica *head, *tail;         /* head = least recently used */
    uint64_t empty_scans;         /* scans that found nothing evictable */
    uint64_t writes, reads, drops;
    int stop, failed, warned;
    char fail_msg[CASK_ERRMSG_LEN];
    spill_load *load_head, *load_tail;   /* tasks whose inputs the I/O threads read */
    spill_load *loaded;                  /* tasks re-queued, inputs pinned */
    uint64_t deferred;
    pthread_t th[SPILL_THREADS];
    int nth;
    char dir[600];
};

static void lru_unlink(struct spill_state *s, replica *r)
{
    if (r->lru_prev) r->lru_prev->lru_next = r->lru_next;
    else if (s->head == r) s->head = r->lru_next;
    if (r->lru_next) r->lru_next->lru_prev = r->lru_prev;
    else if (s->tail == r) s->tail = r->lru_prev;
    r->lru_prev = r->lru_next = NULL;
}

static int in_lru(struct spill_state *s, replica *r)
{
    return r->lru_prev || r->lru_next || s->head == r;
}

static void lru_append(struct spill_state *s, replica *r)
{
    r->lru_prev = s->tail;
    r->lru_next = NULL;
    if (s->tail) s->tail->lru_next = r;
    else s->head = r;
    s->tail = r;
}

static void file_path(const struct spill_state *s, const cask_data *d, char *buf, size_t len)
{
    snprintf(buf, len, "%s/d%u", s->dir, d->id);
}

/* ---- the run's folder ---- */

/* Removes the regular files in dir, then dir. */
static void remove_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *e;
        while ((e = readdir(dp)))
            if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
                unlinkat(dirfd(dp), e->d_name, 0);
        closedir(dp);
    }
    rmdir(dir);
}

/* Folders SPILL_PREFIX<pid>-XXXXXX in base, ours (same user), whose process is gone:
 * left by a run that crashed. Their files are never read (each run writes and reads
 * only its own folder); they are removed so that they do not fill the disk. */
static void remove_stale(cask_runtime *rt, const char *base)
{
    DIR *dp = opendir(base);
    if (!dp)
        return;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (strncmp(e->d_name, SPILL_PREFIX, strlen(SPILL_PREFIX)) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + strlen(SPILL_PREFIX), &end, 10);
        if (pid <= 0 || *end != '-' || pid == (long)getpid())
            continue;
        struct stat sb;
        if (fstatat(dirfd(dp), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;    /* alive (or not ours to ask): leave it */
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        remove_dir(path);
        log_msg(rt, CASK_LOG_INFO, "spill: removed %s, left by process %ld which is gone", path, pid);
    }
    closedir(dp);
}

/* ---- I/O threads ---- */

static void *io_main(void *arg)
{
    struct spill_state *s = arg;
    cask_runtime *rt = s->rt;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        /* a task waits for its inputs: read them and re-queue it; while over the limit,
         * one read-ahead at a time (a task re-queued with pinned inputs not yet run
         * holds back the next), so read-backs cannot push memory far past the limit */
        if (s->load_head && (s->used <= s->limit || !s->loaded)) {
            spill_load *e = s->load_head;
            s->load_head = e->next;
            if (!s->load_head)
                s->load_tail = NULL;
            pthread_mutex_unlock(&s->lock);
            cask_task *t = e->task;
            e->npinned = 0;
            for (int i = 0; i < t->naccess; i++)
                if ((t->access[i].mode & CASK_READ) && coh_load_host(rt, t->access[i].data) == CASK_OK)
                    e->pinned[e->npinned++] = t->access[i].data;
            pthread_mutex_lock(&s->lock);
            e->next = s->loaded;
            __atomic_store_n(&s->loaded, e, __ATOMIC_RELAXED);   /* read unlocked as a hint */
            pthread_mutex_unlock(&s->lock);
            sched_ready(rt->sched, NULL, t);   /* t is not ours from here on */
            pthread_mutex_lock(&s->lock);
            continue;
        }
        if (s->used <= s->limit || s->failed) {
            pthread_cond_wait(&s->work, &s->lock);
            continue;
        }
        cask_data *d = NULL;
        int saw_locked = 0;
        for (replica *r = s->head; r; r = r->lru_next) {
            if (pthread_mutex_trylock(&r->data->lock) != 0) {
                saw_locked = 1;   /* in use for a moment (or being written): look again */
                continue;
            }
            if (r->busy || !r->ptr) {
                pthread_mutex_unlock(&r->data->lock);
                continue;
            }
            d = r->data;
            lru_unlink(s, r);
            break;
        }
        if (!d) {
            /* everything is held by running tasks: let allocators go past the limit
             * rather than wait (a task needs its buffers), and look again soon; a data
             * lock held for a moment only delays the next look */
            if (!saw_locked) {
                s->empty_scans++;
                pthread_cond_broadcast(&s->room);
            }
            struct timespec ts;
            deadline_after_ns(&ts, CLOCK_REALTIME, saw_locked ? 200000 : 5000000);
            pthread_cond_timedwait(&s->work, &s->lock, &ts);
            continue;
        }
        pthread_mutex_unlock(&s->lock);
        size_t bytes = d->bytes;
        int wrote = 0;
        int rc = coh_spill_host_locked(rt, d, &wrote);   /* d locked, spill lock not held */
        pthread_mutex_lock(&s->lock);
        if (rc == 1) {
            s->used -= bytes;
            if (wrote) s->writes++;
            else s->drops++;
        } else {
            lru_append(s, &d->rep[0]);   /* stays in memory (in use, or the write failed) */
        }
        pthread_mutex_unlock(&d->lock);
        pthread_cond_broadcast(&s->room);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

cask_status spill_create(cask_runtime *rt, char *err, size_t errlen)
{
    if (!rt->cfg.host_mem_limit)
        return CASK_OK;
    struct spill_state *s = calloc(1, sizeof *s);
    if (!s)
        return CASK_ERR_NOMEM;
    s->rt = rt;
    s->limit = rt->cfg.host_mem_limit;
    const char *base = rt->cfg.spill_dir;
    remove_stale(rt, base);
    snprintf(s->dir, sizeof s->dir, "%s/" SPILL_PREFIX "%ld-XXXXXX", base, (long)getpid());
    if (!mkdtemp(s->dir)) {
        snprintf(err, errlen, "spill folder: cannot create %s/" SPILL_PREFIX "%ld-XXXXXX: %s",
                 base, (long)getpid(), strerror(errno));
        free(s);
        return CASK_ERR_IO;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->room, NULL);
    rt->spill = s;
    for (int i = 0; i < SPILL_THREADS; i++)
        if (pthread_create(&s->th[s->nth], NULL, io_main, s) == 0)
            s->nth++;
    if (!s->nth) {
        snprintf(err, errlen, "spill: cannot start I/O threads");
        spill_destroy(rt);
        return CASK_ERR_NOMEM;
    }
    log_msg(rt, CASK_LOG_INFO, "spill: host limit %zu bytes, files in %s", s->limit, s->dir);
    return CASK_OK;
}

void spill_stop(cask_runtime *rt)
{
    struct spill_state *s = rt->spill;
    if (!s || !s->nth)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->work);
    pthread_cond_broadcast(&s->room);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->nth; i++)
        pthread_join(s->th[i], NULL);
    s->nth = 0;
    /* none are left once graphs have ended; free any all the same */
    for (spill_load *lists[2] = {s->load_head, s->loaded}, **l = lists; l < lists + 2; l++)
        while (*l) {
            spill_load *e = *l;
            *l = e->next;
            free(e);
        }
    s->load_head = s->load_tail = s->loaded = NULL;
}

void spill_destroy(cask_runtime *rt)
{
    struct spill_state *s = rt->spill;
    if (!s)
        return;
    spill_stop(rt);
    log_msg(rt, CASK_LOG_INFO, "spill: %llu chunks written, %llu read back, %llu dropped "
            "clean, %llu tasks waited for read-backs off their worker; peak %zu of %zu "
            "bytes", (unsigned long long)s->writes, (unsigned long long)s->reads,
            (unsigned long long)s->drops, (unsigned long long)s->deferred, s->peak, s->limit);
    remove_dir(s->dir);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->room);
    free(s);
    rt->spill = NULL;
}

/* ---- host replicas ---- */

cask_status spill_host_alloc(cask_runtime *rt, cask_data *d, int may_wait)
{
    struct spill_state *s = rt->spill;
    replica *h = &d->rep[0];
    cask_status st = cask_host_alloc(rt, d->bytes, &h->ptr);
    if (st)
        return st;
    h->owned = 1;
    pthread_mutex_lock(&s->lock);
    s->used += d->bytes;
    if (s->used > s->peak)
        s->peak = s->used;
    if (s->used > s->limit && !s->failed && !s->stop && !may_wait)
        pthread_cond_signal(&s->work);
    if (s->used > s->limit && !s->failed && !s->stop && may_wait) {
        /* over the limit: the I/O threads make room; wait for them (bounded) unless
         * nothing can be spilled now, so that producers cannot outrun the disk */
        pthread_cond_signal(&s->work);
        uint64_t scans = s->empty_scans;
        struct timespec t0, ts;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (s->used > s->limit && !s->failed && !s->stop && s->empty_scans == scans) {
            deadline_in(&ts, 50);
            pthread_cond_timedwait(&s->room, &s->lock, &ts);
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            uint64_t waited = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
                              (uint64_t)(t1.tv_nsec - t0.tv_nsec);
            if (waited > ROOM_WAIT_MAX_NS) {
                if (!s->warned++)
                    log_msg(rt, CASK_LOG_WARN, "spill: the disk does not keep up; host memory "
                            "goes past its limit (%zu of %zu bytes)", s->used, s->limit);
                break;
            }
        }
    }
    lru_append(s, h);   /* only now: the I/O threads must not wait for our lock */
    pthread_mutex_unlock(&s->lock);
    return CASK_OK;
}

void spill_host_free(cask_runtime *rt, cask_data *d)
{
    struct spill_state *s = rt->spill;
    replica *h = &d->rep[0];
    if (!h->ptr)
        return;
    pthread_mutex_lock(&s->lock);
    if (in_lru(s, h))
        lru_unlink(s, h);
    s->used -= d->bytes;
    pthread_cond_broadcast(&s->room);
    pthread_mutex_unlock(&s->lock);
    cask_host_free(rt, h->ptr);
    h->ptr = NULL;
}

void spill_touch(cask_runtime *rt, cask_data *d)
{
    struct spill_state *s = rt->spill;
    replica *h = &d->rep[0];
    pthread_mutex_lock(&s->lock);
    if (in_lru(s, h)) {
        lru_unlink(s, h);
        lru_append(s, h);
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- files ---- */

cask_status spill_write(cask_runtime *rt, cask_data *d)
{
    struct spill_state *s = rt->spill;
    char path[700];
    file_path(s, d, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = 0;
    if (fd < 0) {
        e = errno;
    } else {
        d->has_file = 1;
        size_t done = 0;
        const char *p = d->rep[0].ptr;
        while (done < d->bytes) {
            ssize_t k = pwrite(fd, p + done, d->bytes - done, (off_t)done);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                e = k < 0 ? errno : ENOSPC;
                break;
            }
            done += (size_t)k;
        }
        if (close(fd) != 0 && !e)
            e = errno;
    }
    if (!e)
        return CASK_OK;
    if (d->has_file) {
        unlink(path);
        d->has_file = 0;
    }
    pthread_mutex_lock(&s->lock);
    if (!s->failed) {
        s->failed = 1;
        snprintf(s->fail_msg, sizeof s->fail_msg,
                 "spill: cannot write chunk %s (%zu bytes) to spill folder %.600s (file d%u): "
                 "%s; the chunk stays in memory", d->name, d->bytes, s->dir, d->id,
                 strerror(e));
    }
    pthread_mutex_unlock(&s->lock);
    log_msg(rt, CASK_LOG_ERROR, "spill: cannot write chunk %s to %s: %s", d->name, s->dir,
            strerror(e));
    return CASK_ERR_IO;
}

cask_status spill_read(cask_runtime *rt, cask_data *d)
{
    struct spill_state *s = rt->spill;
    char path[700];
    file_path(s, d, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    size_t done = 0;
    char *p = d->rep[0].ptr;
    while (!e && done < d->bytes) {
        ssize_t k = pread(fd, p + done, d->bytes - done, (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            e = k < 0 ? errno : EIO;
        else
            done += (size_t)k;
    }
    if (fd >= 0)
        close(fd);
    if (e)
        return log_error(rt, CASK_ERR_IO, "spill: cannot read chunk %s back from %s: %s",
                         d->name, path, strerror(e));
    pthread_mutex_lock(&s->lock);
    s->reads++;
    pthread_mutex_unlock(&s->lock);
    return CASK_OK;
}

void spill_forget(cask_runtime *rt, cask_data *d)
{
    struct spill_state *s = rt->spill;
    if (s && d->has_file) {
        char path[700];
        file_path(s, d, path, sizeof path);
        unlink(path);
    }
    d->has_file = 0;
    __atomic_store_n(&d->on_disk, 0, __ATOMIC_RELAXED);
}

cask_status spill_failed(cask_runtime *rt, char *msg, size_t msglen)
{
    struct spill_state *s = rt->spill;
    if (!s || !__atomic_load_n(&s->failed, __ATOMIC_RELAXED))
        return CASK_OK;
    pthread_mutex_lock(&s->lock);
    if (msg)
        snprintf(msg, msglen, "%s", s->fail_msg);
    pthread_mutex_unlock(&s->lock);
    return CASK_ERR_IO;
}

void spill_get_stats(cask_runtime *rt, spill_stats *out)
{
    memset(out, 0, sizeof *out);
    struct spill_state *s = rt->spill;
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    out->used = s->used;
    out->limit = s->limit;
    out->peak = s->peak;
    out->writes = s->writes;
    out->reads = s->reads;
    out->drops = s->drops;
    out->deferred = s->deferred;
    snprintf(out->dir, sizeof out->dir, "%s", s->dir);
    pthread_mutex_unlock(&s->lock);
}

/* ---- tasks waiting for read-backs ---- */

int spill_defer(cask_runtime *rt, cask_task *t)
{
    struct spill_state *s = rt->spill;
    if (rt->ngpu > 0 && t->kernel->cuda)
        return 0;   /* may come back on a GPU worker, which reads inline */
    int need = 0;
    for (int i = 0; i < t->naccess && !need; i++) {
        cask_data *d = t->access[i].data;
        need = (t->access[i].mode & CASK_READ) && __atomic_load_n(&d->on_disk, __ATOMIC_RELAXED) &&
               !__atomic_load_n(&d->rep[0].valid, __ATOMIC_RELAXED);
    }
    if (!need)
        return 0;
    pthread_mutex_lock(&s->lock);
    for (spill_load *e = s->loaded; e; e = e->next)
        if (e->task == t) {   /* back from a read already: run it (reads left are done inline) */
            pthread_mutex_unlock(&s->lock);
            return 0;
        }
    spill_load *e = s->stop ? NULL : malloc(sizeof *e + (size_t)t->naccess * sizeof(cask_data *));
    if (e) {
        e->next = NULL;
        e->task = t;
        e->npinned = 0;
        if (s->load_tail) s->load_tail->next = e;
        else s->load_head = e;
        s->load_tail = e;
        s->deferred++;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->lock);
    return e != NULL;
}

void spill_undefer(cask_runtime *rt, cask_task *t)
{
    struct spill_state *s = rt->spill;
    if (!__atomic_load_n(&s->loaded, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&s->lock);
    spill_load **p = &s->loaded;
    while (*p && (*p)->task != t)
        p = &(*p)->next;
    spill_load *e = *p;
    if (e)
        __atomic_store_n(p, e->next, __ATOMIC_RELAXED);
    if (e && s->load_head)
        pthread_cond_signal(&s->work);   /* the next read-back may go */
    pthread_mutex_unlock(&s->lock);
    if (!e)
        return;
    for (int i = 0; i < e->npinned; i++) {
        cask_data *d = e->pinned[i];
        pthread_mutex_lock(&d->lock);
        d->rep[0].busy--;
        pthread_mutex_unlock(&d->lock);
    }
    free(e);
}

cask_status cask_runtime_host_mem(cask_runtime *rt, cask_host_mem_stats *out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    spill_stats st;
    spill_get_stats(rt, &st);
    memset(out, 0, sizeof *out);
    out->limit = st.limit;
    out->used = st.used;
    out->peak = st.peak;
    out->spill_writes = st.writes;
    out->spill_reads = st.reads;
    out->spill_drops = st.drops;
    out->tasks_deferred = st.deferred;
    return CASK_OK;
}
