/* topology.h: the machine's cores as hwloc sees them, pinning and nearness. */
#ifndef CASK_RUNTIME_TOPOLOGY_H
#define CASK_RUNTIME_TOPOLOGY_H

#include <hwloc.h>
#include "cask/status.h"

typedef struct topology {
    hwloc_topology_t topo;
    int ncores;          /* cores (or PUs if hwloc reports no cores) */
    hwloc_obj_type_t core_type;
} topology;

cask_status topology_load(topology *t, char *err, size_t errlen);
void topology_destroy(topology *t);

/* Pins the calling thread to core (index modulo ncores). Returns 0 on success. */
int topology_bind_self(topology *t, int core);

/* Nearness of two cores: depth of their deepest common ancestor (larger is nearer). */
int topology_nearness(topology *t, int core_a, int core_b);

#endif
