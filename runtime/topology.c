/* topology.c: hwloc discovery of cores, thread pinning and core nearness (the order
 * in which a worker picks steal victims).
 *
 * Containers may hide /sys. Then hwloc's Linux backend cannot read the CPU topology
 * (it says so on stderr, which is not ours to write to) and what hwloc can still learn
 * (x86 CPUID) does not name the kernel's CPU numbers reliably. So without
 * /sys/devices/system/cpu, or when hwloc fails, we run with a flat topology: the CPUs
 * this process may run on (sched_getaffinity), pinned with pthread_setaffinity_np, all
 * equally near; the caller gets one warning to log. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/topology.h"

/* Where hwloc's Linux backend reads the CPU topology (HWLOC_FSROOT may move it). */
static int sysfs_cpu_visible(void)
{
    const char *root = getenv("HWLOC_FSROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/sys/devices/system/cpu", root && strcmp(root, "/") ? root : "");
    return access(path, R_OK | X_OK) == 0;
}

/* The CPUs this process may run on, in index order; their number. */
static int allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && n < max; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    }
    if (n == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        for (n = 0; n < (online > 0 ? online : 1) && n < max; n++)
            cpus[n] = n;
    }
    return n;
}

/* hwloc loads its plugins (PCI, OpenCL, GL, CUDA, NVML, libxml...) with their libraries
 * at the process's first hwloc_topology_init: 20-40 ms measured on a loaded 2-core
 * machine, for I/O objects cask never looks at. Unless the user names plugins to leave
 * out (HWLOC_PLUGINS_BLACKLIST) or the components (HWLOC_COMPONENTS), they are left out
 * for that first init, and the environment is given back right after. */
static const char io_plugins[] = "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_cuda,hwloc_nvml,"
                                 "hwloc_rsmi,hwloc_levelzero,hwloc_xml_libxml";

static cask_status load_hwloc(topology *t, char *err, size_t errlen)
{
    int skip = !getenv("HWLOC_PLUGINS_BLACKLIST") && !getenv("HWLOC_COMPONENTS") &&
               setenv("HWLOC_PLUGINS_BLACKLIST", io_plugins, 0) == 0;
    int rc = hwloc_topology_init(&t->topo);
    if (skip)
        unsetenv("HWLOC_PLUGINS_BLACKLIST");
    if (rc != 0) {
        snprintf(err, errlen, "hwloc_topology_init failed");
        t->topo = NULL;
        return CASK_ERR_HWLOC;
    }
    if (hwloc_topology_load(t->topo) != 0) {
        snprintf(err, errlen, "hwloc_topology_load failed");
        hwloc_topology_destroy(t->topo);
        t->topo = NULL;
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
        t->topo = NULL;
        return CASK_ERR_HWLOC;
    }
    t->ncores = n;
    /* the cores this process is bound to (all of them unless a launcher placed it): the
       calling thread's binding, as OpenMP takes the initial thread's (threads that
       libraries started earlier, e.g. a BLAS's, may not share it) */
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int got = set && hwloc_get_cpubind(t->topo, set, HWLOC_CPUBIND_THREAD) == 0;
    for (int i = 0; i < n && t->nbound < TOPOLOGY_MAX_FLAT; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)i);
        if (!got || (o && o->cpuset && hwloc_bitmap_intersects(o->cpuset, set)))
            t->bound[t->nbound++] = i;
    }
    hwloc_bitmap_free(set);
    if (t->nbound == 0)
        for (; t->nbound < n && t->nbound < TOPOLOGY_MAX_FLAT; t->nbound++)
            t->bound[t->nbound] = t->nbound;
    t->placed = t->nbound < n;
    return CASK_OK;
}

cask_status topology_load(topology *t, char *warn, size_t warnlen)
{
    memset(t, 0, sizeof *t);
    warn[0] = 0;
    char err[128] = "/sys/devices/system/cpu is not readable (a container hiding /sys?)";
    if (sysfs_cpu_visible() && !load_hwloc(t, err, sizeof err))
        goto mine;
    t->nflat = t->ncores = allowed_cpus(t->flat, TOPOLOGY_MAX_FLAT);
    for (t->nbound = 0; t->nbound < t->nflat; t->nbound++)
        t->bound[t->nbound] = t->nbound;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    t->placed = online > 0 && t->nflat < online;
    snprintf(warn, warnlen, "%s: no CPU topology; running on the %d CPUs this process may "
             "use, all taken as equally near", err, t->ncores);
mine:
    t->nmine = t->nbound;
    memcpy(t->mine, t->bound, sizeof(int) * (size_t)t->nbound);
    return CASK_OK;
}

void topology_destroy(topology *t)
{
    if (t->topo)
        hwloc_topology_destroy(t->topo);
    t->topo = NULL;
}

int topology_bind_thread(topology *t, pthread_t th, int core)
{
    int c = t->mine[core % t->nmine];
    if (!t->topo) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t->flat[c], &set);
        return pthread_setaffinity_np(th, sizeof set, &set) == 0 ? 0 : -1;
    }
    hwloc_obj_t obj = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)c);
    if (!obj || !obj->cpuset)
        return -1;
    hwloc_cpuset_t set = hwloc_bitmap_dup(obj->cpuset);
    if (!set)
        return -1;
    hwloc_bitmap_singlify(set);
    int rc = hwloc_set_thread_cpubind(t->topo, th, set, 0);
    hwloc_bitmap_free(set);
    return rc;
}

/* The CPUs of all of mine, as a new bitmap (NULL on failure), or in *cs when flat. */
static hwloc_bitmap_t mine_set(topology *t, cpu_set_t *cs)
{
    if (!t->topo) {
        CPU_ZERO(cs);
        for (int i = 0; i < t->nmine; i++)
            CPU_SET(t->flat[t->mine[i]], cs);
        return NULL;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int i = 0; set && i < t->nmine; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)t->mine[i]);
        if (o && o->cpuset)
            hwloc_bitmap_or(set, set, o->cpuset);
    }
    return set;
}

int topology_bind_process(topology *t)
{
    cpu_set_t cs;
    hwloc_bitmap_t set = mine_set(t, &cs);
    if (!t->topo)
        return sched_setaffinity(0, sizeof cs, &cs) == 0 ? 0 : -1;
    int rc = set ? hwloc_set_cpubind(t->topo, set, HWLOC_CPUBIND_PROCESS) : -1;
    hwloc_bitmap_free(set);
    return rc;
}

int topology_bind_self(topology *t, int core)
{
    return topology_bind_thread(t, pthread_self(), core);
}

int topology_nearness(topology *t, int a, int b)
{
    a = t->mine[a % t->nmine];
    b = t->mine[b % t->nmine];
    if (!t->topo)
        return a == b ? 1000 : 0;
    hwloc_obj_t oa = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)a);
    hwloc_obj_t ob = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)b);
    if (!oa || !ob)
        return 0;
    if (oa == ob)
        return 1000;
    hwloc_obj_t anc = hwloc_get_common_ancestor_obj(t->topo, oa, ob);
    return anc ? anc->depth : 0;
}
