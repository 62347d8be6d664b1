/* transport/bootstrap_file.c: the bootstrap through files in a folder every rank sees
 * (CASK_BOOT_DIR, with CASK_RANK and CASK_SIZE): each blob is written aside and renamed,
 * so that it appears whole, and read once every rank's is there. A wait sleeps on an
 * inotify watch of the folder, so that a rank's file renamed into it wakes it at once,
 * and polls too (a folder shared between hosts over the network tells inotify nothing
 * of the others' files): every 50 us at first, doubling up to 10 ms; the watch is
 * asked between polls. See bootstrap.h. */
#include "transport/bootstrap_impl.h"
#include "runtime/deadline.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

cask_status boot_file_start(xport_boot *b, const char *dir)
{
    int rank = boot_env_int("CASK_RANK", -1), size = boot_env_int("CASK_SIZE", -1);
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
    b->local_rank = boot_env_int("CASK_LOCAL_RANK", rank);
    b->local_size = boot_env_int("CASK_LOCAL_SIZE", size);
    if (b->local_size < 1 || b->local_rank >= b->local_size) {
        b->local_rank = rank;
        b->local_size = size;
    }
    snprintf(b->dir, sizeof b->dir, "%s", dir);
    snprintf(b->job, sizeof b->job, "file:%.240s", dir);
    b->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (b->notify_fd >= 0 && inotify_add_watch(b->notify_fd, dir, IN_MOVED_TO | IN_CREATE) < 0) {
        close(b->notify_fd);   /* polling alone, as before */
        b->notify_fd = -1;
    }
    return CASK_OK;
}

cask_status boot_file_put(xport_boot *b, const char *name, const void *mine, size_t len)
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
cask_status boot_file_wait(xport_boot *b, const char *name, int r)
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
        if (b->notify_fd >= 0) {
            /* a file renamed in since the last look ends the sleep; the events read
             * are only wake-ups (the next look checks the file itself) */
            struct pollfd pfd = { .fd = b->notify_fd, .events = POLLIN };
            if (poll(&pfd, 1, (int)(us / 1000) + 1) > 0) {
                char ev[4096];
                while (read(b->notify_fd, ev, sizeof ev) > 0)
                    ;
            }
        } else {
            struct timespec ts = { 0, us * 1000L };
            nanosleep(&ts, NULL);
        }
        if (us < 10000)
            us *= 2;
    }
    return CASK_OK;
}

cask_status boot_file_get(xport_boot *b, const char *name, int r, void **out, size_t *len)
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
