/* coherence.c: see coherence.h. Every state change happens under the handle's lock.
 * A replica with event_pending is being filled by a copy that has been enqueued:
 * readers on a GPU make their stream wait for the event, readers on the host block on
 * it, and anything that overwrites the replica waits for it first. */
#include <stdio.h>
#include <string.h>
#include "runtime/coherence.h"
#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/spill.h"
#include "runtime/log.h"

#define SET_VALID(r, v) __atomic_store_n(&(r)->valid, (uint8_t)(v), __ATOMIC_RELAXED)

/* Host memory of d: the user's, or allocated on first need from the runtime's cache.
 * pinned: the host copy of a chunk a GPU wrote (a write-back or an eviction), which
 * GPUs read again; chunks made on the host stay pageable (pinning costs more than it
 * saves for memory no GPU copies). */
static cask_status host_ensure(cask_runtime *rt, cask_data *d, int pinned)
{
    replica *h = &d->rep[0];
    if (h->ptr)
        return CASK_OK;
    if (rt->spill)   /* counted against the host limit, spillable */
        return spill_host_alloc(rt, d, 1);
    cask_status st = hcache_alloc(&rt->hcache, d->bytes, pinned, &h->ptr);
    if (st)
        return st;
    h->owned = 1;
    h->pinned = (uint8_t)(pinned && rt->dev);
    return CASK_OK;
}

/* Waits (host side) for the copy that fills r, if any. */
static cask_status settle(cask_runtime *rt, replica *r)
{
    if (!r->event_pending)
        return CASK_OK;
    cask_status st = device_event_sync(rt->dev, r->event);
    if (st == CASK_OK)
        r->event_pending = 0;
    return st;
}

/* Records r's event on stream of gpu (re-creating it on that GPU if needed). */
static cask_status mark_pending(cask_runtime *rt, replica *r, int gpu, void *stream)
{
    if (rt->sim)
        return CASK_OK;
    if (r->event && r->event_dev != gpu) {
        device_event_destroy(rt->dev, r->event);
        r->event = NULL;
    }
    if (!r->event) {
        cask_status st = device_event_create(rt->dev, gpu, &r->event);
        if (st)
            return st;
        r->event_dev = gpu;
    }
    cask_status st = device_event_record(rt->dev, r->event, stream);
    if (st == CASK_OK)
        r->event_pending = 1;
    return st;
}

/* The valid replica to copy from for node: same node, else a GPU (peer, over NVLink)
 * for a GPU destination, else the host; for the host, any GPU. -1 if none valid. */
static int pick_source(cask_runtime *rt, cask_data *d, int node)
{
    if (d->rep[node].valid)
        return node;
    if (node > 0) {
        for (int k = 1; k <= rt->ngpu; k++) {
            int g = 1 + (node - 1 + k) % rt->ngpu;   /* neighbours first */
            if (g != node && d->rep[g].valid)
                return g;
        }
        return d->rep[0].valid ? 0 : -1;
    }
    for (int g = 1; g <= rt->ngpu; g++)
        if (d->rep[g].valid)
            return g;
    return -1;
}

static void count_copy(worker_counters *ctr, int src, int dst, size_t n)
{
    if (!ctr)
        return;
    if (src == 0)
        atomic_fetch_add_explicit(&ctr->bytes_h2d, n, memory_order_relaxed);
    else if (dst == 0)
        atomic_fetch_add_explicit(&ctr->bytes_d2h, n, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&ctr->bytes_peer, n, memory_order_relaxed);
}

/* Makes d usable on node for mode (d locked). gpu_stream: the compute stream of the GPU
 * task (asynchronous mode), or NULL (synchronous, host side). */
static cask_status make_valid(cask_runtime *rt, cask_data *d, int node, cask_access_mode mode,
                              void *gpu_stream, worker_counters *ctr, coh_tracer *tr)
{
    replica *r = &d->rep[node];
    cask_status st;
    if ((mode & CASK_READ) && !r->valid && d->on_disk && pick_source(rt, d, node) < 0) {
        /* the only copy is in the spill file: back to host memory first */
        if ((st = host_ensure(rt, d, 0)) || (st = spill_read(rt, d)))
            return st;
        SET_VALID(&d->rep[0], 1);
    }
    if ((mode & CASK_WRITE) && d->on_disk)   /* the file is stale from now on */
        __atomic_store_n(&d->on_disk, 0, __ATOMIC_RELAXED);   /* (read unlocked as a hint) */
    if (!r->ptr) {
        if (node == 0) {
            st = host_ensure(rt, d, 0);
        } else {
            st = mem_alloc(rt, node, d->bytes, ctr, &r->ptr);
            if (st == CASK_OK)
                r->owned = 1;
        }
        if (st)
            return st;
    }
    if ((mode & CASK_READ) && !r->valid) {
        int src = pick_source(rt, d, node);
        if (src >= 0) {
            replica *s = &d->rep[src];
            if (gpu_stream) {
                int gpu = node - 1;
                int which = src == 0 ? DEV_STREAM_H2D : DEV_STREAM_PEER;
                void *cs = device_stream(rt->dev, gpu, which);
                if (s->event_pending && (st = device_stream_wait(rt->dev, cs, s->event)))
                    return st;
                if (r->event_pending && (st = device_stream_wait(rt->dev, cs, r->event)))
                    return st;
                if (tr)
                    tr->copy(tr, 0, cs, which, d->id, d->bytes, src, node);
                if ((st = device_copy(rt->dev, r->ptr, node, s->ptr, src, d->bytes, cs)))
                    return st;
                if (tr)
                    tr->copy(tr, 1, cs, which, d->id, d->bytes, src, node);
                if ((st = mark_pending(rt, r, gpu, cs)))
                    return st;
            } else {
                if ((st = settle(rt, s)) || (st = settle(rt, r)))
                    return st;
                if ((st = device_copy(rt->dev, r->ptr, node, s->ptr, src, d->bytes, NULL)))
                    return st;
            }
            count_copy(ctr, src, node, d->bytes);
        }
        SET_VALID(r, 1);
    }
    if (mode & CASK_WRITE) {
        /* copies still filling other replicas may read ours: order the write after them */
        for (int k = 0; k <= rt->ngpu; k++) {
            replica *o = &d->rep[k];
            if (k == node)
                continue;
            if (o->event_pending) {
                if (gpu_stream)
                    st = device_stream_wait(rt->dev, gpu_stream, o->event);
                else
                    st = settle(rt, o);
                if (st)
                    return st;
            }
            SET_VALID(o, 0);
        }
        if (!gpu_stream && (st = settle(rt, r)))
            return st;
        SET_VALID(r, 1);
    }
    if (gpu_stream && r->event_pending && (st = device_stream_wait(rt->dev, gpu_stream, r->event)))
        return st;
    if (!gpu_stream && (st = settle(rt, r)))
        return st;
    return CASK_OK;
}

static void describe_fail(cask_task *t, cask_data *d, const char *what, char *msg, size_t len)
{
    snprintf(msg, len, "%s data %s (%zu bytes) for task %s", what, d->name, d->bytes, task_name(t));
}

cask_status coh_prepare_host(cask_runtime *rt, cask_task *t, worker_counters *ctr, void **bufs,
                             size_t *sizes, char *msg, size_t msglen)
{
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = t->access[i].data;
        sizes[i] = d->bytes;
        if (rt->ngpu == 0 && !rt->spill) {   /* host is the only node: always valid */
            bufs[i] = d->rep[0].ptr;
            continue;
        }
        pthread_mutex_lock(&d->lock);
        cask_status st = make_valid(rt, d, 0, t->access[i].mode, NULL, ctr, NULL);
        if (st == CASK_OK) {
            d->rep[0].busy++;
            bufs[i] = d->rep[0].ptr;
            if (rt->spill)
                spill_touch(rt, d);
        }
        pthread_mutex_unlock(&d->lock);
        if (st == CASK_OK && rt->spill && spill_failed(rt, NULL, 0)) {
            /* a chunk could not be written out (disk full): the graph fails */
            i++;
            for (int j = 0; j < i; j++) {
                cask_data *e = t->access[j].data;
                pthread_mutex_lock(&e->lock);
                e->rep[0].busy--;
                pthread_mutex_unlock(&e->lock);
            }
            st = spill_failed(rt, msg, msglen);
            return st;
        }
        if (st) {
            for (int j = 0; j < i; j++) {
                cask_data *e = t->access[j].data;
                pthread_mutex_lock(&e->lock);
                e->rep[0].busy--;
                pthread_mutex_unlock(&e->lock);
            }
            describe_fail(t, d, "moving to host", msg, msglen);
            return st;
        }
    }
    return CASK_OK;
}

void coh_finish_host(cask_runtime *rt, cask_task *t)
{
    if (rt->ngpu == 0 && !rt->spill)
        return;
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = t->access[i].data;
        pthread_mutex_lock(&d->lock);
        d->rep[0].busy--;
        pthread_mutex_unlock(&d->lock);
    }
}

cask_status coh_prepare_gpu(cask_runtime *rt, cask_task *t, int gpu, void *compute_stream,
                            worker_counters *ctr, coh_tracer *tr, void **bufs, size_t *sizes,
                            char *msg, size_t msglen)
{
    int node = 1 + gpu;
    /* a simulated GPU has no streams: copy synchronously */
    void *stream = rt->sim ? NULL : compute_stream;
    if (rt->spill && spill_failed(rt, msg, msglen))
        return CASK_ERR_IO;   /* a chunk could not be written out (disk full) */
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = t->access[i].data;
        sizes[i] = d->bytes;
        pthread_mutex_lock(&d->lock);
        d->rep[node].busy++;          /* pinned while we may evict for the others */
        cask_status st = make_valid(rt, d, node, t->access[i].mode, stream, ctr, rt->sim ? NULL : tr);
        if (st == CASK_OK)
            bufs[i] = d->rep[node].ptr;
        else
            d->rep[node].busy--;
        pthread_mutex_unlock(&d->lock);
        if (st == CASK_OK) {
            mem_touch(rt, &d->rep[node]);
            continue;
        }
        for (int j = 0; j < i; j++) {
            cask_data *e = t->access[j].data;
            pthread_mutex_lock(&e->lock);
            e->rep[node].busy--;
            pthread_mutex_unlock(&e->lock);
        }
        describe_fail(t, d, "moving to GPU", msg, msglen);
        return st;
    }
    return CASK_OK;
}

/* Starts the write-back of d (locked), valid on gpu only, to its host memory: 0, or
 * the status of what failed. */
static cask_status start_writeback(cask_runtime *rt, cask_data *d, int gpu, worker_counters *ctr,
                                   coh_tracer *tr)
{
    int node = 1 + gpu;
    replica *h = &d->rep[0];
    void *s = device_stream(rt->dev, gpu, DEV_STREAM_D2H);
    cask_status st = host_ensure(rt, d, 1);
    if (st == CASK_OK && h->event_pending && !rt->sim)
        st = device_stream_wait(rt->dev, s, h->event);
    if (tr && st == CASK_OK && !rt->sim)
        tr->copy(tr, 0, s, DEV_STREAM_D2H, d->id, d->bytes, node, 0);
    if (st == CASK_OK)
        st = device_copy(rt->dev, h->ptr, 0, d->rep[node].ptr, node, d->bytes, rt->sim ? NULL : s);
    if (tr && st == CASK_OK && !rt->sim)
        tr->copy(tr, 1, s, DEV_STREAM_D2H, d->id, d->bytes, node, 0);
    if (st == CASK_OK)
        st = mark_pending(rt, h, gpu, s);
    if (st == CASK_OK) {
        SET_VALID(h, 1);
        count_copy(ctr, node, 0, d->bytes);
    }
    return st;
}

void coh_finish_gpu(cask_runtime *rt, cask_task *t, int gpu, worker_counters *ctr,
                    coh_tracer *tr, cask_data **wb, int *nwb)
{
    int node = 1 + gpu;
    *nwb = 0;
    for (int i = 0; i < t->naccess; i++) {
        cask_data *d = t->access[i].data;
        pthread_mutex_lock(&d->lock);
        d->rep[node].busy--;
        if ((t->access[i].mode & CASK_WRITE) && d->writeback && d->rep[node].valid &&
            !d->rep[0].valid) {
            cask_status st = start_writeback(rt, d, gpu, ctr, tr);
            if (st == CASK_OK)
                wb[(*nwb)++] = d;
            else
                graph_fail(t->graph, st, "write-back of data %s after task %s failed", d->name, task_name(t));
        }
        pthread_mutex_unlock(&d->lock);
    }
}

cask_status coh_replay_pin(cask_runtime *rt, cask_data *d, int gpu, cask_access_mode mode,
                           void *stream, worker_counters *ctr, void **ptr)
{
    int node = 1 + gpu;
    pthread_mutex_lock(&d->lock);
    d->rep[node].busy++;
    cask_status st = make_valid(rt, d, node, mode, stream, ctr, NULL);
    if (st == CASK_OK)
        *ptr = d->rep[node].ptr;
    else
        d->rep[node].busy--;
    pthread_mutex_unlock(&d->lock);
    if (st == CASK_OK)
        mem_touch(rt, &d->rep[node]);
    return st;
}

int coh_replay_unpin(cask_runtime *rt, cask_data *d, int gpu, int written, worker_counters *ctr,
                     cask_status *st)
{
    int node = 1 + gpu, wb = 0;
    *st = CASK_OK;
    pthread_mutex_lock(&d->lock);
    d->rep[node].busy--;
    if (written && d->writeback && d->rep[node].valid && !d->rep[0].valid) {
        *st = start_writeback(rt, d, gpu, ctr, NULL);
        wb = *st == CASK_OK;
    }
    pthread_mutex_unlock(&d->lock);
    return wb;
}

int coh_writeback_done(cask_runtime *rt, cask_data *d)
{
    pthread_mutex_lock(&d->lock);
    int done = 1;
    replica *h = &d->rep[0];
    if (h->event_pending) {
        int r = device_event_done(rt->dev, h->event);
        if (r == 1 || r < 0)
            h->event_pending = 0;
        done = r != 0;
    }
    pthread_mutex_unlock(&d->lock);
    return done;
}

cask_status coh_acquire_host(cask_data *d, cask_access_mode mode, void **ptr)
{
    cask_runtime *rt = d->rt;
    if (rt->ngpu == 0 && !rt->spill) {
        *ptr = d->rep[0].ptr;
        return CASK_OK;
    }
    pthread_mutex_lock(&d->lock);
    cask_status st = make_valid(rt, d, 0, mode, NULL, NULL, NULL);
    *ptr = d->rep[0].ptr;
    if (st == CASK_OK && rt->spill && d->acquired)
        d->rep[0].busy++;     /* not spilled while the user holds the pointer */
    pthread_mutex_unlock(&d->lock);
    return st;
}

void coh_release_host(cask_data *d)
{
    cask_runtime *rt = d->rt;
    if (!rt->spill)
        return;
    pthread_mutex_lock(&d->lock);
    if (d->rep[0].busy > 0)
        d->rep[0].busy--;
    pthread_mutex_unlock(&d->lock);
}

cask_status coh_flush_user(cask_data *d)
{
    if (!d->user_ptr || d->rt->ngpu == 0)
        return CASK_OK;
    void *p;
    return coh_acquire_host(d, CASK_READ, &p);
}

void coh_free_all(cask_data *d)
{
    cask_runtime *rt = d->rt;
    for (int k = 0; k <= rt->ngpu && rt->ngpu > 0; k++) {
        replica *r = &d->rep[k];
        settle(rt, r);
        if (r->event)
            device_event_destroy(rt->dev, r->event);
        r->event = NULL;
        if (k > 0 && r->ptr) {
            mem_forget(rt, r);
            if (r->owned)   /* not the user's memory (cask_data_register_device) */
                mem_release(rt, k, r->ptr, d->bytes);
        }
        if (k > 0)
            r->ptr = NULL;
    }
    replica *h = &d->rep[0];
    if (rt->spill) {
        pthread_mutex_lock(&d->lock);   /* an I/O thread may be writing it out */
        if (h->owned && h->ptr)
            spill_host_free(rt, d);
        spill_forget(rt, d);
        pthread_mutex_unlock(&d->lock);
    } else if (h->owned && h->ptr) {
        hcache_free(&rt->hcache, h->ptr, d->bytes, h->pinned);
    }
    h->ptr = NULL;
}

int coh_spill_host_locked(cask_runtime *rt, cask_data *d, int *wrote)
{
    replica *h = &d->rep[0];
    *wrote = 0;
    if (h->busy || !h->ptr || !h->owned)
        return 0;
    /* copies from or to it that are still in flight end first */
    for (int k = 0; k <= rt->ngpu; k++)
        if (settle(rt, &d->rep[k]) != CASK_OK)
            return 0;
    int elsewhere = d->on_disk;
    for (int g = 1; g <= rt->ngpu; g++)
        elsewhere |= d->rep[g].valid;
    if (h->valid && !elsewhere) {          /* the only copy: to the file first */
        if (spill_write(rt, d) != CASK_OK)
            return -(int)CASK_ERR_IO;
        __atomic_store_n(&d->on_disk, 1, __ATOMIC_RELAXED);
        *wrote = 1;
    }
    cask_host_free(rt, h->ptr);
    h->ptr = NULL;
    SET_VALID(h, 0);
    return 1;
}

cask_status coh_evict_locked(cask_runtime *rt, cask_data *d, int node, int *spilled)
{
    replica *r = &d->rep[node];
    cask_status st = settle(rt, r);
    if (st)
        return st;
    *spilled = 0;
    if (!r->valid)
        return CASK_OK;
    for (int k = 0; k <= rt->ngpu; k++)
        if (k != node && d->rep[k].valid)
            return CASK_OK;           /* clean: another copy stays */
    /* dirty: the only valid copy goes to host first */
    if ((st = host_ensure(rt, d, 1)) || (st = settle(rt, &d->rep[0])))
        return st;
    st = device_copy(rt->dev, d->rep[0].ptr, 0, r->ptr, node, d->bytes, NULL);
    if (st)
        return st;
    SET_VALID(&d->rep[0], 1);
    *spilled = 1;
    return CASK_OK;
}

cask_status coh_load_host(cask_runtime *rt, cask_data *d)
{
    replica *h = &d->rep[0];
    cask_status st = CASK_OK;
    pthread_mutex_lock(&d->lock);
    if (d->on_disk && !h->valid && pick_source(rt, d, 0) < 0) {
        if (!h->ptr)
            st = spill_host_alloc(rt, d, 0);
        if (st == CASK_OK && (st = spill_read(rt, d)) == CASK_OK)
            SET_VALID(h, 1);
    }
    if (st == CASK_OK && h->ptr && h->valid) {
        h->busy++;
        spill_touch(rt, d);
    } else if (st == CASK_OK) {
        st = CASK_ERR_STATE;   /* nothing to pin: the task reads it itself */
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}
