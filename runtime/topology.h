/* topology.h: the machine's cores as hwloc sees them (or, where hwloc cannot see them,
 * the CPUs this process may run on), pinning and nearness. */
#ifndef CASK_RUNTIME_TOPOLOGY_H
#define CASK_RUNTIME_TOPOLOGY_H

#include <hwloc.h>
#include <pthread.h>
#include "cask/status.h"

enum { TOPOLOGY_MAX_FLAT = 1024 };

typedef struct topology {
    hwloc_topology_t topo;   /* NULL: flat topology (no hwloc view) */
    int ncores;              /* cores (or PUs if hwloc reports no cores; CPUs when flat) */
    hwloc_obj_type_t core_type;
    int nflat;               /* flat topology: the allowed CPUs' kernel numbers */
    int flat[TOPOLOGY_MAX_FLAT];
    /* the cores (indices as above) this process was bound to when it loaded the
       topology, and whether that was fewer than all (a launcher placed it) */
    int nbound, placed;
    int bound[TOPOLOGY_MAX_FLAT];
    /* the cores this process pins its workers to: bound, or its share of them
       (core_share.h) */
    int nmine;
    int mine[TOPOLOGY_MAX_FLAT];
} topology;

/* Loads the topology; never fails for want of hwloc's view: where /sys is hidden or
 * hwloc fails it falls back to a flat topology and writes why into warn (else ""), for
 * the caller to log once. */
cask_status topology_load(topology *t, char *warn, size_t warnlen);
void topology_destroy(topology *t);

/* Pins the calling thread to this process's core number `core` (modulo nmine: an index
 * into mine). Returns 0 on success. */
int topology_bind_self(topology *t, int core);

/* Pins thread th (a running worker) the same way. Returns 0 on success. */
int topology_bind_thread(topology *t, pthread_t th, int core);

/* Binds the whole process (every thread it has, and so those it starts later) to mine.
 * Returns 0 on success. */
int topology_bind_process(topology *t);

/* Nearness of two of this process's cores (indices into mine): depth of their deepest
 * common ancestor (larger is nearer). */
int topology_nearness(topology *t, int core_a, int core_b);

#endif
