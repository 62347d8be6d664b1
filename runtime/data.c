/* data.c: data handles: registration, user acquire/release, destruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/data.h"
#include "runtime/coherence.h"
#include "runtime/log.h"

static _Atomic uint32_t next_data_id = 1;

static cask_status data_new(cask_runtime *rt, size_t bytes, cask_data **out)
{
    cask_data *d = calloc(1, sizeof *d);
    if (!d)
        return log_error(rt, CASK_ERR_NOMEM, "data handle");
    d->rt = rt;
    d->bytes = bytes;
    d->id = atomic_fetch_add(&next_data_id, 1);
    snprintf(d->name, sizeof d->name, "data%u", d->id);
    pthread_mutex_init(&d->lock, NULL);
    for (int k = 0; k < CASK_MAX_NODES; k++) {
        d->rep[k].data = d;
        d->rep[k].node = k;
    }
    *out = d;
    return CASK_OK;
}

static void data_link(cask_runtime *rt, cask_data *d)
{
    pthread_mutex_lock(&rt->lock);
    d->next = rt->data_list;
    if (rt->data_list)
        rt->data_list->prev = d;
    rt->data_list = d;
    pthread_mutex_unlock(&rt->lock);
}

cask_status cask_data_register(cask_runtime *rt, void *host_ptr, size_t bytes, cask_data **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    if (!host_ptr || !bytes)
        return log_error(rt, CASK_ERR_INVALID, "cask_data_register: %s",
                         host_ptr ? "0 bytes" : "NULL pointer");
    cask_data *d;
    cask_status st = data_new(rt, bytes, &d);
    if (st)
        return st;
    d->user_ptr = host_ptr;
    d->rep[0].ptr = host_ptr;
    d->rep[0].valid = 1;
    data_link(rt, d);
    *out = d;
    return CASK_OK;
}

cask_status cask_data_create(cask_runtime *rt, size_t bytes, cask_data **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    if (!bytes)
        return log_error(rt, CASK_ERR_INVALID, "cask_data_create: 0 bytes");
    cask_data *d;
    cask_status st = data_new(rt, bytes, &d);
    if (st)
        return st;
    if (rt->ngpu == 0 && !rt->spill) {   /* only the host can hold it: allocate now */
        st = hcache_alloc(&rt->hcache, bytes, 0, &d->rep[0].ptr);
        if (st) {
            pthread_mutex_destroy(&d->lock);
            free(d);
            return st;
        }
        d->rep[0].owned = 1;
        d->rep[0].valid = 1;
    }
    data_link(rt, d);
    *out = d;
    return CASK_OK;
}

cask_status cask_data_set_name(cask_data *d, const char *name)
{
    if (!d || !name)
        return CASK_ERR_INVALID;
    snprintf(d->name, sizeof d->name, "%s", name);
    return CASK_OK;
}

cask_status cask_data_size(const cask_data *d, size_t *bytes)
{
    if (!d || !bytes)
        return CASK_ERR_INVALID;
    *bytes = d->bytes;
    return CASK_OK;
}

cask_status cask_data_set_writeback(cask_data *d, int on)
{
    if (!d)
        return CASK_ERR_INVALID;
    if (atomic_load(&d->running))
        return log_error(d->rt, CASK_ERR_BUSY, "cask_data_set_writeback(%s): used by a running graph", d->name);
    d->writeback = on != 0;
    return CASK_OK;
}

cask_status cask_data_acquire(cask_data *d, cask_access_mode mode, void **host_ptr)
{
    if (!d || !host_ptr || mode < CASK_READ || mode > CASK_RW)
        return CASK_ERR_INVALID;
    cask_runtime *rt = d->rt;
    pthread_mutex_lock(&rt->lock);
    cask_status st = CASK_OK;
    if (atomic_load(&d->running))
        st = log_error(rt, CASK_ERR_BUSY, "cask_data_acquire(%s): used by a running graph", d->name);
    else if (d->acquired)
        st = log_error(rt, CASK_ERR_STATE, "cask_data_acquire(%s): already acquired", d->name);
    else
        d->acquired = mode;
    pthread_mutex_unlock(&rt->lock);
    if (st)
        return st;
    st = coh_acquire_host(d, mode, host_ptr);
    if (st) {
        pthread_mutex_lock(&rt->lock);
        d->acquired = 0;
        pthread_mutex_unlock(&rt->lock);
        return log_error(rt, st, "cask_data_acquire(%s): could not bring it to host", d->name);
    }
    return CASK_OK;
}

cask_status cask_data_release(cask_data *d)
{
    if (!d)
        return CASK_ERR_INVALID;
    cask_runtime *rt = d->rt;
    pthread_mutex_lock(&rt->lock);
    cask_status st = CASK_OK;
    if (!d->acquired)
        st = log_error(rt, CASK_ERR_STATE, "cask_data_release(%s): not acquired", d->name);
    int was = d->acquired;
    d->acquired = 0;
    pthread_mutex_unlock(&rt->lock);
    if (was)
        coh_release_host(d);
    return st;
}

static void data_free(cask_data *d)
{
    coh_free_all(d);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* cask_data_destroy, and (flush 0) data_destroy_discard. */
static cask_status destroy(cask_data *d, int flush, const char *call)
{
    if (!d)
        return CASK_OK;
    cask_runtime *rt = d->rt;
    if (atomic_load(&d->running))
        return log_error(rt, CASK_ERR_BUSY, "%s(%s): used by a running graph", call, d->name);
    cask_status st = flush ? coh_flush_user(d) : CASK_OK;
    if (st)
        return log_error(rt, st, "%s(%s): could not write back to host; handle kept", call,
                         d->name);
    pthread_mutex_lock(&rt->lock);
    if (d->prev) d->prev->next = d->next;
    else rt->data_list = d->next;
    if (d->next) d->next->prev = d->prev;
    pthread_mutex_unlock(&rt->lock);
    data_free(d);
    return CASK_OK;
}

cask_status cask_data_destroy(cask_data *d)
{
    return destroy(d, 1, "cask_data_destroy");
}

cask_status data_destroy_discard(cask_data *d)
{
    return destroy(d, 0, "data_destroy_discard");
}

/* At shutdown: handles the user did not destroy are flushed to their host memory. */
void data_destroy_all(cask_runtime *rt)
{
    cask_data *d = rt->data_list;
    rt->data_list = NULL;
    while (d) {
        cask_data *n = d->next;
        if (coh_flush_user(d) != CASK_OK)
            log_msg(rt, CASK_LOG_ERROR, "shutdown: data %s could not be written back to host", d->name);
        data_free(d);
        d = n;
    }
}
