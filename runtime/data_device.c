/* runtime/data_device.c: data handles over GPU memory the user owns (cask/data.h,
 * cask_data_register_device): a handle whose replica on one GPU is the user's memory,
 * valid from the start. The replica carries a permanent `busy` count, so the memory
 * manager never evicts it (eviction would free it), and `owned` stays 0, so that
 * coh_free_all gives nothing back to the GPU's pool. */
#include "runtime/data.h"
#include "runtime/log.h"
#include "runtime/memory.h"

cask_status cask_data_register_device(cask_runtime *rt, void *dev_ptr, size_t bytes, int gpu,
                                      cask_data **out)
{
    if (!rt || !out)
        return CASK_ERR_INVALID;
    if (!dev_ptr || !bytes)
        return log_error(rt, CASK_ERR_INVALID, "cask_data_register_device: %s",
                         dev_ptr ? "0 bytes" : "NULL pointer");
    if (gpu < 0 || gpu >= rt->ngpu)
        return log_error(rt, CASK_ERR_INVALID,
                         "cask_data_register_device: no GPU %d (the runtime has %d)", gpu,
                         rt->ngpu);
    cask_data *d;
    cask_status st = cask_data_create(rt, bytes, &d);
    if (st)
        return st;
    replica *r = &d->rep[1 + gpu];
    pthread_mutex_lock(&d->lock);
    r->ptr = dev_ptr;
    r->owned = 0;
    r->busy = 1;                 /* pinned for the handle's life: never evicted */
    __atomic_store_n(&r->valid, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&d->lock);
    *out = d;
    return CASK_OK;
}
