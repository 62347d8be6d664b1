/* distributed/dist_data.c: the data declarations that name handles across ranks: the
 * order of cask_dist_set_owner gives each handle its gid, found again from the handle
 * through a small hash index; placeholders for data owned elsewhere. */
#include "distributed/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/log.h"

/* ---- handle -> gid index (open addressing, pointers hashed) ---- */

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static int index_put(cask_dist *dist, cask_data *d, uint32_t gid)
{
    if ((dist->ndata + 1) * 2 > dist->index_cap) {
        size_t cap = dist->index_cap ? dist->index_cap * 2 : 64;
        cask_data **keys = calloc(cap, sizeof *keys);
        uint32_t *vals = calloc(cap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return -1;
        }
        for (size_t i = 0; i < dist->index_cap; i++) {
            if (!dist->index_keys[i])
                continue;
            size_t j = hash_ptr(dist->index_keys[i], cap);
            while (keys[j])
                j = (j + 1) & (cap - 1);
            keys[j] = dist->index_keys[i];
            vals[j] = dist->index_vals[i];
        }
        free(dist->index_keys);
        free(dist->index_vals);
        dist->index_keys = keys;
        dist->index_vals = vals;
        dist->index_cap = cap;
    }
    size_t j = hash_ptr(d, dist->index_cap);
    while (dist->index_keys[j])
        j = (j + 1) & (dist->index_cap - 1);
    dist->index_keys[j] = d;
    dist->index_vals[j] = gid;
    return 0;
}

cask_status dist_gid(const cask_dist *dist, const cask_data *d, uint32_t *gid)
{
    if (!dist->index_cap || !d)
        return CASK_ERR_NOT_FOUND;
    size_t j = hash_ptr(d, dist->index_cap);
    while (dist->index_keys[j]) {
        if (dist->index_keys[j] == d) {
            *gid = dist->index_vals[j];
            return CASK_OK;
        }
        j = (j + 1) & (dist->index_cap - 1);
    }
    return CASK_ERR_NOT_FOUND;
}

/* ---- data ---- */

cask_status cask_dist_set_owner(cask_dist *dist, cask_data *d, int owner)
{
    if (!dist || !d)
        return CASK_ERR_INVALID;
    if (owner < 0 || owner >= dist->size)
        return log_error(dist->rt, CASK_ERR_INVALID, "cask_dist_set_owner: owner %d of %d ranks",
                         owner, dist->size);
    uint32_t gid;
    if (dist_gid(dist, d, &gid) == CASK_OK)
        return log_error(dist->rt, CASK_ERR_INVALID, "cask_dist_set_owner: data already "
                         "declared (as #%u)", gid);
    if (dist->ndata == dist->cap) {
        size_t cap = dist->cap ? dist->cap * 2 : 64;
        dist_datum *n = realloc(dist->data, cap * sizeof *n);
        if (!n)
            return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_set_owner");
        dist->data = n;
        dist->cap = cap;
    }
    if (index_put(dist, d, (uint32_t)dist->ndata))
        return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_set_owner");
    size_t bytes = 0;
    cask_data_size(d, &bytes);
    dist->data[dist->ndata++] = (dist_datum){ .d = d, .owner = owner, .bytes = bytes,
                                              .home = d, .orig_owner = owner };
    return CASK_OK;
}

cask_status cask_dist_owner(const cask_dist *dist, const cask_data *d, int *owner)
{
    uint32_t gid;
    if (!dist || !owner)
        return CASK_ERR_INVALID;
    if (dist_gid(dist, d, &gid))
        return CASK_ERR_NOT_FOUND;
    *owner = dist->data[gid].owner;
    return CASK_OK;
}

cask_status cask_dist_data_create(cask_dist *dist, size_t bytes, int owner, void *host_ptr,
                                  cask_data **out)
{
    if (!dist || !out || !bytes || owner < 0 || owner >= dist->size)
        return CASK_ERR_INVALID;
    cask_data *d = NULL;
    void *reserved = NULL;
    cask_status st;
    if (owner == dist->rank) {
        st = host_ptr ? cask_data_register(dist->rt, host_ptr, bytes, &d)
                      : cask_data_create(dist->rt, bytes, &d);
    } else {
        /* A name only: address space that no access may touch, no memory behind it. */
        reserved = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
        if (reserved == MAP_FAILED)
            return log_error(dist->rt, CASK_ERR_NOMEM, "cask_dist_data_create: reserving %zu "
                             "bytes of address space", bytes);
        st = cask_data_register(dist->rt, reserved, bytes, &d);
    }
    if (st) {
        if (reserved)
            munmap(reserved, bytes);
        return st;
    }
    st = cask_dist_set_owner(dist, d, owner);
    if (st) {
        cask_data_destroy(d);
        if (reserved)
            munmap(reserved, bytes);
        return st;
    }
    dist->data[dist->ndata - 1].made_here = 1;     /* finalize destroys it */
    dist->data[dist->ndata - 1].reserved = reserved;
    *out = d;
    return CASK_OK;
}
