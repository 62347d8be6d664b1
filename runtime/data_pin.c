/* runtime/data_pin.c: pinned GPU replicas of a handle (see data_pin.h). A pin is a
 * permanent `busy` count on the replica: the memory manager never evicts a busy one. */
#include "runtime/data_pin.h"

#include "runtime/data.h"
#include "runtime/memory.h"

cask_status data_pin_gpu(cask_data *d, int gpu, void **ptr)
{
    if (!d || !ptr || gpu < 0 || gpu >= d->rt->ngpu)
        return CASK_ERR_INVALID;
    cask_runtime *rt = d->rt;
    int node = 1 + gpu;
    cask_status st = CASK_OK;
    pthread_mutex_lock(&d->lock);
    replica *r = &d->rep[node];
    if (!r->ptr) {
        st = mem_alloc(rt, node, d->bytes, NULL, &r->ptr);
        if (st == CASK_OK)
            r->owned = 1;
        else
            r->ptr = NULL;
    }
    if (st == CASK_OK) {
        r->busy++;
        *ptr = r->ptr;
    }
    pthread_mutex_unlock(&d->lock);
    if (st == CASK_OK)
        mem_touch(rt, r);
    return st;
}

void data_unpin_gpu(cask_data *d, int gpu)
{
    if (!d || gpu < 0 || gpu >= d->rt->ngpu)
        return;
    pthread_mutex_lock(&d->lock);
    if (d->rep[1 + gpu].busy > 0)
        d->rep[1 + gpu].busy--;
    pthread_mutex_unlock(&d->lock);
}
