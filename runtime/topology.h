/* topology.h: the machine's cores as hwloc sees them (or, where hwloc cannot see them,
 * the CPUs this process may run on), pinning and nearness. */
#ifndef CASK_RUNTIME_TOPOLOGY_H
#define CASK_RUNTIME_TOPOLOGY_H

#include <hwloc.h>
#include "cask/status.h"

enum { TOPOLOGY_MAX_FLAT = 1024 };

typedef struct topology {
    hwloc_topology_t topo;   /* NULL: flat topology (no hwloc view) */
    int ncores;              /* cores (or PUs if hwloc reports no cores; CPUs when flat) */
    hwloc_obj_type_t core_type;
    int nflat;               /* flat topology: the allowed CPUs' kernel numbers */
    int flat[TOPOLOGY_MAX_FLAT];
} topology;

/* Loads the topology; never fails for want of hwloc's view: where /sys is hidden or
 * hwloc fails it falls back to a flat topology and writes why into warn (else ""), for
 * the caller to log once. */
cask_status topology_load(topology *t, char *warn, size_t warnlen);
void topology_destroy(topology *t);

/* Pins the calling thread to core (index modulo ncores). Returns 0 on success. */
int topology_bind_self(topology *t, int core);

/* Nearness of two cores: depth of their deepest common ancestor (larger is nearer). */
int topology_nearness(topology *t, int core_a, int core_b);

#endif
