/* data.h (internal): data handles, their replicas per memory node, and the build-time
 * state used to derive dependencies from access modes. */
#ifndef CASK_RUNTIME_DATA_H
#define CASK_RUNTIME_DATA_H

#include <pthread.h>
#include <stdatomic.h>
#include "runtime/runtime.h"

/* One copy of a handle's bytes in one memory node (0 = host, 1+g = GPU g). The
 * coherence protocol is MSI-like: a write leaves exactly one valid replica; reads
 * add valid replicas. */
typedef struct replica {
    void *ptr;                   /* memory on the node; NULL if none allocated */
    uint8_t valid;
    uint8_t owned;               /* allocated by the runtime (freed by it) */
    uint8_t event_pending;       /* `event` must complete before ptr holds the data */
    uint8_t pinned;              /* owned host memory that is page-locked (host_cache.c) */
    void *event;                 /* device event (cudaEvent_t), created lazily */
    int event_dev;               /* GPU the event was created on */
    int busy;                    /* tasks using it now: not evictable */
    uint64_t last_use;           /* LRU clock of the node's memory manager */
    struct replica *lru_prev, *lru_next;   /* node's list of allocated replicas */
    struct cask_data *data;
    int node;
} replica;

typedef struct reader_list {
    struct cask_task *task;
    struct reader_list *next;
} reader_list;

struct cask_data {
    cask_runtime *rt;
    size_t bytes;
    char name[64];
    void *user_ptr;              /* registered host memory, or NULL */
    int writeback;
    int acquired;                /* 0, or the access mode of a user acquire */
    _Atomic int running;         /* running graphs that use it */
    pthread_mutex_t lock;        /* replica states */
    replica rep[CASK_MAX_NODES];
    uint8_t on_disk;             /* the spill file holds the latest content (spill.h) */
    uint8_t has_file;            /* a spill file exists (removed when d is freed) */
    uint32_t id;
    /* dependency derivation while a graph is built (owned by that graph's builder) */
    uint32_t stf_graph;          /* id of the graph being built that set the fields below */
    struct cask_task *last_writer;
    reader_list *readers;
    uint32_t listed_in;          /* id of the graph whose datas list holds it */
    struct cask_data *prev, *next;  /* runtime's list */
};

/* Destroys d as cask_data_destroy does, but without writing its latest bytes back to
 * the host memory it was registered over: for a handle whose content is dead when it
 * goes (the distributed plan's copies, dist_plan_free, whose landing buffers are freed
 * next). Errors: CASK_ERR_BUSY while a running graph uses d (d kept). */
cask_status data_destroy_discard(cask_data *d);

#endif
