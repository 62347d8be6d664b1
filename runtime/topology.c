/* topology.c: hwloc discovery of cores, thread pinning and core nearness (the order
 * in which a worker picks steal victims). */
#include <stdio.h>
#include "runtime/topology.h"

cask_status topology_load(topology *t, char *err, size_t errlen)
{
    if (hwloc_topology_init(&t->topo) != 0) {
        snprintf(err, errlen, "hwloc_topology_init failed");
        return CASK_ERR_HWLOC;
    }
    if (hwloc_topology_load(t->topo) != 0) {
        snprintf(err, errlen, "hwloc_topology_load failed");
        hwloc_topology_destroy(t->topo);
        return CASK_ERR_HWLOC;
    }
    t->core_type = HWLOC_OBJ_CORE;
    int n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE);
    if (n <= 0) {
        t->core_type = HWLOC_OBJ_PU;
        n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_PU);
    }
    if (n <= 0) {
        snprintf(err, errlen, "hwloc found no cores");
        hwloc_topology_destroy(t->topo);
        return CASK_ERR_HWLOC;
    }
    t->ncores = n;
    return CASK_OK;
}

void topology_destroy(topology *t)
{
    if (t->topo)
        hwloc_topology_destroy(t->topo);
    t->topo = NULL;
}

int topology_bind_self(topology *t, int core)
{
    hwloc_obj_t obj = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)(core % t->ncores));
    if (!obj || !obj->cpuset)
        return -1;
    hwloc_cpuset_t set = hwloc_bitmap_dup(obj->cpuset);
    if (!set)
        return -1;
    hwloc_bitmap_singlify(set);
    int rc = hwloc_set_cpubind(t->topo, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return rc;
}

int topology_nearness(topology *t, int a, int b)
{
    hwloc_obj_t oa = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)(a % t->ncores));
    hwloc_obj_t ob = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)(b % t->ncores));
    if (!oa || !ob)
        return 0;
    if (oa == ob)
        return 1000;
    hwloc_obj_t anc = hwloc_get_common_ancestor_obj(t->topo, oa, ob);
    return anc ? anc->depth : 0;
}
